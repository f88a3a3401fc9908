// 2-D TMA tensor maps for the kernels that build their own rather than through CuTe (the W4A4 quantizer).
// The driver's encoder is reached through the runtime (cudaGetDriverEntryPointByVersion): libqsgemm
// does not link libcuda, so a CPU-only machine still loads it (and its test binaries link).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace qsgemm::kernels {

// A map of a row-major [rows][cols] matrix of `type` elements at base, rows ld_bytes apart
// (a multiple of 16), read in boxes of box_rows x box_cols elements with `swizzle`; elements out of
// bounds arrive as zeros (and still count as transaction bytes). cudaErrorNotSupported when the
// driver has no encoder, cudaErrorInvalidValue when it refuses the map.
cudaError_t encode_tma_2d(CUtensorMap* m, CUtensorMapDataType type, const void* base, int64_t rows, int64_t cols,
                          int64_t ld_bytes, int box_cols, int box_rows, CUtensorMapSwizzle swizzle);

}  // namespace qsgemm::kernels
