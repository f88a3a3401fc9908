// The W4A4 + low-rank decode GEMM (the kDecode rows of sm90_w4a4_configs.h; the heuristic takes it
// up to 16 tokens and from 17 where its cost model keeps it, any L runs):
//
//   Y[L,D] = Σ_g sx[l,g]·sw[d,g]·Σ_{k∈g} x1[l,k]·w1[d,k]  +  Σ_r x2[l,r]·w2[d,r]  (+ bias[d])
//
// At decode sizes the packed weight is nearly all the bytes, so the kernel is a weight stream:
//  * The weight is the A operand of mma.sync m16n8k32 s8 (16 output channels per MMA), the tokens
//    the n8 columns: NB = 1, 2 or 4 n8 blocks per CTA (8, 16, 32 tokens), so a single token wastes
//    7/8 of an MMA, not 31/32 as with tokens as A. MT = 1 or 2 m16 tiles of weight rows per CTA (2
//    with 32 tokens, so the weight, not X1, is most of each stage). A block is MT·16 weight rows x
//    NB·8 tokens; more tokens than a block holds: more blocks, token blocks fastest in one linear
//    order, so the weight is read from L2 after the first token block.
//  * One CTA per block, except the 8- and 16-token ring rows: their grid is one wave (two CTAs per
//    SM) and a CTA loops over blocks, each warp's ring running on from one block into the next, so
//    the next block's first stages are in flight while a block's tiles are added and stored (the
//    short K slices, e.g. two stages per warp at K = 4096, had paid a load latency and a CTA start
//    per block; ncu: DRAM 50 -> 57 % of peak on 28672x4096 at one token).
//  * The CTA's 8 warps split the K groups (contiguous runs of whole groups, so every integer sum is
//    one group's), with no CTA barrier in the K loop. 8 tokens, ring_sw = 0: each thread loads its
//    bytes of a step's groups straight into registers, 16 bytes per row and load, all loads of a
//    step before any MMA (group 64: two groups per 16-byte quad piece, below). The ring rows: each
//    warp streams its slice through its own ring, a stage being SW bytes (128 / 64) of every weight
//    row and token plus their scales, as two to four TMA boxes (lane 0 issues them) completing on
//    the stage's mbarrier; ~14 KiB of ring per warp keeps ~200 KiB in flight per SM at two CTAs per
//    SM. A box is one request for 1-4 KiB, where 16-byte loads or cp.async made one per 16 bytes and
//    row: the load requests per byte, not the bytes in flight, bounded the streams before
//    (tuning/tune_w4a4_decode_chunks.txt); a bulk copy per row (64-128 bytes) was slower still, the
//    TMA unit taking ~18 cycles per copy (tuning/tune_w4a4_decode_tma.txt). The mbarriers, boxes,
//    L2 hints and fences are CUTLASS's (ClusterTransactionBarrier, SM90_TMA_LOAD_2D, CacheHintSm90).
//  * Which bytes a thread multiplies: thread t (lane % 4) takes bytes [t·G/8, (t+1)·G/8) of a
//    group's row slice in rows gid and gid + 8 (gid = lane / 4) and in token row gid of each n8
//    block. Each 32-bit word (8 values) widens to two s8 registers holding 16·v
//    (w4a4_ptx::even_nibbles / odd_nibbles): the thread's k positions 4t..4t+3 and 16+4t..16+4t+3
//    of one m16n8k32 MMA, in A and B alike. A and B agree on the actual k of every position, so the
//    dot products are right without shuffles (G/32 MMAs per group).
//  * Per group: the exact s32 sums (at most 128·64·256 = 2^21) become floats without I2F (one FFMA
//    that also applies the 2^-8 of the 16·v bytes, exactly: the first MMA starts the sums at the bits
//    of 1.5·2^23; the 32-token rows, short of registers, add them after), then
//    acc = fma(sw·sx, sum, acc) in float32. The stream is issue-bound as much as memory-bound (ncu:
//    ~0.6 instructions issued per scheduler and cycle), so instructions per byte count.
//  * Low rank: bf16 m16n8k16 step s of r/16 on warp s, into the same accumulators.
//  * The 8 warps' float32 tiles are added in shared memory in warp order (deterministic), then
//    + bias, convert, store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cute/arch/copy_sm90_desc.hpp"
#include "cute/arch/copy_sm90_tma.hpp"
#include "cutlass/arch/barrier.h"
#include "kernels/sm90/common/small_int_to_float.cuh"
#include "kernels/sm90/common/tma_map.h"
#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "kernels/sm90/w4a4/sm90_w4a4_ptx.cuh"
#include "per_device_once.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

using namespace w4a4_ptx;

constexpr int kWarps = 8;  // K slices per CTA (the rows' k_slices)

__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

// A group's s32 sum of 16·x·16·w products starts at kSmallIntFloatBits, the bit pattern of 1.5·2^23
// (the C operand of its first MMA, small_int_to_float.cuh): the sum is below 2^22 in magnitude, so
// its bits are the float 1.5·2^23 + 256·Σxw exactly, and one FFMA scales by 2^-8 and removes the offset
// (1.5·2^23·2^-8 = 49152), both exact.
__device__ __forceinline__ float group_sum_to_float(int32_t biased) {
  return fmaf(__int_as_float(biased), 0.00390625f, -49152.0f);
}

template <class OutT>
__device__ __forceinline__ float bias_at(const W4A4GemmArgs& a, int64_t d) {
  if (a.bias == nullptr) return 0.0f;
  if (a.bias_f32) return static_cast<const float*>(a.bias)[d];
  if constexpr (sizeof(OutT) == 2) return w4a4_ptx::to_f32(static_cast<const OutT*>(a.bias)[d]);
  return static_cast<const float*>(a.bias)[d];
}

