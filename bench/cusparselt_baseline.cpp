// bench/cusparselt_baseline.cpp — see cusparselt_baseline.h.
//
// Called as in shared/tools/cusparselt_fp8_bench.cu: D[N,M] (col-major == Y[M,N] row-major) =
// W[N,K] · X[M,K]ᵀ with W the structured (2:4) operand A, stored K x N col-major and transposed;
// e4m3 in, bf16 out, float32 compute, alpha = 1 and no scales. The plan is made once per shape and
// cusparseLtMatmulSearch picks the best algorithm before any timed call; the workspace is allocated
// then too, so a call can be captured into a CUDA graph (PointTimer checks that it can be).
// Its dense FP8 operands need M to be a multiple of 16 (cusparseLtDenseDescriptorInit: NOT_SUPPORTED
// otherwise, M < 16 included), so at any other M it runs round_up(M, 16) tokens, what its user must
// do: X's rows copied into a zero-padded buffer once, outside the timing (so the padding's copy costs
// it nothing), Y's first M rows the output; the row's note says so.
#include "cusparselt_baseline.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <type_traits>
#include <vector>

#include "bench_util.h"
#include "qsgemm/reference.h"

#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER
#include <cusparseLt.h>
#endif

namespace qsgemm::bench {

// The library is not linked: it is dlopen'ed at run time ("libcusparseLt.so.0" from the loader's
// path, then $QSGEMM_CUSPARSELT_LIB, a file or the folder holding it), and the types come from the
// PyPI wheel's cusparseLt.h when CMake found it (QSGEMM_HAVE_CUSPARSELT_HEADER).
namespace {

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
    const cusparseLtHandle_t* h = &api_.handle;
    const int64_t N = ops.N, K = ops.K, M = (ops.M + 15) / 16 * 16;  // the tokens it runs
    if (ops.ldx() != K) {
      reason_ = strprintf("cuSPARSELt is called with packed X rows (ld_x=%lld, K=%lld)", static_cast<long long>(ops.ldx()),
                          static_cast<long long>(K));
      return;
    }
    if (M != ops.M) {
      try {
        pad(M, stream);
      } catch (const BenchError& e) {
        reason_ = e.what();
        return;
      }
      note_ = strprintf("cusparselt_fp8 ran M=%lld (padded to a multiple of 16; the padding's copy untimed)",
                        static_cast<long long>(M));
    }
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

  AlgoChoice algorithm() const override {
    AlgoChoice a;
    a.how = "cusparseLtMatmulSearch";
    a.id = algorithm_;
    return a;
  }
  const GemmOperands* operands() const override { return &ops_; }
  std::string note() const override { return note_; }

  // Unit scales on its own pruned weight: exactly what it computes.
  bool reference(const std::vector<int64_t>& tokens, const std::vector<int64_t>& channels, std::vector<double>& expect,
                 cudaStream_t s) override {
    const int64_t K = ops_.K;
    const auto T = static_cast<int64_t>(tokens.size()), C = static_cast<int64_t>(channels.size());
    const std::vector<uint8_t> x = download_rows(ops_.x, static_cast<size_t>(K), tokens, s);
    const std::vector<uint8_t> w = download_rows(pruned_.get(), static_cast<size_t>(K), channels, s);
    expect.assign(static_cast<size_t>(T * C), 0.0);
    const float one = 1.0f;
    parallel_for(T, [&](int64_t t) {
      ref::gemm_fp8_rowwise(&x[static_cast<size_t>(t * K)], K, w.data(), K, 1, C, K, &one, true, &one, true, nullptr,
                            &expect[static_cast<size_t>(t * C)]);
    });
    return true;
  }

 private:
  bool fail(cusparseStatus_t s, const char* what) {
    if (s == CUSPARSE_STATUS_SUCCESS) return false;
    reason_ = strprintf("%s: %s", what, api_.describe(s).c_str());
    return true;
  }

  // X and Y of padded_m rows: X's M rows, then zeros (bytes; K e4m3 per row); ops_ points at them,
  // with M still the caller's, so that the checks read the M rows that count.
  void pad(int64_t padded_m, cudaStream_t stream) {
    const int64_t M = ops_.M, N = ops_.N, K = ops_.K;
    x_pad_ = DeviceBuffer(static_cast<size_t>(padded_m * K));
    y_pad_ = DeviceBuffer(static_cast<size_t>(padded_m * N * 2));
    QSB_CHECK_CUDA(cudaMemsetAsync(x_pad_.get(), 0, x_pad_.bytes(), stream));
    if (M > 0) QSB_CHECK_CUDA(cudaMemcpyAsync(x_pad_.get(), ops_.x, static_cast<size_t>(M * K), cudaMemcpyDeviceToDevice, stream));
    ops_.x = x_pad_.get();
    ops_.y = y_pad_.get();
  }

  // Prune, compress, search: the one-time work, after the plan exists.
  void prepare(cudaStream_t stream) {
    const cusparseLtHandle_t* h = &api_.handle;
    const int64_t N = ops_.N, K = ops_.K;
    // Prune a copy of the dense weight (2:4 along K) and compress it into the library's format.
    // The pruned copy is kept: reference() reads its rows.
    pruned_ = DeviceBuffer(static_cast<size_t>(N * K));
    QSB_CHECK_CUDA(cudaMemcpyAsync(pruned_.get(), ops_.w, pruned_.bytes(), cudaMemcpyDeviceToDevice, stream));
    if (fail(api_.cusparseLtSpMMAPrune(h, &mm_, pruned_.get(), pruned_.get(), CUSPARSELT_PRUNE_SPMMA_TILE, stream),
             "cusparseLtSpMMAPrune"))
      return;
    size_t compressed_bytes = 0, buffer_bytes = 0;
    if (fail(api_.cusparseLtSpMMACompressedSize(h, &plan_, &compressed_bytes, &buffer_bytes),
             "cusparseLtSpMMACompressedSize"))
      return;
    compressed_ = DeviceBuffer(compressed_bytes);
    DeviceBuffer scratch(std::max<size_t>(buffer_bytes, 16));
    if (fail(api_.cusparseLtSpMMACompress(h, &plan_, pruned_.get(), compressed_.get(), scratch.get(), stream),
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
    QSB_CHECK_CUDA(cudaStreamSynchronize(stream));  // before `scratch` is freed
  }

  CusparseLtApi& api_;
  GemmOperands ops_;
  cusparseLtMatDescriptor_t a_{}, b_{}, d_{};
  cusparseLtMatmulDescriptor_t mm_{};
  cusparseLtMatmulAlgSelection_t sel_{};
  cusparseLtMatmulPlan_t plan_{};
  bool have_a_ = false, have_b_ = false, have_d_ = false, have_sel_ = false, have_plan_ = false;
  DeviceBuffer pruned_, compressed_, workspace_, x_pad_, y_pad_;
  int algorithm_ = -1;
  std::string note_;
};

#endif  // QSGEMM_HAVE_CUSPARSELT_HEADER

}  // namespace

std::unique_ptr<Baseline> make_cusparselt_fp8(const GemmOperands& ops, cudaStream_t stream) {
#ifdef QSGEMM_HAVE_CUSPARSELT_HEADER
  return std::make_unique<CusparseLtFp8>(ops, stream);
#else
  (void)ops, (void)stream;
  return make_unavailable("cusparselt_fp8", cusparselt_status());
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

}  // namespace qsgemm::bench
