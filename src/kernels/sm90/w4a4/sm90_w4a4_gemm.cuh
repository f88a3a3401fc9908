// The fused W4A4 + low-rank GEMM (include/qsgemm/w4a4.h), one readable kernel:
//
//   Y[L,D] = Σ_g sx[l,g]·sw[d,g]·Σ_{k∈g} x1[l,k]·w1[d,k]  +  Σ_r x2[l,r]·w2[d,r]  (+ bias[d])
//
// Structure (per CTA: a tile_m x tile_n tile of Y, warps_m x warps_n warps, each a (tile_m/warps_m) x
// (tile_n/warps_n) sub-tile of m16n8 MMA tiles):
//  1. K loop over 128-wide K tiles (64 bytes of a packed row, docs/formats.md §5), a 3-stage cp.async
//     ring in shared memory holding the packed INT4 tiles of X1 and W1 (rows beyond L or D and the
//     absent half of a last tile are zero-filled by cp.async's src-size 0).
//  2. Each thread reads 8 packed bytes (16 INT4 values) per A row / B column it owns and widens them
//     to s8 in registers: lo = (w << 4) & 0xF0F0F0F0 (even nibbles), hi = w & 0xF0F0F0F0 (odd
//     nibbles). Each byte then holds 16·v exactly, v the signed nibble: two instructions per eight
//     values and no sign-extension. Products are 256·x·w, and a group's s32 sum is at most
//     128·64·256 = 2^21 in magnitude: exact, and exact as a float (converted without I2F,
//     small_int_to_float.cuh); the 2^-8 goes into sx.
//  3. Which MMA k position holds which actual k does not matter for a dot product as long as A and B
//     use the same assignment: thread t's bytes go to the MMA positions of thread t in both
//     operands (A's a0/a2 and B's b0/b1 cover the same k positions 4t..4t+3 and 16+4t..16+4t+3), so
//     the 64-bit shared-memory loads need no shuffles. The same trick serves the bf16 low-rank
//     K-steps (k positions 2t, 2t+1, 2t+8, 2t+9 of m16n8k16).
//  4. Per group (64: every half tile; 128: every tile) the exact integer sums are promoted:
//     acc_f32 = fma(sx·2^-8, sw·float(256·sum), acc_f32) (three instructions per element); the
//     group's first MMA takes C = 0, so the s32 accumulators restart without zeroing.
//  5. After the K loop, r/16 bf16 m16n8k16 K-steps add X2·W2ᵀ into the same float32 accumulators (X2
//     and W2 are small: read straight from global memory, L2-resident).
//  6. One epilogue: + bias, convert, store (rows >= L and columns >= D are skipped).
//
// Shared memory: a packed row of a stage is 64 bytes = four 16-byte chunks; chunk c of row r is
// stored at chunk c ^ (r & 2), which makes the 64-bit fragment loads of a half warp (4 rows x 32
// bytes) hit 32 distinct banks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/sm90/common/small_int_to_float.cuh"
#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "kernels/sm90/w4a4/sm90_w4a4_ptx.cuh"