// One instantiation's geometry: MT m16 tiles of weight rows and NB n8 blocks of tokens per CTA; each
// warp's ring holds S stages of SW bytes of every row (SW·2/G whole groups) plus their scales.
// SW = 0: no ring, the registers stream (one n8 block, one m16 tile; see the kernel).
//
// A stage's codes are two TMA boxes, the weight's [kRows][SW] and the tokens' [kToks][SW], in SW-byte
// rows swizzled by the TMA unit (128-byte swizzle for SW = 128, 64-byte for 64), so that a phase of
// fragment loads meets at most two rows per bank. Its scales are two more boxes (or 4-byte cp.async
// where a map cannot be made): the weight's as [kRows][kGps], the tokens' as [kGps][kToks]. The
// codes of every warp's stages come first (1024-byte aligned, as the swizzle needs), then the scales,
// then one mbarrier per stage.
template <int G, int NB, int MT, int SW>
struct Geometry {
  static constexpr int kRows = 16 * MT;                     // weight rows per CTA
  static constexpr int kToks = 8 * NB;                      // tokens per CTA
  static constexpr int kStageRows = kRows + kToks;          // SW-byte rows of a stage
  static constexpr int kGps = SW * 2 / G;                   // groups per stage
  static constexpr int kCodeBytes = kStageRows * SW;
  // Weight scales [kRows][kGps], then token scales [kGps][kToks], each 128-byte aligned (TMA boxes).
  static constexpr int kSwBytes = (4 * kGps * kRows + 127) / 128 * 128;
  static constexpr int kScaleBytes = kSwBytes + (4 * kGps * kToks + 127) / 128 * 128;
  static constexpr int kStageBytes = kCodeBytes + kScaleBytes;
  // ~14 KiB of ring per warp: two CTAs (16 warps) per SM keep ~200 KiB of loads in flight.
  static constexpr int kStages = SW == 0 ? 0 : ((14336 / kStageBytes) < 2 ? 2 : (14336 / kStageBytes));
  static constexpr int kScaleOff = kWarps * kStages * kCodeBytes;
  static constexpr int kRingBytes = kWarps * kStages * kStageBytes;
  static constexpr int kTileBytes = MT * NB * 4 * 32 * 4;  // one warp's float32 tile
  // The register rows reduce the warps' tiles in shared memory of their own; the ring rows in the
  // slot each warp consumed last (whose index goes into a table after the mbarriers).
  static constexpr int kBarOff = SW == 0 ? kWarps * kTileBytes : kRingBytes;
  static constexpr int kAlign = SW == 0 ? 16 : 1024;
  static constexpr int kSmemBytes = kBarOff + kWarps * kStages * 8 + (SW == 0 ? 0 : kWarps * 4) + kAlign;
  static_assert(SW == 0 || SW == 64 || SW == 128, "stage rows of 4 or 8 chunks: one TMA swizzle span");
  static_assert(SW != 0 || (NB == 1 && MT == 1), "the register stream has one n8 block and one m16 tile");
  static_assert(SW == 0 || (kCodeBytes % 1024 == 0 && (kRows * SW) % 512 == 0), "swizzle-aligned boxes");
  static_assert(kSmemBytes <= 113 * 1024, "two CTAs per SM");
  static_assert(SW == 0 || kSmemBytes > 76 * 1024, "the ring rows' resident grid assumes exactly two CTAs per SM");
  static_assert(SW == 0 || kTileBytes <= kCodeBytes, "a warp's tile fits in the codes of one ring slot");
  // Byte b of stage row r (weight rows, then tokens) under the TMA swizzle of SW-byte rows.
  __device__ static constexpr int code_off(int r, int b) {
    return SW == 128 ? r * 128 + (b ^ ((r & 7) << 4)) : r * 64 + (b ^ (((r >> 1) & 3) << 4));
  }
};

// The TMA maps of a ring row: the packed weight and X1 (uint8), the scales (fp32) where a map can be
// made (sw_tma / sx_tma; else the kernel copies them with 4-byte cp.async).
// Fewer tokens than a CTA holds (L < kToks): the X1 box has x_rows = L rows and the token-scale box
// sx_cols = L rounded up to 4 columns, as a TMA box's rows past the tensor cost more than rows in it
// (docs/performance.md, the sparse cliff); the smem rows past L keep stale integers that reach only
// columns past L, which are never stored.
struct DecodeMaps {
  CUtensorMap w, x, sw, sx;
  int sw_tma = 0, sx_tma = 0;
  int x_rows = 0, sx_cols = 0;
};

// A packed word pair / quad straight from global memory into registers, bypassing L1 (read once).
template <int W>
__device__ __forceinline__ void load_stream(uint32_t (&r)[W], const uint8_t* p) {
  if constexpr (W == 2) {
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
  } else {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "l"(p));
  }
}

// A stage row's kW packed words of one group from shared memory (8 or 16 bytes, aligned).
template <int kW>
__device__ __forceinline__ void load_words(uint32_t (&r)[kW], const uint8_t* p) {
  if constexpr (kW == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    r[0] = v.x, r[1] = v.y;
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
  }
}
// A row's N (1, 2 or 4) weight scales of a stage as one shared-memory vector (16·N-byte aligned).
template <int N>
__device__ __forceinline__ void load_scales(float (&r)[N], const float* p) {
  if constexpr (N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
  } else if constexpr (N == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    r[0] = v.x, r[1] = v.y;
  } else {
    r[0] = *p;
  }
}

