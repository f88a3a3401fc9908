// The decode-sized ("skinny", M <= 32) blockwise / groupwise / per-row FP8 GEMM.
//
//   Y[M,N] = Σ_g (sx[m,g] · sw[n,g]) · X_g · W_gᵀ  (+ bias[n])       (include/qsgemm/blockwise.h)
//
// At M <= 32 the GEMM is a stream over W (N·K bytes) and the tensor cores are nearly idle, so what
// matters is how many bytes of W are in flight per SM and that every SM streams. The CUTLASS tiles
// (64 or 128 rows of tokens x 128 columns of W) give one CTA per 128 rows of W: 32 CTAs for N=4096
// on 132 SMs. This kernel instead
//  * swaps the operands: W is the MMA's A (MT m16 tiles = 16·MT rows per warp), the tokens are B
//    (T n8 tiles), so no token rows are padded beyond the next multiple of 8;
//  * splits K over the 4 warps of a CTA and over the CTAs of a thread-block cluster (up to 8): the
//    warps walk interleaved 128-wide K groups; the partial tiles are reduced in shared memory and
//    across the cluster through distributed shared memory, so there is no workspace, no atomics,
//    and every CTA of the grid streams W;
//  * keeps S-1 groups in flight per warp with cp.async into a per-thread ring in shared memory
//    (each thread reads back only the bytes it copied, so the ring needs no barrier): 48-96 KB of W
//    in flight per SM, independent of the registers;
//  * converts the e4m3 operands to fp16 (exactly: e4m3 is a subset of fp16) and multiplies with
//    mma.sync m16n8k16 into float32 accumulators (Hopper's FP8 tensor-core rate is a wgmma feature;
//    an FP8 mma.sync version of this kernel measured the same speed). Every group's products are summed in
//    float32, with no FP8 accumulation at all, and scaled once per group (acc += sx·sw·group_sum),
//    as the reference does.
//
// K order inside an MMA. An m16n8k16 A fragment gives thread (g = lane/4, q = lane%4) the k pairs
// (2q, 2q+1) (regs a0/a1) and (8+2q, 9+2q) (a2/a3) of rows g and g+8; B gives the same k for
// column g. Any permutation of k applied to both A and B leaves the product unchanged, so thread q
// copies the 16 contiguous bytes k0 + 16q .. k0 + 16q + 15 of its rows (one 16-byte copy per row
// and 64-wide chunk) and feeds word j (4 consecutive k) to MMA j: its low two bytes as (a0 | a1),
// its high two as (a2 | a3). The B fragment comes from the token rows at the same addresses.
// A 128-wide group is 2 chunks x 4 MMAs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "blockwise_heuristic.h"
#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "kernels/sm90/quant/fp8_common.cuh"  // to_float
#include "kernels/sm90/common/skinny_common.cuh"
#include "per_device_once.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

using namespace skinny;  // cp_async_*, e4m3x4_to_f16x2x2, to_out, reduce_and_store, launch_split_k

constexpr int kGroup = 128;     // K group of the scales
constexpr int kMaxWarps = kSkinnyMaxWarps;  // warps per CTA (all split K); small CTAs fill the last wave finely

// Per token-tile count T: m16 tiles per warp (MT), ring stages (S) and the CTAs an SM holds (the
// ring is the limit). X's bytes per group are T/(2·MT) of W's; a stage holds 16·(4·MT + 2·T) bytes
// per thread. W in flight per SM: (S-1) groups x 2·MT KB x warps.
// (The numbers are in blockwise_skinny_tiling, src/blockwise_heuristic.h, which sizes the grid.)
template <int T>
struct Tiling {
  static constexpr int MT = blockwise_skinny_tiling(T).MT, S = blockwise_skinny_tiling(T).S,
                       kCtasPerSm = blockwise_skinny_tiling(T).ctas_per_sm;
};
template <int T>
constexpr int kVecs = 4 * Tiling<T>::MT + 2 * T;  // 16-byte vectors per thread per stage
template <int T>
constexpr int kSmemBytes = kMaxWarps * Tiling<T>::S * kVecs<T> * 32 * 16;

// Granularities as the kernel sees them.
enum : int { kGrGroup = 0, kGrBlock = 1, kGrRow = 2 };

struct SkinnyParams {
  int M, N, K, kb;
  const uint8_t* x;
  int64_t ldx;
  const uint8_t* w;
  int64_t ldw;
  const float* sx;
  int64_t ld_sx;
  int gx;
  const float* sw;
  int gw;
  const float* bias_f32;
  const void* bias_out;
  void* y;
  int64_t ldy;
  int KW;  // warps per CTA (each a K split)
};

