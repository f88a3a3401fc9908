// The W4A4 + low-rank decode GEMM (the kDecode rows of sm90_w4a4_configs.h; the heuristic takes it
// for L <= 128, any L runs):
//
//   Y[L,D] = Σ_g sx[l,g]·sw[d,g]·Σ_{k∈g} x1[l,k]·w1[d,k]  +  Σ_r x2[l,r]·w2[d,r]  (+ bias[d])
//
// At decode sizes the packed weight is nearly all the bytes, so the kernel is a weight stream:
//  * The weight is the A operand of mma.sync m16n8k32 s8 (16 output channels per MMA), the tokens
//    the n8 columns: NB = 1, 2 or 4 n8 blocks per CTA (8, 16, 32 tokens), so a single token wastes
//    7/8 of an MMA, not 31/32 as with tokens as A. MT = 1 or 2 m16 tiles of weight rows per CTA (2
//    with 32 tokens, so the weight, not X1, is most of each stage). More tokens than a CTA holds:
//    more CTAs, token blocks fastest in one linear grid, so the weight is read from L2 after the
//    first token block.
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
//    TMA unit taking ~18 cycles per copy (tuning/tune_w4a4_decode_tma.txt).
//  * Which bytes a thread multiplies: thread t (lane % 4) takes bytes [t·G/8, (t+1)·G/8) of a
//    group's row slice in rows gid and gid + 8 (gid = lane / 4) and in token row gid of each n8
//    block. Each 32-bit word (8 values) widens to two s8 registers holding 16·v
//    (w4a4_ptx::even_nibbles / odd_nibbles): the thread's k positions 4t..4t+3 and 16+4t..16+4t+3
//    of one m16n8k32 MMA, in A and B alike. A and B agree on the actual k of every position, so the
//    dot products are right without shuffles (G/32 MMAs per group).
//  * Per group: the exact s32 sums (at most 128·64·256 = 2^21) become floats without I2F (an integer
//    add and an FFMA that also applies the 2^-8 of the 16·v bytes, exactly), then
//    acc = fma(sw·sx, sum, acc) in float32.
//  * Low rank: the r/16 bf16 m16n8k16 steps go round-robin to the warps, into the same accumulators.
//  * The 8 warps' float32 tiles are added in shared memory in warp order (deterministic), then
//    + bias, convert, store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

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

// s32 group sum of 16·x·16·w products -> the float sum of x·w, exactly: the sum is below 2^22 in
// magnitude, so 1.5·2^23 + v is a float exactly (small_int_to_float.cuh); one FFMA scales by 2^-8
// and removes the offset (1.5·2^23·2^-8 = 49152), both exact.
__device__ __forceinline__ float group_sum_to_float(int32_t v) {
  return fmaf(__int_as_float(v + 0x4B400000), 0.00390625f, -49152.0f);
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
  static constexpr int kRedBytes = kWarps * MT * NB * 4 * 32 * 4;  // the warps' partial tiles
  static constexpr int kBarOff = kRingBytes > kRedBytes ? kRingBytes : kRedBytes;
  static constexpr int kAlign = SW == 0 ? 16 : 1024;
  static constexpr int kSmemBytes = kBarOff + kWarps * kStages * 8 + kAlign;  // + mbarriers, + alignment slack
  static_assert(SW == 0 || SW == 64 || SW == 128, "stage rows of 4 or 8 chunks: one TMA swizzle span");
  static_assert(SW != 0 || (NB == 1 && MT == 1), "the register stream has one n8 block and one m16 tile");
  static_assert(SW == 0 || (kCodeBytes % 1024 == 0 && (kRows * SW) % 512 == 0), "swizzle-aligned boxes");
  static_assert(kSmemBytes <= 113 * 1024, "two CTAs per SM");
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

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// One TMA box at (c0, c1) (inner, outer coordinate) into shared memory, completing on the mbarrier.
__device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], "
      "[%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
      : "memory");
}
// The weight is read once (evict it from L2 first); X1 and the activation scales serve every CTA.
__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t policy_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

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

