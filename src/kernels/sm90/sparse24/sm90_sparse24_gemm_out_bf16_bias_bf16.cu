// Explicit instantiation of every configuration of sm90_sparse24_configs.h for output bf16, bias bf16.
// One translation unit per (output, bias) pair so that the build spreads over the cores.
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

template <>
void run_sparse24_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs& a, int config, cudaStream_t stream) {
  switch (config) {
#define QSGEMM_CASE(i, tm, tn, tk, cm, cn, coop, fast, two_partials) \
  case i: Sm90Sparse24Gemm<tm, tn, tk, cm, cn, coop, fast, cutlass::bfloat16_t, cutlass::bfloat16_t, false, two_partials>::run(a, stream); return;
    QSGEMM_SPARSE24_CONFIGS(QSGEMM_CASE)
#undef QSGEMM_CASE
    default: detail::fail("sparse24_linear", Status::kInvalidArgument, "config", detail::cat("no configuration ", config));
  }
}

}  // namespace qsgemm::kernels
