// The last token column of a swapped GEMM moved back inside M (issue #24).
//
// In the swapped GEMMs (D = W·Xᵀ: the kernel's N is the token count M), a token tile that runs
// past M reads rows of X beyond M as out-of-bounds rows of the B operand's TMA box. On the H200
// each costs more than a valid row, and a cluster pair's padding column is wholly out of bounds
// (bench/results/h200/tuning/cliff_m288.txt). With these two wrappers the tiles from the
// last token column on are clamped: they all compute tokens [M - TN, M), a whole in-bounds tile.
// It recomputes rows of the tile before it with the same operands, tile shape and K order, so the
// rows written twice get the same bits both times; it needs M >= TN (below, the column is only
// clamped against the padding) and a data-parallel schedule (stream-K would sum those rows in a
// different order).
//
// - Mainloop: the clamped tiles read X at TMA coordinates shifted by -shift (no second descriptor).
// - Epilogue: a second set of epilogue parameters whose D and per-token pointers start `shift`
//   tokens earlier and span M + shift tokens, so the clamped tile is an ordinary last tile there.
//   The caller builds those arguments (it knows which fusion operands are per token).
//
// The blockwise GEMM is not swapped (the tokens are its M, the A operand, with per-token scale
// rows): its mainloop wrapper is sm90_blockwise_clamped_rows.cuh; the epilogue here serves it with
// kTokenMode = 0.
#pragma once

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace qsgemm::kernels {

// Host and device: the column every tile from `last` on computes, and how many tokens it starts
// before its own grid position. tile_n: the kernel's token tile.
struct ClampedTokenColumn {
  int32_t last = 0;   // the last token column that holds tokens: ceil(M / tile_n) - 1
  int32_t shift = 0;  // tokens the clamped column starts early: 0 where M < tile_n or M % tile_n == 0
};
CUTLASS_HOST_DEVICE constexpr ClampedTokenColumn clamped_token_column(int64_t m_tok, int tile_n) {
  const int64_t cols = (m_tok + tile_n - 1) / tile_n;
  return {static_cast<int32_t>(cols > 0 ? cols - 1 : 0),
          static_cast<int32_t>(m_tok >= tile_n ? cols * tile_n - m_tok : 0)};
}

// CUTLASS sm90 TMA mainloop whose B operand is the tokens (K-major X), with clamped token tiles: the
// sparse mainloop and the W4A4 mixed-input one (their load_init returns A, B, ...; load takes them).
template <class Base>
struct ClampedColumnMainloop : Base {
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Base::TileShape;

  using Arguments = typename Base::Arguments;
  struct Params : Base::Params {
    ClampedTokenColumn column;
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shape, args, workspace);
    p.column = clamped_token_column(cute::get<1>(problem_shape), cute::size<1>(TileShape{}));
    return p;
  }

  // Base's tensors (A, B, then any others: the sparse metadata), then B seen from `shift` tokens
  // earlier (the clamped column's X tiles).
  template <class ProblemShape_MNKL>
  CUTLASS_DEVICE auto load_init(ProblemShape_MNKL const& problem_shape_MNKL, Params const& params) const {
    using X = cute::Underscore;
    auto inputs = Base::load_init(problem_shape_MNKL, params);
    auto [M, N, K, L] = problem_shape_MNKL;
    cute::Tensor mB_nkl = params.tma_load_b.get_tma_tensor(cute::make_shape(N, K, L));
    cute::Tensor gB_shifted = cute::local_tile(cute::domain_offset(cute::make_coord(-params.column.shift, 0, 0), mB_nkl),
                                               TileShape{}, cute::make_coord(cute::_, cute::_, cute::_),
                                               cute::Step<X, cute::_1, cute::_1>{});
    return cute::append(inputs, gB_shifted);
  }

  // Base's load with Base's tensors; from the last column on, B replaced by the shifted one.
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    constexpr int kShifted = sizeof...(Ts) - 1;
    const auto base_inputs = cute::take<0, kShifted>(load_inputs);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    if (n_coord >= params.column.last) {
      const BlockCoord clamped = cute::make_coord(m_coord, decltype(n_coord)(params.column.last), k_coord, l_coord);
      Base::load(params, pipeline, smem_pipe_write, cute::replace<1>(base_inputs, cute::get<kShifted>(load_inputs)),
                 clamped, k_tile_iter, k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
    } else {
      Base::load(params, pipeline, smem_pipe_write, base_inputs, blk_coord, k_tile_iter, k_tile_count, thread_idx,
                 block_rank_in_cluster, shared_tensors);
    }
  }
};

