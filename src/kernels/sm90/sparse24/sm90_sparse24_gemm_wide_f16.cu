// Explicit instantiation of the wide table (the kWide rows of sm90_sparse24_configs.h) for the fp16
// output (bias fp16 or fp32). Kept apart from the 9-configuration translation units so that no
// unit's compile grows (each of those peaks at ~10 GB in cicc, docs/build.md); the fp32 output has a
// unit of its own (sm90_sparse24_gemm_wide_f32.cu): with the four wide rows the table had then, three
// dtype pairs in one unit peaked at 11.6 GB.
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_WIDE_INSTANCE(cutlass::half_t, cutlass::half_t)
QSGEMM_SPARSE24_WIDE_INSTANCE(cutlass::half_t, float)

}  // namespace qsgemm::kernels
