// The INT4 group quantizer of the W4A4 family (w4a4_pack_weight, w4a4_quantize_activations), with the
// low-rank down-projection X2 = X·L1ᵀ fused: X is read from global memory once.
//
// One CTA of 256 threads owns kRows = 16 rows and walks K in chunks of 128 columns (one group of
// 128 or two of 64; D1 % 64 == 0, so a chunk is whole groups, the last possibly one group of 64):
//  * the X chunk goes to shared memory as float (rows padded to 129 floats: no bank conflicts when a
//    warp reads two rows), the L1 chunk [r][128] as bf16 (rows padded to 130: 65 words, so 32
//    consecutive rows fall in 32 banks);
//  * each warp quantizes two rows: lane l holds columns 4l..4l+3, the group amax is a shuffle
//    reduction over 16 (group 64) or 32 (group 128) lanes; s = amax/7 (1 for amax 0, at least
//    FLT_MIN), q = clamp(rint(x/s), -8, 7) with IEEE division (__fdiv_rn) — the operations of
//    int4_scale_from_amax / int4_quantize, so the codes and scales are bit-identical to the CPU;
//  * X2: for bf16 X, bf16 m16n8k16 MMAs (the 16 rows are one m16 tile, warp w owns rank tiles w and
//    w + 8) into float32 accumulators; for fp16 / fp32 X (values bf16 cannot hold), each thread
//    accumulates up to 8 outputs (row i, rank j) over the chunk with scalar float32 FMAs in
//    ascending k.
// bf16 X (the common case) runs a second kernel, sm90_w4a4_quantize_bf16_kernel (described above
// it), with the same results: 64 rows per CTA, chunks through a cp.async ring, a row's chunks split
// over slices (a cluster whose partial X2 tiles meet in distributed shared memory, added in slice
// order: deterministic, no workspace, no atomics), the grid sized from the device's occupancy.
// Non-finite inputs are reported through *bad (the packer) as the smallest row-major index.
// Output modes (W4A4QuantArgs::q_e4m3): packed INT4 (two codes per byte), or the e4m3 staging the
// wgmma GEMM reads (one code per byte, the same codes as e4m3 values, exact: e4m3 holds -8..7): a
// 4-byte store per lane instead of a 2-byte one.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "kernels/sm90/w4a4/sm90_w4a4_ptx.cuh"
#include "per_device_once.h"
#include "validate.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::kernels {
namespace {

using namespace w4a4_ptx;

constexpr int kRows = 16;
constexpr int kChunk = 128;
constexpr int kThreads = 256;
constexpr int kXPitch = kChunk + 1;   // floats
constexpr int kLPitch = kChunk + 2;   // bf16
constexpr int kMaxOut = kRows * kW4A4MaxRank / kThreads;  // X2 outputs per thread
static_assert(kRows * kW4A4MaxRank % kThreads == 0, "X2 outputs divide evenly over the threads");

static_assert(kRows * kChunk / 8 == kThreads, "one 8-element vector of X per thread per chunk");

// 8 consecutive elements as floats (16-byte aligned for 16-bit types, 32-byte for fp32).
__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void load8(const __half* p, float (&v)[8]) {
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}

// X2 = X·L1ᵀ on the tensor cores (bf16 m16n8k16, float32 accumulators) when X is bf16: L1 is bf16,
// so the products are exact either way, and the scalar loop (fp16 / fp32 X, whose values bf16 cannot
// hold) would make the quantizer compute-bound at large ranks (L·D1·r FMAs).
template <class InT>
inline constexpr bool kX2OnTensorCores = std::is_same_v<InT, __nv_bfloat16>;

__device__ __forceinline__ uint32_t bf16x2(float lo, float hi) {  // exact: the values are bf16
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ int int4_code(float x, float s) {
  const float r = rintf(__fdiv_rn(x, s));  // ties to even, as nearbyint in the default mode
  return r > 7.0f ? 7 : (r < -8.0f ? -8 : static_cast<int>(r));
}

// The e4m3 byte of an INT4 code q in -8..7 (exact: e4m3 holds every integer up to 16), as
// fp8_e4m3_encode(q) (qsgemm/formats.h): 0 -> 0x00, 1 -> 0x38, ..., -8 -> 0xD0.
__device__ __forceinline__ uint32_t e4m3_of_code(int q) {
  return static_cast<uint32_t>(__nv_cvt_float_to_fp8(static_cast<float>(q), __NV_SATFINITE, __NV_E4M3));
}

// One warp quantizes one row's 128-column chunk starting at c0: lane l holds columns c0 + 4l .. +3
// in v. The group amax is a shuffle reduction over 16 (group 64) or 32 (group 128) lanes; every lane
// must call this (the shuffles), also for a row or columns outside the matrix (which write nothing).
__device__ __forceinline__ void quantize_lane_values(const W4A4QuantArgs& a, int64_t r, int64_t c0, int lane,
                                                     const float (&v)[4]) {
  const int64_t c = c0 + 4 * lane;
  float amax = 0.0f;
#pragma unroll
  for (int u = 0; u < 4; ++u) amax = fmaxf(amax, fabsf(v[u]));
#pragma unroll
  for (int off = 8; off >= 1; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
  if (a.group == 128) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 16));
  if (r >= a.rows || c >= a.cols) return;  // after the shuffles: every lane takes part in them
  const float s = amax > 0.0f ? fmaxf(__fdiv_rn(amax, 7.0f), FLT_MIN) : 1.0f;
  const int q0 = int4_code(v[0], s), q1 = int4_code(v[1], s), q2 = int4_code(v[2], s), q3 = int4_code(v[3], s);
  if (a.q_e4m3) {  // the e4m3 staging: one code per byte, the same codes (docs/formats.md §5)
    const uint32_t bytes = e4m3_of_code(q0) | (e4m3_of_code(q1) << 8) | (e4m3_of_code(q2) << 16) |
                           (e4m3_of_code(q3) << 24);
    *reinterpret_cast<uint32_t*>(a.q + r * a.ldq + c) = bytes;  // c % 4 == 0, ldq % 16 == 0: 4-byte aligned
  } else {
    const uint16_t packed = static_cast<uint16_t>((q0 & 0xF) | ((q1 & 0xF) << 4) | ((q2 & 0xF) << 8) | ((q3 & 0xF) << 12));
    *reinterpret_cast<uint16_t*>(a.q + r * a.ldq + c / 2) = packed;  // c % 4 == 0: 2-byte aligned
  }
  if ((4 * lane) % a.group == 0) a.scales[r * a.s_row + (c / a.group) * a.s_grp] = s;
}

template <class InT>
__global__ void __launch_bounds__(kThreads) sm90_w4a4_quantize_kernel(const W4A4QuantArgs a) {
  __shared__ float xs[kRows][kXPitch];
  __shared__ __align__(16) uint16_t ls[kW4A4MaxRank * kLPitch];

  const InT* x = static_cast<const InT*>(a.x);
  const uint16_t* l1 = static_cast<const uint16_t*>(a.l1);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int rank = a.rank;

  float acc[kMaxOut];
#pragma unroll
  for (int q = 0; q < kMaxOut; ++q) acc[q] = 0.0f;

  for (int64_t c0 = 0; c0 < a.cols; c0 += kChunk) {
    __syncthreads();  // the previous chunk's readers are done
    {  // X: one vector of 8 elements per thread (16-byte rows: validated; cols % 64 == 0, so a
       // vector is wholly inside or outside the matrix)
      const int i = tid / (kChunk / 8), k = (tid % (kChunk / 8)) * 8;
      const int64_t r = r0 + i, c = c0 + k;
      float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
      if (r < a.rows && c < a.cols) {
        load8(x + r * a.ldx + c, v);
        if (a.bad != nullptr)
#pragma unroll
          for (int u = 0; u < 8; ++u)
            if (!isfinite(v[u])) {
              atomicMin(a.bad, static_cast<unsigned long long>(r * a.cols + c + u));
              break;
            }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) xs[i][k + u] = v[u];
    }
    for (int e = tid; e < rank * (kChunk / 8); e += kThreads) {  // L1: 8 bf16 per load
      const int j = e / (kChunk / 8), k = (e % (kChunk / 8)) * 8;
      const int64_t c = c0 + k;
      const uint4 u = c < a.cols ? __ldg(reinterpret_cast<const uint4*>(l1 + j * a.ld_l1 + c)) : make_uint4(0, 0, 0, 0);
      uint32_t* d = reinterpret_cast<uint32_t*>(ls + j * kLPitch + k);  // 4-byte aligned: 260·j + 2·k
      d[0] = u.x;
      d[1] = u.y;
      d[2] = u.z;
      d[3] = u.w;
    }
    __syncthreads();

    // ---- quantize: warp w owns rows w and w + 8 of the tile ----------------------------------------
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int i = warp + 8 * rr;
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = xs[i][4 * lane + u];
      quantize_lane_values(a, r0 + i, c0, lane, v);
    }

    // ---- X2 partial sums over this chunk --------------------------------------------------------
    if constexpr (kX2OnTensorCores<InT>) {
      // bf16 X: the 16 rows are one m16 tile; warp w owns the n8 rank tiles w and w + 8. The bf16
      // products are exact in the float32 accumulators (as in the scalar path); only the summation
      // order differs.
#pragma unroll
      for (int it = 0; it < 2; ++it) {
        const int nt = warp + 8 * it;
        if (nt * 8 >= rank) break;
        const int g = lane >> 2, t = lane & 3;
        const uint16_t* lrow = ls + (nt * 8 + g) * kLPitch;
        float c[4] = {acc[4 * it], acc[4 * it + 1], acc[4 * it + 2], acc[4 * it + 3]};
#pragma unroll
        for (int k0 = 0; k0 < kChunk; k0 += 16) {
          const uint32_t a0 = bf16x2(xs[g][k0 + 2 * t], xs[g][k0 + 2 * t + 1]);
          const uint32_t a1 = bf16x2(xs[g + 8][k0 + 2 * t], xs[g + 8][k0 + 2 * t + 1]);
          const uint32_t a2 = bf16x2(xs[g][k0 + 8 + 2 * t], xs[g][k0 + 9 + 2 * t]);
          const uint32_t a3 = bf16x2(xs[g + 8][k0 + 8 + 2 * t], xs[g + 8][k0 + 9 + 2 * t]);
          const uint32_t b0 = *reinterpret_cast<const uint32_t*>(lrow + k0 + 2 * t);
          const uint32_t b1 = *reinterpret_cast<const uint32_t*>(lrow + k0 + 8 + 2 * t);
          mma_bf16(c, a0, a1, a2, a3, b0, b1);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[4 * it + e] = c[e];
      }
    } else if (rank > 0) {
#pragma unroll
      for (int q = 0; q < kMaxOut; ++q) {
        const int o = tid + kThreads * q;
        if (o < kRows * rank) {
          const int i = o / rank, j = o % rank;
          float s = acc[q];
          for (int k = 0; k < kChunk; ++k)
            s = fmaf(xs[i][k], __bfloat162float(__ushort_as_bfloat16(ls[j * kLPitch + k])), s);
          acc[q] = s;
        }
      }
    }
  }

  auto store_x2 = [&](int64_t r, int j, float v) {
    if (r >= a.rows) return;
    if (a.x2_f32)
      static_cast<float*>(a.x2)[r * a.ld_x2 + j] = v;
    else
      static_cast<__nv_bfloat16*>(a.x2)[r * a.ld_x2 + j] = __float2bfloat16_rn(v);
  };
  if constexpr (kX2OnTensorCores<InT>) {
    // m16n8 accumulator layout: c0, c1 at (row g, rank 2t, 2t+1), c2, c3 at row g + 8.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int it = 0; it < 2; ++it) {
      const int nt = warp + 8 * it;
      if (nt * 8 >= rank) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) store_x2(r0 + g + 8 * (e >> 1), nt * 8 + 2 * t + (e & 1), acc[4 * it + e]);
    }
  } else if (rank > 0) {
#pragma unroll
    for (int q = 0; q < kMaxOut; ++q) {
      const int o = tid + kThreads * q;
      if (o >= kRows * rank) continue;
      store_x2(r0 + o / rank, o % rank, acc[q]);
    }
  }
}

