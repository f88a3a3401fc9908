// bench/bench_common.cpp — see bench_common.h.
#include "bench_common.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <type_traits>

#include "bench.h"
#include "qsgemm/device.h"

#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER
#include <cusparseLt.h>
#endif

namespace qsgemm::bench {

// ---- errors ----------------------------------------------------------------------------------------

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  const char* base = std::strrchr(file, '/');
  throw BenchError(strprintf("CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), what,
                             base ? base + 1 : file, line));
}

std::string cuda_context_error() {
  // A sticky error (illegal address, launch failure) is returned by every later synchronization;
  // a one-off error is cleared by cudaGetLastError. Synchronize twice to tell them apart.
  cudaDeviceSynchronize();
  cudaGetLastError();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return strprintf("CUDA context lost: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
}

// ---- device memory ---------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&p_, bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    cudaGetLastError();  // an out-of-memory error is not sticky: clear it
    throw BenchError(strprintf("cudaMalloc of %zu bytes (%.2f GiB) failed: %s", bytes,
                               static_cast<double>(bytes) / (1u << 30), cudaGetErrorString(e)));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);  // errors here are reported by the next checked call
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

// ---- timing ----------------------------------------------------------------------------------------

Timer::Timer(cudaStream_t stream, size_t flush_bytes) : stream_(stream), flush_(flush_bytes), sink_(16) {
  QSB_CHECK_CUDA(cudaMemsetAsync(flush_.get(), 0x5A, flush_.bytes(), stream_));
}

Timer::~Timer() {
  for (cudaEvent_t e : start_) cudaEventDestroy(e);
  for (cudaEvent_t e : stop_) cudaEventDestroy(e);
}

void Timer::ensure_events(size_t pairs) {
  while (start_.size() < pairs) {
    cudaEvent_t a = nullptr, b = nullptr;
    QSB_CHECK_CUDA(cudaEventCreate(&a));
    start_.push_back(a);
    QSB_CHECK_CUDA(cudaEventCreate(&b));
    stop_.push_back(b);
  }
}

double Timer::time_direct(const std::function<void(cudaStream_t)>& fn, int runs, bool flush, bool dirty_flush) {
  ensure_events(static_cast<size_t>(runs));
  // All runs are enqueued before the host waits: while the GPU flushes L2 (~150 µs) the
  // host has long enqueued the next run, so launch latency never lands inside the timed region.
  for (int i = 0; i < runs; ++i) {
    if (flush && dirty_flush)
      QSB_CHECK_CUDA(cudaMemsetAsync(flush_.get(), static_cast<int>(flush_value_++ & 0xFF), flush_.bytes(), stream_));
    else if (flush)
      l2_read_flush(flush_.get(), flush_.bytes(), static_cast<uint32_t*>(sink_.get()), stream_);
    QSB_CHECK_CUDA(cudaEventRecord(start_[i], stream_));
    fn(stream_);
    QSB_CHECK_CUDA(cudaEventRecord(stop_[i], stream_));
  }
  QSB_CHECK_CUDA(cudaEventSynchronize(stop_[runs - 1]));
  std::vector<double> t(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    float ms = 0;
    QSB_CHECK_CUDA(cudaEventElapsedTime(&ms, start_[i], stop_[i]));
    t[i] = 1e3 * ms;
  }
  // The caller wants the median, except for the warm-up estimate (the last run, past lazy loading).
  last_run_us_ = t.back();
  return median(t);
}

namespace {
// Owns a captured graph and its executable form.
struct GraphGuard {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphGuard() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};
}  // namespace

double Timer::time_us(const std::function<void(cudaStream_t)>& fn, const TimeOptions& o) {
  // Warm-up: also estimates the length of one run (the last warm-up run; the first may pay for
  // module loading or a library's lazy initialization).
  time_direct(fn, std::max(1, o.warmup), o.flush_l2, o.dirty_flush);
  const double estimate_us = std::max(last_run_us_, 1.0);

  std::function<void(cudaStream_t)> timed = fn;
  GraphGuard g;
  if (o.graph && estimate_us < o.graph_below_us) {
    QSB_CHECK_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      fn(stream_);
    } catch (...) {
      cudaStreamEndCapture(stream_, &g.graph);
      cudaGetLastError();
      throw;
    }
    cudaError_t e = cudaStreamEndCapture(stream_, &g.graph);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&g.exec, g.graph, 0);
    if (e == cudaSuccess) {
      cudaGraphExec_t exec = g.exec;
      timed = [exec](cudaStream_t s) { QSB_CHECK_CUDA(cudaGraphLaunch(exec, s)); };
      time_direct(timed, 1, o.flush_l2, o.dirty_flush);  // upload the graph
    } else {
      cudaGetLastError();  // fn is not capturable (it synchronizes or allocates): time it directly
    }
  }

  const double want = o.budget_ms * 1e3 / estimate_us;
  const int runs = std::clamp(static_cast<int>(want), std::max(1, o.min_reps), std::max(1, o.reps));
  return time_direct(timed, runs, o.flush_l2, o.dirty_flush);
}

double host_time_us(const std::function<void()>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, reps); ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  return median(t);
}

double measure_copy_bandwidth_GBps(Timer& timer, size_t bytes) {
  DeviceBuffer src(bytes), dst(bytes);
  QSB_CHECK_CUDA(cudaMemsetAsync(src.get(), 0x5A, bytes, timer.stream()));
  TimeOptions o;
  o.flush_l2 = false;  // 1 GiB each way is ~20x the L2
  o.reps = 20;
  o.min_reps = 10;
  const double us = timer.time_us(
      [&](cudaStream_t s) {
        QSB_CHECK_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s));
      },
      o);
  return 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;
}

// ---- results ---------------------------------------------------------------------------------------

void BenchRow::add_note(const std::string& note) {
  if (note.empty()) return;
  if (!notes.empty()) notes += "; ";
  notes += note;
}

