// x scales in 128x128 blocks written out as 1x128 groups, so that the tiles of 1x128 activations
// (the 64-row, clamped and split ones, which cannot hold whole x blocks) serve them beyond 128
// tokens (blockwise_expands_x_scales, src/blockwise_heuristic.h). Up to 128 tokens no copy is
// needed: the blocks are one row, read with a row stride of 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "qsgemm/quant.h"

namespace qsgemm::kernels {

// Bytes of the expanded copy of M tokens' scales over k_groups K groups; its row stride is
// m_major_scale_ld(M) (qsgemm/quant.h: every K group's column 16-byte aligned, as the TMA loads it).
constexpr size_t blockwise_expanded_x_bytes(int64_t M, int64_t k_groups) {
  return static_cast<size_t>(m_major_scale_ld(M)) * static_cast<size_t>(k_groups) * sizeof(float);
}

// groups[g · ld + m] = blocks[(m / 128) · k_groups + g] for m < M, g < k_groups (ld =
// m_major_scale_ld(M)); blocks is [ceil(M/128)][k_groups] row-major. One kernel on `stream`;
// fn names the API function for errors.
void run_blockwise_expand_x_scales(const float* blocks, int64_t M, int64_t k_groups, float* groups,
                                   cudaStream_t stream, const char* fn);

}  // namespace qsgemm::kernels
