// Explicit instantiation of the between table (the kBetween rows of sm90_sparse24_configs.h: 96- and
// 160-token tiles) for the bf16 output (bias bf16 or fp32), in units of their own like the wide rows.
// The 160-token tile needs CuTe's extended wgmma shapes (n = 160), which only this unit and its
// sibling declare: without them the atom selector falls back to five n = 32 wgmmas a K step, each
// reading the weight tile from shared memory again.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_BETWEEN_INSTANCE(cutlass::bfloat16_t, cutlass::bfloat16_t)
QSGEMM_SPARSE24_BETWEEN_INSTANCE(cutlass::bfloat16_t, float)

}  // namespace qsgemm::kernels