namespace qsgemm::kernels {
namespace w4a4_gemm {

using namespace w4a4_ptx;

constexpr int kRowBytes = 64;  // one 128-wide K tile of a packed INT4 row

// KS: warps per output sub-tile that split each K tile's four k32 MMA steps among themselves (1: no
// split). Warp slice wk runs the steps s of half h with (2h + s) % KS == wk and promotes its own
// exact partial sums after each half it worked in (with the group's scales); the KS float32
// accumulator tiles are added through shared memory at the end, in slice order. It gives the decode
// tile enough warps to hide latency without shrinking the tile.
template <int BM, int BN, int WM, int WN, int KS, int kStages, int G, class OutT>
__global__ void __launch_bounds__(WM * WN * KS * 32) sm90_w4a4_gemm_kernel(const W4A4GemmArgs a) {
  constexpr int kThreads = WM * WN * KS * 32;
  constexpr int WTM = BM / WM, WTN = BN / WN;  // warp sub-tile
  constexpr int MT = WTM / 16, NT = WTN / 8;   // m16 / n8 MMA tiles per warp
  static_assert(WTM % 16 == 0 && WTN % 8 == 0, "warp tiles are whole m16n8 MMA tiles");
  static_assert(G == 64 || G == 128, "INT4 groups are 64 or 128 (docs/formats.md §5)");
  static_assert(kStages >= 2, "a cp.async ring of at least two stages");
  static_assert(KS == 1 || KS == 2 || KS == 4, "the four k32 steps of a K tile split 1, 2 or 4 ways");
  static_assert(kStages * (BM + BN) * kRowBytes <= 48 * 1024, "static shared memory is at most 48 KiB");

  __shared__ __align__(128) uint8_t smem[kStages][(BM + BN) * kRowBytes];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wk = warp / (WM * WN), wmn = warp % (WM * WN);  // K slice; output sub-tile
  const int wm = wmn / WN, wn = wmn % WN;
  const int g = lane >> 2, t = lane & 3;  // MMA fragment coordinates: group id, thread in group
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * BM, n0 = static_cast<int64_t>(blockIdx.y) * BN;
  const int64_t kbytes = a.D1 / 2;
  const int64_t ktiles = (a.D1 + 127) / 128;
  const int64_t ng = a.D1 / G;

  // ---- 1. cp.async producer: one K tile of X1 (rows m0..) and W1 (rows n0..) -----------------------
  // Thread tid copies 16-byte chunk (tid & 3) of tile rows (tid >> 2) + i·(kThreads/4), the same
  // rows in every K tile: their global row pointers (null for a row beyond L or D) and shared-memory
  // offsets are computed once, here.
  constexpr int kLoadIters = (BM + BN) * 4 / kThreads;
  static_assert((BM + BN) * 4 % kThreads == 0 && (kThreads / 4) % 4 == 0,
                "whole chunk rows per thread, the same swizzle phase (row & 2) for all of them");
  const int ld_chunk = tid & 3;
  const uint8_t* ld_src[kLoadIters];
  uint32_t ld_dst[kLoadIters];
#pragma unroll
  for (int i = 0; i < kLoadIters; ++i) {
    const int row = (tid >> 2) + i * (kThreads / 4);
    const bool is_a = row < BM;
    const int64_t grow = is_a ? m0 + row : n0 + (row - BM);
    const bool ok = grow < (is_a ? a.L : a.D);
    ld_src[i] = ok ? (is_a ? a.x1 + grow * a.ld_x1 : a.w1 + grow * a.ld_w1) + ld_chunk * 16 : nullptr;
    ld_dst[i] = static_cast<uint32_t>(row * kRowBytes + ((ld_chunk ^ (row & 2)) * 16));
  }
  auto load_tile = [&](int stage, int64_t kt) {
    const uint32_t s = smem_u32(smem[stage]);
    const bool k_ok = kt * kRowBytes + ld_chunk * 16 < kbytes;  // kbytes % 32 == 0: whole chunks
#pragma unroll
    for (int i = 0; i < kLoadIters; ++i) {
      const bool ok = k_ok && ld_src[i] != nullptr;
      cp_async_16(s + ld_dst[i], ok ? ld_src[i] + kt * kRowBytes : a.x1, ok ? 16 : 0);
    }
  };

  float acc[MT][NT][4];
  int iacc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f, iacc[i][j][e] = 0;

  // Rows and columns of Y this thread owns (for scales, low-rank operands and the epilogue).
  auto row_of = [&](int mt, int hr) { return m0 + wm * WTM + mt * 16 + g + 8 * hr; };
  auto col_of = [&](int nt) { return n0 + wn * WTN + nt * 8 + 2 * t; };  // and col + 1

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    cp_async_commit();
  }

