// The 2:4 sparse FP8 mainloop with two partial accumulator tiles in flight, the sparse counterpart
// of src/kernels/sm90/blockwise/sm90_blockwise_two_partials.cuh; used by the configurations whose
// `two_partials` column is true (sm90_sparse24_configs.h).
//
// CUTLASS's sparse FP8 mainloop (sm90_sparse_mma_tma_gmma_ss_warpspecialized_fp8.hpp) issues a K
// tile's sparse wgmma batch into a temporary tile, waits for it (K_PIPE_MMAS = 0: wgmma.wait_group 0
// after every K tile) and, every mma_promotion_interval MMAs (4 = one 256-wide K tile here),
// promotes the temporary into the float32 accumulators (acc += P). Here K tiles alternate between
// two partial tiles: tile k's batch is issued before tile k-1's is waited for (wait_group 1), and
// tile k-1 is promoted while tile k runs. Same float32 sums in the same order (acc = 0, then
// acc += P_k), so the output is bit-identical to the single-partial mainloop's: checked on the H200
// on every element of 100 problems (5 tiles, M = 1 ... 4096, partial tiles in M and N, 1 to 112 K
// tiles; bench/results/h200/tuning/tune_sparse_two_partials.txt), where it ran up to 1.25x faster than
// CUTLASS's mainloop in the M range where the heuristic picks each tile.
//
// The metadata registers are double-buffered too (each batch keeps reading its own until it
// completes). CUTLASS keeps its metadata partitioning helpers (partition_E, make_tiled_copy_E)
// private, so the thread partitioning of the metadata tile is built from CuTe's public A-operand
// partitioning: a TiledMMA whose atom is the sparse atom with its metadata layout (ELayout) in the
// role of the A layout (MetadataAsA below). That is the same composition CUTLASS's helpers perform.
//
// Registers: three 64x128 float tiles on the 128x128 cooperative and 64x128 ping-pong tiles
// (192 per thread), as in the blockwise case; only promotion every K tile is supported.
#pragma once

#include "cute/atom/mma_atom.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "kernels/sm90/common/consumer_cursor.cuh"

namespace qsgemm::kernels {

// An MMA "operation" that is never executed: its traits are the sparse atom's, with the metadata
// thread-value layout standing in for the A layout, so that TiledMMA::partition_A and
// make_tiled_copy_A partition the metadata tile the way the sparse MMA reads it.
template <class SparseTraits>
struct MetadataAsA {};

}  // namespace qsgemm::kernels

namespace cute {
template <class SparseTraits>
struct MMA_Traits<qsgemm::kernels::MetadataAsA<SparseTraits>> {
  using ValTypeD = typename SparseTraits::ValTypeD;
  using ValTypeA = typename SparseTraits::ValTypeE;
  using ValTypeB = typename SparseTraits::ValTypeB;
  using ValTypeC = typename SparseTraits::ValTypeC;
  using Shape_MNK = typename SparseTraits::Shape_MNK;
  using ThrID = typename SparseTraits::ThrID;
  using ALayout = typename SparseTraits::ELayout;
  using BLayout = typename SparseTraits::BLayout;
  using CLayout = typename SparseTraits::CLayout;
};
}  // namespace cute

namespace qsgemm::kernels {

template <class TiledMma>
struct MetadataTiledMma;
template <class Atom, class AtomLayoutMNK, class PermutationMNK>
struct MetadataTiledMma<cute::TiledMMA<Atom, AtomLayoutMNK, PermutationMNK>> {
  using type = cute::TiledMMA<cute::MMA_Atom<MetadataAsA<typename Atom::Traits>>, AtomLayoutMNK, PermutationMNK>;
};

template <class Base>
struct TwoPartialsSparseMainloop : Base {
  using typename Base::ElementEMma;
  using typename Base::MainloopPipeline;
  using typename Base::Params;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::SmemLayoutE;
  using typename Base::TensorStorage;
  using typename Base::TiledMma;
  using TiledMmaE = typename MetadataTiledMma<TiledMma>::type;

