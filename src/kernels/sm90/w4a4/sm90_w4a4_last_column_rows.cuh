// The W4A4 wgmma mainloop whose last token column loads only its rows of X1 (issue #24): the load
// and why in common/token_row_boxes.cuh. The tokens are CUTLASS's N (X1's e4m3 codes are the B
// operand of the mixed-input collective, the packed weight its A). The band tiles (64-112 tokens)
// take it: there one column holds all of L, and at 33-36 tokens the 64-token tile, reading 28-31
// rows of its box past L, took 1.05-1.07x its time at 64 tokens on the two widest bench layers
// (bench/results/h200/w4a4.json).
//
// The rows it skips keep an earlier tile's e4m3 codes (finite: -8..7); they feed only output
// columns past L, which the epilogue's TMA store clips, as their scales copy the last token's.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "kernels/sm90/common/token_row_boxes.cuh"

namespace qsgemm::kernels::sm90_w4a4_wgmma {

template <class Base>
struct LastColumnRowsMainloop
    : TokenRowsMainloop<LastColumnRowsMainloop<Base>, Base, 1, false,
                        cute::is_same_v<typename Base::GmemTiledCopyB, cute::SM90_TMA_LOAD>> {
  using Rows = typename LastColumnRowsMainloop::TokenRowsMainloop;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Rows::Params;
  static_assert(sizeof(typename Base::ElementB) == 1, "X1 of 1-byte e4m3 codes");
  static_assert(Base::KernelConversionMode == cutlass::detail::ConversionMode::DirectConvert,
                "A and B only: the last column's load issues no scale TMA");
  static_assert(cute::size(typename Base::DispatchPolicy::ClusterShape{}) == 1, "no cluster: W's load is not multicast");

  // The last column's load (TokenRowsMainloop::load keeps the base's for the others): CUTLASS's
  // mixed-input load of the packed weight (A) with X1 through the last column's map.
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_last_tile(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                                     KTileIterator k_tile_iter, int k_tile_count, uint32_t block_rank_in_cluster,
                                     TensorStorage& shared_tensors) {
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    using namespace cute;
    // A as the base partitions it (a position-independent swizzle over the INT4 stages).
    Tensor sA = as_position_independent_swizzle_tensor(
        make_tensor(make_smem_ptr(shared_tensors.smem_A.begin()), typename Base::SmemLayoutA{}));
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.begin()), typename Base::SmemLayoutB{});
    auto block_tma_a = params.tma_load_a.get_slice(0);
    Tensor tAgA = block_tma_a.partition_S(get<0>(load_inputs)(_, _, m_coord, _, l_coord));
    Tensor tAsA = block_tma_a.partition_D(sA);
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);
      auto* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      if (cute::elect_one_sync()) {
        copy(params.tma_load_a.with(*tma_barrier, uint16_t(0)), tAgA(_, _, _, *k_tile_iter), tAsA(_, _, _, stage));
        load_token_rows<Rows::kTileTokens, Rows::kTileK>(params.rows, sB(_, _, stage), *k_tile_iter,
                                                         static_cast<int>(l_coord), tma_barrier);
      }
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace qsgemm::kernels::sm90_w4a4_wgmma