  float sxr[MT][2], swr[NT][2];
  for (int64_t kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (kt + kStages - 1 < ktiles) load_tile(static_cast<int>((kt + kStages - 1) % kStages), kt + kStages - 1);
    cp_async_commit();

    const uint8_t* sA = smem[kt % kStages];
    const uint8_t* sB = sA + BM * kRowBytes;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // the two 64-wide halves of the K tile
      if (G == 64 && kt * 128 + h * 64 >= a.D1) break;  // a last tile with one group of 64
      // This warp's steps in this half (compile-time after unrolling, but for wk).
      const bool step0 = (2 * h) % KS == wk, step1 = (2 * h + 1) % KS == wk;
      if (KS > 1 && !step0 && !step1) continue;
      if (KS > 1 || G == 64 || h == 0) {  // the scales: issued before the MMAs, used after them
        const int64_t grp = (kt * 128 + h * 64) / G;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int hr = 0; hr < 2; ++hr) {
            const int64_t r = row_of(mt, hr);
            // 2^-8 undoes the 16·16 of the widened nibbles (exact: a power of two).
            sxr[mt][hr] = r < a.L ? __ldg(a.sx + grp * a.ld_sx + r) * 0x1p-8f : 0.0f;
          }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int64_t c = col_of(nt) + j;
            swr[nt][j] = c < a.D ? __ldg(a.sw + c * ng + grp) : 0.0f;
          }
      }
      // 2./3. fragments: 8 bytes (16 INT4 values) per owned row, at byte h*32 + 8t of the tile row.
      const int chunk = 2 * h + (t >> 1), sub = (t & 1) * 8;
      uint2 av[MT][2], bv[NT];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int row = wm * WTM + mt * 16 + g + 8 * hr;
          av[mt][hr] = *reinterpret_cast<const uint2*>(sA + row * kRowBytes + ((chunk ^ (row & 2)) * 16) + sub);
        }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int row = wn * WTN + nt * 8 + g;
        bv[nt] = *reinterpret_cast<const uint2*>(sB + row * kRowBytes + ((chunk ^ (row & 2)) * 16) + sub);
      }
#pragma unroll
      for (int step = 0; step < 2; ++step) {  // two k32 MMAs per half tile
        if (KS > 1 && !(step == 0 ? step0 : step1)) continue;
        // The first MMA of a promotion unit (the group; with KS > 1 this warp's part of the half).
        const bool first = KS > 1 ? (step == 0 || !step0) : (step == 0 && (G == 64 || h == 0));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const uint32_t w0 = step ? av[mt][0].y : av[mt][0].x, w1 = step ? av[mt][1].y : av[mt][1].x;
          const uint32_t a0 = even_nibbles(w0), a1 = even_nibbles(w1), a2 = odd_nibbles(w0), a3 = odd_nibbles(w1);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint32_t wb = step ? bv[nt].y : bv[nt].x;
            if (first)
              mma_s8_zero_c(iacc[mt][nt], a0, a1, a2, a3, even_nibbles(wb), odd_nibbles(wb));
            else
              mma_s8(iacc[mt][nt], a0, a1, a2, a3, even_nibbles(wb), odd_nibbles(wb));
          }
        }
      }
      if (KS > 1 || G == 64 || h == 1) {  // 4. promote the group's (or the slice's) exact sums
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              // acc += (sx/256)·(sw·(256·sum)): I2F, FMUL, FFMA per element (256·sum < 2^22: exact).
              acc[mt][nt][e] =
                  fmaf(sxr[mt][e >> 1], swr[nt][e & 1] * small_int_to_float(iacc[mt][nt][e]), acc[mt][nt][e]);
            }
      }
    }
  }
  cp_async_wait<0>();

  // ---- 5. the low-rank term, bf16 K-steps into the same accumulators -----------------------------
  if (a.rank > 0) {
    const uint16_t* x2 = static_cast<const uint16_t*>(a.x2);
    const uint16_t* w2 = static_cast<const uint16_t*>(a.w2);
    for (int k0 = 16 * wk; k0 < a.rank; k0 += 16 * KS) {  // K slice wk takes every KS-th step
      uint2 xa[MT][2], wb[NT];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int64_t r = row_of(mt, hr);
          xa[mt][hr] = r < a.L ? __ldg(reinterpret_cast<const uint2*>(x2 + r * a.ld_x2 + k0 + 4 * t)) : make_uint2(0, 0);
        }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int64_t c = n0 + wn * WTN + nt * 8 + g;
        wb[nt] = c < a.D ? __ldg(reinterpret_cast<const uint2*>(w2 + c * a.ld_w2 + k0 + 4 * t)) : make_uint2(0, 0);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          mma_bf16(acc[mt][nt], xa[mt][0].x, xa[mt][1].x, xa[mt][0].y, xa[mt][1].y, wb[nt].x, wb[nt].y);
    }
  }

  // ---- K slices: slices 1..KS-1 hand their accumulators to slice 0 through shared memory ----------
  if constexpr (KS > 1) {
    constexpr int kAcc = MT * NT * 4;
    static_assert((KS - 1) * WM * WN * 32 * kAcc * 4 <= kStages * (BM + BN) * kRowBytes,
                  "the slices' accumulators fit in the (drained) cp.async ring");
    float* red = reinterpret_cast<float*>(&smem[0][0]);
    __syncthreads();  // every warp is done with the ring (cp_async_wait<0> above drained the copies)
    if (wk > 0) {
      float* dst = red + ((wk - 1) * (WM * WN) + wmn) * 32 * kAcc + lane;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) dst[((mt * NT + nt) * 4 + e) * 32] = acc[mt][nt][e];
    }
    __syncthreads();
    if (wk > 0) return;
