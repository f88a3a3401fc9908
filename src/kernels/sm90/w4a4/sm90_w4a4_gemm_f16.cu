// The fused W4A4 + low-rank GEMM for f16 output: every configuration x group (sm90_w4a4_gemm.cuh).
// One output dtype per translation unit, so that two cores build them in parallel.
#include "kernels/sm90/w4a4/sm90_w4a4_gemm.cuh"

namespace qsgemm::kernels {

void run_w4a4_gemm_f16(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  w4a4_gemm::run<__half>(a, config, stream);
}

}  // namespace qsgemm::kernels
