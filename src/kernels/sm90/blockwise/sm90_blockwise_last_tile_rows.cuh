// The blockwise mainloop whose last token tile loads only the rows of X it has (issue #24).
//
// A token tile that runs past M reads X through a TMA box whose rows past M are out of bounds, and
// on the H200 each such row costs more than a valid one: the 64x128 ping-pong tile took 36.0 us at
// M = 1 and 27.4 at M = 64 on 10240x8192 (bench/results/h200/tuning/tune_blockwise_decode.jsonl),
// the 128x128 tile 52.9 at M = 1 and 29.4 at M = 128. Clamping the tile back inside M
// (sm90_blockwise_clamped_rows.cuh) needs M >= the tile and per-row x scales; this covers the rest.
//
// The last token tile, when it holds r < TM rows, loads X in boxes of 8 rows (one 128-byte swizzle
// atom each, 1024 bytes) into the first ceil(r/8) atoms of the stage, and completes the
// transaction bytes of the atoms it skips itself (mbarrier complete_tx), so the pipeline's
// per-stage byte count is unchanged. The skipped rows of the stage keep whatever an earlier tile
// left there: they feed only output rows past M, which the epilogue does not store (a wgmma output
// row depends on its own A row only), and the scales of those rows are predicated off by the
// scale loader as before. Rows below M get the same operands in the same order, so the same bits.
//
// kBaseClamps: Base is ClampedRowsMainloop, whose last tile is whole from M >= TM on; then only
// M < TM takes this path. Cluster multicast of X (the 1x2 cluster) keeps the base's whole box.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"

namespace qsgemm::kernels::sm90_blockwise {

template <class Base, bool kBaseClamps>
struct LastTileRowsMainloop : Base {
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::TensorStorage;
  using typename Base::TileShape;
  using ElementA = typename Base::ElementA;
  using StrideA = typename Base::StrideA;
  static constexpr int kTileM = cute::size<0>(TileShape{});
  static constexpr int kTileK = cute::size<2>(TileShape{});
  static constexpr int kAtomRows = 8;
  static constexpr int kAtoms = kTileM / kAtomRows;
  static constexpr uint32_t kAtomBytes = kAtomRows * kTileK * sizeof(ElementA);
  // One swizzle atom of A's shared layout: 8 rows of the K tile, rows 128 bytes apart.
  using SmemLayoutAtomRows = decltype(cute::tile_to_shape(typename Base::SmemLayoutAtomA{},
                                                          cute::make_shape(cute::Int<kAtomRows>{}, cute::Int<kTileK>{})));
  static_assert(cute::size<0>(typename Base::SmemLayoutAtomA{}) == kAtomRows && kTileM % kAtomRows == 0,
                "X's shared tile must be made of 8-row swizzle atoms stacked along M");
  static_assert(cute::cosize_v<typename Base::SmemLayoutA> ==
                    kTileM * kTileK * cute::size<2>(typename Base::SmemLayoutA{}),
                "X's stages must be dense TM x TK tiles");
  // With X multicast over a cluster, CTAs load slices of one box for each other: keep the base's.
  static constexpr bool kEnabled = cute::is_same_v<typename Base::GmemTiledCopyA, cute::SM90_TMA_LOAD>;

