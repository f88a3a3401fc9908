// Explicit instantiation of the cluster table (the kCluster rows of sm90_sparse24_configs.h: 2x1
// clusters along the weight rows) for the f16 output with a f16 bias, one unit per output / bias pair
// (docs/build.md).
#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

QSGEMM_SPARSE24_CLUSTER_INSTANCE(cutlass::half_t, cutlass::half_t)

}  // namespace qsgemm::kernels
