// The Hopper-native W4A4 + low-rank prefill GEMM: CUTLASS 4.2's sm90 mixed-input collective (TMA,
// warp-specialized cooperative, persistent) with our own mma(). Included by sm90_w4a4_wgmma_<dtype>.cu.
//
//   Y[L,D] = Σ_g sx[l,g]·sw[d,g]·Σ_{k∈g} x1[l,k]·w1[d,k]  +  Σ_r x2[l,r]·w2[d,r]  (+ bias[d])
//
// Why this design: wgmma takes no 4-bit operand and only A may come from registers, so the INT4
// weight is the A operand (widened int4 -> e4m3 in registers by the prmt lookup of CUTLASS's
// converter) and the activations are the B operand, staged by the quantizer as e4m3 codes
// (docs/formats.md §5, "e4m3 staging"): e4m3·e4m3 -> f32 wgmma at the 8-bit tensor-core rate. Every
// code -8..7 is an e4m3 value, every product an integer of at most 64 and a group's sum at most
// 2^13 in magnitude, which the FP8 accumulator keeps exactly (W4A4Gpu.ExtremeGroupSumsExactEveryConfig);
// e4m3 rather than s8 because the group sums then arrive as floats: promoting one costs an FMUL and
// an FFMA per accumulator instead of four instructions (an s32 -> float conversion first).
// GEMM orientation (operand swap, docs/formats.md §6): M = D (weight rows), N = L (tokens), K = D1;
//   A = W1 packed INT4 [D][D1/2 bytes] as it is stored (even k in the low nibble = cutlass::int4b_t),
//   B = X1 e4m3 codes [L][ld_x1 >= D1], D = Y [L][ld_y] row-major = the GEMM's [M,N] column-major.
// Tile 128 (D) x kBlkN (L) x 128 (K), one partial tile P and one group's scales per thread: at
// kBlkN = 128 the 168 registers of a 384-thread CTA hold no more (ptxas: 168, no spills). The band
// tiles, kBlkN = 64, 80, 96, 112, serve up to 128 tokens (one token tile): the tile holds L rounded
// up to 16 rows, where a 128-token tile reads up to 64 rows past L, each costing more than a row inside
// it (tuning/tune_w4a4_clamp.txt), and nothing can be clamped below 128 tokens. Their last column
// loads only its rows of X1 (sm90_w4a4_last_column_rows.cuh).
//
// mma() (replaces the base's; TMA loads, shared storage, pipeline and mma_tail are CUTLASS's):
//  * per K tile of 128: the four k32 blocks of A are read from shared memory (16-bit loads at offsets
//    set up once per work tile) and widened, the second pair while the first pair's wgmmas run.
//  * each group (blocks 0-1 and 2-3 for group 64, all four for group 128) runs into P, zeroed by its
//    first wgmma, and is promoted, acc = fma(sw[d,g]·sx[l,g], P, acc), with the scales issued
//    before its wgmmas; the other consumer warp group's wgmmas run meanwhile.
//  * Scales: each consumer warp group copies the next K tile's sx and sw into shared memory with
//    cp.async while the current one runs (double-buffered, one named barrier per K tile); a
//    promotion reads its thread's two rows and kBlkN/4 columns (the CLayout_64xN positions, from an
//    identity tensor partitioned by the TiledMma) from there. Rows >= D and columns >= L copy the
//    last row / column (finite, never stored).
//  * The tile's coordinates: mma() is not told which tile it computes, so it replays the kernel's
//    persistent tile scheduler (the same Params, copied in by run(); k-th call = k-th work tile); in
//    the clamped row with the last token column moved back inside L, as its TMA loads and its store
//    are (clamped_token_column.cuh).
//  * Low rank: the tile's X2 [128 tokens][r] and W2 [128 rows][r] are copied into shared memory
//    (cp.async, GMMA's 128-byte swizzle) with the first K tile's scales; after the K loop r/16 bf16 wgmma
//    K-steps (m64n128k16, both operands from shared memory) add X2·W2ᵀ into the same float
//    accumulators, at the tensor-core rate and with no load latency left. r = 0 skips it. Then
//    CUTLASS's epilogue (+ bias as a column broadcast, convert, TMA store clipped to [D, L]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/sm90_tile_scheduler.hpp"
#include "cutlass/numeric_types.h"
#include "kernels/sm90/common/clamped_token_column.cuh"
#include "kernels/sm90/common/consumer_cursor.cuh"
#include "kernels/sm90/common/cutlass_smem.cuh"
#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "kernels/sm90/w4a4/sm90_w4a4_last_column_rows.cuh"
#include "kernels/sm90/w4a4/sm90_w4a4_ptx.cuh"
#include "qsgemm/w4a4.h"
#include "validate.h"