std::optional<double> BenchRow::baseline(const std::string& name) const {
  for (const auto& [n, us] : baselines_us)
    if (n == name) return us;
  return std::nullopt;
}

BenchReport make_report(double copy_bandwidth_GBps) {
  BenchReport r;
  int dev = 0;
  QSB_CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  QSB_CHECK_CUDA(cudaGetDeviceProperties(&p, dev));
  r.device = p.name;
  r.sms = p.multiProcessorCount;
  int rt = 0;
  QSB_CHECK_CUDA(cudaRuntimeGetVersion(&rt));
  r.cuda = strprintf("%d.%d", rt / 1000, (rt % 1000) / 10);
  const char* commit = std::getenv("QSGEMM_GIT_COMMIT");
  r.git_commit = commit && *commit ? commit : "unknown";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  r.date = buf;
  r.copy_bandwidth_GBps = copy_bandwidth_GBps;
  return r;
}

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20)
          out += strprintf("\\u%04x", c);
        else
          out += ch;
    }
  }
  return out + "\"";
}

// 7 significant digits: µs to 0.1 ns at 1 ms, rel_err to 1e-7 relative. JSON has no inf/NaN: null.
std::string json_number(double v) { return std::isfinite(v) ? strprintf("%.7g", v) : "null"; }
std::string json_number(const std::optional<double>& v) { return v ? json_number(*v) : "null"; }

}  // namespace

std::string to_json(const BenchReport& r) {
  std::ostringstream os;
  os << "{\n";
  os << "  \"device\": " << json_string(r.device) << ", \"sms\": " << r.sms << ", \"cuda\": " << json_string(r.cuda)
     << ",\n";
  os << "  \"git_commit\": " << json_string(r.git_commit) << ", \"date\": " << json_string(r.date) << ",\n";
  os << "  \"copy_bandwidth_GBps\": " << json_number(r.copy_bandwidth_GBps) << ",\n";
  os << "  \"rows\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const BenchRow& w = r.rows[i];
    os << (i ? ",\n" : "\n") << "    {";
    os << "\"family\": " << json_string(w.family) << ", \"layer\": " << json_string(w.layer) << ", \"M\": " << w.M
       << ", \"N\": " << w.N << ", \"K\": " << w.K << ", \"out_dtype\": " << json_string(w.out_dtype)
       << ", \"config\": " << json_string(w.config) << ", \"qsgemm_us\": " << json_number(w.qsgemm_us)
       << ", \"baselines_us\": {";
    for (size_t j = 0; j < w.baselines_us.size(); ++j)
      os << (j ? ", " : "") << json_string(w.baselines_us[j].first) << ": " << json_number(w.baselines_us[j].second);
    os << "}, \"bytes_moved\": " << w.bytes_moved << ", \"rel_err\": " << json_number(w.rel_err);
    if (!w.notes.empty()) os << ", \"notes\": " << json_string(w.notes);
    os << "}";
  }
  os << (r.rows.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return os.str();
}

void write_json(const std::string& path, const BenchReport& report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) throw BenchError("cannot create folder " + p.parent_path().string() + ": " + ec.message());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw BenchError("cannot open " + path + " for writing");
  f << to_json(report);
  f.close();
  if (!f) throw BenchError("write to " + path + " failed");
}

// ---- cuBLASLt baselines ----------------------------------------------------------------------------
//
// cuBLASLt is column-major and its FP8 kernels on Hopper take only the "TN" form (A transposed,
// B not). Y[M,N] = X[M,K] · W[N,K]ᵀ (all row-major) is therefore computed as
//     D = Yᵀ [N x M, col-major, ld N]  =  op(A) · op(B)  with
//     A = W: stored K x N col-major, ld K (that is W row-major), transa = T  -> op(A) = W   [N x K]
//     B = X: stored K x M col-major, ld K (that is X row-major), transb = N  -> op(B) = Xᵀ  [K x M]
// so cuBLASLt's (m, n, k) is (N, M, K): its "A" is the weight and its "B" the activations.
//
// Scales, in that form:
//   rowwise  (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F on both): cublasLt.h says the A vector has
//            m entries and the B vector n entries, and D(i,j) is multiplied by a_scale[i]·b_scale[j].
//            m = N and n = M here, so A_SCALE = per-channel weight scales [N] and B_SCALE =
//            per-token activation scales [M].
//   tensor   (SCALAR_32F): one float each, device pointers.
//   block128 A = W gets BLK128x128_32F (one float per 128x128 block of the weight) and B = X gets
//            VEC128_32F (one float per token per 128 of K) — cuBLASLt on sm_90 supports
//            (A, B) in {VEC128 x VEC128, BLK128x128 x VEC128, VEC128 x BLK128x128}. Layouts
//            cuBLASLt expects (cuBLAS docs "scaling factors layouts"; PyTorch's checks in
//            aten/src/ATen/native/cuda/ScaledBlas.cpp after pytorch#166752 say the same):
//              weight [N,K]: float [ceil(N/128)][L4] row-major, L4 = round_up(ceil(K/128), 4) — the
//                            K-blocks of one row of blocks are contiguous, padded to 16 bytes;
//              activations [M,K]: float [ceil(K/128)][M] — token-contiguous ("M-major"), no padding;
//                            the same layout as qsgemm's kGroup1x128 activation scales with ld = M.
// FP8 fast accumulation stays off (cuBLASLt's default, and what torch._scaled_mm uses by default);
// block scaling refuses it anyway. Every FP8 variant writes bf16 and accumulates in float32.
namespace {

const char* lt_status(cublasStatus_t s) { return cublasLtGetStatusName(s); }

class CublasLtGemm final : public Baseline {
 public:
  struct Spec {
    cudaDataType_t ab_type = CUDA_R_8F_E4M3;
    bool scaled = false;
    int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    const float* a_scale = nullptr;  // the weight's scales
    const float* b_scale = nullptr;  // the activations' scales
  };