// ---- bf16 X: 64 rows per CTA, a cp.async ring, X2 on ldmatrix-fed tensor cores -------------------------
// The kernel above is the reference-shaped one (fp16 / fp32 X). bf16 X, the common case, runs this
// one, built for bandwidth:
//  * a CTA owns 64 rows (not 16): the L1 chunk it stages [r][128] is shared by four times as many
//    rows, so the L2 -> shared-memory traffic of the down-projection is r/64 of X's, not r/16;
//  * chunks of X and L1 arrive through a cp.async ring (raw bf16, 272-byte rows: conflict-free
//    16-byte reads and ldmatrix);
//  * per element: x / s as q = x·y, e = fma(-s, q, x), q' = fma(e, y, q) with y = RN(1/s) per group
//    (Markstein's correction: q' = RN(x/s) exactly, the IEEE quotient the CPU rounds, for every x
//    with |x/s| >= 2^-26 when 2^-100 <= s <= 2^100; smaller quotients round to 0 either way, other
//    scales take __fdiv_rn); rint by adding and subtracting 1.5·2^23 (ties to even, and the low
//    nibble of the sum's bits is the two's-complement code);
//  * X2: warp w owns m16 tile w % 4 and every other n8 rank tile from w / 4; A and B fragments by
//    ldmatrix.x4;
//  * a row's chunks are split over slices (gridDim.y): with the down-projection a cluster of up to 16
//    CTAs whose partial X2 tiles meet in distributed shared memory, CTA c adding rows c, c + S, ... in
//    slice order (deterministic; no workspace, no atomics); at small L the rank is split over
//    gridDim.z too (each z the X2 of r/Z ranks; z = 0 also quantizes), so a decode-size call streams
//    L1 from many SMs; without the down-projection, independent slices. bf16_grid picks the shape
//    from the device's occupancy (one wave where it can);
//  * rows past L are not loaded, quantized or multiplied (a decode-size block has one valid row).
constexpr int kQRows = 64;
constexpr int kRawRowBytes = (kChunk + 8) * 2;   // 272: 16-byte aligned, 8 rows hit 8 different 16-byte bank groups
constexpr int kStageXBytes = kQRows * kRawRowBytes;  // 17408
__host__ __device__ inline int stage_bytes(int rank_part) { return kStageXBytes + rank_part * kRawRowBytes; }
inline int quant_stages(int rank_part) { return rank_part > 64 ? 2 : 3; }
inline int bf16_smem_bytes(int rank_part) {
  const int ring = quant_stages(rank_part) * stage_bytes(rank_part);
  const int red = kQRows * rank_part * 4;  // the X2 partial tile, parked in the ring after the K loop
  return ring > red ? ring : red;
}
static_assert(kRawRowBytes % 16 == 0 && kStageXBytes % 16 == 0, "16-byte cp.async destinations");
static_assert(kQRows * kChunk / 8 == 4 * kThreads, "four 8-element vectors of X per thread per chunk");

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Where one thread's row goes: its codes and scales, set up once per kernel (no 64-bit multiply,
// no division per call); q == nullptr for a row outside the matrix.
struct QuantRow {
  uint8_t* q = nullptr;    // the row's codes
  float* s = nullptr;      // the row's scale of group 0 (group g at s + g * s_grp)
  int64_t r = 0;           // the row (for the non-finite report)
};

