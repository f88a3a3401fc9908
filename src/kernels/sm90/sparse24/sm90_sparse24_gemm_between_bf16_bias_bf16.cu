// Explicit instantiation of the between table (the kBetween rows of sm90_sparse24_configs.h: 80- to
// 160-token tiles) for the bf16 output with a bf16 bias, one unit per output / bias pair so that no
// unit's compile grows past the others' (docs/build.md). Their token tiles (80, 112, 144, 160) need
// CuTe's extended wgmma shapes, which only the between units declare: without them the atom
// selector falls back to n = 16 or 32 wgmmas, several a K step, each reading the weight tile from
// shared memory again.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_BETWEEN_INSTANCE(cutlass::bfloat16_t, cutlass::bfloat16_t)

}  // namespace qsgemm::kernels
