// Explicit instantiation of the band table (the kBand rows of sm90_sparse24_configs.h: the
// 72-, 88- and 104-token tiles of the 65-112 token band) for the bf16 output with an fp32 bias,
// one unit per output / bias pair like the between units (docs/build.md). Their token tiles need
// CuTe's extended wgmma shapes, which only the between and band units declare
// (sm90_sparse24_gemm_between_*.cu says why).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_BAND_INSTANCE(cutlass::bfloat16_t, float)

}  // namespace qsgemm::kernels
