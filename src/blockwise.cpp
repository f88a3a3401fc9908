// Blockwise FP8 GEMM host code (include/qsgemm/blockwise.h). Placeholder until the kernel lands.
#include "qsgemm/blockwise.h"

#include "validate.h"

namespace qsgemm {

void blockwise_linear(const MatrixView&, const ScaleView&, const MatrixView&, const ScaleView&, const VectorView&,
                      const MatrixView&, const BlockwiseOptions&, cudaStream_t) {
  detail::fail("blockwise_linear", Status::kUnsupported, "", "not implemented yet");
}

}  // namespace qsgemm
