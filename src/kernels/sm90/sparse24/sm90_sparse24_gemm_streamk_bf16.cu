// Explicit instantiation of the stream-K configurations (the kStreamK rows of sm90_sparse24_configs.h) for the
// bf16 outputs (bias bf16 or f32). Kept apart from the 9-configuration translation units so that no
// unit's compile grows (each of those peaks at ~10 GB in cicc, docs/build.md).
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_STREAMK_INSTANCE(cutlass::bfloat16_t, cutlass::bfloat16_t)
QSGEMM_SPARSE24_STREAMK_INSTANCE(cutlass::bfloat16_t, float)

}  // namespace qsgemm::kernels