  using TmaAtomRows = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(static_cast<ElementA const*>(nullptr), cute::repeat_like(StrideA{}, int32_t(0)), StrideA{}),
      SmemLayoutAtomRows{}, cute::make_shape(cute::Int<kAtomRows>{}, cute::Int<kTileK>{}), cute::_1{}));

  struct Arguments : Base::Arguments {
    bool whole_last_tile = false;  // tuning: load the last tile's whole box, as the base does
  };
  struct Params : Base::Params {
    TmaAtomRows tma_load_a_rows;  // X in boxes of 8 rows
    int32_t last_tile = 0;        // ceil(M / TM) - 1
    int32_t last_atoms = 0;       // 8-row boxes the last tile loads; 0: it loads the whole box
    uint32_t skipped_bytes = 0;   // the transaction bytes of the boxes it skips
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shape, args, workspace);
    auto [M, N, K, L] = cute::append<4>(problem_shape, 1);
    const auto* ptr_a = reinterpret_cast<ElementA const*>(args.ptr_A);
    auto tensor_a = cute::make_tensor(ptr_a, cute::make_layout(cute::make_shape(M, K, L), args.dA));
    p.tma_load_a_rows = cute::make_tma_copy(cute::SM90_TMA_LOAD{}, tensor_a, SmemLayoutAtomRows{},
                                            cute::make_shape(cute::Int<kAtomRows>{}, cute::Int<kTileK>{}), cute::_1{});
    const int64_t m = M;
    const int64_t tiles = (m + kTileM - 1) / kTileM;
    const int64_t rows = m - (tiles - 1) * kTileM;  // rows of the last tile, 1..TM (M > 0)
    const bool whole = !kEnabled || m <= 0 || rows == kTileM || (kBaseClamps && m >= kTileM) || args.whole_last_tile;
    p.last_tile = static_cast<int32_t>(tiles > 0 ? tiles - 1 : 0);
    p.last_atoms = whole ? 0 : static_cast<int32_t>((rows + kAtomRows - 1) / kAtomRows);
    p.skipped_bytes = whole ? 0u : static_cast<uint32_t>(kAtoms - p.last_atoms) * kAtomBytes;
    return p;
  }

  // Base's tensors, then X tiled in 8-row boxes: (8, TK, m8, k, l).
  template <class ProblemShape_MNKL>
  CUTLASS_DEVICE auto load_init(ProblemShape_MNKL const& problem_shape_MNKL, Params const& params) const {
    using X = cute::Underscore;
    auto inputs = Base::load_init(problem_shape_MNKL, params);
    auto [M, N, K, L] = problem_shape_MNKL;
    cute::Tensor mA_rows = params.tma_load_a_rows.get_tma_tensor(cute::make_shape(M, K, L));
    cute::Tensor gA_rows = cute::local_tile(mA_rows, cute::Shape<cute::Int<kAtomRows>, cute::_1, cute::Int<kTileK>>{},
                                            cute::make_coord(cute::_, cute::_, cute::_), cute::Step<cute::_1, X, cute::_1>{});
    return cute::append(inputs, gA_rows);
  }

  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                           cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    constexpr int kBaseInputs = sizeof...(Ts) - 1;
    const auto base_inputs = cute::take<0, kBaseInputs>(load_inputs);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    if (params.last_atoms == 0 || static_cast<int32_t>(m_coord) != params.last_tile) {
      Base::load(params, pipeline, smem_pipe_write, base_inputs, blk_coord, k_tile_iter, k_tile_count, thread_idx,
                 block_rank_in_cluster, shared_tensors);
      return;
    }
    if constexpr (kEnabled) {
      using namespace cute;
      const int lane_predicate = cute::elect_one_sync();
      // W as the base loads it (its multicast over a cluster along M included).
      constexpr uint32_t cluster_x = size<0>(typename Base::DispatchPolicy::ClusterShape{});
      const uint32_t cluster_y = block_rank_in_cluster / cluster_x;
      Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
      auto block_tma_b = params.tma_load_b.get_slice(block_rank_in_cluster % cluster_x);
      Tensor gB = get<1>(load_inputs)(_, _, n_coord, _, l_coord);
      Tensor tBgB = block_tma_b.partition_S(gB);
      Tensor tBsB = block_tma_b.partition_D(sB);
      uint16_t mcast_mask_b = 0;
      if constexpr (is_same_v<typename Base::GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
        auto block_layout = Layout<typename Base::DispatchPolicy::ClusterShape>{};
        for (int m = 0; m < size<0>(block_layout); ++m) mcast_mask_b |= uint16_t(1) << block_layout(m, cluster_y, Int<0>{});
      }
      // X: this tile's first last_atoms boxes of 8 rows.
      Tensor gA_rows = get<kBaseInputs>(load_inputs)(_, _, _, _, l_coord);  // (8, TK, m8, k)
      auto tma_rows = params.tma_load_a_rows.get_slice(0);
      Tensor tAgA = tma_rows.partition_S(gA_rows);  // (TMA, 1, 1, m8, k)
      const int first_box = static_cast<int>(m_coord) * kAtoms;
      ElementA* smem_a = shared_tensors.smem_A.data();

      CUTLASS_PRAGMA_NO_UNROLL
      for (; k_tile_count > 0; --k_tile_count) {
        pipeline.producer_acquire(smem_pipe_write);
        const int stage = smem_pipe_write.index();
        auto* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
        if (lane_predicate) {
          for (int a = 0; a < params.last_atoms; ++a) {
            Tensor sA_box = make_tensor(make_smem_ptr(smem_a + (stage * kTileM + a * kAtomRows) * kTileK), SmemLayoutAtomRows{});
            copy(params.tma_load_a_rows.with(*tma_barrier), tAgA(_, _, _, first_box + a, *k_tile_iter),
                 tma_rows.partition_D(sA_box));
          }
          copy(params.tma_load_b.with(*tma_barrier, mcast_mask_b), tBgB(_, _, _, *k_tile_iter), tBsB(_, _, _, stage));
          // The skipped boxes' bytes, so the stage completes on the bytes that arrive.
          cutlass::arch::ClusterTransactionBarrier::complete_transaction(tma_barrier, cute::block_rank_in_cluster(),
                                                                         params.skipped_bytes);
        }
        ++k_tile_iter;
        ++smem_pipe_write;
      }
    }
  }

  template <class... Ts, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load_auxiliary(Params const& params, MainloopPipeline pipeline, PipelineState smem_pipe_write,
                                     cute::tuple<Ts...> const& load_inputs, BlockCoord const& blk_coord,
                                     KTileIterator k_tile_iter, int k_tile_count, int thread_idx,
                                     uint32_t block_rank_in_cluster, TensorStorage& shared_tensors) {
    Base::load_auxiliary(params, pipeline, smem_pipe_write, cute::take<0, sizeof...(Ts) - 1>(load_inputs), blk_coord,
                         k_tile_iter, k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
  }
};

}  // namespace qsgemm::kernels::sm90_blockwise
