// The blockwise FP8 mainloop with two partial accumulators in flight (used by
// sm90_blockwise_gemm.cuh for the tiles whose three register tiles fit, see below).
//
// CUTLASS's blockwise mainloop (MainloopSm90TmaGmmaWarpSpecializedBlockwiseFP8) accumulates each
// 128-wide K tile with wgmma into one zeroed register tile P and then promotes it into the float32
// accumulators, acc += (sx·sw) · P. Promoting reads P, so every K tile ends with wgmma.wait_group 0:
// the warp group has no MMA in flight while it waits for the last one to drain, reads the scales
// and does the promotion FMAs, and only the other consumer warp group (if it is not waiting too)
// keeps the tensor cores busy.
//
// Here the K tiles alternate between two partial tiles P0 and P1: tile k is issued into P[k % 2]
// before tile k-1's batch is waited for (wgmma.wait_group 1), so while P[(k-1) % 2] is promoted,
// tile k is already running. The sums are the same float32 operations in the same order as
// CUTLASS's (acc starts at 0, then acc += s_k · P_k for k = 0, 1, ...), so the results are
// bit-identical to the single-partial mainloop; only the waiting changes.
//
// Cost: a third register tile. With 128x128 cooperative tiles (64x128 per warp group) or 64x128
// ping-pong tiles that is 3 x 64 = 192 float registers per thread, which fits the 240 a consumer
// warp group gets; 128x192 (3 x 96) does not, so the wide per-row tile keeps CUTLASS's mainloop.
//
// kInterleave (the cooperative tiles, from kInterleaveMinKTiles K tiles): each K tile's first MMA
// is committed alone and waited past (wait_group 1 then means "the previous tile is done"), and
// the previous tile's promotion is split into one chunk after each of this tile's MMAs, instead
// of all four MMAs first and the whole promotion after. Nsight Compute on 4096x8192x8192
// (bench/results/h200/tuning/ncu_promotion.txt): the 1x128 x 128x128 kernel spent 32 % of its warp
// samples on the promotion FFMAs (dispatch stalls; the per-row kernel's FADDs 25 %) and 22 % on
// the first MMA of a batch, waiting for room in the tensor pipe, with the pipe 81.5 % busy (87.2 %
// per-row); a warp group that would wait there now promotes meanwhile. Same operations in the same
// order on the same registers, so the same output bits. Same-run A/B against the plain order
// (bench/results/h200/tuning/ab_interleave.txt): 1x128 x 128x128 on the 128x128 tile 0.97-0.98x the
// time at K = 7168-16384, 1.01-1.05x at K = 512-1536 (hence the threshold; at K = 4096 even);
// per-row 0.97-0.99x at long K and even at short K; the ping-pong tile, whose warp groups take
// turns on the tensor pipe, lost with it at small M (1.05-1.08x per-row), so it keeps the plain order.
//
// Everything except mma() is CUTLASS's collective (TMA loads, scale loads, shared storage,
// pipeline, mma_tail): this type derives from it and replaces mma() only. Stage release follows
// the base's contract: mma() releases every stage but the last, which mma_tail() releases.
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "kernels/sm90/common/consumer_cursor.cuh"

