// bench/cublaslt_baselines.cpp — see cublaslt_baselines.h.
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
//
// Algorithms: cublasLtMatmulAlgoGetHeuristic with requestedAlgoCount = LtContext::max_algorithms();
// every result whose state is CUBLAS_STATUS_SUCCESS is a candidate, in the heuristic's order. All
// of them fit the shared 32 MiB workspace (the preference caps it), which every call gets.
#include "cublaslt_baselines.h"

#include <cublasLt.h>

#include <algorithm>

#include "qsgemm/formats.h"
#include "qsgemm/reference.h"

namespace qsgemm::bench {
namespace {

const char* lt_status(cublasStatus_t s) { return cublasLtGetStatusName(s); }

enum class Kind { kRowwise, kTensor, kBlock128, kBf16 };

class CublasLtGemm final : public Baseline {
 public:
  struct Spec {
    Kind kind = Kind::kBf16;
    const float* a_scale = nullptr;  // the weight's scales
    const float* b_scale = nullptr;  // the activations' scales
  };

  CublasLtGemm(std::string name, LtContext& lt, const GemmOperands& ops, const Spec& spec,
               std::vector<DeviceBuffer> owned)
      : Baseline(std::move(name)), lt_(lt), ops_(ops), spec_(spec), owned_(std::move(owned)) {
    auto fail = [&](cublasStatus_t s, const char* what) {
      if (s == CUBLAS_STATUS_SUCCESS) return false;
      reason_ = strprintf("%s: %s", what, lt_status(s));
      return true;
    };
    const bool fp8 = spec.kind != Kind::kBf16;
    const cudaDataType_t ab_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    if (fail(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate")) return;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "set TRANSA")) return;
    if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "set TRANSB")) return;
    if (fp8) {
      int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
      if (spec.kind == Kind::kRowwise) a_mode = b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      if (spec.kind == Kind::kBlock128) {
        a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      }
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode),
               "set A_SCALE_MODE"))
        return;
      if (fail(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode),
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
    if (fail(cublasLtMatrixLayoutCreate(&a_, ab_type, K, N, ops.ldw()), "A layout")) return;
    if (fail(cublasLtMatrixLayoutCreate(&b_, ab_type, K, M, ops.ldx()), "B layout")) return;
    if (fail(cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, N, M, static_cast<int64_t>(N)), "D layout")) return;
    if (fail(cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate")) return;
    const uint64_t ws = lt.workspace_bytes();
    if (fail(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             "set MAX_WORKSPACE_BYTES"))
      return;
    std::vector<cublasLtMatmulHeuristicResult_t> h(static_cast<size_t>(std::max(1, lt.max_algorithms())));
    int found = 0;
    if (fail(cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(lt.handle()), desc_, a_, b_, d_, d_, pref_,
                                            static_cast<int>(h.size()), h.data(), &found),
             "cublasLtMatmulAlgoGetHeuristic"))
      return;
    for (int i = 0; i < found; ++i)
      if (h[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) algos_.push_back(h[static_cast<size_t>(i)].algo);
    if (algos_.empty()) reason_ = "cublasLtMatmulAlgoGetHeuristic found no algorithm";
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
                                            ops_.x, b_, &beta, ops_.y, d_, ops_.y, d_, &algos_[selected_],
                                            lt_.workspace(), lt_.workspace_bytes(), stream);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw BenchError(strprintf("%s: cublasLtMatmul (algorithm %zu): %s", name_.c_str(), selected_, lt_status(s)));
  }

  int algorithm_count() const override { return static_cast<int>(algos_.size()); }
  void select_algorithm(int index) override {
    selected_ = static_cast<size_t>(std::clamp(index, 0, std::max(0, algorithm_count() - 1)));
  }
  AlgoChoice algorithm() const override {
    AlgoChoice a;
    a.how = "heuristic";
    a.index = static_cast<int>(selected_);
    a.of = algorithm_count();
    int id = -1;
    if (selected_ < algos_.size() &&
        cublasLtMatmulAlgoConfigGetAttribute(&algos_[selected_], CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr) ==
            CUBLAS_STATUS_SUCCESS)
      a.id = id;
    return a;
  }
  const GemmOperands* operands() const override { return &ops_; }