// d += A·B, one m16n8k16 step with f16 operands and float32 accumulation.
__device__ __forceinline__ void mma_f16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Scales of one group for one thread: rows (mt, half) and tokens (t, 0/1).
template <int T>
struct GroupScales {
  float w[Tiling<T>::MT][2];
  float x[T][2];
};

// Where this thread reads its scales: one pointer per row (mt, half) and token (t, 0/1) at its warp's
// next K group, advanced by a fixed step per group (the group index grows by `splits` each time),
// so the K loop does one add and one load per scale. A row past N (token past M) reads row N-1
// (M-1): its result is never stored.
template <int T>
struct ScaleCursor {
  const float* w[Tiling<T>::MT][2];
  const float* x[T][2];
  int64_t w_step, x_step;

  __device__ __forceinline__ void init(const SkinnyParams& p, int first_group, int splits, int row_base, int g,
                                       int tok0) {
    constexpr int MT = Tiling<T>::MT;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = min(row_base + 16 * mt + 8 * h + g, p.N - 1);
        // kGrBlock: the warp's rows lie in one 128-row block (16·MT divides 128).
        const int64_t r = p.gw == kGrBlock ? row_base / kGroup : row;
        w[mt][h] = p.sw + r * p.kb + first_group;
      }
    w_step = splits;
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int m = min(tok0 + 8 * t + u, p.M - 1);
        // kGrBlock: M <= 32 < 128, every token is in the first 128-row block. kGrGroup: M-major [kb][ld].
        x[t][u] = p.gx == kGrBlock ? p.sx + first_group : p.sx + static_cast<int64_t>(first_group) * p.ld_sx + m;
      }
    x_step = p.gx == kGrBlock ? splits : static_cast<int64_t>(splits) * p.ld_sx;
  }

  // The scales of the current group; then step to the next.
  __device__ __forceinline__ void load_and_step(GroupScales<T>& sc) {
    constexpr int MT = Tiling<T>::MT;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        sc.w[mt][h] = __ldg(w[mt][h]);
        w[mt][h] += w_step;
      }
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        sc.x[t][u] = __ldg(x[t][u]);
        x[t][u] += x_step;
      }
  }
};