namespace qsgemm::kernels::sm90_w4a4_wgmma {

using Scheduler = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;

// The scale buffers of mma(), per consumer warp group (2), buffer (2) and group of the K tile (2):
// sx for 128 token columns (permuted, a pitch of 4 x 36 floats) and sw for 64 weight rows. They are
// members of the mainloop's TensorStorage, not static __shared__ arrays: static shared memory would
// shift the kernel's dynamic shared memory off the 1024-byte alignment its swizzled TMA tiles need.
// The pipeline's stage count is computed with them carved out.
inline constexpr int kScaleWarpGroups = 2, kScaleBuffers = 2, kSxPitch = 36, kScaleRows = 64;
struct ScaleBuffers {
  alignas(16) float sx[kScaleWarpGroups][kScaleBuffers][2][4 * kSxPitch];  // [wg][buffer][group in tile][perm(col)]
  alignas(16) float sw[kScaleWarpGroups][kScaleBuffers][2][kScaleRows];    // [wg][buffer][group in tile][row]
  alignas(8) uint32_t lut[kScaleWarpGroups][2];                               // INT4 -> e4m3 table words (mma())
};
inline constexpr int kScaleSmemBytes = static_cast<int>(sizeof(ScaleBuffers));

// The low-rank operands of one work tile (128 weight rows, up to 128 tokens, up to kW4A4MaxRank), in
// the K-major 128-byte-swizzled layout wgmma reads (LowRankLayout<rows>; X2's has the tile's kBlkN
// rows, in the first bytes of its buffer). One buffer: the epilogue's barriers over both consumer
// warp groups separate a tile's reads from the next tile's copies.
inline constexpr int kLowRankRows = 128;
template <int kRows>
using LowRankLayout = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<cutlass::bfloat16_t>{},
                                                   cute::Shape<cute::Int<kRows>, cute::Int<kW4A4MaxRank>>{}));
struct LowRankBuffers {
  alignas(1024) cutlass::bfloat16_t w2[kLowRankRows * kW4A4MaxRank];  // [D rows of the tile][r]
  alignas(1024) cutlass::bfloat16_t x2[kLowRankRows * kW4A4MaxRank];  // [tokens of the tile][r]
};
// + 1024: the buffers' alignment may pad the TensorStorage they are appended to.
inline constexpr int kLowRankSmemBytes = static_cast<int>(sizeof(LowRankBuffers)) + 1024;

// What mma() reads besides A and B (GEMM coordinates: M = D, N = L).
struct Extra {
  const float* sx = nullptr;  // M-major [D1/group][ld_sx]: scale of (token n, group g) at sx[g*ld_sx + n]
  int64_t ld_sx = 0;
  const float* sw = nullptr;  // row-major [D][num_groups]
  int group = 64;
  int num_groups = 0;
  const uint16_t* x2 = nullptr;  // bf16 [L][rank], ld_x2 elements
  int64_t ld_x2 = 0;
  const uint16_t* w2 = nullptr;  // bf16 [D][rank], ld_w2 elements
  int64_t ld_w2 = 0;
  int rank = 0;
  int M = 0, N = 0;                      // D, L
  typename Scheduler::Params sched{};    // the kernel's scheduler parameters (run() copies them in)
};

// kClamped: Base is ClampedColumnMainloop<...> (the last token column clamped inside L).
template <class Base, bool kClamped>
struct W4A4Mainloop : Base {
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  struct TensorStorage : Base::TensorStorage {  // the kernel's SharedStorage takes this type
    ScaleBuffers scales;
    LowRankBuffers lowrank;
  };
  using typename Base::TileShape;
  using TiledMma = typename Base::TiledMma;  // e4m3 x e4m3 -> f32, A from registers
  using ElementAccumulator = float;

  static constexpr int kBlkM = cute::size<0>(TileShape{});
  static constexpr int kBlkN = cute::size<1>(TileShape{});
  static constexpr int kBlkK = cute::size<2>(TileShape{});
  static_assert(cute::is_same_v<typename TiledMma::ValTypeC, float>, "float group sums");
  static_assert(cute::is_same_v<typename TiledMma::ValTypeA, cutlass::float_e4m3_t> &&
                    cute::is_same_v<typename TiledMma::ValTypeB, cutlass::float_e4m3_t>,
                "e4m3 x e4m3 wgmma (A widened from INT4 in registers)");
  static_assert(cute::is_same_v<typename TiledMma::AtomLayoutC_TV, cute::GMMA::CLayout_64xN<kBlkN>>,
                "the promotion and the low-rank step read the accumulators as m16n8 C fragments (CLayout_64xN)");
  static_assert(cute::size<2>(TileShape{}) == 128, "K tile 128: one group of 128 or two groups of 64");
  static_assert(Base::KernelConversionMode == cutlass::detail::ConversionMode::DirectConvert,
                "the base only converts INT4 -> e4m3; group scales are applied here");

  struct Arguments : Base::Arguments {
    Extra extra{};
  };
  struct Params : Base::Params {
    Extra extra{};
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args, void* workspace) {
    Params p{};
    static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(problem_shape, args, workspace);
    p.extra = args.extra;
    return p;
  }

  // mma()'s A loads assume the base collective's A stages: rows of 128 INT4 values, stage after stage,
  // under Swizzle<2,4,3> (which CuTe applies to byte addresses, see there).
  template <class Layout>
  static constexpr bool a_layout_is_swizzled_rows() {
    if constexpr (!cute::is_same_v<decltype(cute::get_swizzle_portion(Layout{})), cute::Swizzle<2, 4, 3>>) {
      return false;
    } else {
      constexpr auto plain = cute::get_nonswizzle_portion(Layout{});
      constexpr int kStages = cute::size<2>(Layout{});
      for (int s = 0; s < kStages; s += kStages - 1)
        for (int r = 0; r < kBlkM; r += 5)
          for (int k = 0; k < kBlkK; k += 3)
            if (plain(r, k, s) != s * kBlkM * kBlkK + r * kBlkK + k) return false;
      return true;
    }
  }