  bool reference(const std::vector<int64_t>& tokens, const std::vector<int64_t>& channels, std::vector<double>& expect,
                 cudaStream_t s) override {
    const int64_t M = ops_.M, N = ops_.N, K = ops_.K;
    const auto T = static_cast<int64_t>(tokens.size()), C = static_cast<int64_t>(channels.size());
    expect.assign(static_cast<size_t>(T * C), 0.0);
    if (spec_.kind == Kind::kBf16) {
      const std::vector<uint8_t> xb = download_rows(ops_.x, static_cast<size_t>(2 * K), tokens, s);
      const std::vector<uint8_t> wb = download_rows(ops_.w, static_cast<size_t>(2 * K), channels, s);
      const auto* x16 = reinterpret_cast<const uint16_t*>(xb.data());
      const auto* w16 = reinterpret_cast<const uint16_t*>(wb.data());
      std::vector<double> wd(static_cast<size_t>(C * K));
      for (size_t i = 0; i < wd.size(); ++i) wd[i] = bf16_decode(w16[i]);
      parallel_for(T, [&](int64_t t) {
        std::vector<double> xd(static_cast<size_t>(K));
        for (int64_t k = 0; k < K; ++k) xd[static_cast<size_t>(k)] = bf16_decode(x16[static_cast<size_t>(t * K + k)]);
        for (int64_t j = 0; j < C; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += xd[static_cast<size_t>(k)] * wd[static_cast<size_t>(j * K + k)];
          expect[static_cast<size_t>(t * C + j)] = acc;
        }
      });
      return true;
    }
    const std::vector<uint8_t> x =
        download_rows(ops_.x, static_cast<size_t>(K), tokens, s, static_cast<size_t>(ops_.ldx()));
    const std::vector<uint8_t> w =
        download_rows(ops_.w, static_cast<size_t>(K), channels, s, static_cast<size_t>(ops_.ldw()));
    if (spec_.kind == Kind::kRowwise || spec_.kind == Kind::kTensor) {
      const bool tensor = spec_.kind == Kind::kTensor;
      const std::vector<float> sx = download_floats(spec_.b_scale, tensor ? std::vector<int64_t>{0} : tokens, s);
      const std::vector<float> sw = download_floats(spec_.a_scale, tensor ? std::vector<int64_t>{0} : channels, s);
      parallel_for(T, [&](int64_t t) {
        ref::gemm_fp8_rowwise(&x[static_cast<size_t>(t * K)], K, w.data(), K, 1, C, K, &sx[tensor ? 0 : t], true,
                              sw.data(), tensor, nullptr, &expect[static_cast<size_t>(t * C)]);
      });
      return true;
    }
    // Block128: the weight's 128x128 block scales become per-row groups of 128 (the reference's
    // kGroup1x128 for w: [C][G]); the activations' [G][M] scales of token t become [G] with ld 1.
    const int64_t G = ceil_div(K, kScaleGroupK), G4 = (G + 3) / 4 * 4;
    std::vector<int64_t> wi, xi;
    for (int64_t j = 0; j < C; ++j)
      for (int64_t g = 0; g < G; ++g) wi.push_back((channels[static_cast<size_t>(j)] / kScaleGroupK) * G4 + g);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < G; ++g) xi.push_back(g * M + tokens[static_cast<size_t>(t)]);
    const std::vector<float> sw = download_floats(spec_.a_scale, wi, s), sx = download_floats(spec_.b_scale, xi, s);
    (void)N;
    parallel_for(T, [&](int64_t t) {
      ref::gemm_fp8_blockwise(&x[static_cast<size_t>(t * K)], K, w.data(), K, 1, C, K, ScaleGranularity::kGroup1x128,
                              &sx[static_cast<size_t>(t * G)], 1, ScaleGranularity::kGroup1x128, sw.data(), nullptr,
                              &expect[static_cast<size_t>(t * C)]);
    });
    return true;
  }

 private:
  LtContext& lt_;
  GemmOperands ops_;
  Spec spec_;
  std::vector<DeviceBuffer> owned_;  // scale buffers
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos_;
  size_t selected_ = 0;
};

// Random positive scales of about the size that quantization of unit-scale data produces.
DeviceBuffer random_scales(size_t n, uint32_t seed, cudaStream_t stream) {
  DeviceBuffer b(4 * std::max<size_t>(n, 1));
  fill_f32(b.as<float>(), std::max<size_t>(n, 1), seed, 0.5f / 448.0f, 2.0f / 448.0f, stream);
  return b;
}

std::unique_ptr<Baseline> make_scaled(const char* name, Kind kind, LtContext& lt, const GemmOperands& ops,
                                      size_t w_scales, size_t x_scales, cudaStream_t stream) {
  std::vector<DeviceBuffer> owned;
  owned.push_back(random_scales(w_scales, 0xA11CE, stream));
  owned.push_back(random_scales(x_scales, 0xB0B, stream));
  CublasLtGemm::Spec spec;
  spec.kind = kind;
  spec.a_scale = owned[0].as<float>();
  spec.b_scale = owned[1].as<float>();
  return std::make_unique<CublasLtGemm>(name, lt, ops, spec, std::move(owned));
}

}  // namespace

LtContext::LtContext(int max_algorithms) : workspace_(size_t(32) << 20), max_algorithms_(std::max(1, max_algorithms)) {
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t s = cublasLtCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) throw BenchError(std::string("cublasLtCreate: ") + lt_status(s));
  handle_ = h;
}

LtContext::~LtContext() {
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

std::unique_ptr<Baseline> make_cublaslt_fp8_rowwise(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  // weight per channel [N], activations per token [M]
  return make_scaled("cublaslt_fp8_rowwise", Kind::kRowwise, lt, ops, static_cast<size_t>(ops.N),
                     static_cast<size_t>(ops.M), stream);
}

std::unique_ptr<Baseline> make_cublaslt_fp8_tensor(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  return make_scaled("cublaslt_fp8_tensor", Kind::kTensor, lt, ops, 1, 1, stream);
}

std::unique_ptr<Baseline> make_cublaslt_fp8_block128(LtContext& lt, const GemmOperands& ops, cudaStream_t stream) {
  const size_t kb = static_cast<size_t>((ops.K + 127) / 128), kb4 = (kb + 3) / 4 * 4;
  const size_t nb = static_cast<size_t>((ops.N + 127) / 128);
  // weight [ceil(N/128)][L4], activations [ceil(K/128)][M]
  return make_scaled("cublaslt_fp8_block128", Kind::kBlock128, lt, ops, nb * kb4, kb * static_cast<size_t>(ops.M),
                     stream);
}

std::unique_ptr<Baseline> make_cublas_bf16(LtContext& lt, const GemmOperands& ops, cudaStream_t) {
  return std::make_unique<CublasLtGemm>("cublas_bf16", lt, ops, CublasLtGemm::Spec{}, std::vector<DeviceBuffer>{});
}

}  // namespace qsgemm::bench