  CublasLtGemm(std::string name, LtContext& lt, const GemmOperands& ops, const Spec& spec,
               std::vector<DeviceBuffer> owned)
      : Baseline(std::move(name)), lt_(lt), ops_(ops), owned_(std::move(owned)) {
    auto fail = [&](cublasStatus_t s, const char* what) {
      if (s == CUBLAS_STATUS_SUCCESS) return false;
      reason_ = strprintf("%s: %s", what, lt_status(s));
      return true;
    };
    if (fail(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate")) return;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA")) return;
    if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB")) return;
    if (spec.scaled) {
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &spec.a_mode, sizeof spec.a_mode),
               "set A_SCALE_MODE"))
        return;
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &spec.b_mode, sizeof spec.b_mode),
               "set B_SCALE_MODE"))
        return;
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &spec.a_scale,
                                              sizeof spec.a_scale),
               "set A_SCALE_POINTER"))
        return;
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &spec.b_scale,
                                              sizeof spec.b_scale),
               "set B_SCALE_POINTER"))
        return;
    }
    const auto M = static_cast<uint64_t>(ops.M), N = static_cast<uint64_t>(ops.N), K = static_cast<uint64_t>(ops.K);
    if (fail(cublasLtMatrixLayoutCreate(&a_, spec.ab_type, K, N, static_cast<int64_t>(K)), "A layout")) return;
    if (fail(cublasLtMatrixLayoutCreate(&b_, spec.ab_type, K, M, static_cast<int64_t>(K)), "B layout")) return;
    if (fail(cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, N, M, static_cast<int64_t>(N)), "D layout")) return;
    if (fail(cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate")) return;
    const uint64_t ws = lt.workspace_bytes();
    if (fail(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             "set MAX_WORKSPACE_BYTES"))
      return;
    cublasLtMatmulHeuristicResult_t h{};
    int found = 0;
    if (fail(cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(lt.handle()), desc_, a_, b_, d_, d_, pref_, 1,
                                            &h, &found),
             "cublasLtMatmulAlgoGetHeuristic"))
      return;
    if (found == 0) {
      reason_ = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
      return;
    }
    algo_ = h.algo;
  }

  ~CublasLtGemm() override {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (d_) cublasLtMatrixLayoutDestroy(d_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }

  void run(cudaStream_t stream) override {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t s = cublasLtMatmul(static_cast<cublasLtHandle_t>(lt_.handle()), desc_, &alpha, ops_.w, a_,
                                            ops_.x, b_, &beta, ops_.y, d_, ops_.y, d_, &algo_, lt_.workspace(),
                                            lt_.workspace_bytes(), stream);
    if (s != CUBLAS_STATUS_SUCCESS) throw BenchError(name_ + ": cublasLtMatmul: " + lt_status(s));
  }

 private:
  LtContext& lt_;
  GemmOperands ops_;
  std::vector<DeviceBuffer> owned_;  // scale buffers
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// Random positive scales of about the size that quantization of unit-scale data produces.
DeviceBuffer random_scales(size_t n, uint32_t seed, cudaStream_t stream) {
  DeviceBuffer b(4 * std::max<size_t>(n, 1));
  fill_f32(b.as<float>(), std::max<size_t>(n, 1), seed, 0.5f / 448.0f, 2.0f / 448.0f, stream);
  return b;
}

}  // namespace

LtContext::LtContext() : workspace_(size_t(32) << 20) {
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t s = cublasLtCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) throw BenchError(std::string("cublasLtCreate: ") + lt_status(s));
  handle_ = h;
}

