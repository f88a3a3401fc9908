// `qsgemm bench w4a4`: the fused W4A4 + low-rank GEMM (include/qsgemm/w4a4.h) against what a Hopper
// user runs today, timed in the same run (timer.h: L2 flushed, median, graph replays), rows in the
// shape of shared/BENCH_RESULTS.md ("W4A4 + low-rank rows"), written to <out>/w4a4.json after every
// layer. Per (layer, M):
//   family "w4a4_lowrank" (one row per rank r): qsgemm_us = w4a4_linear with rank r; baselines
//     cublaslt_fp8_rowwise        dense FP8 X·Wᵀ (per-token x per-channel scales), same M, N, K
//     qsgemm_w4a4_r0              the same kernel with r = 0: the low-rank overhead
//     qsgemm_w4a4_unfused         W4A4 r = 0, then a cuBLASLt bf16 GEMM Y += X2·W2ᵀ (beta = 1: the add
//                                 is fused into that GEMM's epilogue, cheaper than a separate add)
//     cublas_bf16_lowrank_unfused cuBLASLt bf16 X·Wᵀ, then Y += X2·W2ᵀ (beta = 1)
//     cuda_memcpy_same_bytes      M <= 32: a cudaMemcpy that reads and writes bytes_moved / 2 (the
//                                 decode goal's floor: the weight stream against a copy)
//   family "w4a4_layer" (one row per rank r, from bf16 X): qsgemm_us = w4a4_quantize_activations
//     (down-projection fused) + w4a4_linear; baselines
//     bf16_layer_unfused          cuBLASLt bf16 X·Wᵀ, X2 = X·L1ᵀ, Y += X2·L2ᵀ
//     fp8_layer_rowwise           quantize_fp8_per_token + cuBLASLt FP8 row-wise
//     qsgemm_w4a4_layer_unfused   w4a4_quantize_activations (no down-projection) + W4A4 r = 0 +
//                                 X2 = X·L1ᵀ + Y += X2·L2ᵀ (cuBLASLt bf16)
//   family "quant_w4a4" (one row per rank r): the quantizer alone; baseline cuda_memcpy_same_bytes.
// X1 (all families) is in the staging the heuristic's configuration reads (w4a4_plan ->
// w4a4_x1_dtype: packed INT4 for the mma.sync and decode tiles, e4m3 codes for the wgmma kernel),
// so the quantizer rows time the staging a caller following the plan writes; each row notes which.
// Extra fields per row: "rank", "group" (64). rel_err of the fused GEMM: float64 reference on sampled
// tokens x channels of the same quantized operands.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "bench_common.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::bench {
namespace {

const std::vector<Layer> kW4A4Layers = {
    {"seed", 4096, 4096},
    {"l3-8b.qkv", 6144, 4096},       {"l3-8b.o", 4096, 4096},       {"l3-8b.gate_up", 28672, 4096},
    {"l3-8b.down", 4096, 14336},     {"l3-70b.qkv", 10240, 8192},   {"l3-70b.o", 8192, 8192},
    {"l3-70b.gate_up", 57344, 8192}, {"l3-70b.down", 8192, 28672},
};
const std::vector<int64_t> kW4A4Ms = {1, 16, 64, 256, 1024, 2048, 4096, 8192};
const std::vector<int> kRanks = {0, 16, 32, 64, 128};
constexpr int kGroup = 64;
constexpr int kMaxRank = 128;

// Y[M,N] (bf16, row-major) (+)= A[M,K]·B[N,K]ᵀ with cuBLASLt bf16 (column-major view, like
// cublaslt_baselines.cpp: D = Yᵀ = op(B)·op(A)), the heuristic's top algorithm; beta 0 or 1.
class LtBf16 {
 public:
  LtBf16(LtContext& lt, int64_t M, int64_t N, int64_t K, float beta) : lt_(lt), beta_(beta) {
    auto ok = [&](cublasStatus_t s, const char* what) {
      if (s != CUBLAS_STATUS_SUCCESS) throw BenchError(strprintf("LtBf16 %s: %s", what, cublasLtGetStatusName(s)));
    };
    ok(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    ok(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, K, N, K), "A");
    ok(cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, K, M, K), "B");
    ok(cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, N, M, N), "D");
    cublasLtMatmulPreference_t pref = nullptr;
    ok(cublasLtMatmulPreferenceCreate(&pref), "pref");
    const uint64_t ws = lt.workspace_bytes();
    ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "ws");
    cublasLtMatmulHeuristicResult_t h{};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(lt.handle()), desc_, a_, b_,
                                                            d_, d_, pref, 1, &h, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    ok(s, "heuristic");
    if (found < 1) throw BenchError("LtBf16: no algorithm");
    algo_ = h.algo;
  }
  ~LtBf16() {
    if (d_) cublasLtMatrixLayoutDestroy(d_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }
  LtBf16(const LtBf16&) = delete;
  LtBf16& operator=(const LtBf16&) = delete;
  // y (+)= x · wᵀ; x [M,K], w [N,K], y [M,N], all bf16 dense row-major.
  void run(const void* x, const void* w, void* y, cudaStream_t stream) {
    const float alpha = 1.0f;
    const cublasStatus_t s = cublasLtMatmul(static_cast<cublasLtHandle_t>(lt_.handle()), desc_, &alpha, w, a_, x, b_,
                                            &beta_, y, d_, y, d_, &algo_, lt_.workspace(), lt_.workspace_bytes(), stream);
    if (s != CUBLAS_STATUS_SUCCESS) throw BenchError(strprintf("LtBf16 matmul: %s", cublasLtGetStatusName(s)));
  }

 private:
  LtContext& lt_;
  float beta_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// The best time of a vendor baseline over its first few algorithms (each timed on its own).
double time_baseline(Timer& timer, Baseline& b, const TimeOptions& to, const std::function<void(cudaStream_t)>& before = {}) {
  double best = 1e30;
  const int n = std::min(3, std::max(1, b.algorithm_count()));
  for (int i = 0; i < n; ++i) {
    b.select_algorithm(i);
    best = std::min(best, timer.time_us(
                              [&](cudaStream_t st) {
                                if (before) before(st);
                                b.run(st);
                              },
                              to));
  }
  return best;
}

// ‖Y − ref‖/‖ref‖ over sampled tokens x channels of the fused GEMM's output (bf16 y [M,N]).
// x1: packed [M][K/2] or (x1_e4m3) e4m3 codes [M][K], packed here for the reference.
double sampled_rel_err(int64_t M, int64_t N, int64_t K, int R, const void* x1, bool x1_e4m3, const float* sx,
                       const void* w1, const float* sw, const void* x2, const void* w2, const void* y,
                       cudaStream_t stream) {
  const std::vector<int64_t> toks = sample_indices(M, 8), chans = sample_indices(N, 64);
  const int64_t ng = K / kGroup;
  std::vector<uint8_t> x1r;
  if (x1_e4m3) {
    const std::vector<uint8_t> codes = download_rows(x1, static_cast<size_t>(K), toks, stream);
    x1r.resize(codes.size() / 2);
    for (size_t i = 0; i < x1r.size(); ++i)
      x1r[i] = int4_pack(static_cast<int>(fp8_e4m3_decode(codes[2 * i])),
                         static_cast<int>(fp8_e4m3_decode(codes[2 * i + 1])));
  } else {
    x1r = download_rows(x1, static_cast<size_t>(K / 2), toks, stream);
  }
  const std::vector<uint8_t> w1r = download_rows(w1, static_cast<size_t>(K / 2), chans, stream);
  const std::vector<uint8_t> x2r = R ? download_rows(x2, static_cast<size_t>(R) * 2, toks, stream) : std::vector<uint8_t>();
  const std::vector<uint8_t> w2r = R ? download_rows(w2, static_cast<size_t>(R) * 2, chans, stream) : std::vector<uint8_t>();
  const std::vector<uint8_t> yr = download_rows(y, static_cast<size_t>(N) * 2, toks, stream);
  std::vector<int64_t> sxi, swi;
  for (int64_t t : toks)
    for (int64_t g = 0; g < ng; ++g) sxi.push_back(g * w4a4_x_scale_ld(M) + t);
  for (int64_t c : chans)
    for (int64_t g = 0; g < ng; ++g) swi.push_back(c * ng + g);
  const std::vector<float> sxs = download_floats(sx, sxi, stream), sws = download_floats(sw, swi, stream);
  const int64_t T = static_cast<int64_t>(toks.size()), C = static_cast<int64_t>(chans.size());
  std::vector<float> x2f(static_cast<size_t>(T * R)), w2f(static_cast<size_t>(C * R));
  for (size_t i = 0; i < x2f.size(); ++i) x2f[i] = bf16_decode(static_cast<uint16_t>(x2r[2 * i] | (x2r[2 * i + 1] << 8)));
  for (size_t i = 0; i < w2f.size(); ++i) w2f[i] = bf16_decode(static_cast<uint16_t>(w2r[2 * i] | (w2r[2 * i + 1] << 8)));
  std::vector<double> ref(static_cast<size_t>(T * C));
  ref::gemm_w4a4_lowrank(x1r.data(), w1r.data(), sxs.data(), sws.data(), T, C, K, kGroup, x2f.data(), w2f.data(), R,
                         nullptr, ref.data());
  double num = 0, den = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      const size_t at = static_cast<size_t>((t * N + chans[static_cast<size_t>(c)]) * 2);
      const double o = bf16_decode(static_cast<uint16_t>(yr[at] | (yr[at + 1] << 8)));
      const double r = ref[static_cast<size_t>(t * C + c)];
      if (!std::isfinite(o)) return INFINITY;
      num += (o - r) * (o - r);
      den += r * r;
    }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

int bench_w4a4(const BenchOptions& options) {
  std::vector<Layer> layers;
  try {
    layers = select_layers(kW4A4Layers, options.layers.empty() ? std::vector<std::string>{"seed"} : options.layers);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "qsgemm bench w4a4: %s\n", e.what());
    return 2;
  }
  std::vector<int64_t> ms = options.ms.empty() ? kW4A4Ms : options.ms;
  std::vector<int> ranks = options.ranks.empty() ? kRanks : options.ranks;
  if (options.quick) {
    layers.resize(1);
    ms = {16, 2048};
    ranks = {0, 64};
  }
  const std::string path = options.json_path.empty() ? options.out_dir + "/w4a4.json" : options.json_path;
  if (options.estimate_only) {
    std::printf("bench w4a4: %zu layers x %zu M x %zu ranks -> %s\n", layers.size(), ms.size(), ranks.size(),
                path.c_str());
    return 0;
  }
  const DeviceInfo d = device_info();
  if (!d.supports_kernels()) {
    std::fprintf(stderr, "qsgemm bench w4a4: needs an sm_90a GPU (%s)\n", d.present ? d.name.c_str() : d.error.c_str());
    return 2;
  }
  cudaStream_t stream;
  QSB_CHECK_CUDA(cudaStreamCreate(&stream));
  Timer timer(stream);
  LtContext lt(options.algo_search);
  BenchReport report = make_report(measure_copy_bandwidth_GBps(timer));
  TimeOptions to;
  to.graph = true;
  to.reps = options.reps;
  to.budget_ms = options.budget_ms;
  to.dirty_flush = options.dirty_flush;
  int rc = 0;
  std::printf("%-14s %6s %4s %-16s %10s %10s %10s %10s %10s  %s\n", "layer", "M", "r", "family", "qsgemm_us",
              "fp8_rw_us", "r0_us", "unfused_us", "bf16_us", "rel_err");
  for (const Layer& layer : layers) {
    const int64_t N = layer.N, K = layer.K, ng = K / kGroup;
    try {
      // The weight side, once per layer: W bf16 -> packed INT4 + scales; W2 (= L2), L1; FP8 W for cuBLASLt.
      DeviceBuffer w(static_cast<size_t>(N * K * 2)), w1(static_cast<size_t>(N * K / 2)), sw(static_cast<size_t>(N * ng * 4)),
          wq(static_cast<size_t>(N * K)), w2(static_cast<size_t>(N * kMaxRank * 2)), l1(static_cast<size_t>(kMaxRank * K * 2));
      const uint32_t seed = seed_of(layer.name);
      fill_bf16(w.get(), static_cast<size_t>(N * K), seed, 1.0f, stream);
      fill_e4m3(wq.get(), static_cast<size_t>(N * K), seed + 1, stream);
      fill_bf16(l1.get(), static_cast<size_t>(kMaxRank * K), seed + 2, 0.05f, stream);
      w4a4_pack_weight(MatrixView(w.get(), DType::kBF16, N, K), kGroup, MatrixView(w1.get(), DType::kI4x2, N, K / 2),
                       sw.as<float>(), stream);
      for (const int64_t M : ms) {
        // X1 in the staging the heuristic's configuration reads (e4m3 codes for the wgmma kernel,
        // packed INT4 for the decode tile): what a caller following w4a4_plan / w4a4_x1_dtype runs.
        const DType staging = w4a4_x1_dtype(w4a4_plan(M, N, K, 64, W4A4Options{}, d.sm_count, kGroup));
        const bool x1_bytes_staging = staging == DType::kE4M3;
        const int64_t x1_bytes = x1_bytes_staging ? M * K : M * K / 2;
        const int64_t ld_sx = w4a4_x_scale_ld(M);  // the layout the Python quantizer allocates
        DeviceBuffer x(static_cast<size_t>(M * K * 2)), x1(static_cast<size_t>(M * K)),
            sx(static_cast<size_t>(ng * ld_sx * 4)), xq(static_cast<size_t>(M * K)), sxq(static_cast<size_t>(M * 4)),
            x2(static_cast<size_t>(M * kMaxRank * 2)), y(static_cast<size_t>(M * N * 2));
        fill_bf16(x.get(), static_cast<size_t>(M * K), seed + 3, 2.0f, stream);
        fill_e4m3(xq.get(), static_cast<size_t>(M * K), seed + 4, stream);
        const GemmOperands fp8_ops{M, N, K, xq.get(), wq.get(), y.get()};
        const GemmOperands bf16_ops{M, N, K, x.get(), w.get(), y.get()};
        std::unique_ptr<Baseline> fp8 = make_cublaslt_fp8_rowwise(lt, fp8_ops, stream);
        std::unique_ptr<Baseline> bf16 = make_cublas_bf16(lt, bf16_ops, stream);
        // Per M, independent of r: the FP8 and bf16 dense GEMMs, the FP8 layer, W4A4 with r = 0.
        const double fp8_us = fp8->available() ? time_baseline(timer, *fp8, to) : NAN;
        const double bf16_us = bf16->available() ? time_baseline(timer, *bf16, to) : NAN;
        const double fp8_layer_us =
            fp8->available()
                ? time_baseline(timer, *fp8, to,
                                [&](cudaStream_t st) {
                                  quantize_fp8_per_token(MatrixView(x.get(), DType::kBF16, M, K),
                                                         MatrixView(xq.get(), DType::kE4M3, M, K), sxq.as<float>(),
                                                         false, st);
                                })
                : NAN;
        const MatrixView x1v = x1_bytes_staging ? MatrixView(x1.get(), DType::kE4M3, M, K)
                                                : MatrixView(x1.get(), DType::kI4x2, M, K / 2);
        auto gemm = [&](int r, cudaStream_t st) {
          w4a4_linear(x1v, sx.as<float>(), ld_sx,
                      MatrixView(w1.get(), DType::kI4x2, N, K / 2), sw.as<float>(), kGroup,
                      MatrixView(x2.get(), DType::kBF16, M, r), MatrixView(w2.get(), DType::kBF16, N, r), {},
                      MatrixView(y.get(), DType::kBF16, M, N), W4A4Options{}, st);
        };
        auto quant = [&](int r, cudaStream_t st) {
          w4a4_quantize_activations(MatrixView(x.get(), DType::kBF16, M, K), kGroup,
                                    MatrixView(l1.get(), DType::kBF16, r, K),
                                    x1v, sx.as<float>(), ld_sx,
                                    MatrixView(x2.get(), DType::kBF16, M, r), st);
        };
        quant(kMaxRank, stream);  // real codes and scales for the timed GEMMs
        const double r0_us = timer.time_us([&](cudaStream_t st) { gemm(0, st); }, to);
        const std::string config = w4a4_config_name(w4a4_choose_config(M, N, K, 64, d.sm_count, kGroup));
        for (const int r : ranks) {
          std::unique_ptr<LtBf16> up, down;
          if (r > 0) {
            up = std::make_unique<LtBf16>(lt, M, N, r, 1.0f);    // Y += X2·W2ᵀ
            down = std::make_unique<LtBf16>(lt, M, r, K, 0.0f);  // X2 = X·L1ᵀ
          }
          const double us = timer.time_us([&](cudaStream_t st) { gemm(r, st); }, to);
          const double unfused_us = timer.time_us(
              [&](cudaStream_t st) {
                gemm(0, st);
                if (up) up->run(x2.get(), w2.get(), y.get(), st);
              },
              to);
          double bf16_lr_us = NAN;
          if (bf16->available())
            bf16_lr_us = bf16_us +
                         (up ? timer.time_us([&](cudaStream_t st) { up->run(x2.get(), w2.get(), y.get(), st); }, to) : 0.0);
          // rel_err of the fused GEMM on the real operands (quantizer output of x, packer output of w;
          // x2 dense with ld r, as the GEMM reads it).
          quant(r, stream);
          gemm(r, stream);
          QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
          const double err = options.check ? sampled_rel_err(M, N, K, r, x1.get(), x1_bytes_staging, sx.as<float>(), w1.get(),
                                                            sw.as<float>(), x2.get(), w2.get(), y.get(), stream)
                                           : NAN;
          BenchRow row;
          row.family = "w4a4_lowrank";
          row.layer = layer.name;
          row.M = M;
          row.N = N;
          row.K = K;
          row.config = config;
          row.qsgemm_us = us;
          if (std::isfinite(fp8_us)) row.baselines_us.push_back({"cublaslt_fp8_rowwise", fp8_us});
          row.baselines_us.push_back({"qsgemm_w4a4_r0", r0_us});
          row.baselines_us.push_back({"qsgemm_w4a4_unfused", unfused_us});
          if (std::isfinite(bf16_lr_us)) row.baselines_us.push_back({"cublas_bf16_lowrank_unfused", bf16_lr_us});
          row.bytes_moved = x1_bytes + N * K / 2 + (M + N) * ng * 4 + (M + N) * r * 2 + M * N * 2;
          if (M <= kDecodeMaxM) {  // the decode goal's floor: a cudaMemcpy moving the same bytes (read + write)
            std::unique_ptr<Baseline> floor = make_memcpy_same_bytes(static_cast<size_t>(row.bytes_moved / 2), stream);
            row.baselines_us.push_back({"cuda_memcpy_same_bytes", timer.time_us([&](cudaStream_t st) { floor->run(st); }, to)});
          }
          if (std::isfinite(err)) row.rel_err = err;
          row.extra = {{"rank", r}, {"group", kGroup}};
          row.add_note(std::string("x1 staging ") + dtype_name(staging));
          row.timing = "graph";
          if (!fp8->available()) row.add_note("cublaslt_fp8_rowwise: " + fp8->unavailable_reason());
          std::printf("%-14s %6lld %4d %-16s %10.1f %10.1f %10.1f %10.1f %10.1f  %.2e\n", layer.name.c_str(),
                      static_cast<long long>(M), r, "w4a4_lowrank", us, fp8_us, r0_us, unfused_us, bf16_lr_us, err);
          report.rows.push_back(row);

          // The quantizer alone and the whole layer.
          const double q_us = timer.time_us([&](cudaStream_t st) { quant(r, st); }, to);
          const size_t q_bytes = static_cast<size_t>(M * K * 2 + x1_bytes + ng * M * 4 + M * r * 2 + r * K * 2);
          std::unique_ptr<Baseline> copy = make_memcpy_same_bytes(q_bytes / 2, stream);
          const double copy_us = timer.time_us([&](cudaStream_t st) { copy->run(st); }, to);
          BenchRow qrow;
          qrow.family = "quant_w4a4";
          qrow.layer = layer.name;
          qrow.M = M;
          qrow.N = r;
          qrow.K = K;
          qrow.config = "sm90_w4a4_quantize";
          qrow.qsgemm_us = q_us;
          qrow.baselines_us.push_back({"cuda_memcpy_same_bytes", copy_us});
          qrow.bytes_moved = static_cast<int64_t>(q_bytes);
          qrow.extra = {{"rank", r}, {"group", kGroup}};
          qrow.add_note(std::string("x1 staging ") + dtype_name(staging));
          qrow.timing = "graph";
          report.rows.push_back(qrow);

          const double layer_us = timer.time_us(
              [&](cudaStream_t st) {
                quant(r, st);
                gemm(r, st);
              },
              to);
          const double layer_unfused_us = timer.time_us(
              [&](cudaStream_t st) {
                w4a4_quantize_activations(MatrixView(x.get(), DType::kBF16, M, K), kGroup,
                                          x1v, sx.as<float>(), ld_sx, st);
                gemm(0, st);
                if (down) down->run(x.get(), l1.get(), x2.get(), st);
                if (up) up->run(x2.get(), w2.get(), y.get(), st);
              },
              to);
          double bf16_layer_us = NAN;
          if (bf16->available())
            bf16_layer_us = bf16_us +
                            (r > 0 ? timer.time_us(
                                         [&](cudaStream_t st) {
                                           down->run(x.get(), l1.get(), x2.get(), st);
                                           up->run(x2.get(), w2.get(), y.get(), st);
                                         },
                                         to)
                                   : 0.0);
          BenchRow lrow;
          lrow.family = "w4a4_layer";
          lrow.layer = layer.name;
          lrow.M = M;
          lrow.N = N;
          lrow.K = K;
          lrow.config = config;
          lrow.qsgemm_us = layer_us;
          if (std::isfinite(bf16_layer_us)) lrow.baselines_us.push_back({"bf16_layer_unfused", bf16_layer_us});
          if (std::isfinite(fp8_layer_us)) lrow.baselines_us.push_back({"fp8_layer_rowwise", fp8_layer_us});
          lrow.baselines_us.push_back({"qsgemm_w4a4_layer_unfused", layer_unfused_us});
          lrow.bytes_moved = M * K * 2 + N * K / 2 + N * ng * 4 + (N + K) * r * 2 + M * N * 2;
          lrow.extra = {{"rank", r}, {"group", kGroup}};
          lrow.timing = "graph";
          lrow.add_note("baselines summed from separately timed kernels (bf16 layer: GEMM + low-rank pair)");
          std::printf("%-14s %6lld %4d %-16s %10.1f %10.1f %10s %10.1f %10.1f  quant %.1f us (memcpy %.1f)\n",
                      layer.name.c_str(), static_cast<long long>(M), r, "w4a4_layer", layer_us, fp8_layer_us, "-",
                      layer_unfused_us, bf16_layer_us, q_us, copy_us);
          report.rows.push_back(lrow);
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qsgemm bench w4a4: layer %s: %s\n", layer.name.c_str(), e.what());
      rc = 1;
      const std::string lost = cuda_context_error();
      if (!lost.empty()) {
        std::fprintf(stderr, "CUDA context lost: %s\n", lost.c_str());
        break;
      }
    }
    try {
      write_json(path, report);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qsgemm bench w4a4: %s\n", e.what());
      rc = 1;
    }
  }
  std::printf("wrote %s (%zu rows)\n", path.c_str(), report.rows.size());
  cudaStreamDestroy(stream);
  return rc;
}

}  // namespace qsgemm::bench
