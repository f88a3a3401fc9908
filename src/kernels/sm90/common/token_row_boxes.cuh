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

// The part of the mainloop wrappers that the families share (blockwise:
// sm90_blockwise_last_tile_rows.cuh; sparse: sm90_sparse24_last_column_rows.cuh; W4A4:
// sm90_w4a4_last_column_rows.cuh): the arguments, the parameters with the last tile's map, and the
// producer's load(), which keeps the base's load for every tile but the last. Each family's wrapper
// (Derived, CRTP) derives from it and writes load_last_tile(): the base's load of the weight with X
// through load_token_rows. kTokenMode: the problem mode of the tokens (0: M, X is CUTLASS's A; 1: N,
// X is B). kBaseClamps: Base moves its last token tile back inside M (clamped_token_column.cuh), so
// from M >= the tile on it is whole. kEnabled: X is not multicast over a cluster (CTAs would load
// slices of one box for each other); where it is, load_last_tile is never instantiated.
template <class Derived, class Base, int kTokenMode, bool kBaseClamps, bool kEnabled>
struct TokenRowsMainloop : Base {
  static constexpr bool kRowsEnabled = kEnabled;
  static constexpr int kTileTokens = cute::size<kTokenMode>(typename Base::TileShape{});
  static constexpr int kTileK = cute::size<2>(typename Base::TileShape{});

  // load_token_rows writes box j (R rows x 128 bytes) at &stage(0, 128 j): X's stage must be
  // 128-byte-swizzled atoms of 8 rows x 128 bytes, stacked along the rows first (what CUTLASS's
  // builder picks for a K-major 1-byte operand whose tile K is a multiple of 128). Checked here so
  // that another layout fails to compile instead of loading rows to the wrong place.
  using XSmemLayout = cute::conditional_t<kTokenMode == 0, typename Base::SmemLayoutA, typename Base::SmemLayoutB>;
  using XStage = decltype(cute::get_nonswizzle_portion(XSmemLayout{}));
  static_assert(cute::is_same_v<decltype(cute::get_swizzle_portion(XSmemLayout{})), cute::Swizzle<3, 4, 3>>,
                "X's shared stage is not 128-byte swizzled");
  // (A tile of 8 tokens always loads its whole box: token_row_plan.)
  static_assert(XStage{}(1, 0, 0) == kTokenRowBoxBytes && XStage{}(0, 1, 0) == 1 &&
                    (kTileTokens == kTokenRowGranule ||
                     XStage{}(kTokenRowGranule, 0, 0) == kTokenRowGranule * kTokenRowBoxBytes),
                "X's shared stage is not 8-row x 128-byte atoms stacked along the rows");
  static_assert(kTileK == kTokenRowBoxBytes || XStage{}(0, kTokenRowBoxBytes, 0) == kTileTokens * kTokenRowBoxBytes,
                "X's shared stage does not hold 128 bytes of K for every row before the next 128");

  struct Arguments : Base::Arguments {
    bool whole_last_tile = false;  // tuning: load the last token tile's whole box, as the base does
  };
  struct Params : Base::Params {
    TokenRowLoad rows;
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shape, args, workspace);
    const auto mnkl = cute::append<4>(problem_shape, 1);
    const int64_t tokens = cute::get<kTokenMode>(mnkl);
    const bool whole = !kEnabled || args.whole_last_tile || (kBaseClamps && tokens >= kTileTokens);
    if constexpr (kTokenMode == 0) {
      p.rows = make_token_row_load(args.ptr_A, tokens, cute::get<2>(mnkl), cute::get<0>(args.dA), cute::get<3>(mnkl),
                                   cute::get<2>(args.dA), kTileTokens, whole);
    } else {
      p.rows = make_token_row_load(args.ptr_B, tokens, cute::get<2>(mnkl), cute::get<0>(args.dB), cute::get<3>(mnkl),
                                   cute::get<2>(args.dB), kTileTokens, whole);
    }
    return p;
  }

  // Whether the tile at token tile coordinate `coord` keeps the base's load (every tile before the
  // last, and every tile where the plan keeps the whole box).
  CUTLASS_DEVICE static bool base_loads(Params const& params, int32_t coord) {
    return !kEnabled || params.rows.box_rows < 0 || coord < params.rows.last;
  }

  // The producer warp's load, as the kernel calls CUTLASS's: the base's for the tiles before the
  // last (and where the plan keeps the whole box), Derived::load_last_tile for the last.
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, typename Base::MainloopPipeline pipeline,
                           typename Base::PipelineState smem_pipe_write, cute::tuple<Ts...> const& load_inputs,
                           BlockCoord const& blk_coord, KTileIterator k_tile_iter, int k_tile_count, int thread_idx,
                           uint32_t block_rank_in_cluster, typename Base::TensorStorage& shared_tensors) {
    if (base_loads(params, static_cast<int32_t>(cute::get<kTokenMode>(blk_coord)))) {
      Base::load(params, pipeline, smem_pipe_write, load_inputs, blk_coord, k_tile_iter, k_tile_count, thread_idx,
                 block_rank_in_cluster, shared_tensors);
      return;
    }
    if constexpr (kEnabled)
      static_cast<Derived*>(this)->load_last_tile(params, pipeline, smem_pipe_write, load_inputs, blk_coord,
                                                  k_tile_iter, k_tile_count, block_rank_in_cluster, shared_tensors);
  }
};

// From one thread: the last tile's rows of K tile k_tile (kTileK bytes wide) of batch l into `stage`
// (a (tile rows, kTileK) view of the base's shared tensor, 8-row x 128-byte swizzle atoms stacked
// along the rows first), then the transaction bytes of the rows it skips.
template <int kTileRows, int kTileK, class Stage>
CUTLASS_DEVICE void load_token_rows(TokenRowLoad const& t, Stage&& stage, int k_tile, int l, uint64_t* barrier) {
  static_assert(kTileRows % kTokenRowGranule == 0 && kTileK % kTokenRowBoxBytes == 0, "whole boxes per tile");
  constexpr int kKBoxes = kTileK / kTokenRowBoxBytes;
  const int32_t row0 = t.last * kTileRows;
  const int32_t col0 = static_cast<int32_t>(l * t.batch_cols) + k_tile * kTileK;
  // The box's destination is the stage's unswizzled address, as CUTLASS's own loads pass it: the
  // copy engine swizzles within it. (`&stage(...)` would apply the swizzle to the address itself,
  // which is off the 128-byte boundary wherever the stage does not start on a 1024-byte one.)
  CUTLASS_PRAGMA_UNROLL
  for (int j = 0; j < kKBoxes; ++j)
    cute::SM90_TMA_LOAD_2D::copy(&t.map, barrier, static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL),
                                 cute::raw_pointer_cast(stage.data() + stage.layout()(0, j * kTokenRowBoxBytes)),
                                 col0 + j * kTokenRowBoxBytes, row0);
  const uint32_t skipped = static_cast<uint32_t>(kTileRows - t.box_rows) * kKBoxes * kTokenRowBoxBytes;
  if (skipped)
    cutlass::arch::ClusterTransactionBarrier::complete_transaction(barrier, cute::block_rank_in_cluster(), skipped);
}

}  // namespace qsgemm::kernels
