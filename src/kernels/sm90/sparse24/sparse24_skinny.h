// The decode-sized ("skinny") 2:4 sparse FP8 kernel: not CUTLASS, so it lives outside the CUTLASS
// tables of sm90_sparse24_configs.h (and this header outside the CUTLASS translation units, which a
// change here does not rebuild). See sm90_sparse24_skinny.cu for the design.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "sparse24_heuristic.h"

namespace qsgemm::kernels {

// Its row of the config table (kSparse24SkinnyConfig, kSparse24SkinnyMaxM) is in
// sm90_sparse24_configs.h; how it covers a problem (Sparse24SkinnyShape, sparse24_skinny_shape) is
// host arithmetic in src/sparse24_heuristic.h.

// Runs the skinny kernel on a (a.m_tok <= kSparse24SkinnyMaxM; a.workspace is not used). Throws
// qsgemm::Error when the launch fails.
void run_sparse24_skinny(const Sparse24GemmArgs& a, cudaStream_t stream);

}  // namespace qsgemm::kernels