// The s8 MMAs of one group and its promotion into one m16n8 float tile: wa / wb the packed words of
// rows gid / gid + 8, xw those of token gid, sa / sb the rows' scales, sc the columns' (2t, 2t + 1).
// kBiased: the group's first MMA starts the sums at kSmallIntFloatBits (one FFMA converts a sum);
// else at zero (an integer add and an FFMA): the biased C operand holds four registers, which the
// 32-token tiles (two m16 tiles, four n8 blocks) have no room for.
template <int kW, bool kBiased>
__device__ __forceinline__ void group_mma(float (&acc)[4], const uint32_t (&wa)[kW], const uint32_t (&wb)[kW],
                                          const uint32_t (&xw)[kW], float sa, float sb, float sc0, float sc1) {
  int p[4];
#pragma unroll
  for (int w = 0; w < kW; ++w) {
    const uint32_t a0 = even_nibbles(wa[w]), a2 = odd_nibbles(wa[w]);
    const uint32_t a1 = even_nibbles(wb[w]), a3 = odd_nibbles(wb[w]);
    const uint32_t b0 = even_nibbles(xw[w]), b1 = odd_nibbles(xw[w]);
    if (w == 0)
      mma_s8_set_c(p, a0, a1, a2, a3, b0, b1, kBiased ? kSmallIntFloatBits : 0);
    else
      mma_s8(p, a0, a1, a2, a3, b0, b1);
  }
  // C fragment: p[0], p[1] row gid (sa), p[2], p[3] row gid + 8 (sb); columns 2t, 2t + 1.
  if constexpr (!kBiased)
#pragma unroll
    for (int e = 0; e < 4; ++e) p[e] += kSmallIntFloatBits;
  acc[0] = fmaf(sa * sc0, group_sum_to_float(p[0]), acc[0]);
  acc[1] = fmaf(sa * sc1, group_sum_to_float(p[1]), acc[1]);
  acc[2] = fmaf(sb * sc0, group_sum_to_float(p[2]), acc[2]);
  acc[3] = fmaf(sb * sc1, group_sum_to_float(p[3]), acc[3]);
}

