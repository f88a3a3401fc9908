// Explicit instantiation of the wide table (the kWide rows of sm90_sparse24_configs.h) for the fp32
// output (bias fp32), in a unit of its own (see sm90_sparse24_gemm_wide_f16.cu).
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_WIDE_INSTANCE(float, float)

}  // namespace qsgemm::kernels
