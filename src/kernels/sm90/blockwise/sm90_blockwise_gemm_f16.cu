// Blockwise FP8 GEMM kernels with fp16 output and no bias: every configuration x every
// scale-granularity pair it supports (see sm90_blockwise_configs.h). One file per output
// dtype and bias mode so that they compile in parallel.
#include "kernels/sm90/blockwise/sm90_blockwise_gemm.cuh"

namespace qsgemm::kernels {

void run_blockwise_gemm_f16(const BlockwiseGemmArgs& a, int config, cudaStream_t stream) {
  sm90_blockwise::run_for_output<cutlass::half_t, /*kBias=*/false>(a, config, stream);
}

}  // namespace qsgemm::kernels