template <int G, int NB, int MT, int SW, class OutT>
__global__ void __launch_bounds__(kWarps * 32, 2) sm90_w4a4_decode_kernel(const W4A4GemmArgs a,
                                                                          const __grid_constant__ DecodeMaps maps) {
  using Geo = Geometry<G, NB, MT, SW>;
  constexpr int kRows = Geo::kRows, kToks = Geo::kToks, kGps = Geo::kGps;
  constexpr int kW = G / 32;             // packed words per thread, row and group (G/8 bytes)
  constexpr int kAcc = MT * NB * 4;      // float accumulators per thread
  constexpr bool kBiasedC = MT * NB <= 2;  // group_mma
  extern __shared__ __align__(16) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int gid = lane >> 2, t = lane & 3;
  // Blocks of kRows weight rows x kToks tokens in one linear order, token blocks fastest: the CTAs of
  // one weight-row block run next to each other, so the weight comes from DRAM once and from L2 for
  // the other token blocks.
  // Block b: weight rows from b / token_blocks · kRows, tokens from b % token_blocks · kToks. In int
  // (launch checks that the block count fits), and without a division at one token block (L <= kToks,
  // the common case): a 64-bit division is a ~70-instruction subroutine.
  const int token_blocks = static_cast<int>((a.L + kToks - 1) / kToks);
  auto block_d0 = [&](int b) { return (token_blocks == 1 ? b : b / token_blocks) * kRows; };
  auto block_l0 = [&](int b) { return token_blocks == 1 ? 0 : b % token_blocks * kToks; };
  const int ng = static_cast<int>(a.D1 / G);
  float acc[MT][NB][4];
  auto zero_acc = [&] {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][nb][e] = 0.0f;
  };

  // The low-rank term of block (d0, l0): k16 step s of r/16 on warp s (r <= 128: at most one step per
  // warp). Thread t's bf16 k positions 2t, 2t+1 / 2t+8, 2t+9 hold actual k 4t..4t+3 in both operands
  // (one 8-byte load per row, no shuffles). lr_load issues the step's loads, lr_mma adds its MMAs: the
  // 8- and 16-token ring rows load at the start of a block, so the loads' latency hides behind its K
  // loop; the 32-token row and the register streams, whose registers are full there, right before.
  constexpr bool kLowRankEarly = SW > 0 && MT * NB <= 2;
  uint2 lr_x[NB], lr_w[MT][2];
  const bool lr_live = warp * 16 < a.rank;
  auto lr_load = [&](int64_t d0, int64_t l0) {
    if (!lr_live) return;
    const uint16_t* w2 = static_cast<const uint16_t*>(a.w2);
    const uint16_t* x2 = static_cast<const uint16_t*>(a.x2);
    const int k0 = warp * 16 + 4 * t;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      const int64_t l = l0 + nb * 8 + gid;
      lr_x[nb] = l < a.L ? __ldg(reinterpret_cast<const uint2*>(x2 + l * a.ld_x2 + k0)) : make_uint2(0, 0);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t r = d0 + mt * 16 + gid + 8 * h;
        lr_w[mt][h] = r < a.D ? __ldg(reinterpret_cast<const uint2*>(w2 + r * a.ld_w2 + k0)) : make_uint2(0, 0);
      }
  };
  auto lr_mma = [&] {
    if (!lr_live) return;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
        mma_bf16(acc[mt][nb], lr_w[mt][0].x, lr_w[mt][1].x, lr_w[mt][0].y, lr_w[mt][1].y, lr_x[nb].x, lr_x[nb].y);
  };

  // The warps' float32 tiles of block (d0, l0): this warp's written to mine, warp w's read from
  // red_of(w) after the barrier, added in warp order (deterministic); + bias, convert, store.
  auto reduce_store = [&](int64_t d0, int64_t l0, float* mine, auto red_of) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) mine[((mt * NB + nb) * 4 + e) * 32 + lane] = acc[mt][nb][e];
    __syncthreads();
    OutT* y = static_cast<OutT*>(a.y);
    for (int o = static_cast<int>(threadIdx.x); o < kAcc * 32; o += kWarps * 32) {
      const int i = o >> 5, ln = o & 31;
      float sum = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) sum += red_of(w)[i * 32 + ln];
      const int mt = i / (NB * 4), nb = (i / 4) % NB, e = i & 3;
      const int64_t d = d0 + mt * 16 + (ln >> 2) + (e >= 2 ? 8 : 0);
      const int64_t l = l0 + nb * 8 + 2 * (ln & 3) + (e & 1);
      if (d < a.D && l < a.L) store1(y + l * a.ld_y + d, sum + bias_at<OutT>(a, d));
    }
  };

  if constexpr (SW > 0) {
    // The ring rows: the CTA stays resident over blocks blockIdx.x, blockIdx.x + gridDim.x, ... (the
    // grid is one wave), and each warp's ring runs on across them: the next block's first stages are
    // in flight while a block's tiles are reduced and stored.
    constexpr int S = Geo::kStages;
    const int n_blocks = token_blocks * static_cast<int>((a.D + kRows - 1) / kRows);
    const int my_blocks = static_cast<int>(blockIdx.x) < n_blocks
                              ? (n_blocks - 1 - static_cast<int>(blockIdx.x)) / static_cast<int>(gridDim.x) + 1
                              : 0;
    // Warp slices of whole stages (kGps groups): only the weight's last stage may hold fewer groups,
    // and the TMA unit fills its columns past D1 (and the scales past them) with zeros.
    const int ns_all = (ng + kGps - 1) / kGps;
    const int st_begin = warp * ns_all / kWarps, n_stages = (warp + 1) * ns_all / kWarps - st_begin;
    const int64_t total = static_cast<int64_t>(my_blocks) * n_stages;  // this warp's stages, all blocks
    int64_t issued = 0;                                                 // of them issued so far
    uint8_t* const aligned = smem + ((Geo::kAlign - (smem_u32(smem) & (Geo::kAlign - 1))) & (Geo::kAlign - 1));
    uint8_t* const codes = aligned + warp * S * Geo::kCodeBytes;
    float* const scales = reinterpret_cast<float*>(aligned + Geo::kScaleOff + warp * S * Geo::kScaleBytes);
    uint64_t* const full = reinterpret_cast<uint64_t*>(aligned + Geo::kBarOff) + warp * S;
    int* const red_slot = reinterpret_cast<int*>(aligned + Geo::kBarOff + kWarps * S * 8);  // [kWarps]
    const uint32_t tx = (kRows + maps.x_rows) * SW + (maps.sw_tma ? kRows * kGps * 4 : 0) +
                        (maps.sx_tma ? kGps * maps.sx_cols * 4 : 0);
    const int sx_pitch = maps.sx_tma ? maps.sx_cols : kToks;  // token scales per group in a stage
    if (lane == 0) {
      // The first box of each warp waits for the TMA unit to fetch the map: start that now.
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&maps.w));
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&maps.x));
      for (int k = 0; k < S; ++k) cutlass::arch::ClusterTransactionBarrier::init(&full[k], 1);
      cutlass::arch::fence_barrier_init();
    }
    __syncwarp();

    // The next stage to issue: its slot, its block and its stage in the warp's slice (block indices,
    // rows and tokens fit in int: launch checks the CTA count, and TMA coordinates are int).
    int iss_slot = 0, iss_blk = static_cast<int>(blockIdx.x), iss_s = 0;
    int iss_d0 = block_d0(iss_blk), iss_l0 = block_l0(iss_blk);
    // The next stage of this warp's sequence into slot iss_slot: lane 0 issues the stage's two to four
    // TMA boxes (rows past D, tokens past L and columns past D1 arrive as zeros), each one request where
    // 16-byte loads or cp.async made one per 16 bytes and row; scales without a map come by 4-byte
    // cp.async (zero-filled where out of range). The weight is read once (evict it from L2 first); X1
    // and the token scales serve every CTA.
    auto issue = [&] {
      const int slot = iss_slot;
      const int gs = (st_begin + iss_s) * kGps, live = min(kGps, ng - gs);
      const int d0 = iss_d0, l0 = iss_l0;
      float* fs = scales + slot * (Geo::kScaleBytes / 4);
      float* fx = fs + Geo::kSwBytes / 4;
      if (lane == 0) {
        uint64_t* bar = &full[slot];
        uint8_t* cb = codes + slot * Geo::kCodeBytes;
        // This warp's (and, after a block's reduction, every warp's) generic accesses of the slot,
        // ordered by the barrier before, come before the async proxy's writes into it.
        cutlass::arch::fence_view_async_shared();
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(bar, tx);
        const int col = gs * (G / 2);
        constexpr auto kFirst = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);
        constexpr auto kLast = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_LAST);
        cute::SM90_TMA_LOAD_2D::copy(&maps.w, bar, kFirst, cb, col, d0);
        cute::SM90_TMA_LOAD_2D::copy(&maps.x, bar, kLast, cb + kRows * SW, col, l0);
        if (maps.sw_tma) cute::SM90_TMA_LOAD_2D::copy(&maps.sw, bar, kFirst, fs, gs, d0);
        if (maps.sx_tma) cute::SM90_TMA_LOAD_2D::copy(&maps.sx, bar, kLast, fx, l0, gs);
      }
      if (!maps.sw_tma) {
        const int rows_w = a.D - d0 < kRows ? static_cast<int>(a.D - d0) : kRows;
#pragma unroll
        for (int i = lane; i < kRows * kGps; i += 32) {
          const int r = i / kGps, j = i % kGps;
          const bool ok = j < live && r < rows_w;
          cp_async_4(smem_u32(fs + i), ok ? a.sw + (static_cast<int64_t>(d0) + r) * ng + gs + j : a.sw, ok ? 4 : 0);
        }
      }
      if (!maps.sx_tma) {
        const int rows_x = a.L - l0 < kToks ? static_cast<int>(a.L - l0) : kToks;
#pragma unroll
        for (int i = lane; i < kToks * kGps; i += 32) {
          const int j = i / kToks, k = i % kToks;
          const bool ok = j < live && k < rows_x;
          cp_async_4(smem_u32(fx + i), ok ? a.sx + static_cast<int64_t>(gs + j) * a.ld_sx + l0 + k : a.sx, ok ? 4 : 0);
        }
      }
      iss_slot = iss_slot + 1 == S ? 0 : iss_slot + 1;
      ++issued;
      if (++iss_s == n_stages) {
        iss_s = 0, iss_blk += static_cast<int>(gridDim.x);
        iss_d0 = block_d0(iss_blk), iss_l0 = block_l0(iss_blk);
      }
    };