LtContext::~LtContext() {
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

std::unique_ptr<Baseline> make_cublaslt_fp8_rowwise(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  std::vector<DeviceBuffer> owned;
  owned.push_back(random_scales(static_cast<size_t>(ops.N), 0xA11CE, stream));  // weight, per channel [N]
  owned.push_back(random_scales(static_cast<size_t>(ops.M), 0xB0B, stream));    // activations, per token [M]
  CublasLtGemm::Spec spec;
  spec.scaled = true;
  spec.a_mode = spec.b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  spec.a_scale = owned[0].as<float>();
  spec.b_scale = owned[1].as<float>();
  return std::make_unique<CublasLtGemm>("cublaslt_fp8_rowwise", lt, ops, spec, std::move(owned));
}

std::unique_ptr<Baseline> make_cublaslt_fp8_tensor(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  std::vector<DeviceBuffer> owned;
  owned.push_back(random_scales(1, 0xA11CE, stream));
  owned.push_back(random_scales(1, 0xB0B, stream));
  CublasLtGemm::Spec spec;
  spec.scaled = true;
  spec.a_mode = spec.b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  spec.a_scale = owned[0].as<float>();
  spec.b_scale = owned[1].as<float>();
  return std::make_unique<CublasLtGemm>("cublaslt_fp8_tensor", lt, ops, spec, std::move(owned));
}

std::unique_ptr<Baseline> make_cublaslt_fp8_block128(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  const size_t kb = static_cast<size_t>((ops.K + 127) / 128), kb4 = (kb + 3) / 4 * 4;
  const size_t nb = static_cast<size_t>((ops.N + 127) / 128);
  std::vector<DeviceBuffer> owned;
  owned.push_back(random_scales(nb * kb4, 0xA11CE, stream));                       // weight [ceil(N/128)][L4]
  owned.push_back(random_scales(kb * static_cast<size_t>(ops.M), 0xB0B, stream));  // activations [ceil(K/128)][M]
  CublasLtGemm::Spec spec;
  spec.scaled = true;
  spec.a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  spec.b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  spec.a_scale = owned[0].as<float>();
  spec.b_scale = owned[1].as<float>();
  return std::make_unique<CublasLtGemm>("cublaslt_fp8_block128", lt, ops, spec, std::move(owned));
}

std::unique_ptr<Baseline> make_cublas_bf16(LtContext& lt, const GemmOperands& ops, cudaStream_t) {
  CublasLtGemm::Spec spec;
  spec.ab_type = CUDA_R_16BF;
  return std::make_unique<CublasLtGemm>("cublas_bf16", lt, ops, spec, std::vector<DeviceBuffer>{});
}

// ---- cuSPARSELt baseline ---------------------------------------------------------------------------
// Called as in shared/tools/cusparselt_fp8_bench.cu: D[N,M] (col-major == Y[M,N] row-major) =
// W[N,K] · X[M,K]ᵀ with W the structured (2:4) operand A, stored K x N col-major and transposed;
// e4m3 in, bf16 out, float32 compute, alpha = 1 and no scales. The plan is made once per shape and
// cusparseLtMatmulSearch picks the best algorithm before any timed call.
//
// The library is not linked: it is dlopen'ed at run time ("libcusparseLt.so.0" from the loader's
// path, then $QSGEMM_CUSPARSELT_LIB, a file or the folder holding it), and the types come from the
// PyPI wheel's cusparseLt.h when CMake found it (QSGEMM_HAVE_CUSPARSELT_HEADER).
namespace {

class UnavailableBaseline final : public Baseline {
 public:
  UnavailableBaseline(std::string name, std::string reason) : Baseline(std::move(name)) { reason_ = std::move(reason); }
  void run(cudaStream_t) override { throw BenchError(name_ + " is unavailable: " + reason_); }
};

#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER

struct CusparseLtApi {
  std::string error;   // empty when usable
  std::string status;  // what was loaded
  cusparseLtHandle_t handle{};
#define QSB_LT_FN(name) decltype(&::name) name = nullptr
  QSB_LT_FN(cusparseLtInit);
  QSB_LT_FN(cusparseLtGetVersion);
  QSB_LT_FN(cusparseLtGetErrorString);
  QSB_LT_FN(cusparseLtDenseDescriptorInit);
  QSB_LT_FN(cusparseLtStructuredDescriptorInit);
  QSB_LT_FN(cusparseLtMatDescriptorDestroy);
  QSB_LT_FN(cusparseLtMatmulDescriptorInit);
  QSB_LT_FN(cusparseLtMatmulAlgSelectionInit);
  QSB_LT_FN(cusparseLtMatmulAlgSelectionDestroy);
  QSB_LT_FN(cusparseLtMatmulAlgGetAttribute);
  QSB_LT_FN(cusparseLtMatmulPlanInit);
  QSB_LT_FN(cusparseLtMatmulPlanDestroy);
  QSB_LT_FN(cusparseLtMatmulGetWorkspace);
  QSB_LT_FN(cusparseLtMatmul);
  QSB_LT_FN(cusparseLtMatmulSearch);
  QSB_LT_FN(cusparseLtSpMMAPrune);
  QSB_LT_FN(cusparseLtSpMMACompressedSize);
  QSB_LT_FN(cusparseLtSpMMACompress);
#undef QSB_LT_FN

  std::string describe(cusparseStatus_t s) const {
    const char* str = cusparseLtGetErrorString ? cusparseLtGetErrorString(s) : nullptr;
    return str ? strprintf("%s (status %d)", str, static_cast<int>(s)) : strprintf("status %d", static_cast<int>(s));
  }
};

CusparseLtApi load_cusparselt() {
  CusparseLtApi api;
  std::vector<std::string> candidates = {"libcusparseLt.so.0"};
  if (const char* env = std::getenv("QSGEMM_CUSPARSELT_LIB"); env && *env) {
    std::error_code ec;
    candidates.push_back(std::filesystem::is_directory(env, ec) ? std::string(env) + "/libcusparseLt.so.0" : env);
  }
  void* lib = nullptr;
  std::string tried;
  for (const std::string& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      api.status = c;
      break;
    }
    const char* why = dlerror();
    tried += strprintf("%s%s (%s)", tried.empty() ? "" : "; ", c.c_str(), why ? why : "not found");
  }
  if (!lib) {
    api.error = "cuSPARSELt not loaded: " + tried + ". Set QSGEMM_CUSPARSELT_LIB to libcusparseLt.so.0 or its folder";
    return api;
  }
  bool missing = false;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && !missing) {
      missing = true;
      api.error = strprintf("cuSPARSELt at %s lacks the symbol %s", api.status.c_str(), name);
    }
  };
#define QSB_LT_RESOLVE(name) resolve(api.name, #name)
  QSB_LT_RESOLVE(cusparseLtInit);
  QSB_LT_RESOLVE(cusparseLtGetVersion);
  QSB_LT_RESOLVE(cusparseLtGetErrorString);
  QSB_LT_RESOLVE(cusparseLtDenseDescriptorInit);
  QSB_LT_RESOLVE(cusparseLtStructuredDescriptorInit);
  QSB_LT_RESOLVE(cusparseLtMatDescriptorDestroy);
  QSB_LT_RESOLVE(cusparseLtMatmulDescriptorInit);
  QSB_LT_RESOLVE(cusparseLtMatmulAlgSelectionInit);
  QSB_LT_RESOLVE(cusparseLtMatmulAlgSelectionDestroy);
  QSB_LT_RESOLVE(cusparseLtMatmulAlgGetAttribute);
  QSB_LT_RESOLVE(cusparseLtMatmulPlanInit);
  QSB_LT_RESOLVE(cusparseLtMatmulPlanDestroy);
  QSB_LT_RESOLVE(cusparseLtMatmulGetWorkspace);
  QSB_LT_RESOLVE(cusparseLtMatmul);
  QSB_LT_RESOLVE(cusparseLtMatmulSearch);
  QSB_LT_RESOLVE(cusparseLtSpMMAPrune);
  QSB_LT_RESOLVE(cusparseLtSpMMACompressedSize);
  QSB_LT_RESOLVE(cusparseLtSpMMACompress);
#undef QSB_LT_RESOLVE
  if (missing) return api;
  // The handle lives as long as the process: destroying it from a static destructor could run
  // after the CUDA runtime has shut down.
  const cusparseStatus_t s = api.cusparseLtInit(&api.handle);
  if (s != CUSPARSE_STATUS_SUCCESS) {
    api.error = "cusparseLtInit: " + api.describe(s);
    return api;
  }
  int version = 0;
  api.cusparseLtGetVersion(&api.handle, &version);
  api.status = strprintf("cuSPARSELt %d.%d.%d from %s", version / 1000, (version % 1000) / 100, version % 100,
                         api.status.c_str());
  return api;
}