namespace qsgemm::kernels::sm90_blockwise {

// K tiles from which the cooperative tiles run the interleaved K loop (K >= 4096).
inline constexpr int kInterleaveMinKTiles = 32;

// kPerRowScales: the per-token x per-channel family. Its scale tensors are sx [M] and sw [N]
// themselves, read by the base's scale loader with granularity 1 along M and N and a K stride of 0
// (so every stage holds the tile's sx and sw). Each K tile is promoted as acc += P (no scale; what
// cuBLASLt's row-wise kernel executes: one FADD per accumulator per 128 of K, Nsight Compute,
// bench/results/h200/tuning/ncu_large_m.txt), and after the last one the accumulators are scaled once,
// acc = (acc · sx[m]) · sw[n], from the last stage's copy of the scales (not yet released). The
// epilogue then needs no scale vectors: it is the blockwise one (D = acc, + bias), and in
// particular it has no column or row broadcast, whose global loads it would wait for in every tile.
// kInterleave: the interleaved K loop from kInterleaveMinKTiles K tiles (the file comment above).
template <class Base, bool kPerRowScales = false, bool kInterleave = false>
struct TwoPartialsBlockwiseMainloop : Base {
  using typename Base::ElementBlockScale;
  using typename Base::MainloopPipeline;
  using typename Base::Params;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::SmemLayoutSFA;
  using typename Base::SmemLayoutSFB;
  using typename Base::TensorStorage;
  using typename Base::TileShape;
  using typename Base::TiledMma;
  // Weight scales must be one per tile (128x128 blocks; the per-row family's sw is applied once,
  // after the K loop): with one per output column and K group (per-channel groups) each partial
  // needs its own 32 registers of them, and that variant ran 3x slower than CUTLASS's mainloop;
  // loading them just before each promotion instead ran at 0.91-1.03x of its speed on the 128x128
  // tile (measured on the H200, bit-identical results). Those granularity pairs keep CUTLASS's mainloop (BlockwiseGemm).
  static_assert(kPerRowScales ? Base::ScaleMsPerTile == cute::size<0>(TileShape{}) && Base::ScaleNsPerTile == cute::size<1>(TileShape{})
                              : Base::ScaleNsPerTile == 1,
                "one weight scale per tile (or, per-row, one scale per row and per column of the tile)");
  static_assert(Base::ScalePromotionInterval == 4,
                "one promotion per 128-wide K tile: the scale group must equal the K tile (tile_k == 128)");

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum,
                          int k_tile_count, int thread_idx, TensorStorage& shared_tensors,
                          Params const& /*mainloop_params*/) {
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulators must be registers");

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});  // (BLK_N,BLK_K,PIPE)
    // The scales of one stage, viewed as (BLK_M,BLK_N,(BLK_K,PIPE)) with stride 0 where they
    // broadcast, so that partition_C hands every thread the scales of its accumulators.
    Tensor sSFA = make_tensor(
        make_smem_ptr(shared_tensors.smem_SFA.data()),
        make_layout(make_shape(get<0>(shape(SmemLayoutSFA{})), get<1>(TileShape{}),
                               make_shape(get<1>(shape(SmemLayoutSFA{})), get<2>(shape(SmemLayoutSFA{})))),
                    make_stride(get<0>(stride(SmemLayoutSFA{})), _0{},
                                make_stride(get<1>(stride(SmemLayoutSFA{})), get<2>(stride(SmemLayoutSFA{}))))));
    Tensor sSFB = make_tensor(
        make_smem_ptr(shared_tensors.smem_SFB.data()),
        make_layout(make_shape(get<0>(TileShape{}), get<0>(shape(SmemLayoutSFB{})),
                               make_shape(get<1>(shape(SmemLayoutSFB{})), get<2>(shape(SmemLayoutSFB{})))),
                    make_stride(_0{}, get<0>(stride(SmemLayoutSFB{})),
                                make_stride(get<1>(stride(SmemLayoutSFB{})), get<2>(stride(SmemLayoutSFB{}))))));

    constexpr int kMmaWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    const Layout warp_group_thread_layout = make_layout(Int<kMmaWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int warp_group_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thread_mma = tiled_mma.get_slice(warp_group_thread_layout(warp_group_idx));

    Tensor tCsSFA = tiled_mma.get_slice(thread_idx).partition_C(sSFA);  // (MMA,MMA_M,MMA_N,(MMA_K,PIPE))
    Tensor tCsSFB = tiled_mma.get_slice(thread_idx).partition_C(sSFB);  // (MMA,MMA_M,MMA_N,(MMA_K,PIPE))
    Tensor tCrA = thread_mma.make_fragment_A(thread_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = thread_mma.make_fragment_B(thread_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE) descriptors
    CUTE_STATIC_ASSERT_V(size<1>(tCrA) == size<1>(accum));  // M
    CUTE_STATIC_ASSERT_V(size<1>(tCrB) == size<2>(accum));  // N

    // Two partial tiles, and the scale factors of each: one per accumulator row (x scales per
    // token) or one for the whole tile, already multiplied by the weight-block scale.
    Tensor part0 = make_fragment_like(accum);
    Tensor part1 = make_fragment_like(accum);
    Tensor sfa0 = make_tensor_like<ElementBlockScale>(tCsSFA(_, _, _, _0{}));  // (MMA,MMA_M,MMA_N)
    Tensor sfa1 = make_tensor_like<ElementBlockScale>(tCsSFA(_, _, _, _0{}));
    Tensor sfb = make_tensor_like<ElementBlockScale>(tCsSFB(_, _, _, _0{}));  // one value per tile

    // Reads stage `stage`'s scales into sfa as sx·sw (the product CUTLASS forms, so the same
    // rounding). Done before the stage's MMAs are issued, while the previous batch still runs.
    auto load_scales = [&](auto& sfa, int stage) {
      if constexpr (!kPerRowScales) {
        copy(tCsSFA(_, _, _, make_coord(_0{}, stage)), sfa);
        copy(tCsSFB(_, _, _, make_coord(_0{}, stage)), sfb);
        const ElementBlockScale b = sfb(_0{});
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(filter_zeros(sfa)); ++i) filter_zeros(sfa)(i) = filter_zeros(sfa)(i) * b;
      }
    };
    // Issues the wgmma batch of one K tile into `part` (zeroed by the first MMA) and commits it.
    auto issue = [&](auto& part, int stage) {
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(part);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 0; k_block < size<2>(tCrA); ++k_block) {
        cute::gemm(tiled_mma, tCrA(_, _, k_block, stage), tCrB(_, _, k_block, stage), part);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(part);
    };
    // acc += (sx·sw) · part.
    auto promote = [&](auto& part, auto& sfa) {
      warpgroup_fence_operand(part);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) {
        if constexpr (kPerRowScales) accum(i) += part(i);
        else accum(i) += part(i) * sfa(i);
      }
      warpgroup_fence_operand(accum);
    };
    ConsumerCursor<MainloopPipeline, PipelineState> cursor(pipeline, smem_pipe_read);

    clear(accum);
    warpgroup_fence_operand(accum);

    // K tile 0 into P0.
    int stage = cursor.wait();
    load_scales(sfa0, stage);
    issue(part0, stage);
    cursor.advance();
    --k_tile_count;

    // Issues K tile `stage` into `next` while promoting `prev` (the previous K tile's partials,
    // whose batch is the only other one in flight): the first MMA of the tile is committed alone so
    // that waiting for `prev` (wait_group 1) lets the tile's later MMAs stay unissued, and prev's
    // promotion is split into one chunk after each of the tile's MMAs. A warp group whose MMA would
    // wait for room in the tensor pipe promotes meanwhile instead of stalling on the issue.
    auto issue_promoting = [&](auto& next, auto& sfa_next, auto& prev, auto& sfa_prev, int stage) {
      constexpr int kBlocks = decltype(size<2>(tCrA))::value;
      constexpr int kN = decltype(size(accum))::value;
      static_assert(kN % kBlocks == 0, "promotion chunks");
      constexpr int kChunk = kN / kBlocks;
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(next);
      warpgroup_arrive();
      cute::gemm(tiled_mma, tCrA(_, _, 0, stage), tCrB(_, _, 0, stage), next);
      tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      warpgroup_commit_batch();
      warpgroup_wait<1>();  // prev's batch is done (next's first MMA may still run)
      cursor.release_one();
      warpgroup_fence_operand(prev);
      CUTLASS_PRAGMA_UNROLL
      for (int k_block = 1; k_block <= kBlocks; ++k_block) {
        CUTLASS_PRAGMA_UNROLL
        for (int i = (k_block - 1) * kChunk; i < k_block * kChunk; ++i) {
          if constexpr (kPerRowScales) accum(i) += prev(i);
          else accum(i) += prev(i) * sfa_prev(i);
        }
        warpgroup_fence_operand(accum);
        if (k_block < kBlocks) cute::gemm(tiled_mma, tCrA(_, _, k_block, stage), tCrB(_, _, k_block, stage), next);
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(next);
      load_scales(sfa_next, stage);
    };

    // One K tile: wait for its stage, issue it into `next` and promote `prev`, either in that order
    // (plain) or interleaved (issue_promoting).
    auto step = [&](auto interleaved, auto& next, auto& sfa_next, auto& prev, auto& sfa_prev) {
      stage = cursor.wait();
      if constexpr (decltype(interleaved)::value) {
        issue_promoting(next, sfa_next, prev, sfa_prev, stage);
      } else {
        load_scales(sfa_next, stage);
        issue(next, stage);
        warpgroup_wait<1>();  // prev's batch is done (next's may still run)
        cursor.release_one();
        promote(prev, sfa_prev);
      }
      cursor.advance();
    };
    // The K loop, two K tiles per trip so that P0 and P1 stay distinct registers (no dynamic
    // indexing). At the top, P0's batch is in flight and its scales are in sfa0.
    auto k_loop = [&](auto interleaved) {
      CUTLASS_PRAGMA_NO_UNROLL
      for (; k_tile_count >= 2; k_tile_count -= 2) {
        step(interleaved, part1, sfa1, part0, sfa0);
        step(interleaved, part0, sfa0, part1, sfa1);
      }
      if (k_tile_count == 1) {
        step(interleaved, part1, sfa1, part0, sfa0);
        warpgroup_wait<0>();
        promote(part1, sfa1);
      } else {
        warpgroup_wait<0>();
        promote(part0, sfa0);
      }
    };
    if constexpr (kInterleave) {
      if (k_tile_count + 1 >= kInterleaveMinKTiles) k_loop(cute::true_type{});
      else k_loop(cute::false_type{});
    } else {
      k_loop(cute::false_type{});
    }
    if constexpr (kPerRowScales) {
      // `stage` is the last K tile's: its scales are still ours (mma_tail releases it). The base's
      // loader copies sx and sw into every stage (K stride 0); only this last copy is read.
      Tensor sx = make_tensor_like<ElementBlockScale>(tCsSFA(_, _, _, _0{}));  // one per accumulator row
      Tensor sw = make_tensor_like<ElementBlockScale>(tCsSFB(_, _, _, _0{}));  // one per accumulator column
      copy(tCsSFA(_, _, _, make_coord(_0{}, stage)), sx);
      copy(tCsSFB(_, _, _, make_coord(_0{}, stage)), sw);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) = (accum(i) * sx(i)) * sw(i);
      warpgroup_fence_operand(accum);
    }
    // The last stage is released by mma_tail (CUTLASS's), as in the base mainloop.
  }
};

}  // namespace qsgemm::kernels::sm90_blockwise