#pragma unroll
    for (int k = 0; k < S - 1; ++k) {
      if (issued < total) issue();
      cp_async_commit();
    }
    int slot = 0, last_slot = 0;  // the next stage to consume, the last one consumed
    uint32_t phase = 0;           // the parity of the next stage's mbarrier phase
    for (int blk = static_cast<int>(blockIdx.x); blk < n_blocks; blk += static_cast<int>(gridDim.x)) {
      const int64_t d0 = block_d0(blk), l0 = block_l0(blk);
      zero_acc();
      if constexpr (kLowRankEarly) lr_load(d0, l0);
      for (int s = 0; s < n_stages; ++s) {
        cp_async_wait<S - 2>();  // the stage's 4-byte scale copies (if any)
        // Spin on try_wait: ClusterBarrier::wait's suspend-time hint put the warps to sleep (NANOSLEEP)
        // between the stages of this stream.
        while (!cutlass::arch::ClusterTransactionBarrier::try_wait(&full[slot], phase)) {
        }
        __syncwarp();  // every lane's cp.async scales of the stage are visible to all
        // Refill the slot the previous stage used (every lane is done with it: the __syncwarp at the
        // end of the previous stage, or the CTA barrier after the previous block's reduction) before
        // this stage's math, so S - 1 stages stay in flight.
        if (issued < total) issue();
        cp_async_commit();
        const uint8_t* base = codes + slot * Geo::kCodeBytes;
        const float* fs = scales + slot * (Geo::kScaleBytes / 4);
        const float* fx = fs + Geo::kSwBytes / 4;
        // One m16 tile: the stage's weight scales of rows gid, gid + 8 as two vectors (a row's groups
        // are contiguous); two tiles load them per group (the vectors would spill).
        float sa_all[kGps], sb_all[kGps];
        if constexpr (MT == 1) {
          load_scales<kGps>(sa_all, fs + gid * kGps);
          load_scales<kGps>(sb_all, fs + (gid + 8) * kGps);
        }
        // Every group of the stage: past D1 the codes and scales are zeros, which add 0.
#pragma unroll
        for (int j = 0; j < kGps; ++j) {
          // Thread t's bytes of group j in a stage row: G/8 of them from byte j·G/2 + t·G/8.
          const int byte = j * (G / 2) + t * (G / 8);
          uint32_t xw[NB][kW];
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) load_words<kW>(xw[nb], base + Geo::code_off(kRows + nb * 8 + gid, byte));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            const int rA = mt * 16 + gid, rB = rA + 8;
            uint32_t wa[kW], wb[kW];
            load_words<kW>(wa, base + Geo::code_off(rA, byte));
            load_words<kW>(wb, base + Geo::code_off(rB, byte));
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
              const float2 sc = *reinterpret_cast<const float2*>(fx + j * sx_pitch + nb * 8 + 2 * t);
              const float sa = MT == 1 ? sa_all[j] : fs[rA * kGps + j], sb = MT == 1 ? sb_all[j] : fs[rB * kGps + j];
              group_mma<kW, kBiasedC>(acc[mt][nb], wa, wb, xw[nb], sa, sb, sc.x, sc.y);
            }
          }
        }
        __syncwarp();  // every lane is done with the slot before a later iteration refills it
        last_slot = slot;
        if (++slot == S) slot = 0, phase ^= 1u;
      }
      if constexpr (!kLowRankEarly) lr_load(d0, l0);
      lr_mma();
      // The warps' tiles go through the slot each warp consumed last (free until its next refill,
      // which follows the CTA barrier below); a warp without stages uses slot 0.
      if (lane == 0) red_slot[warp] = last_slot;  // read by the other warps after the barrier
      reduce_store(d0, l0, reinterpret_cast<float*>(codes + last_slot * Geo::kCodeBytes), [&](int w) {
        return reinterpret_cast<float*>(aligned + (w * S + red_slot[w]) * Geo::kCodeBytes);
      });
      __syncthreads();  // every thread is done with the tiles before their slots are refilled
    }
    cp_async_wait<0>();
  } else {
    const int64_t d0 = block_d0(static_cast<int>(blockIdx.x)), l0 = block_l0(static_cast<int>(blockIdx.x));
    const int g_begin = warp * ng / kWarps, g_end = (warp + 1) * ng / kWarps;
    zero_acc();
    if constexpr (kLowRankEarly) lr_load(d0, l0);
    if constexpr (G == 64) {
      // One n8 block, one m16 tile, group 64: lane t loads bytes [16t, 16t + 16) of 64-byte chunks (two
      // groups) of rows gid, gid + 8 and token row gid, so lanes t < 2 hold a chunk's first group and
      // t >= 2 its second. Each group's MMAs read X masked to its own lanes (the other lanes' k positions
      // multiply zeros), so every integer sum is still one group's, at 8 MMAs per chunk instead of 4:
      // the tensor cores idle at one n8 block. Against 8-byte loads of one group this halves the
      // weight's and X1's load instructions and L1 requests per byte, and the weight scales come as
      // 16-byte vectors of 4 groups where aligned (the requests per byte, not DRAM, bound the 8-byte
      // loads: 1 token 6-12 % faster on six layers, tuning/tune_w4a4_decode_chunks.txt).
      constexpr int U = 2;           // chunks per step (more spill at 128 registers)
      constexpr int kGps = 2 * U;    // groups per step: one 16-byte vector of weight scales
      // Warp slices of whole 4-group vectors, so every step starts on one.
      const int nq = (ng + 3) / 4;
      const int gb = 4 * (warp * nq / kWarps), ge = min(ng, 4 * ((warp + 1) * nq / kWarps));
      const int64_t rA = d0 + gid, rB = rA + 8, l = l0 + gid;
      const bool okA = rA < a.D, okB = rB < a.D, okX = l < a.L, ok0 = l0 + 2 * t < a.L, ok1 = l0 + 2 * t + 1 < a.L;
      const uint8_t* wA = a.w1 + (okA ? rA : 0) * a.ld_w1 + t * 16;
      const uint8_t* wB = a.w1 + (okB ? rB : 0) * a.ld_w1 + t * 16;
      const uint8_t* xp = a.x1 + (okX ? l : 0) * a.ld_x1 + t * 16;
      const float* swA = a.sw + (okA ? rA : 0) * ng;
      const float* swB = a.sw + (okB ? rB : 0) * ng;
      const float* sxp = a.sx + l0 + 2 * t;
      const bool sw_vec4 = (reinterpret_cast<uintptr_t>(a.sw) & 15) == 0 && ng % 4 == 0;
      const bool sx_vec2 = (reinterpret_cast<uintptr_t>(a.sx) & 7) == 0 && a.ld_sx % 2 == 0;
      const uint32_t lo_lanes = t < 2 ? 0xFFFFFFFFu : 0u;  // the lanes of a chunk's first group
      for (int g0 = gb; g0 < ge; g0 += kGps) {
        uint32_t wa[U][4], wb[U][4], xv[U][4];
        float sa[kGps], sb[kGps], s0[kGps], s1[kGps];
  #pragma unroll
        for (int u = 0; u < U; ++u) {  // groups past ge read nothing and contribute 0
          const bool live = g0 + 2 * u + (t >> 1) < ge;  // this lane's group of chunk u
          const int64_t off = static_cast<int64_t>(g0 + 2 * u) * (G / 2);
  #pragma unroll
          for (int w = 0; w < 4; ++w) wa[u][w] = wb[u][w] = 0u;
          if (live && okA) load_stream<4>(wa[u], wA + off);
          if (live && okB) load_stream<4>(wb[u], wB + off);
          const uint4 v = live && okX ? __ldg(reinterpret_cast<const uint4*>(xp + off)) : make_uint4(0, 0, 0, 0);
          xv[u][0] = v.x, xv[u][1] = v.y, xv[u][2] = v.z, xv[u][3] = v.w;
        }
        if (sw_vec4) {  // g0 % 4 == 0 and ge % 4 == 0 here: the vector is all live or all past ge
          const bool live = g0 < ge;
          const float4 va = live && okA ? __ldg(reinterpret_cast<const float4*>(swA + g0)) : make_float4(0, 0, 0, 0);
          const float4 vb = live && okB ? __ldg(reinterpret_cast<const float4*>(swB + g0)) : make_float4(0, 0, 0, 0);
          sa[0] = va.x, sa[1] = va.y, sa[2] = va.z, sa[3] = va.w;
          sb[0] = vb.x, sb[1] = vb.y, sb[2] = vb.z, sb[3] = vb.w;
        } else {
  #pragma unroll
          for (int j = 0; j < kGps; ++j) {
            sa[j] = g0 + j < ge && okA ? __ldg(swA + g0 + j) : 0.0f;
            sb[j] = g0 + j < ge && okB ? __ldg(swB + g0 + j) : 0.0f;
          }
        }
  #pragma unroll
        for (int j = 0; j < kGps; ++j) {  // columns 2t, 2t + 1: one 8-byte load where both are tokens
          const bool live = g0 + j < ge;
          const float* p = sxp + static_cast<int64_t>(g0 + j) * a.ld_sx;
          if (sx_vec2) {
            const float2 v = live && ok1 ? __ldg(reinterpret_cast<const float2*>(p)) : make_float2(0, 0);
            s0[j] = ok1 ? v.x : (live && ok0 ? __ldg(p) : 0.0f);
            s1[j] = v.y;
          } else {
            s0[j] = live && ok0 ? __ldg(p) : 0.0f;
            s1[j] = live && ok1 ? __ldg(p + 1) : 0.0f;
          }
        }
  #pragma unroll
        for (int u = 0; u < U; ++u) {
          uint32_t xl[4], xh[4];
  #pragma unroll
          for (int w = 0; w < 4; ++w) xl[w] = xv[u][w] & lo_lanes, xh[w] = xv[u][w] & ~lo_lanes;
          group_mma<4, kBiasedC>(acc[0][0], wa[u], wb[u], xl, sa[2 * u], sb[2 * u], s0[2 * u], s1[2 * u]);
          group_mma<4, kBiasedC>(acc[0][0], wa[u], wb[u], xh, sa[2 * u + 1], sb[2 * u + 1], s0[2 * u + 1], s1[2 * u + 1]);
        }
      }
    } else {
      // One n8 block, one m16 tile, group 128 (a group is a 64-byte chunk, 16 bytes per lane): each
      // thread loads its bytes of U groups of its two rows (and of token gid) straight into registers,
      // all loads of a step before any MMA. At one token block this streams faster than the ring
      // (fewer instructions per byte, and the step's loads of a row are 256 contiguous bytes per quad);
      // with more blocks their X1 words and scales would not fit.
      static_assert(kW == 4, "group 128: four packed words per lane, row and group");
      constexpr int U = 4;
      const int64_t rA = d0 + gid, rB = rA + 8, l = l0 + gid;
      const bool okA = rA < a.D, okB = rB < a.D, okX = l < a.L, ok0 = l0 + 2 * t < a.L, ok1 = l0 + 2 * t + 1 < a.L;
      const uint8_t* wA = a.w1 + (okA ? rA : 0) * a.ld_w1 + t * (G / 8);
      const uint8_t* wB = a.w1 + (okB ? rB : 0) * a.ld_w1 + t * (G / 8);
      const uint8_t* xp = a.x1 + (okX ? l : 0) * a.ld_x1 + t * (G / 8);
      const float* swA = a.sw + (okA ? rA : 0) * ng;
      const float* swB = a.sw + (okB ? rB : 0) * ng;
      const float* sxp = a.sx + l0 + 2 * t;
      for (int g0 = g_begin; g0 < g_end; g0 += U) {
        uint32_t wa[U][kW], wb[U][kW], xv[U][kW];
        float sa[U], sb[U], s0[U], s1[U];
  #pragma unroll
        for (int u = 0; u < U; ++u) {  // groups past g_end read nothing and contribute 0
          const int g = g0 + u;
          const bool live = g < g_end;
          const int64_t off = static_cast<int64_t>(g) * (G / 2);
  #pragma unroll
          for (int w = 0; w < kW; ++w) wa[u][w] = wb[u][w] = xv[u][w] = 0u;
          if (live && okA) load_stream<kW>(wa[u], wA + off);
          if (live && okB) load_stream<kW>(wb[u], wB + off);
          if (live && okX) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(xp + off));
            xv[u][0] = v.x, xv[u][1] = v.y, xv[u][2] = v.z, xv[u][3] = v.w;
          }
          sa[u] = live && okA ? __ldg(swA + g) : 0.0f;
          sb[u] = live && okB ? __ldg(swB + g) : 0.0f;
          s0[u] = live && ok0 ? __ldg(sxp + static_cast<int64_t>(g) * a.ld_sx) : 0.0f;
          s1[u] = live && ok1 ? __ldg(sxp + static_cast<int64_t>(g) * a.ld_sx + 1) : 0.0f;
        }
  #pragma unroll
        for (int u = 0; u < U; ++u) group_mma<kW, kBiasedC>(acc[0][0], wa[u], wb[u], xv[u], sa[u], sb[u], s0[u], s1[u]);
      }
    }
    if constexpr (!kLowRankEarly) lr_load(d0, l0);
    lr_mma();
    float* const red = reinterpret_cast<float*>(smem);
    reduce_store(d0, l0, red + warp * kAcc * 32, [&](int w) { return red + w * kAcc * 32; });
  }
}

