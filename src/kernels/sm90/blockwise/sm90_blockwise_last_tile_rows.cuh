// The blockwise mainloop whose last token tile loads only its rows of X (issue #24): the load and
// why in common/token_row_boxes.cuh. The tokens are CUTLASS's M here (X is the A operand); the
// 64x128 ping-pong tile took 36.0 us at M = 1 and 27.4 at M = 64 on 10240x8192 with the whole box,
// the 128x128 tile 52.9 at M = 1 and 29.4 at M = 128 (tuning/tune_blockwise_decode.jsonl).
//
// kBaseClamps: Base is ClampedRowsMainloop, whose last tile is whole from M >= TM on; then only
// M < TM takes this path. Cluster multicast of X (the 1x2 cluster) keeps the base's whole box.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "kernels/sm90/common/token_row_boxes.cuh"

namespace qsgemm::kernels::sm90_blockwise {

template <class Base, bool kBaseClamps>
struct LastTileRowsMainloop
    : TokenRowsMainloop<LastTileRowsMainloop<Base, kBaseClamps>, Base, 0, kBaseClamps,
                        cute::is_same_v<typename Base::GmemTiledCopyA, cute::SM90_TMA_LOAD>> {
  using Rows = typename LastTileRowsMainloop::TokenRowsMainloop;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Rows::Params;
  static_assert(sizeof(typename Base::ElementA) == 1, "X of 1-byte elements");
  static_assert(!Base::IsTmaLoadSFA && !Base::IsTmaLoadSFB,
                "the last tile's load issues no scale TMA: the scales must come from the auxiliary warp");

  // The last tile's load (TokenRowsMainloop::load keeps the base's for the others): CUTLASS's
  // blockwise load (W by TMA, its multicast over a cluster along M included) with X through the
  // last tile's map.
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_last_tile(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                                     KTileIterator k_tile_iter, int k_tile_count, uint32_t block_rank_in_cluster,
                                     TensorStorage& shared_tensors) {
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    using namespace cute;
    const int lane_predicate = cute::elect_one_sync();
    constexpr uint32_t cluster_x = size<0>(typename Base::DispatchPolicy::ClusterShape{});
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
    auto block_tma_b = params.tma_load_b.get_slice(block_rank_in_cluster % cluster_x);
    Tensor tBgB = block_tma_b.partition_S(get<1>(load_inputs)(_, _, n_coord, _, l_coord));
    Tensor tBsB = block_tma_b.partition_D(sB);
    uint16_t mcast_mask_b = 0;
    if constexpr (is_same_v<typename Base::GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
      auto block_layout = Layout<typename Base::DispatchPolicy::ClusterShape>{};
      for (int m = 0; m < size<0>(block_layout); ++m)
        mcast_mask_b |= uint16_t(1) << block_layout(m, block_rank_in_cluster / cluster_x, Int<0>{});
    }
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      auto* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      if (lane_predicate) {
        load_token_rows<Rows::kTileTokens, Rows::kTileK>(params.rows, sA(_, _, stage), *k_tile_iter,
                                                         static_cast<int>(l_coord), tma_barrier);
        copy(params.tma_load_b.with(*tma_barrier, mcast_mask_b), tBgB(_, _, _, *k_tile_iter), tBsB(_, _, _, stage));
      }
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace qsgemm::kernels::sm90_blockwise