CusparseLtApi& cusparselt_api() {
  static CusparseLtApi api = load_cusparselt();
  return api;
}

class CusparseLtFp8 final : public Baseline {
 public:
  CusparseLtFp8(const GemmOperands& ops, cudaStream_t stream) : Baseline("cusparselt_fp8"), api_(cusparselt_api()), ops_(ops) {
    if (!api_.error.empty()) {
      reason_ = api_.error;
      return;
    }
    if (ops.M < 16) {  // NOT_SUPPORTED below 16 (shared/BASELINES.md): say so instead of trying
      reason_ = strprintf("cuSPARSELt refuses M < 16 (M=%lld)", static_cast<long long>(ops.M));
      return;
    }
    const cusparseLtHandle_t* h = &api_.handle;
    const int64_t M = ops.M, N = ops.N, K = ops.K;
    if (fail(api_.cusparseLtStructuredDescriptorInit(h, &a_, K, N, K, 16, CUDA_R_8F_E4M3, CUSPARSE_ORDER_COL,
                                                     CUSPARSELT_SPARSITY_50_PERCENT),
             "cusparseLtStructuredDescriptorInit"))
      return;
    have_a_ = true;
    if (fail(api_.cusparseLtDenseDescriptorInit(h, &b_, K, M, K, 16, CUDA_R_8F_E4M3, CUSPARSE_ORDER_COL),
             "cusparseLtDenseDescriptorInit(B)"))
      return;
    have_b_ = true;
    if (fail(api_.cusparseLtDenseDescriptorInit(h, &d_, N, M, N, 16, CUDA_R_16BF, CUSPARSE_ORDER_COL),
             "cusparseLtDenseDescriptorInit(D)"))
      return;
    have_d_ = true;
    if (fail(api_.cusparseLtMatmulDescriptorInit(h, &mm_, CUSPARSE_OPERATION_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 &a_, &b_, &d_, &d_, CUSPARSE_COMPUTE_32F),
             "cusparseLtMatmulDescriptorInit"))
      return;
    if (fail(api_.cusparseLtMatmulAlgSelectionInit(h, &sel_, &mm_, CUSPARSELT_MATMUL_ALG_DEFAULT),
             "cusparseLtMatmulAlgSelectionInit"))
      return;
    have_sel_ = true;
    if (fail(api_.cusparseLtMatmulPlanInit(h, &plan_, &mm_, &sel_), "cusparseLtMatmulPlanInit")) return;
    have_plan_ = true;

    try {
      prepare(stream);
    } catch (const BenchError& e) {  // a CUDA failure or an out-of-memory while preparing
      reason_ = e.what();
    }
  }

  ~CusparseLtFp8() override {
    if (have_plan_) api_.cusparseLtMatmulPlanDestroy(&plan_);
    if (have_sel_) api_.cusparseLtMatmulAlgSelectionDestroy(&sel_);
    if (have_d_) api_.cusparseLtMatDescriptorDestroy(&d_);
    if (have_b_) api_.cusparseLtMatDescriptorDestroy(&b_);
    if (have_a_) api_.cusparseLtMatDescriptorDestroy(&a_);
  }

  void run(cudaStream_t stream) override {
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t s = stream;
    const cusparseStatus_t st = api_.cusparseLtMatmul(&api_.handle, &plan_, &alpha, compressed_.get(), ops_.x, &beta,
                                                      ops_.y, ops_.y, workspace_.get(), &s, 1);
    if (st != CUSPARSE_STATUS_SUCCESS) throw BenchError("cusparselt_fp8: cusparseLtMatmul: " + api_.describe(st));
  }

 private:
  bool fail(cusparseStatus_t s, const char* what) {
    if (s == CUSPARSE_STATUS_SUCCESS) return false;
    reason_ = strprintf("%s: %s", what, api_.describe(s).c_str());
    return true;
  }

  // Prune, compress, search: the one-time work, after the plan exists.
  void prepare(cudaStream_t stream) {
    const cusparseLtHandle_t* h = &api_.handle;
    const int64_t N = ops_.N, K = ops_.K;
    // Prune a copy of the dense weight (2:4 along K) and compress it into the library's format.
    DeviceBuffer pruned(static_cast<size_t>(N * K));
    QSB_CHECK_CUDA(cudaMemcpyAsync(pruned.get(), ops_.w, pruned.bytes(), cudaMemcpyDeviceToDevice, stream));
    if (fail(api_.cusparseLtSpMMAPrune(h, &mm_, pruned.get(), pruned.get(), CUSPARSELT_PRUNE_SPMMA_TILE, stream),
             "cusparseLtSpMMAPrune"))
      return;
    size_t compressed_bytes = 0, buffer_bytes = 0;
    if (fail(api_.cusparseLtSpMMACompressedSize(h, &plan_, &compressed_bytes, &buffer_bytes),
             "cusparseLtSpMMACompressedSize"))
      return;
    compressed_ = DeviceBuffer(compressed_bytes);
    DeviceBuffer scratch(std::max<size_t>(buffer_bytes, 16));
    if (fail(api_.cusparseLtSpMMACompress(h, &plan_, pruned.get(), compressed_.get(), scratch.get(), stream),
             "cusparseLtSpMMACompress"))
      return;

    size_t ws = 0;
    if (fail(api_.cusparseLtMatmulGetWorkspace(h, &plan_, &ws), "cusparseLtMatmulGetWorkspace")) return;
    workspace_ = DeviceBuffer(ws);
    const float alpha = 1.0f, beta = 0.0f;
    cudaStream_t s = stream;
    if (fail(api_.cusparseLtMatmulSearch(h, &plan_, &alpha, compressed_.get(), ops_.x, &beta, ops_.y, ops_.y,
                                         workspace_.get(), &s, 1),
             "cusparseLtMatmulSearch"))
      return;
    // The chosen algorithm may want a different workspace.
    if (fail(api_.cusparseLtMatmulGetWorkspace(h, &plan_, &ws), "cusparseLtMatmulGetWorkspace")) return;
    if (ws > workspace_.bytes()) {
      QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
      workspace_ = DeviceBuffer(ws);
    }
    api_.cusparseLtMatmulAlgGetAttribute(h, &sel_, CUSPARSELT_MATMUL_ALG_CONFIG_ID, &algorithm_, sizeof algorithm_);
    QSB_CHECK_CUDA(cudaStreamSynchronize(stream));  // before `pruned` and `scratch` are freed
  }