// Eight consecutive values v of row qr from column c (c % 8 == 0): the group amax over the 8 (group
// 64) or 16 (group 128) lanes that hold the group (every lane calls this: the shuffles), then the
// codes, the scale and the non-finite check; rows/columns outside the matrix write nothing.
__device__ __forceinline__ void quantize8(const W4A4QuantArgs& a, const QuantRow& qr, int64_t c, const float (&v)[8],
                                          int lane) {
  float amax = 0.0f;
#pragma unroll
  for (int u = 0; u < 8; ++u) amax = fmaxf(amax, fabsf(v[u]));
#pragma unroll
  for (int off = 1; off <= 4; off <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
  const bool g128 = a.group == 128;
  if (g128) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 8));
  if (qr.q == nullptr || c >= a.cols) return;  // after the shuffles
  if (a.bad != nullptr)
#pragma unroll
    for (int u = 0; u < 8; ++u)
      if (!isfinite(v[u])) {
        atomicMin(a.bad, static_cast<unsigned long long>(qr.r * a.cols + c + u));
        break;
      }
  const float s = amax > 0.0f ? fmaxf(__fdiv_rn(amax, 7.0f), FLT_MIN) : 1.0f;  // int4_scale_from_amax
  constexpr float kMagic = 0x1.8p23f;  // 1.5·2^23: x + kMagic rounds x to an integer, ties to even
  float t[8];                          // rint(clamp(x/s)) + kMagic; clamping first rounds the same
  if (s >= 0x1p-100f && s <= 0x1p100f) {
    const float y = __frcp_rn(s);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const float q = __fmul_rn(v[u], y);
      const float q1 = __fmaf_rn(__fmaf_rn(-s, q, v[u]), y, q);  // = RN(v/s) (Markstein)
      t[u] = __fadd_rn(fminf(fmaxf(q1, -8.0f), 7.0f), kMagic);
    }
  } else {
#pragma unroll
    for (int u = 0; u < 8; ++u) t[u] = __fadd_rn(fminf(fmaxf(__fdiv_rn(v[u], s), -8.0f), 7.0f), kMagic);
  }
  if (a.q_e4m3) {  // one code per byte, as e4m3 (exact)
    uint32_t w[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const __nv_fp8x2_storage_t lo = __nv_cvt_float2_to_fp8x2(
          make_float2(__fadd_rn(t[4 * h], -kMagic), __fadd_rn(t[4 * h + 1], -kMagic)), __NV_SATFINITE, __NV_E4M3);
      const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(
          make_float2(__fadd_rn(t[4 * h + 2], -kMagic), __fadd_rn(t[4 * h + 3], -kMagic)), __NV_SATFINITE, __NV_E4M3);
      w[h] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
    }
    *reinterpret_cast<uint2*>(qr.q + c) = make_uint2(w[0], w[1]);  // ldq % 16 == 0, c % 8 == 0
  } else {  // two codes per byte, even column in the low nibble
    uint32_t w = 0;
#pragma unroll
    for (int u = 0; u < 8; ++u) w |= (__float_as_uint(t[u]) & 0xFu) << (4 * u);
    *reinterpret_cast<uint32_t*>(qr.q + (c >> 1)) = w;
  }
  if ((lane & (g128 ? 15 : 7)) == 0) qr.s[(c >> (g128 ? 7 : 6)) * a.s_grp] = s;  // the group's first lane
}

