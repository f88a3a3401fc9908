// Explicit instantiation of the between table (the kBetween rows of sm90_sparse24_configs.h: 80- to
// 160-token tiles) for the fp32 output with an fp32 bias, one unit per output / bias pair so that
// no unit's compile grows past the others' (docs/build.md). Why the extended shapes:
// sm90_sparse24_gemm_between_bf16_bias_bf16.cu.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_BETWEEN_INSTANCE(float, float)

}  // namespace qsgemm::kernels