  // Where mma()'s A loads read (see there): the byte offset, from the start of an A stage, of consumer
  // thread thread_idx's piece of k32 block 0, lower k half, row g; and of block kb, k half h (+ 8 rows:
  // + 8 · kRowBytesA). tests/cpu/test_w4a4_wgmma_layout.cu checks them against CuTe's partition.
  static constexpr uint32_t kRowBytesA = kBlkK / 2, kStageBytesA = kBlkM * kBlkK / 2;
  static CUTE_HOST_DEVICE uint32_t a_thread_offset(int thread_idx) {
    const int wg = thread_idx / cutlass::NumThreadsPerWarpGroup, lane = thread_idx % 32;
    const int warp_in_wg = (thread_idx % cutlass::NumThreadsPerWarpGroup) / 32;
    const int row = wg * (kBlkM / 2) + 16 * warp_in_wg + lane / 4;
    return row * kRowBytesA + 16 * ((row >> 1) & 3) + 2 * (lane % 4);
  }
  static CUTE_HOST_DEVICE constexpr uint32_t a_piece_offset(uint32_t a_thread, int kb, int h) {
    return (a_thread ^ (16u * kb)) + 8u * h;
  }

  uint32_t tiles_done_ = 0;  // work tiles this consumer thread has computed (the scheduler replay)

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read, FrgTensorC& accum, int k_tile_count,
                          int thread_idx, TensorStorage& shared_tensors, Params const& params) {
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulators must be registers");
    static_assert(is_same_v<typename FrgTensorC::value_type, float>, "float accumulators");
    const Extra& ex = params.extra;

    // ---- this work tile's coordinates: the kernel's scheduler, advanced as the kernel advances it ---
    Scheduler sched(ex.sched);
    sched.advance_to_next_work(tiles_done_);
    ++tiles_done_;
    const auto work = sched.get_current_work();
    const int m0 = work.M_idx * kBlkM;
    int n0 = work.N_idx * kBlkN;
    if constexpr (kClamped) {  // the last token column moved back inside L, as its TMA loads and store are
      const ClampedTokenColumn& column = params.column;
      if (static_cast<int>(work.N_idx) >= column.last) n0 = column.last * kBlkN - column.shift;
    }

    // ---- operands, partitioned as CUTLASS's mixed-input mma() does ---------------------------------
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.begin()), SmemLayoutA{});  // (BLK_M,BLK_K,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.begin()), SmemLayoutB{});   // (BLK_N,BLK_K,PIPE)
    constexpr int kWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    const Layout wg_layout = make_layout(Int<kWarpGroups>{}, Int<cutlass::NumThreadsPerWarpGroup>{});
    const int wg_idx = __shfl_sync(0xFFFFFFFF, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    TiledMma tiled_mma;
    auto thr_mma = tiled_mma.get_thread_slice(thread_idx);
    auto wg_mma = tiled_mma.get_slice(wg_layout(wg_idx));
    Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, Int<0>{}));            // (MMA,MMA_M,MMA_K) e4m3
    Tensor tCrA_i4 = make_fragment_like<typename Base::RealSwappedElementA>(tCrA);  // the INT4 copy
    Tensor tCrB = wg_mma.make_fragment_B(wg_mma.partition_B(sB));            // (MMA,MMA_N,MMA_K,PIPE)
    constexpr int kBlocks = decltype(size<2>(tCrA))::value;
    static_assert(kBlocks == 4, "a K tile of 128 is four k32 wgmma blocks, two per group of 64");

    Tensor part0 = partition_fragment_C(tiled_mma, take<0, 2>(TileShape{}));  // (MMA,MMA_M,MMA_N) group sums
    static_assert(is_same_v<decltype(part0.layout()), decltype(accum.layout())>, "P and the accumulators align");
    constexpr int kAcc = decltype(size(accum))::value;
    static_assert(kAcc == kBlkN / 2, "CLayout_64xN: 2 rows x kBlkN/4 columns per thread");
    constexpr int kCols = kAcc / 2;  // distinct columns (tokens) per thread

    // ---- the thread's rows and columns (CLayout_64xN, asserted above): accumulator 4j + e sits at
    // row r0 + 8·(e >> 1) and column c0 + 8j + (e & 1) of the tile.
    TiledMma mma_c;
    Tensor tCcC = mma_c.get_thread_slice(thread_idx).partition_C(make_identity_tensor(take<0, 2>(TileShape{})));
    const int r0 = get<0>(tCcC(0)), c0 = get<1>(tCcC(0));
    // ---- the group scales, staged in shared memory one K tile ahead -----------------------------
    // Each consumer warp group copies its K tile's scales (sx: the tile's kBlkN tokens; sw: its 64
    // weight rows; one or two groups) with 4-byte cp.async while the tile before runs, so that a
    // promotion reads them with shared-memory latency: 8 LDS.128 + 2 LDS.32 per group instead of 34
    // global loads, each waited on at the promotion. Rows >= D and columns >= L copy the last row /
    // column (finite, never stored). sx is stored permuted, column c = 8j + 2t + e at t·kSxPitch +
    // 2j + e, so that thread t's columns (c0 = 2t, CLayout_64xN) are contiguous; the pitch of 36
    // floats puts the four t at different banks.
    static_assert(kBlkN % 16 == 0 && kBlkN <= 128 && kSxPitch >= kBlkN / 4,
                  "the sx permutation: whole float4 of a thread's columns, at most 16 n8 blocks per tile");
    constexpr int kRowsPerWg = kBlkM / kWarpGroups;
    static_assert(kRowsPerWg == kScaleRows && kWarpGroups == kScaleWarpGroups, "one 64-row wgmma atom per warp group");
    static_assert(kScaleBuffers == 2, "the loops alternate two buffers (buf ^ 1)");
    auto& s_sx = shared_tensors.scales.sx;
    auto& s_sw = shared_tensors.scales.sw;
    const int wg_tid = thread_idx % cutlass::NumThreadsPerWarpGroup;
    const int groups_per_tile = ex.group == 64 ? 2 : 1;
    // Copies the next K tile's scales into buffer buf (K tiles in order from 0, one call each); commits
    // one cp.async group (possibly empty). Each thread copies one token's sx of each group of the tile
    // and one row's sw of one group: sources and destinations are set up once per work tile and
    // advanced by a tile's groups per call.
    const int sx_col = wg_tid;                                          // token column of the tile
    const int sw_gl = wg_tid / kRowsPerWg, sw_r = wg_tid % kRowsPerWg;  // group in the tile, row
    const float* sx_next = ex.sx + min(n0 + sx_col, ex.N - 1);
    const float* sw_next =
        ex.sw + static_cast<int64_t>(min(m0 + wg_idx * kRowsPerWg + sw_r, ex.M - 1)) * ex.num_groups + sw_gl;
    int g_next = 0;  // first group of the next K tile
    const int64_t sx_step = groups_per_tile * ex.ld_sx;
    const uint32_t sx_dst =
        w4a4_ptx::smem_u32(&s_sx[wg_idx][0][0][((sx_col >> 1) & 3) * kSxPitch + 2 * (sx_col >> 3) + (sx_col & 1)]);
    const uint32_t sw_dst = w4a4_ptx::smem_u32(&s_sw[wg_idx][0][sw_gl][sw_r]);
    constexpr uint32_t kSxBufBytes = sizeof(s_sx[0][0]), kSxGroupBytes = sizeof(s_sx[0][0][0]);
    constexpr uint32_t kSwBufBytes = sizeof(s_sw[0][0]);
    static_assert(kBlkN <= cutlass::NumThreadsPerWarpGroup && 2 * kRowsPerWg == cutlass::NumThreadsPerWarpGroup,
                  "at most one sx column per thread and group, one sw row of one of two groups per thread");
    const bool has_sx_col = kBlkN == cutlass::NumThreadsPerWarpGroup || sx_col < kBlkN;
    auto stage_scales = [&](int buf) {
      if (has_sx_col) {
        w4a4_ptx::cp_async_4(sx_dst + buf * kSxBufBytes, sx_next);  // every K tile has a first group
        if (groups_per_tile == 2 && g_next + 1 < ex.num_groups)
          w4a4_ptx::cp_async_4(sx_dst + buf * kSxBufBytes + kSxGroupBytes, sx_next + ex.ld_sx);
      }
      if (sw_gl < groups_per_tile && g_next + sw_gl < ex.num_groups) w4a4_ptx::cp_async_4(sw_dst + buf * kSwBufBytes, sw_next);
      w4a4_ptx::cp_async_commit();
      sx_next += sx_step;
      sw_next += groups_per_tile;
      g_next += groups_per_tile;
    };
    // Waits for this thread's copies of the current tile, then for the warp group's: after the
    // barrier every copy into `buf` has landed and every read of the other buffer is done.
    auto scales_ready = [&]() {
      w4a4_ptx::cp_async_wait<0>();
      cutlass::arch::NamedBarrier::sync(cutlass::NumThreadsPerWarpGroup, wg_idx);
    };
    // ---- the low-rank operands, copied into shared memory with the first K tile's scales ----------
    // Warp group w copies W2's rows of its 64 output channels and X2's rows of tokens 64w..64w+63 of
    // the tile, those below kBlkN (16-byte cp.async: thread = (row % 8, 16-byte chunk)); rows >= D and
    // tokens >= L copy the last one (finite, never stored). Published before the K loop: to the own warp group by the
    // first tile's scale barrier, to the other by the user barrier 4 + w, arrived at there and waited
    // on before the low-rank MMAs, long after (so no warp group waits on the other there). Nothing of
    // it is inside the K loop, whose code is the rank-0 kernel's.
    Tensor sW2 = make_tensor(make_smem_ptr(shared_tensors.lowrank.w2), LowRankLayout<kBlkM>{});
    Tensor sX2 = make_tensor(make_smem_ptr(shared_tensors.lowrank.x2), LowRankLayout<kBlkN>{});
    static_assert(kBlkM == kLowRankRows && kBlkN <= kLowRankRows, "the low-rank buffers hold one tile");
    auto stage_lowrank = [&]() {
      const int chunk = wg_tid % 16, row8 = wg_tid / 16;  // 16 chunks of 8 ranks = kW4A4MaxRank
      static_assert(kW4A4MaxRank == 16 * 8, "one thread per 16-byte chunk of a 128-rank row");
      if (chunk < ex.rank / 8) {
        CUTLASS_PRAGMA_UNROLL
        for (int q = 0; q < kRowsPerWg / 8; ++q) {
          const int r = wg_idx * kRowsPerWg + 8 * q + row8;  // row of the tile
          const int m = min(m0 + r, ex.M - 1), n = min(n0 + r, ex.N - 1);
          w4a4_ptx::cp_async_16(w4a4_ptx::smem_u32(&sW2(r, 8 * chunk)), ex.w2 + static_cast<int64_t>(m) * ex.ld_w2 + 8 * chunk, 16);
          if (kBlkN == kLowRankRows || r < kBlkN)
            w4a4_ptx::cp_async_16(w4a4_ptx::smem_u32(&sX2(r, 8 * chunk)), ex.x2 + static_cast<int64_t>(n) * ex.ld_x2 + 8 * chunk, 16);
        }
      }
      w4a4_ptx::cp_async_commit();
    };
    // This thread's copies have landed and are visible to wgmma (the async proxy); tells the other warp
    // group. The caller's next warp-group barrier publishes them to its own.
    auto publish_lowrank = [&]() {
      w4a4_ptx::cp_async_wait<0>();
      cutlass::arch::fence_view_async_shared();
      cutlass::arch::NamedBarrier::arrive(2 * cutlass::NumThreadsPerWarpGroup, 4 + wg_idx);
    };
    const int t4 = c0 >> 1;                  // 0..3
    const int rw = r0 - wg_idx * kRowsPerWg;  // the thread's first row within the warp group's 64

    // Scales of one group: the two rows' sw and the kCols columns' sx.
    struct Scales {
      float w[2];
      float x[kCols];
    };
    auto load_scales = [&](Scales& s, int buf, int gl) {
      s.w[0] = s_sw[wg_idx][buf][gl][rw];
      s.w[1] = s_sw[wg_idx][buf][gl][rw + 8];
      const float4* px = reinterpret_cast<const float4*>(&s_sx[wg_idx][buf][gl][t4 * kSxPitch]);
      CUTLASS_PRAGMA_UNROLL
      for (int q = 0; q < kCols / 4; ++q) {
        const float4 v = px[q];
        s.x[4 * q] = v.x;
        s.x[4 * q + 1] = v.y;
        s.x[4 * q + 2] = v.z;
        s.x[4 * q + 3] = v.w;
      }
    };
    // acc += (sw·sx)·P: the group's sums are exact in float (integers of at most 2^13, from e4m3 products
    // of -8..7), so one rounding of the scale product and one FFMA per accumulator.
    auto promote = [&](auto& part, const Scales& s) {
      warpgroup_fence_operand(part);
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < kCols / 2; ++j) {
        CUTLASS_PRAGMA_UNROLL
        for (int e = 0; e < 4; ++e) {
          const float sc = s.w[e >> 1] * s.x[2 * j + (e & 1)];
          accum(4 * j + e) = fmaf(sc, part(4 * j + e), accum(4 * j + e));
        }
      }
      warpgroup_fence_operand(accum);
    };
    // ---- A: the thread's INT4 pieces, read from shared memory with 16-bit loads --------------------
    // wgmma's register A fragment (8-bit, K-major, ALayout_64x32): warp w of the warp group holds rows
    // 16w + g and 16w + g + 8 (g = lane / 4) and, of each k32 block, k = 4t..4t+3 (registers 0, 1) and
    // 16 + 4t..16 + 4t + 3 (registers 2, 3), t = lane % 4: four INT4 values, two bytes, per piece, and
    // one 32-bit INT4 word per k half (row g in its low 16 bits, row g + 8 in its high 16 bits). The
    // base collective's A stage is rows of 128 values (64 bytes) whose Swizzle<2,4,3> CuTe applies to
    // byte addresses, as the TMA writes them: the 16-byte chunk of k32 block kb of row r sits at chunk
    // kb ^ ((r >> 1) & 3). So a piece is at (a_thread ^ 16·kb) (+ 8 for the upper k half, + 512 for
    // row + 8) from its stage, with a_thread set up once per tile (a_thread_offset, a_piece_offset;
    // CuTe's copy recomputed the swizzled 64-bit addresses every K tile).
    static_assert(cute::cosize_v<SmemLayoutA> == kBlkM * kBlkK * Base::DispatchPolicy::Stages, "stages of 128 x 128 INT4");
    static_assert(a_layout_is_swizzled_rows<SmemLayoutA>(), "the A offsets below assume rows of 128 INT4, Swizzle<2,4,3>");
    const uint8_t* smem_a = reinterpret_cast<const uint8_t*>(&shared_tensors.smem_A);
    const uint32_t a_thread = a_thread_offset(thread_idx);
    // A: shared memory -> registers, INT4 -> e4m3 (w4a4_ptx::int4x8_to_e4m3), k32 blocks [b0, b0 + n).
    auto widen = [&](int stage, int b0, auto n) {
      CUTLASS_PRAGMA_UNROLL
      for (int kb = b0; kb < b0 + decltype(n)::value; ++kb) {
        Tensor words = recast<uint32_t>(tCrA_i4(_, _, kb));  // [k half]: rows g (low 16 bits), g + 8
        CUTLASS_PRAGMA_UNROLL
        for (int h = 0; h < 2; ++h) {
          const uint8_t* p = smem_a + stage * kStageBytesA + a_piece_offset(a_thread, kb, h);
          const uint32_t lo = *reinterpret_cast<const uint16_t*>(p);
          const uint32_t hi = *reinterpret_cast<const uint16_t*>(p + 8 * kRowBytesA);
          words(h) = lo | (hi << 16);
        }
      }
      // INT4 -> e4m3: CUTLASS's lookup (NumericArrayConverter<e4m3, int4b_t>), with the two table words
      // that must be registers loaded from shared memory: as constants ptxas rematerializes them before
      // every prmt (two moves per eight values), a load it cannot.
      const uint2 lut = *reinterpret_cast<const uint2*>(shared_tensors.scales.lut[wg_idx]);
      CUTLASS_PRAGMA_UNROLL
      for (int kb = b0; kb < b0 + decltype(n)::value; ++kb) {
        Tensor in = recast<uint32_t>(tCrA_i4(_, _, kb));
        Tensor out = recast<uint32_t>(tCrA(_, _, kb));
        CUTLASS_PRAGMA_UNROLL
        for (int h = 0; h < 2; ++h) w4a4_ptx::int4x8_to_e4m3(lut.x, lut.y, in(h), out(2 * h), out(2 * h + 1));
      }
    };
    // Issues k32 blocks [b0, b0 + n) of `stage` into `part` (zeroed by the first) as one batch.
    auto issue = [&](auto& part, int stage, int b0, auto n) {
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      warpgroup_fence_operand(part);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int kb = b0; kb < b0 + decltype(n)::value; ++kb) {
        cute::gemm(tiled_mma, tCrA(_, _, kb), tCrB(_, _, kb, stage), part);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(part);
    };

    // The two consumer warp groups take turns on the tensor cores, group by group: a warp group
    // issues a group's MMAs on its turn and hands the turn over once they are done, so one promotes
    // while the other's MMAs run instead of both promoting at once (tuning/tune_w4a4_order.txt).
    // User barriers 2 + w: "warp group w may issue".
    int groups_left = ex.num_groups;
    auto my_turn = [&]() { cutlass::arch::NamedBarrier::sync(2 * cutlass::NumThreadsPerWarpGroup, 2 + wg_idx); };
    auto pass_turn = [&]() {
      --groups_left;
      if (!(wg_idx == 1 && groups_left == 0))  // warp group 1's last hand-over has no taker
        cutlass::arch::NamedBarrier::arrive(2 * cutlass::NumThreadsPerWarpGroup, 2 + (wg_idx ^ 1));
    };
    if (wg_idx == 1) cutlass::arch::NamedBarrier::arrive(2 * cutlass::NumThreadsPerWarpGroup, 2);  // warp group 0 starts

    ConsumerCursor<MainloopPipeline, PipelineState> cursor(pipeline, smem_pipe_read);
    clear(accum);
    warpgroup_fence_operand(accum);
    Scales sa;
    if (wg_tid == 0) {
      shared_tensors.scales.lut[wg_idx][0] = w4a4_ptx::kE4m3LutPosLo;
      shared_tensors.scales.lut[wg_idx][1] = w4a4_ptx::kE4m3LutNegLo;
    }
    // The previous work tile's last reads of the scale buffers are done before this tile's copies.
    cutlass::arch::NamedBarrier::sync(cutlass::NumThreadsPerWarpGroup, wg_idx);
    if (ex.rank > 0) stage_lowrank();
    stage_scales(0);
    if (ex.rank > 0) publish_lowrank();  // in flight with the first scales: waiting for both costs one latency

    if (ex.group == 64) {
      // Two groups per K tile, each into P with its scales read before its MMAs; the other warp
      // group's MMAs run while this one promotes. A second partial (group g+1's MMAs in flight while
      // g is promoted, scales read at the promotion) fits the consumers' 232 registers only just
      // (64 bytes of spills) and measured 1.23x slower at the seed shape (tuning/tune_w4a4_smem_scales.txt);
      // a 64-token tile fits it but was slower, its A widening shared by half the outputs
      // (tuning/tune_w4a4_e4m3.txt).
      CUTLASS_PRAGMA_NO_UNROLL
      for (int kt = 0; kt < k_tile_count; ++kt) {
        const int g = 2 * kt, buf = kt & 1;
        const int stage = cursor.wait();
        scales_ready();
        if (kt + 1 < k_tile_count) stage_scales(buf ^ 1);
        widen(stage, 0, Int<2>{});
        load_scales(sa, buf, 0);
        my_turn();
        issue(part0, stage, 0, Int<2>{});
        widen(stage, 2, Int<2>{});
        warpgroup_wait<0>();
        pass_turn();
        promote(part0, sa);
        if (g + 1 < ex.num_groups) {  // a last tile with one group of 64: its second half is zero fill
          load_scales(sa, buf, 1);
          my_turn();
          issue(part0, stage, 2, Int<2>{});
          warpgroup_wait<0>();
          pass_turn();
          promote(part0, sa);
        }
        if (kt + 1 < k_tile_count) cursor.release_one();
        cursor.advance();
      }
    } else {
      // One group of 128 per K tile into P, its scales read before its MMAs; the stage is released
      // after its promotion (mma_tail releases the last).
      CUTLASS_PRAGMA_NO_UNROLL
      for (int kt = 0; kt < k_tile_count; ++kt) {
        const int buf = kt & 1;
        const int stage = cursor.wait();
        scales_ready();
        if (kt + 1 < k_tile_count) stage_scales(buf ^ 1);
        widen(stage, 0, Int<2>{});
        load_scales(sa, buf, 0);
        my_turn();
        issue(part0, stage, 0, Int<2>{});
        widen(stage, 2, Int<2>{});
        warpgroup_arrive();
        CUTLASS_PRAGMA_UNROLL
        for (int kb = 2; kb < 4; ++kb) cute::gemm(tiled_mma, tCrA(_, _, kb), tCrB(_, _, kb, stage), part0);
        warpgroup_commit_batch();
        warpgroup_fence_operand(part0);
        warpgroup_wait<0>();
        pass_turn();
        promote(part0, sa);
        if (kt + 1 < k_tile_count) cursor.release_one();
        cursor.advance();
      }
    }

    // ---- the low-rank term: bf16 wgmma K-steps into the same accumulators ---------------------------
    // The same warp-group tiling as the main MMA (two 64-row atoms along D), so its C fragment is the
    // accumulators' (static_assert). Issued without a turn: they run while the other warp group's last
    // group runs or is promoted.
    if (ex.rank > 0) {
      cutlass::arch::NamedBarrier::sync(2 * cutlass::NumThreadsPerWarpGroup, 4 + (wg_idx ^ 1));
      using LowRankAtom = decltype(GMMA::ss_op_selector<cutlass::bfloat16_t, cutlass::bfloat16_t, float,
                                                        Shape<_64, Int<kBlkN>, _16>, GMMA::Major::K, GMMA::Major::K>());
      using LowRankMma = decltype(make_tiled_mma(LowRankAtom{}, Layout<Shape<Int<kWarpGroups>, _1, _1>>{}));
      static_assert(is_same_v<decltype(partition_fragment_C(LowRankMma{}, take<0, 2>(TileShape{})).layout()),
                              decltype(accum.layout())>,
                    "the low-rank wgmma accumulates into the main accumulators' layout");
      LowRankMma lr_mma;
      lr_mma.accumulate_ = GMMA::ScaleOut::One;
      auto lr_thr = lr_mma.get_slice(thread_idx);
      Tensor tLrW2 = lr_thr.make_fragment_A(lr_thr.partition_A(sW2));  // (MMA, 1, kW4A4MaxRank/16) descriptors
      Tensor tLrX2 = lr_thr.make_fragment_B(lr_thr.partition_B(sX2));
      const int k_steps = ex.rank / 16;
      warpgroup_fence_operand(accum);
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int k = 0; k < kW4A4MaxRank / 16; ++k)
        if (k < k_steps) cute::gemm(lr_mma, tLrW2(_, _, k), tLrX2(_, _, k), accum);
      warpgroup_commit_batch();
      warpgroup_wait<0>();
    }
    warpgroup_fence_operand(accum);
  }
};