// CUTLASS sm90 TMA epilogue (no source C) with clamped token tiles: `shifted` holds the arguments
// with D and the per-token operands moved `shift` tokens back (the caller sets them; where shift
// is 0 they are not used). kTokenMode: the problem mode that holds the tokens, 1 (N) in the swapped
// GEMMs, 0 (M) in the blockwise one (sm90_blockwise_clamped_rows.cuh).
template <class Base, int kTokenMode = 1>
struct ClampedColumnEpilogue : Base {
  static_assert(kTokenMode == 0 || kTokenMode == 1, "the tokens are the problem's M or N");
  using typename Base::TensorStorage;
  struct Arguments {
    typename Base::Arguments main;
    typename Base::Arguments shifted;
  };
  struct Params {
    typename Base::Params main;
    typename Base::Params shifted;
    ClampedTokenColumn column;
    uint32_t tma_transaction_bytes = 0;  // read by the kernel's epilogue load pipeline
  };

  template <class ProblemShape>
  CUTLASS_HOST_DEVICE static ProblemShape shifted_problem(ProblemShape const& problem_shape, int32_t shift) {
    ProblemShape p = problem_shape;
    cute::get<kTokenMode>(p) += shift;
    return p;
  }

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p;
    p.main = Base::to_underlying_arguments(problem_shape, args.main, workspace);
    p.column = clamped_token_column(cute::get<kTokenMode>(problem_shape),
                                    cute::size<kTokenMode>(typename Base::CtaTileMNK{}));
    p.shifted = p.column.shift > 0
                    ? Base::to_underlying_arguments(shifted_problem(problem_shape, p.column.shift), args.shifted, workspace)
                    : p.main;
    p.tma_transaction_bytes = p.main.tma_transaction_bytes;
    return p;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const& problem_shape, Arguments const& args) {
    return Base::get_workspace_size(problem_shape, args.main);
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const& problem_shape, Arguments const& args, void* workspace,
                                              cudaStream_t stream, cutlass::CudaHostAdapter* cuda_adapter = nullptr) {
    return Base::initialize_workspace(problem_shape, args.main, workspace, stream, cuda_adapter);
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const& problem_shape, Arguments const& args) {
    const ClampedTokenColumn c = clamped_token_column(cute::get<kTokenMode>(problem_shape),
                                                      cute::size<kTokenMode>(typename Base::CtaTileMNK{}));
    return Base::can_implement(problem_shape, args.main) &&
           (c.shift == 0 || Base::can_implement(shifted_problem(problem_shape, c.shift), args.shifted));
  }
  CUTLASS_DEVICE static void prefetch_tma_descriptors(Params const& params) {
    Base::prefetch_tma_descriptors(params.main);
    if (params.column.shift > 0) Base::prefetch_tma_descriptors(params.shifted);
  }

  CUTLASS_HOST_DEVICE ClampedColumnEpilogue(Params const& params, TensorStorage& shared_tensors)
      : Base(params.main, shared_tensors), shifted_(params.shifted, shared_tensors), column_(params.column) {}

  // The clamped tiles store through the shifted parameters as tile `last` of M + shift tokens.
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine, class AccLayout,
            class TiledMma>
  CUTLASS_DEVICE auto store(typename Base::LoadPipeline load_pipeline,
                            typename Base::LoadPipelineState load_pipe_consumer_state,
                            typename Base::StorePipeline store_pipeline,
                            typename Base::StorePipelineState store_pipe_producer_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_MNK,
                            TileCoordMNKL tile_coord_mnkl, cute::Tensor<AccEngine, AccLayout> accumulators,
                            TiledMma tiled_mma, int thread_idx, TensorStorage& shared_tensors, int subtile_idx = -1) {
    auto [m_coord, n_coord, k_coord, l_coord] = tile_coord_mnkl;
    // Two call sites, each on a statically known object: selecting the object through a pointer
    // put both epilogues (and their fusion parameters) into local memory, a 328-byte stack frame.
    if (cute::get<kTokenMode>(tile_coord_mnkl) >= column_.last) {
      if constexpr (kTokenMode == 1)
        tile_coord_mnkl = cute::make_coord(m_coord, decltype(n_coord)(column_.last), k_coord, l_coord);
      else
        tile_coord_mnkl = cute::make_coord(decltype(m_coord)(column_.last), n_coord, k_coord, l_coord);
      if (column_.shift > 0)
        return shifted_.store(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state,
                              shifted_problem(problem_shape_mnkl, column_.shift), tile_shape_MNK, tile_coord_mnkl,
                              accumulators, tiled_mma, thread_idx, shared_tensors, subtile_idx);
    }
    return Base::store(load_pipeline, load_pipe_consumer_state, store_pipeline, store_pipe_producer_state,
                       problem_shape_mnkl, tile_shape_MNK, tile_coord_mnkl, accumulators, tiled_mma, thread_idx,
                       shared_tensors, subtile_idx);
  }

 private:
  Base shifted_;
  ClampedTokenColumn column_;
};

}  // namespace qsgemm::kernels