#pragma unroll
    for (int sl = 1; sl < KS; ++sl) {
      const float* src = red + ((sl - 1) * (WM * WN) + wmn) * 32 * kAcc + lane;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][nt][e] += src[((mt * NT + nt) * 4 + e) * 32];
    }
  }

  // ---- 6. epilogue -------------------------------------------------------------------------------
  OutT* y = static_cast<OutT*>(a.y);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int64_t c = col_of(nt);
    if (c >= a.D) continue;  // D % 8 == 0: c + 1 < D too
    float b0 = 0.0f, b1 = 0.0f;
    if (a.bias != nullptr) {
      if (a.bias_f32) {
        b0 = static_cast<const float*>(a.bias)[c];
        b1 = static_cast<const float*>(a.bias)[c + 1];
      } else {
        b0 = to_f32(static_cast<const OutT*>(a.bias)[c]);
        b1 = to_f32(static_cast<const OutT*>(a.bias)[c + 1]);
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hr = 0; hr < 2; ++hr) {
        const int64_t r = row_of(mt, hr);
        if (r < a.L) store2(y + r * a.ld_y + c, acc[mt][nt][2 * hr] + b0, acc[mt][nt][2 * hr + 1] + b1);
      }
  }
}

template <int BM, int BN, int WM, int WN, int KS, int S, class OutT>
void launch(const W4A4GemmArgs& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((a.L + BM - 1) / BM), static_cast<unsigned>((a.D + BN - 1) / BN));
  constexpr int kThreads = WM * WN * KS * 32;
  if (a.group == 64)
    sm90_w4a4_gemm_kernel<BM, BN, WM, WN, KS, S, 64, OutT><<<grid, kThreads, 0, stream>>>(a);
  else
    sm90_w4a4_gemm_kernel<BM, BN, WM, WN, KS, S, 128, OutT><<<grid, kThreads, 0, stream>>>(a);
}

// The config table -> template instantiation, one place (rows of kW4A4Configs by index).
template <int I>
constexpr bool row_is(int m, int n, int wm, int wn, int ks, int s) {
  return kW4A4Configs[I].tile_m == m && kW4A4Configs[I].tile_n == n && kW4A4Configs[I].warps_m == wm &&
         kW4A4Configs[I].warps_n == wn && kW4A4Configs[I].k_slices == ks && kW4A4Configs[I].stages == s;
}
constexpr bool only_first_rows_mma_sync(int n) {
  for (int i = 0; i < kW4A4NumConfigs; ++i)
    if ((kW4A4Configs[i].kernel == W4A4Kernel::kMmaSync) != (i < n)) return false;
  return true;
}
template <class OutT>
void run(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  static_assert(only_first_rows_mma_sync(3),
                "every mma.sync row of kW4A4Configs has a case here (wgmma rows: sm90_w4a4_wgmma.cuh, decode "
                "rows: sm90_w4a4_decode.cu)");
  static_assert(row_is<0>(128, 128, 2, 4, 1, 3) && row_is<1>(64, 128, 2, 4, 1, 3) && row_is<2>(32, 64, 1, 4, 1, 3),
                "the instantiations below match the table's rows");
  switch (config) {
    case 0: return launch<128, 128, 2, 4, 1, 3, OutT>(a, stream);
    case 1: return launch<64, 128, 2, 4, 1, 3, OutT>(a, stream);
    case 2: return launch<32, 64, 1, 4, 1, 3, OutT>(a, stream);
    default: break;  // w4a4_linear sends the other rows to their own launchers
  }
}

}  // namespace w4a4_gemm
}  // namespace qsgemm::kernels