  CusparseLtApi& api_;
  GemmOperands ops_;
  cusparseLtMatDescriptor_t a_{}, b_{}, d_{};
  cusparseLtMatmulDescriptor_t mm_{};
  cusparseLtMatmulAlgSelection_t sel_{};
  cusparseLtMatmulPlan_t plan_{};
  bool have_a_ = false, have_b_ = false, have_d_ = false, have_sel_ = false, have_plan_ = false;
  DeviceBuffer compressed_, workspace_;
  int algorithm_ = -1;
};

#endif  // QSGEMM_HAVE_CUSPARSELT_HEADER

}  // namespace

std::unique_ptr<Baseline> make_cusparselt_fp8(const GemmOperands& ops, cudaStream_t stream) {
#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER
  return std::make_unique<CusparseLtFp8>(ops, stream);
#else
  (void)ops, (void)stream;
  return std::make_unique<UnavailableBaseline>("cusparselt_fp8", cusparselt_status());
#endif
}

std::string cusparselt_status() {
#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER
  const CusparseLtApi& api = cusparselt_api();
  return api.error.empty() ? api.status : api.error;
#else
  return "built without cusparseLt.h (scripts/setup.sh installs it into .deps/cusparselt; then re-run cmake)";
#endif
}

// ---- one benchmark run -----------------------------------------------------------------------------

int run_bench(const char* title, const BenchOptions& options, const std::string& json_name,
              const std::function<void(BenchEnv&)>& body) {
  const DeviceInfo dev = device_info();
  if (!dev.present) {
    std::fprintf(stderr, "qsgemm bench %s: no usable CUDA device (%s)\n", title, dev.error.c_str());
    return 2;
  }
  const std::string path = options.json_path.empty() ? options.out_dir + "/" + json_name : options.json_path;
  cudaStream_t stream = nullptr;
  int code = 0;
  BenchEnv env;
  try {
    QSB_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Timer timer(stream);
    LtContext lt;
    env.stream = stream;
    env.timer = &timer;
    env.lt = &lt;
    env.time.reps = std::max(1, options.reps);
    env.time.budget_ms = options.budget_ms;
    env.time.graph = options.graph;
    env.time.dirty_flush = options.dirty_flush;
    env.check = options.check;
    env.kernels_ok = dev.supports_kernels();
    env.report = make_report(measure_copy_bandwidth_GBps(timer));
    std::printf("qsgemm bench %s on %s (%d SMs, sm_%d%d), CUDA runtime %s, commit %s, %s\n", title,
                env.report.device.c_str(), env.report.sms, dev.cc_major, dev.cc_minor, env.report.cuda.c_str(),
                env.report.git_commit.c_str(), env.report.date.c_str());
    std::printf("copy bandwidth (D2D, read + write): %.0f GB/s; data: hashed random (never zero); L2 flushed before every timed run (%s); "
                "median of up to %d runs (%.0f ms budget each)%s\n",
                env.report.copy_bandwidth_GBps,
                env.time.dirty_flush ? "512 MiB memset: dirty lines" : "512 MiB read: clean lines", env.time.reps,
                env.time.budget_ms,
                env.time.graph ? "; short runs as CUDA-graph replays" : "");
    if (!env.kernels_ok)
      std::printf("note: qsgemm's kernels need an sm_90 GPU; only the baselines will have times\n");
    std::fflush(stdout);
    try {
      body(env);
    } catch (const ContextLost& e) {
      std::fprintf(stderr, "qsgemm bench %s: stopped early: %s\n", title, e.what());
      code = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qsgemm bench %s: stopped early: %s\n", title, e.what());
      code = 1;
    }
  } catch (const std::exception& e) {  // set-up failed (no stream, no cuBLASLt, out of memory)
    std::fprintf(stderr, "qsgemm bench %s: %s\n", title, e.what());
    code = 1;
  }
  if (!env.report.device.empty()) {
    try {
      write_json(path, env.report);
      std::printf("wrote %s (%zu rows)\n", path.c_str(), env.report.rows.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qsgemm bench %s: %s\n", title, e.what());
      code = 1;
    }
  }
  if (stream) cudaStreamDestroy(stream);
  std::fflush(stdout);
  return code;
}

bool guarded(BenchRow& row, const std::string& what, const std::function<void()>& f) {
  std::string message;
  try {
    f();
    return true;
  } catch (const ContextLost&) {
    throw;
  } catch (const std::exception& e) {
    message = e.what();
  }
  row.add_note(what + ": " + message);
  const std::string lost = cuda_context_error();
  if (!lost.empty()) throw ContextLost(lost + " (after " + what + ": " + message + ")");
  return false;
}

void PointTimer::add(BenchRow& row, std::string name, std::function<void(cudaStream_t)> fn,
                     std::function<void(double)> on_time) {
  candidates_.push_back(Candidate{&row, std::move(name), std::move(fn), std::move(on_time), {}, false});
}

void PointTimer::add_baseline(BenchRow& row, const std::string& name,
                              const std::function<std::unique_ptr<Baseline>()>& make) {
  std::unique_ptr<Baseline> b;
  if (!guarded(row, name, [&] { b = make(); })) return;
  if (!b->available()) {
    row.add_note(name + " unavailable: " + b->unavailable_reason());
    return;
  }
  Baseline* raw = b.get();
  baselines_.push_back(std::move(b));
  BenchRow* r = &row;
  add(row, name, [raw](cudaStream_t s) { raw->run(s); },
      [r, name](double us) { r->baselines_us.emplace_back(name, us); });
}

void PointTimer::run(BenchEnv& env) {
  TimeOptions half = env.time;
  half.reps = std::max(half.min_reps, (half.reps + 1) / 2);
  half.budget_ms = half.budget_ms / 2;
  const size_t n = candidates_.size();
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < n; ++i) {
      Candidate& c = candidates_[round == 0 ? i : n - 1 - i];
      if (c.failed) continue;
      double us = 0;
      if (guarded(*c.row, c.name, [&] { us = env.timer->time_us(c.fn, half); }))
        c.medians.push_back(us);
      else
        c.failed = true;
    }
  }
  for (Candidate& c : candidates_)
    if (!c.failed && !c.medians.empty())
      c.on_time(std::accumulate(c.medians.begin(), c.medians.end(), 0.0) / static_cast<double>(c.medians.size()));
}