template <class OutT>
struct CutlassType {
  using type = OutT;
};
template <>
struct CutlassType<__nv_bfloat16> {
  using type = cutlass::bfloat16_t;
};
template <>
struct CutlassType<__half> {
  using type = cutlass::half_t;
};

// One kernel per output dtype, kClamped and token tile: 128 (D) x kTileN (L) x 128 (K), cooperative,
// persistent.
template <class OutT, bool kClamped, int kTileN = 128>
struct W4A4WgmmaGemm {
  using ElementD = typename CutlassType<OutT>::type;
  using TileShape = cute::Shape<cute::_128, cute::Int<kTileN>, cute::_128>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using ElementCompute = float;
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementD>::value;  // 16 bytes

  // Epilogue: D = (acc + bias_f32[m]) + bias_out[m]; a bias is per GEMM row (output channel), i.e. a
  // column broadcast. Null pointers read as zeros (EnableNullptr): one kernel serves no bias, an fp32
  // bias and a bias in the output dtype.
  template <class Element>
  using VecM = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, Element, ElementCompute,
                                                           cute::Stride<cute::_1, cute::_0, int64_t>, 1, true>;
  template <template <class> class Fn, class Out>
  using Op = cutlass::epilogue::fusion::Sm90Compute<Fn, Out, ElementCompute, cutlass::FloatRoundStyle::round_to_nearest>;
  using Acc = cutlass::epilogue::fusion::Sm90AccFetch;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      Op<cutlass::plus, ElementD>, cutlass::epilogue::fusion::Sm90EVT<Op<cutlass::plus, ElementCompute>, Acc, VecM<float>>,
      VecM<ElementD>>;