template <int kStages>
__global__ void __launch_bounds__(kThreads, 2) sm90_w4a4_quantize_bf16_kernel(const W4A4QuantArgs a) {
  extern __shared__ __align__(128) uint8_t qsmem[];
  const __nv_bfloat16* x = static_cast<const __nv_bfloat16*>(a.x);
  const __nv_bfloat16* l1 = static_cast<const __nv_bfloat16*>(a.l1);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kQRows;
  // Rows of this block inside the matrix. Rows past them are neither loaded nor quantized, and their
  // m16 tiles not multiplied: an MMA's output row depends on its own input row only, so whatever
  // the ring holds there reaches only outputs that are not stored (a decode-size call does 1/64 of
  // the work of a full block).
  const int valid_rows = a.rows - r0 < kQRows ? static_cast<int>(a.rows - r0) : kQRows;
  // This CTA's ranks [j0, j0 + nr) of the down-projection (gridDim.z parts); part 0 also quantizes.
  const int parts = static_cast<int>(gridDim.z), part = static_cast<int>(blockIdx.z);
  const int nr = a.rank / parts, j0 = part * nr;
  const bool quantizes = part == 0;
  const int sbytes = stage_bytes(nr);
  // This CTA's slice of the chunks: [first, first + nchunks) of the row's ceil(cols / 128).
  const int slices = static_cast<int>(gridDim.y), slice = static_cast<int>(blockIdx.y);
  const int64_t all_chunks = (a.cols + kChunk - 1) / kChunk;
  const int64_t per_slice = (all_chunks + slices - 1) / slices;
  const int64_t first = slice * per_slice;
  const int64_t nchunks = first >= all_chunks ? 0 : (all_chunks - first < per_slice ? all_chunks - first : per_slice);
  const uint32_t smem0 = w4a4_ptx::smem_u32(qsmem);

  // Chunk ch into stage st: X rows r0 .. r0 + 63 (64 x 16 pieces of 16 bytes, when this CTA quantizes
  // or projects), then L1 rows j0 .. j0 + nr - 1. Pieces outside the matrix are zero-filled.
  auto load_chunk = [&](int st, int64_t ch) {
    const int64_t c0 = (first + ch) * kChunk;
    const uint32_t base = smem0 + static_cast<uint32_t>(st * sbytes);
#pragma unroll
    for (int it = 0; it < kQRows * 16 / kThreads; ++it) {
      const int e = tid + it * kThreads, i = e >> 4, q = e & 15;
      if (i >= valid_rows) break;  // i grows with it
      const int64_t r = r0 + i, c = c0 + q * 8;
      const bool ok = c < a.cols;  // cols % 64 == 0: a piece is wholly in or out
      cp_async_16(base + i * kRawRowBytes + q * 16, ok ? static_cast<const void*>(x + r * a.ldx + c) : a.x, ok ? 16 : 0);
    }
    for (int e = tid; e < nr * 16; e += kThreads) {
      const int j = e >> 4, q = e & 15;
      const int64_t c = c0 + q * 8;
      const bool ok = c < a.cols;
      cp_async_16(base + kStageXBytes + j * kRawRowBytes + q * 16,
                  ok ? static_cast<const void*>(l1 + (j0 + j) * a.ld_l1 + c) : a.x, ok ? 16 : 0);
    }
  };

  // X2 fragments: m16 tile mt, n8 tiles nt0, nt0 + 2, ... below nr / 8.
  const int mt = warp & 3, nt0 = warp >> 2, n8 = nr / 8;
  float acc[kW4A4MaxRank / 16][4];
#pragma unroll
  for (int u = 0; u < kW4A4MaxRank / 16; ++u)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[u][e] = 0.0f;
  // ldmatrix row addresses (lane l supplies row l % 8 of matrix l / 8): A = X rows of tile mt
  // (matrices: rows 0-7 / 8-15 x k 0-7, then k 8-15); B = L1 rows of an n8 tile (k 0-7, 8-15, 16-23, 24-31).
  const uint32_t a_off = static_cast<uint32_t>((mt * 16 + (lane & 7) + 8 * ((lane >> 3) & 1)) * kRawRowBytes + 16 * (lane >> 4));
  const uint32_t b_off = static_cast<uint32_t>(kStageXBytes + (lane & 7) * kRawRowBytes + 16 * (lane >> 3));

  QuantRow qrows[4];  // pass p's row (see the quantize loop)
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int64_t r = r0 + 16 * p + (tid >> 4);
    qrows[p].r = r;
    if (quantizes && r < a.rows) {
      qrows[p].q = a.q + r * a.ldq;
      qrows[p].s = a.scales + r * a.s_row;
    }
  }