// The TMA maps of a ring row (SW > 0): codes always (their pointers and rows are 16-byte aligned,
// w4a4_linear checks), the scales where they are whole 16-byte rows of a box.
template <int G, int NB, int MT, int SW>
cudaError_t make_maps(const W4A4GemmArgs& a, DecodeMaps& m) {
  using Geo = Geometry<G, NB, MT, SW>;
  if constexpr (SW > 0) {
    const CUtensorMapSwizzle swz = SW == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
    const int64_t ng = a.D1 / G;
    m.x_rows = static_cast<int>(a.L < Geo::kToks ? a.L : Geo::kToks);
    m.sx_cols = (m.x_rows + 3) / 4 * 4;
    cudaError_t e = encode_tma_2d(&m.w, CU_TENSOR_MAP_DATA_TYPE_UINT8, a.w1, a.D, a.D1 / 2, a.ld_w1, SW, Geo::kRows, swz);
    if (e == cudaSuccess)
      e = encode_tma_2d(&m.x, CU_TENSOR_MAP_DATA_TYPE_UINT8, a.x1, a.L, a.D1 / 2, a.ld_x1, SW, m.x_rows, swz);
    if (e != cudaSuccess) return e;
    m.sw_tma = (Geo::kGps * 4) % 16 == 0 && ng % 4 == 0 && (reinterpret_cast<uintptr_t>(a.sw) & 15) == 0 &&
               encode_tma_2d(&m.sw, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a.sw, a.D, ng, ng * 4, Geo::kGps, Geo::kRows,
                             CU_TENSOR_MAP_SWIZZLE_NONE) == cudaSuccess;
    m.sx_tma = a.ld_sx % 4 == 0 && (reinterpret_cast<uintptr_t>(a.sx) & 15) == 0 &&
               encode_tma_2d(&m.sx, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, a.sx, ng, a.L, a.ld_sx * 4, m.sx_cols, Geo::kGps,
                             CU_TENSOR_MAP_SWIZZLE_NONE) == cudaSuccess;
  }
  return cudaSuccess;
}