  using CutlassEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, ElementCompute, void, cutlass::layout::ColumnMajor,
      kAlignmentD, ElementD, cutlass::layout::ColumnMajor, kAlignmentD,
      cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;

  using CutlassMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::int4b_t, cutlass::layout::RowMajor, 32,
      cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, 16, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CutlassEpilogue::SharedStorage)) +
                                                          kScaleSmemBytes + kLowRankSmemBytes>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  // kClamped: the last token column is clamped inside L (clamped_token_column.cuh). A token tile
  // that runs past L reads the rows of X1's TMA box beyond L, each costing more than a valid row
  // (70B gate_up at 129 tokens took 1.28x its time at 256; tuning/tune_w4a4_clamp.txt). The tiles
  // are data-parallel and each sums its K range in one order, so the rows that two tiles compute
  // get the same bits from both. The clamped kernel is 1-2 % slower on whole tiles, so it is a row of
  // its own (w4a4_wgmma_clamp_pays).
  // The band tiles (kTileN < 128): the last column loads only its rows of X1, not the box's rows
  // past L (sm90_w4a4_last_column_rows.cuh).
  using CollectiveMainloop = W4A4Mainloop<
      cute::conditional_t<kClamped, ClampedColumnMainloop<CutlassMainloop>,
                          cute::conditional_t<(kTileN < 128), LastColumnRowsMainloop<CutlassMainloop>, CutlassMainloop>>,
      kClamped>;
  using CollectiveEpilogue = cute::conditional_t<kClamped, ClampedColumnEpilogue<CutlassEpilogue>, CutlassEpilogue>;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  static_assert(cute::is_same_v<typename Kernel::TileScheduler, Scheduler>,
                "mma() replays the persistent scheduler the kernel runs");

  static typename Gemm::Arguments arguments(const W4A4GemmArgs& a) {
    using cute::_1;
    const int M = static_cast<int>(a.D), N = static_cast<int>(a.L), K = static_cast<int>(a.D1);
    typename CollectiveMainloop::Arguments ml{};
    ml.ptr_A = reinterpret_cast<const cutlass::int4b_t*>(a.w1);
    ml.dA = cute::make_stride(int64_t(2) * a.ld_w1, _1{}, int64_t(0));  // ld in INT4 elements
    ml.ptr_B = reinterpret_cast<const cutlass::float_e4m3_t*>(a.x1);
    ml.dB = cute::make_stride(a.ld_x1, _1{}, int64_t(0));
    Extra& ex = ml.extra;
    ex.sx = a.sx;
    ex.ld_sx = a.ld_sx;
    ex.sw = a.sw;
    ex.group = a.group;
    ex.num_groups = static_cast<int>(a.D1 / a.group);
    ex.x2 = static_cast<const uint16_t*>(a.x2);
    ex.ld_x2 = a.ld_x2;
    ex.w2 = static_cast<const uint16_t*>(a.w2);
    ex.ld_w2 = a.ld_w2;
    ex.rank = a.rank;
    ex.M = M;
    ex.N = N;
    typename Fusion::Arguments fusion{};
    const float* bias_f32 = a.bias_f32 ? static_cast<const float*>(a.bias) : nullptr;
    const ElementD* bias_out = a.bias_f32 ? nullptr : static_cast<const ElementD*>(a.bias);
    fusion = {
        {{}, {bias_f32, 0.0f, {}}, {}},        // acc + bias_f32[m]
        {bias_out, ElementD(0), {}},           // + bias_out[m]
        {}};
    using StrideD = typename Kernel::StrideD;
    const StrideD dD = cute::make_stride(_1{}, a.ld_y, int64_t(a.L) * a.ld_y);
    cutlass::KernelHardwareInfo hw;
    hw.device_id = a.device;
    hw.sm_count = a.sm_count;
    ElementD* y = static_cast<ElementD*>(a.y);
    typename CollectiveEpilogue::Arguments epilogue{};
    if constexpr (kClamped) {
      // The clamped column stores as the last tile of L + shift tokens starting shift tokens before Y
      // (never dereferenced before token L - 128 >= 0; unused where shift is 0). The bias is per
      // output channel, the same in both.
      const int64_t shift = clamped_token_column(a.L, cute::size<1>(TileShape{})).shift;
      epilogue = {{fusion, nullptr, {}, y, dD}, {fusion, nullptr, {}, y - shift * a.ld_y, dD}};
    } else {
      epilogue = {fusion, nullptr, {}, y, dD};
    }
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K, 1}, ml, epilogue, hw};
    return args;
  }

  static void run(const W4A4GemmArgs& a, const char* name, cudaStream_t stream) {
    const char* fn = "w4a4_linear";
    const typename Gemm::Arguments args = arguments(a);
    cutlass::Status st = Gemm::can_implement(args);
    if (st != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kUnsupported, "",
                   detail::cat("CUTLASS can_implement refused D=", a.D, " L=", a.L, " D1=", a.D1, " for config ", name,
                               ": ", cutlassGetStatusString(st)));
    const size_t workspace = Gemm::get_workspace_size(args);
    if (workspace != 0)
      detail::fail(fn, Status::kInternal, "",
                   detail::cat("config ", name, " needs a ", workspace, "-byte workspace; w4a4_linear allocates none"));
    detail::set_cutlass_smem_limit_once<Kernel>(fn, a.device);
    typename Kernel::Params params = Kernel::to_underlying_arguments(args, nullptr);
    params.mainloop.extra.sched = params.scheduler;  // mma() replays the kernel's tile order
    st = Gemm::run(params, stream);
    detail::check_launch(fn, name);
    if (st != cutlass::Status::kSuccess)
      detail::fail(fn, Status::kCudaError, "",
                   detail::cat("CUTLASS launch failed for config ", name, ": ", cutlassGetStatusString(st)));
  }
};