#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < nchunks) load_chunk(st, st);
    cp_async_commit();
  }
  for (int64_t ch = 0; ch < nchunks; ++ch) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk ch is visible to all; every thread is done with chunk ch - 1's stage
    if (ch + kStages - 1 < nchunks) load_chunk(static_cast<int>((ch + kStages - 1) % kStages), ch + kStages - 1);
    cp_async_commit();
    const int st = static_cast<int>(ch % kStages);
    const uint8_t* xs = qsmem + st * sbytes;  // [64][136] bf16
    const int64_t c0 = (first + ch) * kChunk;

    if (quantizes) {  // pass p: rows 16p + tid / 16, columns 8·(tid % 16) .. + 7
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const int i = 16 * p + (tid >> 4), k = 8 * (tid & 15);
        if (16 * p + 2 * warp >= valid_rows) break;  // the warp's two rows (and all later passes') are past the matrix
        const uint4 u = *reinterpret_cast<const uint4*>(xs + i * kRawRowBytes + 2 * k);
        const float v[8] = {__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xFFFF0000u),
                            __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xFFFF0000u),
                            __uint_as_float(u.z << 16), __uint_as_float(u.z & 0xFFFF0000u),
                            __uint_as_float(u.w << 16), __uint_as_float(u.w & 0xFFFF0000u)};
        quantize8(a, qrows[p], c0 + k, v, lane);
      }
    }

    if (nr > 0 && mt * 16 < valid_rows) {  // X2 += X_chunk · L1_chunkᵀ (bf16 m16n8k16, float32 accumulators)
      const uint32_t sbase = smem0 + static_cast<uint32_t>(st * sbytes);
#pragma unroll
      for (int kp = 0; kp < kChunk / 32; ++kp) {
        uint32_t a0[4], a1[4];
        ldmatrix_x4(a0, sbase + a_off + kp * 64);
        ldmatrix_x4(a1, sbase + a_off + kp * 64 + 32);
#pragma unroll
        for (int u = 0; u < kW4A4MaxRank / 16; ++u) {
          const int nt = nt0 + 2 * u;
          if (nt >= n8) break;
          uint32_t b[4];
          ldmatrix_x4(b, sbase + b_off + nt * 8 * kRawRowBytes + kp * 64);
          mma_bf16(acc[u], a0[0], a0[1], a0[2], a0[3], b[0], b[1]);
          mma_bf16(acc[u], a1[0], a1[1], a1[2], a1[3], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();
  if (nr == 0) return;

  // X2 over the slices: every CTA parks its partial tile [64][nr] (floats) at the start of its ring;
  // CTA c of the cluster adds rows c, c + S, ... over the slices in order 0, 1, ... and stores them.
  namespace cg = cooperative_groups;
  float* red = reinterpret_cast<float*>(qsmem);
  __syncthreads();  // every thread is past its last read of the ring
  {
    const int g = lane >> 2, t = lane & 3;  // m16n8 accumulators: c0, c1 at (row g, 2t, 2t+1), c2, c3 at row g + 8
#pragma unroll
    for (int u = 0; u < kW4A4MaxRank / 16; ++u) {
      const int nt = nt0 + 2 * u;
      if (nt >= n8) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) red[(mt * 16 + g + 8 * (e >> 1)) * nr + nt * 8 + 2 * t + (e & 1)] = acc[u][e];
    }
  }
  if (slices > 1)
    cg::this_cluster().sync();
  else
    __syncthreads();
  const int my_rows = (kQRows - slice + slices - 1) / slices;
  for (int e = tid; e < my_rows * nr; e += kThreads) {
    const int i = slice + slices * (e / nr), j = e % nr;
    const int64_t r = r0 + i;
    float v = 0.0f;
    for (int c = 0; c < slices; ++c) v += (slices > 1 ? cg::this_cluster().map_shared_rank(red, c) : red)[i * nr + j];
    if (r >= a.rows) continue;
    if (a.x2_f32)
      static_cast<float*>(a.x2)[r * a.ld_x2 + j0 + j] = v;
    else
      static_cast<__nv_bfloat16*>(a.x2)[r * a.ld_x2 + j0 + j] = __float2bfloat16_rn(v);
  }
  if (slices > 1) cg::this_cluster().sync();  // the other CTAs' shared memory outlives their readers
}


// How many CTAs of the bf16 kernel fit the device at once: without the down-projection (ctas) and
// with it per rank part 16·j and cluster size c (clusters[j][c], 0 where c is not allowed). Clusters
// do not tile the GPCs as single CTAs do, so the grid is sized by the device's own answer, read
// once per device. Clusters of up to 16 where the device allows that non-portable size (Hopper
// does): at decode sizes the slices of a row are all the parallelism there is.
constexpr int kMaxCluster = 16;
struct QuantOccupancy {
  int ctas = 0;
  int clusters[kW4A4MaxRank / 16 + 1][kMaxCluster + 1] = {};
};

// A launch of the bf16 kernel: grid (row blocks, slices, rank parts), the ring of one rank part, and
// with the down-projection a cluster along the slices. The launch and the occupancy query both
// build it here, so they describe the same thing.
struct Bf16Launch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute cluster[1] = {};
  Bf16Launch(dim3 grid, int rank_part, bool clustered, cudaStream_t stream) {
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = static_cast<size_t>(bf16_smem_bytes(rank_part));
    cfg.stream = stream;
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = 1;
    cluster[0].val.clusterDim.y = grid.y;
    cluster[0].val.clusterDim.z = 1;
    cfg.attrs = cluster;
    cfg.numAttrs = clustered ? 1 : 0;
  }
  Bf16Launch(const Bf16Launch&) = delete;  // cfg.attrs points into this object
  Bf16Launch& operator=(const Bf16Launch&) = delete;
};

template <int kStages>
cudaError_t max_clusters(int rank_part, int size, int* n) {
  const Bf16Launch l(dim3(1, static_cast<unsigned>(size), 1), rank_part, true, nullptr);
  return cudaOccupancyMaxActiveClusters(n, sm90_w4a4_quantize_bf16_kernel<kStages>, &l.cfg);
}

cudaError_t bf16_setup(int sm_count, QuantOccupancy* o) {
  cudaError_t e = cudaFuncSetAttribute(sm90_w4a4_quantize_bf16_kernel<3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       bf16_smem_bytes(64));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(sm90_w4a4_quantize_bf16_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             bf16_smem_bytes(kW4A4MaxRank));
  int max_cluster = 8;
  if (e == cudaSuccess) {
    const cudaError_t np3 = cudaFuncSetAttribute(sm90_w4a4_quantize_bf16_kernel<3>,
                                                 cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    const cudaError_t np2 = cudaFuncSetAttribute(sm90_w4a4_quantize_bf16_kernel<2>,
                                                 cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (np3 == cudaSuccess && np2 == cudaSuccess)
      max_cluster = kMaxCluster;
    else
      (void)cudaGetLastError();  // not this device: portable sizes only
  }
  int per_sm = 0;
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sm90_w4a4_quantize_bf16_kernel<3>, kThreads,
                                                      static_cast<size_t>(bf16_smem_bytes(0)));
  o->ctas = per_sm * sm_count;
  for (int j = 1; j <= kW4A4MaxRank / 16 && e == cudaSuccess; ++j)
    for (int c = 1; c <= max_cluster && e == cudaSuccess; ++c) {
      const cudaError_t q = quant_stages(16 * j) == 3 ? max_clusters<3>(16 * j, c, &o->clusters[j][c])
                                                      : max_clusters<2>(16 * j, c, &o->clusters[j][c]);
      if (q != cudaSuccess) {  // a size above 8 the device refuses: not used
        if (c <= 8) e = q;
        o->clusters[j][c] = 0;
        (void)cudaGetLastError();
      }
    }
  return e;
}

// The bf16 kernel's grid: 64-row blocks x slices of the chunks x parts of the rank. A CTA's time is
// about its chunks, so the pick minimizes waves x chunks per slice (the smallest slice count of the
// best): without the down-projection independent slices; with it a cluster of slices (sizes the
// device allows), then the rank split into the most parts (dividing r / 16) that add no wave.
struct QuantGrid {
  int64_t rows = 0, slices = 1;
  int parts = 1;
};
QuantGrid bf16_grid(const W4A4QuantArgs& a, const QuantOccupancy& o) {
  QuantGrid g;
  g.rows = (a.rows + kQRows - 1) / kQRows;
  const int64_t chunks = (a.cols + kChunk - 1) / kChunk;
  const int jr = a.rank / 16;
  auto cap = [&](int64_t s) -> int64_t {  // CTAs (rank 0) or clusters (rank > 0) at once; 0: not allowed
    return a.rank > 0 ? o.clusters[jr][s] : (o.ctas > 0 ? o.ctas : 1);
  };
  int64_t best = -1;
  for (int64_t s = 1; s <= chunks && s <= (a.rank > 0 ? kMaxCluster : chunks); ++s) {
    if (cap(s) <= 0 && s > 1) continue;
    const int64_t per_slice = (chunks + s - 1) / s;
    if (s > 1 && (chunks + per_slice - 1) / per_slice < s) continue;  // an empty slice: a smaller s does the same
    const int64_t units = a.rank > 0 ? g.rows : g.rows * s;
    const int64_t cs = cap(s) > 0 ? cap(s) : 1;
    const int64_t cost = ((units + cs - 1) / cs) * per_slice;
    if (best < 0 || cost < best) {
      best = cost;
      g.slices = s;
    }
  }
  if (a.rank > 0) {
    const int64_t c = cap(g.slices) > 0 ? cap(g.slices) : 1, waves = (g.rows + c - 1) / c;
    for (int p = jr; p > 1; --p) {
      if (jr % p != 0) continue;
      const int64_t cp = o.clusters[jr / p][g.slices];  // clusters of rank part 16 * jr / p
      if (cp > 0 && (g.rows * p + cp - 1) / cp <= waves) {
        g.parts = p;
        break;
      }
    }
  }
  return g;
}

}  // namespace

void run_w4a4_quantize(const W4A4QuantArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const dim3 grid(static_cast<unsigned>((a.rows + kRows - 1) / kRows));  // the fp16 / fp32 kernel
  switch (a.x_dtype) {
    case DType::kBF16: {
      // Kernel attributes and occupancy are per device: set and read once.
      static detail::PerDeviceOnce once;
      static QuantOccupancy occupancy[detail::PerDeviceOnce::kMaxDevices];
      const int device = a.device >= 0 ? a.device : detail::current_device();
      QuantOccupancy local;
      QuantOccupancy& occ = device >= 0 && device < detail::PerDeviceOnce::kMaxDevices ? occupancy[device] : local;
      const int sms = a.sm_count > 0 ? a.sm_count : 132;
      const cudaError_t setup = once.run(device, [&] { return bf16_setup(sms, &occ); });
      if (setup != cudaSuccess) {
        detail::check_cuda(setup, "w4a4 quantizer", "kernel attributes / occupancy");
        return;
      }
      const QuantGrid g = bf16_grid(a, occ);
      const int rank_part = a.rank / g.parts;
      const Bf16Launch l(dim3(static_cast<unsigned>(g.rows), static_cast<unsigned>(g.slices), static_cast<unsigned>(g.parts)),
                         rank_part, a.rank > 0, stream);  // rank 0: independent slices, any number
      const cudaError_t e = quant_stages(rank_part) == 3
                                ? cudaLaunchKernelEx(&l.cfg, sm90_w4a4_quantize_bf16_kernel<3>, a)
                                : cudaLaunchKernelEx(&l.cfg, sm90_w4a4_quantize_bf16_kernel<2>, a);
      detail::check_cuda(e, "w4a4 quantizer", "cudaLaunchKernelEx(bf16 quantizer)");
      break;
    }
    case DType::kF16: sm90_w4a4_quantize_kernel<__half><<<grid, kThreads, 0, stream>>>(a); break;
    default: sm90_w4a4_quantize_kernel<float><<<grid, kThreads, 0, stream>>>(a); break;
  }
}

}  // namespace qsgemm::kernels