void set_rel_err(BenchRow& row, double rel_err) {
  if (std::isfinite(rel_err))
    row.rel_err = rel_err;
  else
    row.add_note("rel_err: the output holds NaN/Inf or elements that were not written");
}

void download(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  QSB_CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
}

// ---- printing --------------------------------------------------------------------------------------

std::string short_name(const std::string& b) {
  if (b == "cublaslt_fp8_rowwise") return "lt_rowwise";
  if (b == "cublaslt_fp8_tensor") return "lt_tensor";
  if (b == "cublaslt_fp8_block128") return "lt_blk128";
  if (b == "cusparselt_fp8") return "spLt_fp8";
  if (b == "cublas_bf16") return "lt_bf16";
  if (b == "cuda_memcpy_same_bytes") return "memcpy";
  return b.size() > 11 ? b.substr(0, 11) : b;
}

ResultTable::ResultTable(std::vector<std::string> baselines, std::vector<std::string> ratios)
    : baselines_(std::move(baselines)), ratios_(std::move(ratios)) {}

void ResultTable::print_header() const {
  std::printf("\n%-14s %-16s %6s %-28s %9s", "family", "layer", "M", "config", "qsgemm_us");
  for (const auto& b : baselines_) std::printf(" %11s", short_name(b).c_str());
  std::printf(" %8s %8s", "TFLOP/s", "GB/s");
  for (const auto& r : ratios_) std::printf(" %11s", ("x" + short_name(r)).c_str());
  std::printf(" %8s\n", "rel_err");
  std::fflush(stdout);
}

void ResultTable::print_row(const BenchRow& r) const {
  const std::string config = r.config.size() > 28 ? r.config.substr(0, 27) + "~" : r.config;
  std::printf("%-14s %-16s %6lld %-28s", r.family.c_str(), r.layer.c_str(), static_cast<long long>(r.M),
              config.c_str());
  if (r.qsgemm_us)
    std::printf(" %9.2f", *r.qsgemm_us);
  else
    std::printf(" %9s", "-");
  for (const auto& b : baselines_) {
    const auto t = r.baseline(b);
    if (t)
      std::printf(" %11.2f", *t);
    else
      std::printf(" %11s", "n/a");
  }
  if (r.qsgemm_us) {
    const double s = *r.qsgemm_us * 1e-6;
    std::printf(" %8.1f %8.0f", 2.0 * r.M * r.N * r.K / s / 1e12, static_cast<double>(r.bytes_moved) / s / 1e9);
  } else {
    std::printf(" %8s %8s", "-", "-");
  }
  for (const auto& b : ratios_) {
    const auto t = r.baseline(b);
    if (t && r.qsgemm_us)
      std::printf(" %10.2fx", *t / *r.qsgemm_us);
    else
      std::printf(" %11s", "-");
  }
  if (r.rel_err)
    std::printf(" %8.1e", *r.rel_err);
  else
    std::printf(" %8s", "-");
  std::printf("\n");
  if (!r.notes.empty()) std::printf("    note: %s\n", r.notes.c_str());
  std::fflush(stdout);
}

namespace {
class MemcpySameBytes final : public Baseline {
 public:
  MemcpySameBytes(size_t bytes, cudaStream_t stream)
      : Baseline("cuda_memcpy_same_bytes"), bytes_(bytes), src_(bytes), dst_(bytes) {
    QSB_CHECK_CUDA(cudaMemsetAsync(src_.get(), 0x5A, bytes_, stream));
  }
  void run(cudaStream_t s) override {
    QSB_CHECK_CUDA(cudaMemcpyAsync(dst_.get(), src_.get(), bytes_, cudaMemcpyDeviceToDevice, s));
  }

 private:
  size_t bytes_;
  DeviceBuffer src_, dst_;
};
}  // namespace

void add_memcpy_baseline(PointTimer& point, BenchEnv& env, BenchRow& row) {
  const auto bytes = static_cast<size_t>(row.bytes_moved / 2);
  if (bytes == 0) return;
  point.add_baseline(row, "cuda_memcpy_same_bytes",
                     [&] { return std::make_unique<MemcpySameBytes>(bytes, env.stream); });
}

bool time_with_memcpy_floor(BenchEnv& env, BenchRow& row, const std::function<void(cudaStream_t)>& fn) {
  PointTimer point;
  point.add(row, "qsgemm", fn, [&](double us) { row.qsgemm_us = us; });
  add_memcpy_baseline(point, env, row);
  point.run(env);
  return row.qsgemm_us.has_value();
}