// Runs the 128-token kWgmma row `config` (plain or clamped) for output dtype OutT
// (sm90_w4a4_wgmma_<dtype>.cu).
template <class OutT>
void run_wgmma(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  const W4A4Config& c = kW4A4Configs[config];
  if (c.tile_m != 128)
    detail::fail("w4a4_linear", Status::kInternal, "",
                 detail::cat("config ", c.label, ": the 128-token launcher got a ", c.tile_m, "-token tile"));
  if (c.clamped)
    W4A4WgmmaGemm<OutT, true>::run(a, c.label, stream);
  else
    W4A4WgmmaGemm<OutT, false>::run(a, c.label, stream);
}

// Runs the band row `config` (tile_m one of kW4A4BandTiles) for output dtype OutT
// (sm90_w4a4_wgmma_band_<dtype>.cu).
template <class OutT>
void run_wgmma_band(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  static_assert(sizeof(kW4A4BandTiles) / sizeof(kW4A4BandTiles[0]) == 4 && kW4A4BandTiles[0] == 64 &&
                    kW4A4BandTiles[1] == 80 && kW4A4BandTiles[2] == 96 && kW4A4BandTiles[3] == 112,
                "the band tiles instantiated below");
  const W4A4Config& c = kW4A4Configs[config];
  switch (c.tile_m) {
    case 64: return W4A4WgmmaGemm<OutT, false, 64>::run(a, c.label, stream);
    case 80: return W4A4WgmmaGemm<OutT, false, 80>::run(a, c.label, stream);
    case 96: return W4A4WgmmaGemm<OutT, false, 96>::run(a, c.label, stream);
    case 112: return W4A4WgmmaGemm<OutT, false, 112>::run(a, c.label, stream);
    default:
      detail::fail("w4a4_linear", Status::kInternal, "",
                   detail::cat("config ", c.label, ": no band launcher for a ", c.tile_m, "-token tile"));
  }
}

}  // namespace qsgemm::kernels::sm90_w4a4_wgmma