  // The promotion is per K tile here: Sm90Sparse24Gemm allows this mainloop only with 256-wide K
  // tiles, whose 4 MMAs are the mma_promotion_interval it sets (4).
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors,
                          Params const& /*mainloop_params*/) {
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulators must be registers");

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.begin()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.begin()), SmemLayoutB{});  // (BLK_N,BLK_K,PIPE)
    Tensor sE = as_position_independent_swizzle_tensor(
        make_tensor(make_smem_ptr(shared_tensors.smem_E.begin()), SmemLayoutE{}));  // (BLK_M,BLK_K,PIPE)

    constexpr int kMmaWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    const Layout warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));
    Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE) descriptors
    CUTE_STATIC_ASSERT_V(size<1>(tCrA) == size<1>(accum));  // M
    CUTE_STATIC_ASSERT_V(size<1>(tCrB) == size<2>(accum));  // N

    // Metadata: a register fragment per partial, filled from shared memory by a tiled copy.
    TiledMmaE tiled_mma_e;
    Tensor tCsE = tiled_mma_e.get_slice(warp_group_thread_layout(warp_group_idx)).partition_A(sE(_, _, Int<0>{}));
    Tensor tCrE0 = make_fragment_like<ElementEMma>(tCsE);  // (MMA,MMA_M,MMA_K)
    Tensor tCrE1 = make_fragment_like<ElementEMma>(tCsE);
    auto copy_e = make_tiled_copy_A(Copy_Atom<AutoVectorizingCopy, uint32_t>{}, tiled_mma_e);
    auto thr_copy_e = copy_e.get_thread_slice(thread_idx);
    Tensor tEsE = thr_copy_e.partition_S(sE);      // (ECPY,ECPY_M,ECPY_K,PIPE)
    Tensor tErE0 = thr_copy_e.retile_D(tCrE0);     // (ECPY,ECPY_M,ECPY_K)
    Tensor tErE1 = thr_copy_e.retile_D(tCrE1);

    Tensor part0 = make_fragment_like(accum);
    Tensor part1 = make_fragment_like(accum);

    // Loads stage `stage`'s metadata into `e`, then issues the K tile's sparse wgmma batch into
    // `part` (zeroed by its first MMA) and commits it.
    auto issue = [&](auto& part, auto& e, int stage) {
      copy(copy_e, tEsE(_, _, _, stage), e);
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(part);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, make_zip_tensor(tCrA(_, _, k_block, stage), e(_, _, k_block)), tCrB(_, _, k_block, stage),
                   part);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(part);
    };
    auto promote = [&](auto& part) {
      warpgroup_fence_operand(part);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) += part(i);
      warpgroup_fence_operand(accum);
    };
    ConsumerCursor<MainloopPipeline, PipelineState> cursor(pipeline, smem_pipe_read);

    clear(accum);
    warpgroup_fence_operand(accum);

    issue(part0, tErE0, cursor.wait());  // K tile 0 into P0
    cursor.advance();
    --k_tile_count;

    // Two K tiles per trip, so that P0/P1 and E0/E1 stay distinct registers.
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count >= 2; k_tile_count -= 2) {
      issue(part1, tErE1, cursor.wait());
      cursor.advance();
      warpgroup_wait<1>();  // P0's batch is done
      cursor.release_one();
      promote(part0);

      issue(part0, tErE0, cursor.wait());
      cursor.advance();
      warpgroup_wait<1>();  // P1's batch is done
      cursor.release_one();
      promote(part1);
    }
    if (k_tile_count == 1) {
      issue(part1, tErE1, cursor.wait());
      warpgroup_wait<1>();
      cursor.release_one();
      promote(part0);
      warpgroup_wait<0>();
      cursor.release_one();
      promote(part1);
    } else {
      warpgroup_wait<0>();
      cursor.release_one();
      promote(part0);
    }
    // Every stage is released here: CUTLASS's sparse mma_tail (K_PIPE_MMAS = 0) releases none.
  }
};

}  // namespace qsgemm::kernels
