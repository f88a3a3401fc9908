// A token tile partly past M that loads only its rows of X (issue #24).
//
// A token tile that runs past M reads X through a TMA box whose rows past M are out of bounds, and
// on the H200 each such row costs more than a valid one (the blockwise 64-row tile took 36.0 us at
// M = 1 and 27.4 at M = 64 on 10240x8192, bench/results/h200/tuning/tune_blockwise_decode.jsonl;
// the sparse cliff, tuning/cliff_m288.txt). Clamping the tile back inside M
// (clamped_token_column.cuh) needs M >= the tile. Here the last token tile loads X through a second
// map whose box has R = round_up(r, 8) rows, the r rows it holds, into the first R rows of its
// stage (per 128 bytes of K), and its producer completes the transaction bytes of the rows it skips
// itself (mbarrier complete_tx), so the pipeline's per-stage byte count stays the base's. A tile
// wholly past M (a cluster's padding tile) loads the last tile's rows: a clamped epilogue stores it
// there.
//
// The rows of the stage it skips keep whatever an earlier tile left there. They feed only output
// rows past M (a wgmma output row depends on its own X row only), which the epilogue does not store,
// and per-token scales of those rows are predicated off as before. The rows below M get the same
// operands in the same K order, so the same bits as the whole box.
//
// Users: the blockwise mainloop (X is CUTLASS's A, sm90_blockwise_last_tile_rows.cuh) and the
// sparse one (X is B in the swapped GEMM, sm90_sparse24_last_column_rows.cuh).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cute/arch/copy_sm90_tma.hpp"
#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"
#include "kernels/sm90/common/tma_map.h"
#include "kernels/sm90/common/token_row_plan.h"

namespace qsgemm::kernels {

// X rows of 128 bytes of K per box column.
inline constexpr int kTokenRowBoxBytes = 128;

// The last token tile's X load, made on the host per call.
struct TokenRowLoad {
  CUtensorMap map;          // X [rows][cols] bytes, box 128 x `box_rows`, 128-byte swizzle
  int32_t last = 0;         // token_row_plan
  int32_t box_rows = -1;    // token_row_plan; also -1 where the driver refused the map
  int64_t batch_cols = 0;   // columns between K slices (split-K batches are K ranges of one matrix)
};

// tile_rows: the token tile. x: 1-byte elements [m_tok][k] (k: one batch's K), rows ld bytes apart,
// `batches` K slices batch_cols apart. whole: as token_row_plan. A map the driver refuses keeps the
// base's box (slower, never wrong).
inline TokenRowLoad make_token_row_load(const void* x, int64_t m_tok, int64_t k, int64_t ld, int64_t batches,
                                        int64_t batch_cols, int tile_rows, bool whole) {
  TokenRowLoad t{};
  const TokenRowPlan plan = token_row_plan(m_tok, tile_rows, whole);
  t.last = plan.last;
  if (plan.box_rows < 0) return t;
  const int64_t cols = k + (batches - 1) * batch_cols;
  if (encode_tma_2d(&t.map, CU_TENSOR_MAP_DATA_TYPE_UINT8, x, m_tok, cols, ld, kTokenRowBoxBytes, plan.box_rows,
                    CU_TENSOR_MAP_SWIZZLE_128B) != cudaSuccess)
    return t;
  t.box_rows = plan.box_rows;
  t.batch_cols = batch_cols;
  return t;
}

// From one thread: the last tile's rows of K tile k_tile (kTileK bytes wide) of batch l into `stage`
// (a (tile rows, kTileK) view of the base's shared tensor, 8-row x 128-byte swizzle atoms stacked
// along the rows first), then the transaction bytes of the rows it skips.
template <int kTileRows, int kTileK, class Stage>
CUTLASS_DEVICE void load_token_rows(TokenRowLoad const& t, Stage&& stage, int k_tile, int l, uint64_t* barrier) {
  static_assert(kTileRows % kTokenRowGranule == 0 && kTileK % kTokenRowBoxBytes == 0, "whole boxes per tile");
  constexpr int kKBoxes = kTileK / kTokenRowBoxBytes;
  const int32_t row0 = t.last * kTileRows;
  const int32_t col0 = static_cast<int32_t>(l * t.batch_cols) + k_tile * kTileK;
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < kKBoxes; ++j)
    cute::SM90_TMA_LOAD_2D::copy(&t.map, barrier, static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL),
                                 &stage(0, j * kTokenRowBoxBytes), col0 + j * kTokenRowBoxBytes, row0);
  const uint32_t skipped = static_cast<uint32_t>(kTileRows - t.box_rows) * kKBoxes * kTokenRowBoxBytes;
  if (skipped) cutlass::arch::ClusterTransactionBarrier::complete_transaction(barrier, cute::block_rank_in_cluster(), skipped);
}

}  // namespace qsgemm::kernels
