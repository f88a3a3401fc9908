// Explicit instantiation of every kMain row of sm90_sparse24_configs.h for output bf16, bias f32.
// One translation unit per (output, bias) pair so that the build spreads over the cores.
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

template <>
void run_sparse24_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) {
  run_sparse24_unit<Sparse24Unit::kMain, cutlass::bfloat16_t, float>(a, config, stream);
}

}  // namespace qsgemm::kernels