// Grid: (ceil(N / (16·MT)), C) with clusters of (1, C, 1); block: 32·KW threads; dynamic shared
// memory kSmemBytes<T>. Warp w takes K groups w + KW·rank, stepping by KW·C.
template <int T, class OutT>
__global__ void __launch_bounds__(kMaxWarps * 32) blockwise_skinny(const SkinnyParams p) {
  constexpr int MT = Tiling<T>::MT, S = Tiling<T>::S, NV = kVecs<T>;
  extern __shared__ uint4 ring[];  // [warp][stage][NV][32 lanes]

  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2, q = lane & 3;
  const int C = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  const int split = rank * p.KW + warp, splits = C * p.KW;
  const int n_groups = split < p.kb ? (p.kb - split + splits - 1) / splits : 0;

  const int row_base = static_cast<int>(blockIdx.x) * 16 * MT;  // first row of the CTA (and of every warp)
  const int tok0 = 2 * q;
  uint4* my = ring + static_cast<size_t>(warp) * S * NV * 32 + lane;
  const uint32_t my_smem = static_cast<uint32_t>(__cvta_generic_to_shared(my));

  // Sources of this thread's copies, computed once. A row of W past N (a token past M) is read from
  // row N-1 (M-1) with size 0: zero-filled, and the address stays inside the operand, so the K loop
  // needs no test per copy. Vector v of a stage: A row (mt, h) chunk c at v = (2·mt + h)·2 + c;
  // token tile t chunk c at v = 4·MT + 2·t + c.
  // wp / xp: this thread's next copy address (first 64-wide chunk) in the group issued next; they
  // advance by a fixed step per group (issue() is called once per group, in order).
  const int first_k = split * kGroup + q * 16;
  const int64_t step = static_cast<int64_t>(splits) * kGroup;
  const uint8_t* wp[MT][2];
  int wbytes[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 16 * mt + 8 * h + g;
      wp[mt][h] = p.w + static_cast<int64_t>(min(row, p.N - 1)) * p.ldw + first_k;
      wbytes[mt][h] = row < p.N ? 16 : 0;
    }
  const uint8_t* xp[T];
  int xbytes[T];
#pragma unroll
  for (int t = 0; t < T; ++t) {
    const int m = 8 * t + g;
    xp[t] = p.x + static_cast<int64_t>(min(m, p.M - 1)) * p.ldx + first_k;
    xbytes[t] = m < p.M ? 16 : 0;
  }

  auto issue = [&](int i) {  // the i-th group of this warp into stage i % S
    const int grp = split + i * splits;
    const uint32_t stage = my_smem + static_cast<uint32_t>((i % S) * NV * 32 * 16);
    if (grp * kGroup + kGroup <= p.K) {  // a whole group (warp-uniform): no K test
#pragma unroll
      for (int c = 0; c < 2; ++c) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            cp_async_cg(stage + static_cast<uint32_t>((((2 * mt + h) * 2 + c) * 32) * 16), wp[mt][h] + c * 64,
                        wbytes[mt][h]);
#pragma unroll
        for (int t = 0; t < T; ++t)
          cp_async_ca(stage + static_cast<uint32_t>(((4 * MT + 2 * t + c) * 32) * 16), xp[t] + c * 64, xbytes[t]);
      }
    } else {  // the last group, K % 128 != 0: segments past K are zero-filled (from a valid address)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const bool in = grp * kGroup + q * 16 + c * 64 < p.K;  // K % 16 == 0: a segment is all in or all out
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            cp_async_cg(stage + static_cast<uint32_t>((((2 * mt + h) * 2 + c) * 32) * 16),
                        in ? wp[mt][h] + c * 64 : p.w, in ? wbytes[mt][h] : 0);
#pragma unroll
        for (int t = 0; t < T; ++t)
          cp_async_ca(stage + static_cast<uint32_t>(((4 * MT + 2 * t + c) * 32) * 16), in ? xp[t] + c * 64 : p.x,
                      in ? xbytes[t] : 0);
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) wp[mt][h] += step;
#pragma unroll
    for (int t = 0; t < T; ++t) xp[t] += step;
  };

  float acc[MT][T][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][t][i] = 0.0f;

  // Prologue: S-1 groups in flight (empty commits keep the group count uniform).
#pragma unroll
  for (int i = 0; i < S - 1; ++i) {
    if (i < n_groups) issue(i);
    cp_async_commit();
  }
  // Per-row scales are applied once in the epilogue: no scale loads in the K loop.
  const bool group_scales = p.gx != kGrRow;
  ScaleCursor<T> cursor;
  if (group_scales) cursor.init(p, split, splits, row_base, g, tok0);
  GroupScales<T> sc_next;
  if (group_scales && n_groups > 0) cursor.load_and_step(sc_next);

  for (int i = 0; i < n_groups; ++i) {
    const GroupScales<T> sc = sc_next;
    if (group_scales && i + 1 < n_groups) cursor.load_and_step(sc_next);
    if (i + S - 1 < n_groups) issue(i + S - 1);
    cp_async_commit();
    cp_async_wait<S - 1>();  // group i has landed (this thread's copies; nobody else reads them)

    const uint4* stage = my + (i % S) * NV * 32;
    float sum[MT][T][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int t = 0; t < T; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) sum[mt][t][e] = 0.0f;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      uint4 a[MT][2], b[T];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) a[mt][h] = stage[((2 * mt + h) * 2 + c) * 32];
#pragma unroll
      for (int t = 0; t < T; ++t) b[t] = stage[(4 * MT + 2 * t + c) * 32];
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // word j: 4 consecutive k, one k16 MMA
        uint32_t bf[T][2];
#pragma unroll
        for (int t = 0; t < T; ++t) e4m3x4_to_f16x2x2(reinterpret_cast<const uint32_t*>(&b[t])[j], bf[t][0], bf[t][1]);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          uint32_t a0, a1, a2, a3;
          e4m3x4_to_f16x2x2(reinterpret_cast<const uint32_t*>(&a[mt][0])[j], a0, a2);
          e4m3x4_to_f16x2x2(reinterpret_cast<const uint32_t*>(&a[mt][1])[j], a1, a3);
