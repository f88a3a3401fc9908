// Which rows of X the last token tile loads (common/token_row_boxes.cuh): pure host and device
// arithmetic, tested on the CPU (tests/cpu/test_token_row_plan.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define QSGEMM_HOST_DEVICE __host__ __device__
#else
#define QSGEMM_HOST_DEVICE
#endif

namespace qsgemm::kernels {

// X rows are loaded in granules of 8 (one 128-byte swizzle atom of 8 rows per 128 bytes of K).
inline constexpr int kTokenRowGranule = 8;

struct TokenRowPlan {
  int32_t last = 0;       // ceil(M / tile_rows) - 1: the last token tile that holds tokens
  int32_t box_rows = -1;  // rows that tile loads: round_up(its rows, 8); -1: every tile the whole box
};

// tile_rows: the token tile (a multiple of 8). whole: keep the base's box (tuning, a clamped base
// from M >= tile_rows, a cluster that multicasts X). Where rounding up to 8 rows reaches the whole
// tile, the whole box is the same load.
QSGEMM_HOST_DEVICE constexpr TokenRowPlan token_row_plan(int64_t m_tok, int tile_rows, bool whole) {
  const int64_t tiles = (m_tok + tile_rows - 1) / tile_rows;
  const int32_t last = static_cast<int32_t>(tiles > 0 ? tiles - 1 : 0);
  if (whole || m_tok <= 0) return {last, -1};
  const int64_t rows = m_tok - (tiles - 1) * tile_rows;  // 1..tile_rows
  const int64_t box = (rows + kTokenRowGranule - 1) / kTokenRowGranule * kTokenRowGranule;
  return {last, box >= tile_rows ? -1 : static_cast<int32_t>(box)};
}

}  // namespace qsgemm::kernels

#undef QSGEMM_HOST_DEVICE
