// Blockwise FP8 GEMM kernels with fp32 output and an fp32 bias: every configuration x
// every scale-granularity pair it supports (see sm90_blockwise_configs.h).
#include "kernels/sm90/blockwise/sm90_blockwise_gemm.cuh"

namespace qsgemm::kernels {

void run_blockwise_gemm_f32_bias(const BlockwiseGemmArgs& a, int config, cudaStream_t stream) {
  sm90_blockwise::run_for_output<float, /*kBias=*/true>(a, config, stream);
}

}  // namespace qsgemm::kernels
