// The sparse mainloop whose last token column loads only its rows of X (issue #24): the load and
// why in common/token_row_boxes.cuh. In the swapped GEMM the tokens are CUTLASS's N (X is the B
// operand); a column of TN tokens that holds r < TN of them loads round_up(r, 8) rows, and so does
// a 1x2 cluster's padding column (the same rows as the last column).
//
// kBaseClamps: Base is ClampedColumnMainloop, whose last column is whole from M >= TN on; then only
// M < TN takes this path. The stream-K configurations (not clamped) take it at every M with a
// partial last column. Where X is multicast over a cluster along the weight rows (the kCluster
// rows) the base's whole box is kept: each CTA of the cluster loads a slice of the box for all.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "kernels/sm90/common/token_row_boxes.cuh"

namespace qsgemm::kernels {

template <class Base, bool kBaseClamps>
struct Sparse24LastColumnRowsMainloop
    : TokenRowsMainloop<Sparse24LastColumnRowsMainloop<Base, kBaseClamps>, Base, 1, kBaseClamps,
                        cute::is_same_v<typename Base::GmemTiledCopyB, cute::SM90_TMA_LOAD>> {
  using Rows = typename Sparse24LastColumnRowsMainloop::TokenRowsMainloop;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Rows::Params;
  static_assert(sizeof(typename Base::ElementB) == 1, "X of 1-byte elements");

  // From the last column on (TokenRowsMainloop::load keeps the base's for the others): CUTLASS's
  // sparse load (A values, E metadata, then B) with X through the last column's map.
  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_last_tile(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                                     KTileIterator k_tile_iter, int k_tile_count, uint32_t block_rank_in_cluster,
                                     TensorStorage& shared_tensors) {
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    using namespace cute;
    if (!cute::elect_one_sync()) return;
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.begin()), typename Base::SmemLayoutA{});
    Tensor sE = make_tensor(make_smem_ptr(shared_tensors.smem_E.begin()), typename Base::SmemLayoutE{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.begin()), typename Base::SmemLayoutB{});
    Layout cta_layout_mnk = make_layout(typename Base::DispatchPolicy::ClusterShape{});
    auto cta_coord_mnk = cta_layout_mnk.get_flat_coord(block_rank_in_cluster);
    const uint16_t mcast_mask_a = create_tma_multicast_mask<1>(cta_layout_mnk, cta_coord_mnk);
    const uint16_t mcast_mask_e = create_tma_multicast_mask<1>(cta_layout_mnk, cta_coord_mnk);
    auto block_tma_a = params.tma_load_a.get_slice(get<1>(cta_coord_mnk));
    auto block_tma_e = params.tma_load_e.get_slice(get<1>(cta_coord_mnk));
    Tensor tAgA = block_tma_a.partition_S(get<0>(load_inputs)(_, _, m_coord, _, l_coord));
    Tensor tAsA = block_tma_a.partition_D(sA);
    Tensor tEgE = block_tma_e.partition_S(get<2>(load_inputs)(_, _, m_coord, _, l_coord));
    Tensor tEsE = block_tma_e.partition_D(sE);
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);
      auto* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      copy(params.tma_load_a.with(*tma_barrier, mcast_mask_a), tAgA(_, _, _, *k_tile_iter), tAsA(_, _, _, stage));
      copy(params.tma_load_e.with(*tma_barrier, mcast_mask_e), tEgE(_, _, _, *k_tile_iter), tEsE(_, _, _, stage));
      load_token_rows<Rows::kTileTokens, Rows::kTileK>(params.rows, sB(_, _, stage), *k_tile_iter,
                                                       static_cast<int>(l_coord), tma_barrier);
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace qsgemm::kernels