#pragma unroll
          for (int t = 0; t < T; ++t) mma_f16(sum[mt][t], a0, a1, a2, a3, bf[t][0], bf[t][1]);
        }
      }
    }
    if (p.gx == kGrRow) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int t = 0; t < T; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][t][e] += sum[mt][t][e];
    } else {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int t = 0; t < T; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[mt][t][e] = fmaf(sc.w[mt][e >> 1] * sc.x[t][e & 1], sum[mt][t][e], acc[mt][t][e]);
    }
  }
  cp_async_wait<0>();
  // The partial tile below overwrites the start of this warp's ring, which other lanes of the warp
  // copied into and read from: every lane must be past its last read and its last copy first.
  __syncwarp();

  // ---- reduction: warps of the CTA, then CTAs of the cluster; rank 0 writes Y ----------------------
  constexpr int kWarpFloats = S * NV * 32 * 4;  // one warp's ring in floats
  reduce_and_store<MT, T, kWarpFloats>(acc, reinterpret_cast<float*>(ring), warp, lane, p.KW, row_base, p.N, p.M,
                                       [&](float v, int row, int tok) {
                                         if (p.gx == kGrRow) v = v * __ldg(p.sx + tok) * __ldg(p.sw + row);
                                         if (p.bias_f32) v += __ldg(p.bias_f32 + row);
                                         if (p.bias_out) v += to_float<OutT>(static_cast<const OutT*>(p.bias_out)[row]);
                                         static_cast<OutT*>(p.y)[static_cast<int64_t>(tok) * p.ldy + row] = to_out<OutT>(v);
                                       });
}

template <int T, class OutT>
void launch(const SkinnyParams& p, int row_ctas, int C, int device, cudaStream_t stream) {
  static detail::PerDeviceOnce once;  // kernel attributes are per device
  // The ring is sized for 4 warps; fewer warps (tiny K) leave the tail unused. The largest
  // shared-memory carveout lets Tiling<T>::kCtasPerSm CTAs fit on an SM.
  launch_split_k(blockwise_skinny<T, OutT>, p, once, device, row_ctas, C, p.KW, kSmemBytes<T>, stream, "blockwise_linear",
                 "cudaLaunchKernelEx(skinny blockwise kernel)");
}

template <class OutT>
void launch_for_tokens(const SkinnyParams& p, int T, int row_ctas, int C, int device, cudaStream_t stream) {
  switch (T) {
    case 1: return launch<1, OutT>(p, row_ctas, C, device, stream);
    case 2: return launch<2, OutT>(p, row_ctas, C, device, stream);
    default: return launch<4, OutT>(p, row_ctas, C, device, stream);
  }
}

int granularity_code(ScaleGranularity g) {
  return g == ScaleGranularity::kBlock128x128 ? kGrBlock : g == ScaleGranularity::kPerRow ? kGrRow : kGrGroup;
}

}  // namespace

void run_blockwise_skinny(const BlockwiseGemmArgs& a, cudaStream_t stream) {
  if (a.M > kSkinnyMaxM)
    detail::fail("blockwise_linear", Status::kInvalidArgument, "options.config",
                 detail::cat("the skinny configuration serves M <= ", kSkinnyMaxM, "; got M=", a.M));
  const SkinnyShape s = skinny_shape(a.M, a.N, a.K, a.sm_count, a.skinny_cluster);
  SkinnyParams p;
  p.M = a.M;
  p.N = a.N;
  p.K = a.K;
  p.kb = (a.K + kGroup - 1) / kGroup;
  p.x = static_cast<const uint8_t*>(a.x);
  p.ldx = a.ldx;
  p.w = static_cast<const uint8_t*>(a.w);
  p.ldw = a.ldw;
  p.sx = a.x_scale;
  p.ld_sx = a.ld_x_scale;
  p.gx = granularity_code(a.gx);
  p.sw = a.w_scale;
  p.gw = granularity_code(a.gw);
  p.bias_f32 = a.bias_f32;
  p.bias_out = a.bias_out;
  p.y = a.y;
  p.ldy = a.ldy;
  p.KW = s.KW;
  switch (a.y_dtype) {
    case DType::kBF16: launch_for_tokens<__nv_bfloat16>(p, s.T, s.row_ctas, s.C, a.device, stream); break;
    case DType::kF16: launch_for_tokens<__half>(p, s.T, s.row_ctas, s.C, a.device, stream); break;
    case DType::kF32: launch_for_tokens<float>(p, s.T, s.row_ctas, s.C, a.device, stream); break;
    default:
      detail::fail("blockwise_linear", Status::kInternal, "y", detail::cat("no kernel for output dtype ", dtype_name(a.y_dtype)));
  }
  detail::check_launch("blockwise_linear", "skinny blockwise kernel");
}

}  // namespace qsgemm::kernels