// The s8 MMAs of one group and its promotion into one m16n8 float tile: wa / wb the packed words of
// rows gid / gid + 8, xw those of token gid, sa / sb the rows' scales, sc the columns' (2t, 2t + 1).
template <int kW>
__device__ __forceinline__ void group_mma(float (&acc)[4], const uint32_t (&wa)[kW], const uint32_t (&wb)[kW],
                                          const uint32_t (&xw)[kW], float sa, float sb, float sc0, float sc1) {
  int p[4];
#pragma unroll
  for (int w = 0; w < kW; ++w) {
    const uint32_t a0 = even_nibbles(wa[w]), a2 = odd_nibbles(wa[w]);
    const uint32_t a1 = even_nibbles(wb[w]), a3 = odd_nibbles(wb[w]);
    const uint32_t b0 = even_nibbles(xw[w]), b1 = odd_nibbles(xw[w]);
    if (w == 0)
      mma_s8_zero_c(p, a0, a1, a2, a3, b0, b1);
    else
      mma_s8(p, a0, a1, a2, a3, b0, b1);
  }
  // C fragment: p[0], p[1] row gid (sa), p[2], p[3] row gid + 8 (sb); columns 2t, 2t + 1.
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
  constexpr int kW = G / 32;  // packed words per thread, row and group (G/8 bytes)
  extern __shared__ __align__(16) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int gid = lane >> 2, t = lane & 3;
  // One linear grid, token blocks fastest: the CTAs of one weight-row block run next to each other,
  // so the weight comes from DRAM once and from L2 for the other token blocks.
  const int64_t token_blocks = (a.L + kToks - 1) / kToks;
  const int64_t d0 = static_cast<int64_t>(blockIdx.x) / token_blocks * kRows;
  const int64_t l0 = static_cast<int64_t>(blockIdx.x) % token_blocks * kToks;
  const int ng = static_cast<int>(a.D1 / G);
  const int g_begin = warp * ng / kWarps, g_end = (warp + 1) * ng / kWarps;
  float acc[MT][NB][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nb][e] = 0.0f;

  if constexpr (SW > 0) {
    constexpr int S = Geo::kStages;
    // Warp slices of whole stages (kGps groups): only the weight's last stage may hold fewer groups,
    // and the TMA unit fills its columns past D1 with zeros.
    const int ns_all = (ng + kGps - 1) / kGps;
    const int st_begin = warp * ns_all / kWarps, n_stages = (warp + 1) * ns_all / kWarps - st_begin;
    uint8_t* const aligned = smem + ((Geo::kAlign - (smem_u32(smem) & (Geo::kAlign - 1))) & (Geo::kAlign - 1));
    uint8_t* const codes = aligned + warp * S * Geo::kCodeBytes;
    float* const scales = reinterpret_cast<float*>(aligned + Geo::kScaleOff + warp * S * Geo::kScaleBytes);
    const uint32_t bars = smem_u32(aligned + Geo::kBarOff) + warp * S * 8;
    const int rows_w = a.D - d0 < kRows ? static_cast<int>(a.D - d0) : kRows;
    const int rows_x = a.L - l0 < kToks ? static_cast<int>(a.L - l0) : kToks;
    const uint32_t tx = (kRows + maps.x_rows) * SW + (maps.sw_tma ? kRows * kGps * 4 : 0) +
                        (maps.sx_tma ? kGps * maps.sx_cols * 4 : 0);
    const int sx_pitch = maps.sx_tma ? maps.sx_cols : kToks;  // token scales per group in a stage
    uint64_t evict_first = 0, evict_last = 0;
    if (lane == 0) {
      // The first box of each warp waits for the TMA unit to fetch the map: start that now.
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&maps.w)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&maps.x)) : "memory");
      evict_first = policy_evict_first(), evict_last = policy_evict_last();
      for (int k = 0; k < S; ++k) mbar_init(bars + 8 * k, 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncwarp();

    // Stage s of this warp's groups into slot s % S: lane 0 issues the stage's two to four TMA boxes
    // (rows past D, tokens past L and columns past D1 arrive as zeros), each one request where
    // 16-byte loads or cp.async made one per 16 bytes and row; scales without a map come by 4-byte
    // cp.async (zero-filled where out of range).
    auto issue = [&](int s) {
      const int slot = s % S;
      const int gs = (st_begin + s) * kGps, live = min(kGps, ng - gs);
      float* fs = scales + slot * (Geo::kScaleBytes / 4);
      float* fx = fs + Geo::kSwBytes / 4;
      if (lane == 0) {
        const uint32_t bar = bars + 8 * slot, cb = smem_u32(codes + slot * Geo::kCodeBytes);
        // This warp's generic loads of the slot (ordered by the __syncwarp before) come before the
        // async proxy's writes into it.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        mbar_arrive_expect_tx(bar, tx);
        const int col = gs * (G / 2);
        tma_2d(cb, &maps.w, col, static_cast<int>(d0), bar, evict_first);
        tma_2d(cb + kRows * SW, &maps.x, col, static_cast<int>(l0), bar, evict_last);
        if (maps.sw_tma) tma_2d(smem_u32(fs), &maps.sw, gs, static_cast<int>(d0), bar, evict_first);
        if (maps.sx_tma) tma_2d(smem_u32(fx), &maps.sx, static_cast<int>(l0), gs, bar, evict_last);
      }
      if (!maps.sw_tma) {
#pragma unroll
        for (int i = lane; i < kRows * kGps; i += 32) {
          const int r = i / kGps, j = i % kGps;
          const bool ok = j < live && r < rows_w;
          cp_async_4(smem_u32(fs + i), ok ? a.sw + (d0 + r) * ng + gs + j : a.sw, ok ? 4 : 0);
        }
      }
      if (!maps.sx_tma) {
#pragma unroll
        for (int i = lane; i < kToks * kGps; i += 32) {
          const int j = i / kToks, k = i % kToks;
          const bool ok = j < live && k < rows_x;
          cp_async_4(smem_u32(fx + i), ok ? a.sx + static_cast<int64_t>(gs + j) * a.ld_sx + l0 + k : a.sx, ok ? 4 : 0);
        }
      }
    };

#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < n_stages) issue(s);
      cp_async_commit();
    }
    for (int s = 0; s < n_stages; ++s) {
      cp_async_wait<S - 2>();  // the stage's 4-byte scale copies (if any)
      mbar_wait(bars + 8 * (s % S), (s / S) & 1);
      __syncwarp();  // every lane's cp.async scales of the stage are visible to all
      // Refill the slot the previous stage used (every lane is done with it: the __syncwarp below)
      // before this stage's math, so S - 1 stages stay in flight.
      if (s + S - 1 < n_stages) issue(s + S - 1);
      cp_async_commit();
      const uint8_t* base = codes + (s % S) * Geo::kCodeBytes;
      const float* fs = scales + (s % S) * (Geo::kScaleBytes / 4);
      const float* fx = fs + Geo::kSwBytes / 4;
      const int live = min(kGps, ng - (st_begin + s) * kGps);
#pragma unroll
      for (int j = 0; j < kGps; ++j) {
        if (j >= live) break;
        // Thread t's bytes of group j in a stage row: G/8 of them from byte j·G/2 + t·G/8.
        const int byte = j * (G / 2) + t * (G / 8);
        uint32_t xw[NB][kW];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          const uint8_t* p = base + Geo::code_off(kRows + nb * 8 + gid, byte);
          if constexpr (kW == 2) {
            const uint2 v = *reinterpret_cast<const uint2*>(p);
            xw[nb][0] = v.x, xw[nb][1] = v.y;
          } else {
            const uint4 v = *reinterpret_cast<const uint4*>(p);
            xw[nb][0] = v.x, xw[nb][1] = v.y, xw[nb][2] = v.z, xw[nb][3] = v.w;
          }
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int rA = mt * 16 + gid, rB = rA + 8;
          uint32_t wa[kW], wb[kW];
          if constexpr (kW == 2) {
            const uint2 va = *reinterpret_cast<const uint2*>(base + Geo::code_off(rA, byte));
            const uint2 vb = *reinterpret_cast<const uint2*>(base + Geo::code_off(rB, byte));
            wa[0] = va.x, wa[1] = va.y, wb[0] = vb.x, wb[1] = vb.y;
          } else {
            const uint4 va = *reinterpret_cast<const uint4*>(base + Geo::code_off(rA, byte));
            const uint4 vb = *reinterpret_cast<const uint4*>(base + Geo::code_off(rB, byte));
            wa[0] = va.x, wa[1] = va.y, wa[2] = va.z, wa[3] = va.w;
            wb[0] = vb.x, wb[1] = vb.y, wb[2] = vb.z, wb[3] = vb.w;
          }
          const float sa = fs[rA * kGps + j], sb = fs[rB * kGps + j];
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) {
            const float2 sc = *reinterpret_cast<const float2*>(fx + j * sx_pitch + nb * 8 + 2 * t);
            group_mma<kW>(acc[mt][nb], wa, wb, xw[nb], sa, sb, sc.x, sc.y);
          }
        }
      }
      __syncwarp();  // every lane is done with slot s % S before the next iteration refills it
    }
    cp_async_wait<0>();
  } else if constexpr (G == 64) {
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
        group_mma<4>(acc[0][0], wa[u], wb[u], xl, sa[2 * u], sb[2 * u], s0[2 * u], s1[2 * u]);
        group_mma<4>(acc[0][0], wa[u], wb[u], xh, sa[2 * u + 1], sb[2 * u + 1], s0[2 * u + 1], s1[2 * u + 1]);
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
      for (int u = 0; u < U; ++u) group_mma<kW>(acc[0][0], wa[u], wb[u], xv[u], sa[u], sb[u], s0[u], s1[u]);
    }
  }

  // The low-rank term: k16 step s of r/16 on warp s % 8. Thread t's bf16 k positions 2t, 2t+1 /
  // 2t+8, 2t+9 hold actual k 4t..4t+3 in both operands (one 8-byte load per row, no shuffles).
  if (a.rank > 0) {
    const uint16_t* w2 = static_cast<const uint16_t*>(a.w2);
    const uint16_t* x2 = static_cast<const uint16_t*>(a.x2);
    for (int k0 = warp * 16; k0 < a.rank; k0 += kWarps * 16) {
      uint2 xb[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        const int64_t l = l0 + nb * 8 + gid;
        xb[nb] = l < a.L ? __ldg(reinterpret_cast<const uint2*>(x2 + l * a.ld_x2 + k0 + 4 * t)) : make_uint2(0, 0);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int64_t rA = d0 + mt * 16 + gid, rB = rA + 8;
        const uint2 va = rA < a.D ? __ldg(reinterpret_cast<const uint2*>(w2 + rA * a.ld_w2 + k0 + 4 * t)) : make_uint2(0, 0);
        const uint2 vb = rB < a.D ? __ldg(reinterpret_cast<const uint2*>(w2 + rB * a.ld_w2 + k0 + 4 * t)) : make_uint2(0, 0);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) mma_bf16(acc[mt][nb], va.x, vb.x, va.y, vb.y, xb[nb].x, xb[nb].y);
      }
    }
  }

  // The warps' partial tiles, added in warp order in the drained rings; + bias, convert, store.
  constexpr int kAcc = MT * NB * 4;
  float* red = reinterpret_cast<float*>(smem);
  __syncthreads();  // every warp is done with its ring
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[(warp * kAcc + (mt * NB + nb) * 4 + e) * 32 + lane] = acc[mt][nb][e];
  __syncthreads();
  OutT* y = static_cast<OutT*>(a.y);
  for (int o = static_cast<int>(threadIdx.x); o < kAcc * 32; o += kWarps * 32) {
    const int i = o >> 5, ln = o & 31;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += red[(w * kAcc + i) * 32 + ln];
    const int mt = i / (NB * 4), nb = (i / 4) % NB, e = i & 3;
    const int64_t d = d0 + mt * 16 + (ln >> 2) + (e >= 2 ? 8 : 0);
    const int64_t l = l0 + nb * 8 + 2 * (ln & 3) + (e & 1);
    if (d < a.D && l < a.L) store1(y + l * a.ld_y + d, sum + bias_at<OutT>(a, d));
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
  if (ctas > 0x7FFFFFFF)
    detail::fail("w4a4_linear", Status::kUnsupported, "options.config",
                 detail::cat("the decode configuration with ", kToks, " tokens per CTA would need ", ctas,
                             " CTAs for L=", a.L, ", D=", a.D, " (at most 2^31 - 1; the heuristic takes it for small L)"));
  if (ctas == 0) return;
  const dim3 grid(static_cast<unsigned>(ctas));
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
