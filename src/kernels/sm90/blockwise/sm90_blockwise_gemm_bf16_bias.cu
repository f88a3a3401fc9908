// Blockwise FP8 GEMM kernels with bf16 output and a bias (fp32 or bf16): every configuration x
// every scale-granularity pair it supports (see sm90_blockwise_configs.h).
#include "kernels/sm90/blockwise/sm90_blockwise_gemm.cuh"

namespace qsgemm::kernels {

void run_blockwise_gemm_bf16_bias(const BlockwiseGemmArgs& a, int config, cudaStream_t stream) {
  sm90_blockwise::run_for_output<cutlass::bfloat16_t, /*kBias=*/true>(a, config, stream);
}

}  // namespace qsgemm::kernels