void print_memory_row(const BenchRow& r, double copy_bandwidth_GBps) {
  std::printf("%-22s %-14s", r.family.c_str(), r.layer.c_str());
  const auto pct = [&](double us) {
    return 100.0 * static_cast<double>(r.bytes_moved) / (us * 1e-6) / 1e9 / copy_bandwidth_GBps;
  };
  if (r.qsgemm_us) {
    const double gbps = static_cast<double>(r.bytes_moved) / (*r.qsgemm_us * 1e-6) / 1e9;
    std::printf(" %10.2f us %8.0f GB/s  %5.1f%% of copy bandwidth", *r.qsgemm_us, gbps, pct(*r.qsgemm_us));
  } else {
    std::printf(" %10s", "-");
  }
  if (const auto m = r.baseline("cuda_memcpy_same_bytes"))
    std::printf("  (memcpy of the same bytes: %.2f us, %.1f%%)", *m, pct(*m));
  if (r.rel_err) std::printf("  rel_err %.1e", *r.rel_err);
  std::printf("\n");
  if (!r.notes.empty()) std::printf("    note: %s\n", r.notes.c_str());
  std::fflush(stdout);
}

std::vector<double> speedups(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline,
                             int64_t lo, int64_t hi) {
  std::vector<double> v;
  for (const BenchRow& r : rows) {
    if (r.family != family || r.M < lo || r.M > hi || !r.qsgemm_us) continue;
    if (const auto t = r.baseline(baseline)) v.push_back(*t / *r.qsgemm_us);
  }
  return v;
}

void print_decode_bandwidth(const std::vector<BenchRow>& rows, const std::string& family, const char* what,
                            const std::function<double(const BenchRow&)>& weight_bytes, double copy_bandwidth_GBps) {
  std::vector<double> frac, of_memcpy;
  for (const BenchRow& r : rows) {
    if (r.family != family || r.M > kDecodeMaxM || !r.qsgemm_us) continue;
    frac.push_back(weight_bytes(r) / (*r.qsgemm_us * 1e-6) / 1e9 / copy_bandwidth_GBps);
    if (const auto m = r.baseline("cuda_memcpy_same_bytes")) of_memcpy.push_back(*m / *r.qsgemm_us);
  }
  const auto at_least = [](const std::vector<double>& v, double x) {
    return std::count_if(v.begin(), v.end(), [x](double f) { return f >= x; });
  };
  if (frac.empty()) {
    std::printf("%s M <= %lld: %s bandwidth n/a\n", family.c_str(), static_cast<long long>(kDecodeMaxM), what);
    return;
  }
  std::printf("%s M <= %lld: %s at %.0f%% .. %.0f%% of copy bandwidth (median %.0f%%, >= 80%% on %zd of %zu points)\n",
              family.c_str(), static_cast<long long>(kDecodeMaxM), what,
              100 * *std::min_element(frac.begin(), frac.end()), 100 * *std::max_element(frac.begin(), frac.end()),
              100 * median(frac), static_cast<ssize_t>(at_least(frac, 0.8)), frac.size());
  if (!of_memcpy.empty())
    std::printf("%s M <= %lld: memcpy of the same bytes / qsgemm time: %.0f%% .. %.0f%% (median %.0f%%, >= 80%% on %zd of "
                "%zu points)\n",
                family.c_str(), static_cast<long long>(kDecodeMaxM),
                100 * *std::min_element(of_memcpy.begin(), of_memcpy.end()),
                100 * *std::max_element(of_memcpy.begin(), of_memcpy.end()), 100 * median(of_memcpy),
                static_cast<ssize_t>(at_least(of_memcpy, 0.8)), of_memcpy.size());
}

void print_speedup_summary(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline) {
  struct Range {
    const char* label;
    int64_t lo, hi;
  };
  const Range ranges[] = {{"M >= 2048", 2048, INT64_MAX}, {"64 <= M <= 1024", 64, 1024}, {"M <= 32", 0, 32}};
  std::printf("%s vs %s, geomean speedup:", family.c_str(), baseline.c_str());
  for (const Range& g : ranges) {
    const auto v = speedups(rows, family, baseline, g.lo, g.hi);
    if (v.empty())
      std::printf("  %s: n/a", g.label);
    else
      std::printf("  %s: %.2fx (%zu points)", g.label, geomean(v), v.size());
  }
  std::printf("\n");
  std::string slower;
  size_t n = 0, total = 0;
  for (const BenchRow& r : rows) {
    if (r.family != family || !r.qsgemm_us) continue;
    const auto t = r.baseline(baseline);
    if (!t) continue;
    ++total;
    if (*t / *r.qsgemm_us < 1.0) {
      ++n;
      slower += strprintf("%s%s@M=%lld %.2fx", slower.empty() ? "" : ", ", r.layer.c_str(),
                          static_cast<long long>(r.M), *t / *r.qsgemm_us);
    }
  }
  std::printf("  points below 1.0x vs %s: %zu of %zu%s%s\n", baseline.c_str(), n, total, n ? ": " : "", slower.c_str());
}

// ---- small helpers ---------------------------------------------------------------------------------

std::vector<Layer> select_layers(const std::vector<Layer>& all, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return all;
  for (const std::string& w : wanted) {
    if (std::none_of(all.begin(), all.end(), [&](const Layer& l) { return l.name == w; })) {
      std::string known;
      for (const Layer& l : all) known += (known.empty() ? "" : ", ") + l.name;
      throw std::invalid_argument("unknown layer '" + w + "' (known: " + known + ")");
    }
  }
  std::vector<Layer> out;
  for (const Layer& l : all)
    if (std::find(wanted.begin(), wanted.end(), l.name) != wanted.end()) out.push_back(l);
  return out;
}

const std::vector<int64_t>& default_token_counts() {
  static const std::vector<int64_t> ms = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  return ms;
}

uint32_t seed_of(const std::string& name) {
  uint32_t h = 2166136261u;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

std::vector<int64_t> sample_indices(int64_t n, int64_t count) {
  std::vector<int64_t> out;
  if (n <= 0 || count <= 0) return out;
  if (n <= count) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (count == 1) return {0};
  for (int64_t j = 0; j < count; ++j) out.push_back(j * (n - 1) / (count - 1));
  return out;
}

}  // namespace qsgemm::bench
