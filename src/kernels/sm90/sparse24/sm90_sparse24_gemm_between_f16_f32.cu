// Explicit instantiation of the between table (the kBetween rows of sm90_sparse24_configs.h) for the
// fp16 outputs (bias fp16 or fp32) and the fp32 output. Why the extended shapes: the bf16 unit.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_BETWEEN_INSTANCE(cutlass::half_t, cutlass::half_t)
QSGEMM_SPARSE24_BETWEEN_INSTANCE(cutlass::half_t, float)
QSGEMM_SPARSE24_BETWEEN_INSTANCE(float, float)

}  // namespace qsgemm::kernels