template <int G, int NB, int MT, int SW, class OutT>
void launch_g(const W4A4GemmArgs& a, const dim3 grid, cudaStream_t stream) {
  constexpr int kSmem = Geometry<G, NB, MT, SW>::kSmemBytes;
  static detail::PerDeviceOnce once;  // the dynamic shared-memory limit is a per-device attribute
  const cudaError_t attr = once.run(a.device, [] {
    return cudaFuncSetAttribute(sm90_w4a4_decode_kernel<G, NB, MT, SW, OutT>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  });
  if (attr != cudaSuccess) {
    detail::check_cuda(attr, "w4a4_linear", "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    return;
  }
  DecodeMaps maps{};
  const cudaError_t enc = make_maps<G, NB, MT, SW>(a, maps);
  if (enc != cudaSuccess) {
    detail::check_cuda(enc, "w4a4_linear", "cuTensorMapEncodeTiled (the decode ring's weight / X1 maps)");
    return;
  }
  sm90_w4a4_decode_kernel<G, NB, MT, SW, OutT><<<grid, kWarps * 32, kSmem, stream>>>(a, maps);
}

template <int NB, int MT, int SW, class OutT>
void launch(const W4A4GemmArgs& a, cudaStream_t stream) {
  constexpr int kToks = 8 * NB, kRows = 16 * MT;
  const int64_t ctas = (a.L + kToks - 1) / kToks * ((a.D + kRows - 1) / kRows);
  if (ctas > 0x7FFFFFFF || a.D > 0x7FFFFFFF - kRows)
    detail::fail("w4a4_linear", Status::kUnsupported, "options.config",
                 detail::cat("the decode configuration with ", kToks, " tokens per CTA would need ", ctas,
                             " CTAs for L=", a.L, ", D=", a.D,
                             " (at most 2^31 - 1, and D below 2^31 - ", kRows, "; the heuristic takes it for small L)"));
  if (ctas == 0) return;
  // The 8- and 16-token ring rows: one wave of two CTAs per SM, each looping over blocks (the kernel
  // is correct for any grid). The 32-token row keeps a CTA per block: its first resident build took
  // 1.04-1.30x the time of the previous kernel (tuning/tune_w4a4_decode_resident.txt, not re-measured
  // since the build's spills were reduced).
  const int64_t wave = 2 * static_cast<int64_t>(a.sm_count);
  const dim3 grid(static_cast<unsigned>(SW > 0 && NB <= 2 && wave > 0 && ctas > wave ? wave : ctas));
  if (a.group == 64)
    launch_g<64, NB, MT, SW, OutT>(a, grid, stream);
  else
    launch_g<128, NB, MT, SW, OutT>(a, grid, stream);
}

// The table's rows -> instantiations: 8 tokens stream through registers (ring_sw = 0) or a ring of
// 128-byte stages; 16 tokens on 16 weight rows through 128-byte ring stages; 16 tokens on 32 rows
// and 32 tokens (two m16 tiles) through 64-byte stages (the TMA swizzle spans one stage row).
template <class OutT>
void run_typed(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  const W4A4Config& c = kW4A4Configs[config];
  switch (c.tile_m) {
    case 8:
      if (c.ring_sw == 0) return launch<1, 1, 0, OutT>(a, stream);
      return launch<1, 1, 128, OutT>(a, stream);
    case 16:
      if (c.tile_n == 32) return launch<2, 2, 64, OutT>(a, stream);
      return launch<2, 1, 128, OutT>(a, stream);
    default: return launch<4, 2, 64, OutT>(a, stream);
  }
}

// The table's decode rows are exactly the instantiated ones (tokens x weight rows / ring stage bytes).
constexpr bool decode_row_instantiated(const W4A4Config& c) {
  if (c.k_slices != kWarps || c.warps_m != 1 || c.warps_n != 1) return false;
  if (c.tile_m == 8) return c.tile_n == 16 && (c.ring_sw == 0 || c.ring_sw == 128);
  if (c.tile_m == 16) return (c.tile_n == 16 && c.ring_sw == 128) || (c.tile_n == 32 && c.ring_sw == 64);
  return c.tile_m == 32 && c.tile_n == 32 && c.ring_sw == 64;
}
constexpr bool decode_rows_instantiated() {
  for (const W4A4Config& c : kW4A4Configs)
    if (c.kernel == W4A4Kernel::kDecode && !decode_row_instantiated(c)) return false;
  return true;
}
static_assert(decode_rows_instantiated(), "a kDecode row of kW4A4Configs has no instantiation here");

}  // namespace

void run_w4a4_decode(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  switch (a.y_dtype) {
    case DType::kBF16: return run_typed<__nv_bfloat16>(a, config, stream);
    case DType::kF16: return run_typed<__half>(a, config, stream);
    default: return run_typed<float>(a, config, stream);
  }
}

}  // namespace qsgemm::kernels
