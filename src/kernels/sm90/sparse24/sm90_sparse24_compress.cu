// 2:4 pruning, FP8 quantization and compression of a dense weight, and the inverse.
// Layouts: docs/formats.md §4; the host twin is ref::sparse24_compress (src/reference.cpp).
//
// Work unit: a chunk = 8 consecutive columns = two groups of 4 = exactly one metadata byte and four
// kept values (one 4-byte store), so every write is whole bytes and no atomics touch the outputs.
//
// Fast path (sparse24_compress_pipelined): persistent blocks (as many as are resident at once), one
// row per block and iteration, each thread owning kChunks chunks of the row (chunk j = i * blockDim
// + threadIdx, i < kChunks). Rows are streamed into a ring of `stages` shared-memory slots with
// cp.async, stages - 1 rows ahead, so the loads of the next rows are in flight while a row is
// selected, reduced and quantized. A thread only ever reads back the bytes that it copied itself,
// so the ring needs no barrier; per-channel scales take one __syncthreads per row (the block max of
// the row). W is read from memory once. plan_pipeline picks kChunks, the block size and the ring.
//
// Selection works on the integer magnitudes (bits & 0x7FFF / 0x7FFFFFFF), which order exactly like
// |x| for every finite value (subnormals included, -0.0 == +0.0), with 16-bit lanes two groups at a
// time for bf16/fp16 (sm_90 has 16x2 integer min/max). Identities used:
//   * the kept pair of a group is {0,1} if min(m0,m1) >= max(m2,m3) (ties go to the lower index),
//     {2,3} if min(m2,m3) > max(m0,m1), else the winner of (0,1) and the winner of (2,3), where
//     0 beats 1 iff m0 >= m1 and 2 beats 3 iff m2 >= m3 — the rule of sparse24_select;
//   * the largest magnitude of a group is always kept, so the amax of the kept values of a row is
//     the max magnitude of the row; a magnitude >= that of Inf flags NaN/Inf (then the thread's
//     chunks are re-checked with the exact per-element code and status atomics of the old kernels,
//     so the reported first offender is unchanged);
//   * a group has more than two non-zeros iff its third largest magnitude is non-zero (require mode;
//     flagged chunks are re-checked exactly as well).
// The selection helpers are __host__ __device__ so that they can be compared with sparse24_select
// on the CPU (exhaustively over tie patterns and signed zeros).
// Rows too long for the ring take the two-pass kernel sparse24_compress below (one block per row,
// the second pass re-reads the row from L2): bf16/fp16 K > 57344, fp32 K > 16384 (on an H200).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/sm90/quant/fp8_common.cuh"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "per_device_once.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

constexpr int kThreads = 256;

// ================================================================================================
// Lane helpers: one instruction each on the device, emulated on the host (tools/tests may compile
// the selection functions below for the CPU and compare them with sparse24_select).
// ================================================================================================
__host__ __device__ __forceinline__ uint32_t vmax_u16x2(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vmaxu2(a, b);  // VIMNMX.U16x2
#else
  const uint32_t lo = std::max(a & 0xFFFFu, b & 0xFFFFu), hi = std::max(a >> 16, b >> 16);
  return lo | (hi << 16);
#endif
}
__host__ __device__ __forceinline__ uint32_t vmin_u16x2(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vminu2(a, b);
#else
  const uint32_t lo = std::min(a & 0xFFFFu, b & 0xFFFFu), hi = std::min(a >> 16, b >> 16);
  return lo | (hi << 16);
#endif
}
// PTX prmt.b32 (generic mode): byte i of the result is byte (sel >> 4i) & 7 of {b, a}, or, when
// bit 3 of that selector nibble is set, the sign bit of that byte replicated over 8 bits.
__host__ __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
#else
  const uint64_t src = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (4 * i)) & 0xF;
    uint32_t byte = static_cast<uint32_t>(src >> (8 * (s & 7))) & 0xFF;
    if (s & 8) byte = (byte & 0x80) ? 0xFF : 0x00;
    r |= byte << (8 * i);
  }
  return r;
#endif
}
// Each 16-bit lane -> 0xFFFF if its bit 15 is set, else 0.
__host__ __device__ __forceinline__ uint32_t lane_mask(uint32_t x) { return prmt(x, 0, 0xBB99); }

// ================================================================================================
// Selection of one chunk (two groups, g = columns 0-3 and h = columns 4-7).
// ================================================================================================
// bf16 / fp16: r holds the 8 raw 16-bit values (r.x = e1:e0, r.y = e3:e2, r.z = e5:e4, r.w = e7:e6).
// Out: lo = (h.i0 : g.i0) and hi = (h.i1 : g.i1), the raw kept values (lane 0 = group g);
// the low byte of *meta_byte is the metadata byte (group g in the low nibble); amax2 accumulates the
// lane-wise max magnitude; third2 (kRequire) ORs the third largest magnitude of each group.
template <bool kRequire>
__host__ __device__ __forceinline__ void select_chunk16(uint4 r, uint32_t& lo, uint32_t& hi, uint32_t& meta_byte,
                                                        uint32_t& amax2, uint32_t& third2) {
  constexpr uint32_t kMag = 0x7FFF7FFFu, kBias = 0x80008000u;
  // Lane k of A/B/C/D is element 0/1/2/3 of group k (group g in the low lane).
  const uint32_t a = prmt(r.x, r.z, 0x5410), b = prmt(r.x, r.z, 0x7632);
  const uint32_t c = prmt(r.y, r.w, 0x5410), d = prmt(r.y, r.w, 0x7632);
  const uint32_t am = a & kMag, bm = b & kMag, cm = c & kMag, dm = d & kMag;
  // (x - y + 0x8000) per lane stays in [1, 0xFFFF]: no borrow crosses lanes, bit 15 = (x >= y).
  const uint32_t me01 = lane_mask(am - bm + kBias);  // 0 beats 1 (m0 >= m1)
  const uint32_t me23 = lane_mask(cm - dm + kBias);  // 2 beats 3
  const uint32_t h01 = vmax_u16x2(am, bm), l01 = vmin_u16x2(am, bm);
  const uint32_t h23 = vmax_u16x2(cm, dm), l23 = vmin_u16x2(cm, dm);
  const uint32_t mk01 = lane_mask(l01 - h23 + kBias);   // keep {0,1}: min(m0,m1) >= max(m2,m3)
  const uint32_t mnk23 = lane_mask(h01 - l23 + kBias);  // NOT keep {2,3}: max(m0,m1) >= min(m2,m3)
  // Kept values: i0 = keep23 ? 2 : (keep01 || 0 beats 1) ? 0 : 1; i1 = keep01 ? 1 : (!keep23 && 2 beats 3) ? 2 : 3.
  const uint32_t t0 = mk01 | me01;
  const uint32_t lo01 = (a & t0) | (b & ~t0);
  lo = (lo01 & mnk23) | (c & ~mnk23);
  const uint32_t t1 = me23 & mnk23;
  const uint32_t hi23 = (c & t1) | (d & ~t1);
  hi = (b & mk01) | (hi23 & ~mk01);
  // Nibble i0 | i1 << 2: keep01 -> 0x4, keep23 -> 0xE, else (!e01) | (2 + !e23) << 2 = 0xD ^ e01 ^ e23 << 2.
  const uint32_t g1 = (me23 & 0x00040004u) | (me01 & ~0x00040004u);
  const uint32_t g2 = (g1 & 0x00050005u) ^ 0x000D000Du;
  const uint32_t g3 = (0x00040004u & mk01) | (g2 & ~mk01);
  const uint32_t nib = (g3 & mnk23) | (0x000E000Eu & ~mnk23);
  meta_byte = nib | (nib >> 12);
  amax2 = vmax_u16x2(amax2, vmax_u16x2(h01, h23));
  if constexpr (kRequire) third2 |= vmin_u16x2(vmax_u16x2(l01, l23), vmin_u16x2(h01, h23));
}

// fp32: one group (raw bits e0..e3). Out: the kept raw values (lower index first) and the nibble.
template <bool kRequire>
__host__ __device__ __forceinline__ void select_group32(uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3,
                                                        uint32_t& lo, uint32_t& hi, uint32_t& nib, uint32_t& amax,
                                                        uint32_t& third) {
  constexpr uint32_t kMag = 0x7FFFFFFFu;
  const uint32_t m0 = e0 & kMag, m1 = e1 & kMag, m2 = e2 & kMag, m3 = e3 & kMag;
  const bool e01 = m0 >= m1, e23 = m2 >= m3;
  const uint32_t h01 = m0 > m1 ? m0 : m1, l01 = m0 < m1 ? m0 : m1;
  const uint32_t h23 = m2 > m3 ? m2 : m3, l23 = m2 < m3 ? m2 : m3;
  const bool k01 = l01 >= h23, k23 = l23 > h01;
  lo = k23 ? e2 : (k01 || e01) ? e0 : e1;
  hi = k01 ? e1 : (e23 && !k23) ? e2 : e3;
  nib = k01 ? 0x4u : k23 ? 0xEu : (0x8u | (e23 ? 0u : 0x4u) | (e01 ? 0u : 0x1u));
  const uint32_t gmax = h01 > h23 ? h01 : h23;
  amax = amax > gmax ? amax : gmax;
  if constexpr (kRequire) {
    const uint32_t lmax = l01 > l23 ? l01 : l23, hmin = h01 < h23 ? h01 : h23;
    third |= lmax < hmin ? lmax : hmin;
  }
}

// Magnitude bits (as accumulated above) -> the float |x|, and the magnitude of +Inf.
template <class T> struct MagTraits;
template <> struct MagTraits<__nv_bfloat16> {
  static constexpr uint32_t kInf = 0x7F80u;
  __device__ static float to_float(uint32_t m) { return __uint_as_float(m << 16); }
};
template <> struct MagTraits<__half> {
  static constexpr uint32_t kInf = 0x7C00u;
  __device__ static float to_float(uint32_t m) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(m)));
  }
};
template <> struct MagTraits<float> {
  static constexpr uint32_t kInf = 0x7F800000u;
  __device__ static float to_float(uint32_t m) { return __uint_as_float(m); }
};

// The two lanes of a 16-bit kept word as floats (exact conversions, as __bfloat162float / __half2float).
template <class T>
__device__ __forceinline__ float2 kept_to_float2(uint32_t x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return make_float2(__uint_as_float(x << 16), __uint_as_float(x & 0xFFFF0000u));
  } else {
    return make_float2(__half2float(__ushort_as_half(static_cast<unsigned short>(x & 0xFFFFu))),
                       __half2float(__ushort_as_half(static_cast<unsigned short>(x >> 16))));
  }
}

// ================================================================================================
// Exact validation (the old per-element code), run only for chunks that the fast flags point at.
// Every NaN/Inf and every non-2:4 group of the chunk is reported with the same atomicMin as before,
// so the first offender in row-major order is what the status ends up holding.
// ================================================================================================
__device__ __forceinline__ void check_chunk_exact(const float (&v)[8], int64_t n, int64_t k, int64_t K, bool require_24,
                                               Sparse24CompressStatus* status) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    int nonzero = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float x = v[4 * h + i];
      if (!isfinite(x)) atomicMin(&status->first_nonfinite, static_cast<unsigned long long>(n * K + k + 4 * h + i));
      nonzero += x != 0.0f;
    }
    if (require_24 && nonzero > 2)
      atomicMin(&status->first_not_24, static_cast<unsigned long long>(n * (K / 4) + (k / 4) + h));
  }
}

// ---- cp.async (LDGSTS), 16 bytes, L2 only ----
__device__ __forceinline__ void cp_async16(uint32_t smem_addr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` (0..7, block-uniform) of this thread's newest groups are in flight.
__device__ __forceinline__ void cp_async_wait(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
}

constexpr int kMaxStages = 8;  // cp_async_wait covers stages - 1 <= 7

// ================================================================================================
// Fast path. scale_mode 0: per-channel, 1: per-tensor (status->amax_bits, from sparse24_amax_rows),
// 2: given (scales[] read). Launch: blockDim.x = a multiple of 32 with blockDim.x * kChunks >= K / 8,
// dynamic shared memory = stages * blockDim.x * kChunks * 16 * kVec bytes, any grid. The metadata
// buffer must be < 2 GiB (32-bit offsets; the launcher checks). N, K <= 2^30 (validated).
// kFull: blockDim.x * kChunks == K / 8 (every thread owns kChunks chunks; no per-chunk bounds).
// ================================================================================================
template <class T, int kChunks, bool kRequire, bool kFull>
__global__ void __launch_bounds__(1024) sparse24_compress_pipelined(
    const T* __restrict__ w, int64_t ldw, int N, int K, int stages, int scale_mode, bool given_scalar,
    uint8_t* __restrict__ values, uint8_t* __restrict__ meta, float* __restrict__ scales,
    Sparse24CompressStatus* status) {
  constexpr bool k16 = sizeof(T) == 2;
  constexpr int kVec = k16 ? 1 : 2;  // 16-byte vectors per chunk
  extern __shared__ __align__(16) uint4 ring[];
  __shared__ uint32_t red[2][32];

  const int tid = threadIdx.x, nth = blockDim.x, nwarps = nth >> 5;
  const int cpr = K / 8;  // chunks per row
  const int grid = gridDim.x;
  // This thread's chunks are j = i * nth + tid for i < nvalid (<= kChunks).
  const int nvalid = kFull ? kChunks : tid < cpr ? min(kChunks, (cpr - tid + nth - 1) / nth) : 0;
  if (tid < 64 && (tid & 31) >= nwarps) red[tid >> 5][tid & 31] = 0;  // slots of absent warps read as 0
  const uint32_t ring_base = static_cast<uint32_t>(__cvta_generic_to_shared(ring)) + tid * 16;
  const uint32_t slot_bytes = static_cast<uint32_t>(kChunks * kVec * nth * 16);
  // Metadata of chunk j: meta + n * 16 + (j >> 4) * panel + (j & 15), panel = rows_padded * 16 bytes;
  // nth is a multiple of 16, so that is meta_thread + n * 16 + i * meta_step.
  const uint32_t panel = static_cast<uint32_t>((N + kSparse24MetaRowAlign - 1) / kSparse24MetaRowAlign) *
                         (kSparse24MetaRowAlign * 16);
  uint8_t* const meta_thread = meta + (tid >> 4) * static_cast<int64_t>(panel) + (tid & 15);
  const uint32_t meta_step = static_cast<uint32_t>(nth >> 4) * panel;

  // Copies this thread's chunks of row n (if n < N) into ring slot `slot`; always commits a group.
  // Byte offsets: chunk i, vector v of this thread is at i * nth * 16 * kVec + v * 16 (+ tid * 16 * kVec)
  // in the row and at (i * kVec + v) * nth * 16 (+ tid * 16) in the slot: the same for 16-bit types.
  const uint32_t chunk_stride = static_cast<uint32_t>(nth) * 16 * kVec;
  auto issue = [&](int n, int slot) {
    if (n < N) {
      const char* src = reinterpret_cast<const char*>(w + static_cast<int64_t>(n) * ldw) + tid * (16 * kVec);
      const uint32_t dst = ring_base + slot * slot_bytes;
#pragma unroll
      for (int i = 0; i < kChunks; ++i) {
        if (i < nvalid) {
#pragma unroll
          for (int v = 0; v < kVec; ++v)
            cp_async16(dst + (i * kVec + v) * static_cast<uint32_t>(nth) * 16, src + i * chunk_stride + v * 16);
        }
      }
    }
    cp_async_commit();
  };

  for (int p = 0; p < stages - 1; ++p) issue(blockIdx.x + p * grid, p);

  float s_fixed = 1.0f;
  if (scale_mode == 1) s_fixed = fp8_scale_from_amax(__uint_as_float(status->amax_bits), false);
  else if (scale_mode == 2 && given_scalar) s_fixed = scales[0];

  int slot = 0, parity = 0;
  for (int n = blockIdx.x; n < N; n += grid) {
    issue(n + (stages - 1) * grid, slot == 0 ? stages - 1 : slot - 1);  // into the slot read last iteration
    cp_async_wait(stages - 1);                                           // this row's group has landed
    const uint4* src = ring + slot * (kChunks * kVec * nth) + tid;

    // ---- select; write the metadata. Chunks i >= nvalid are computed on stale shared memory and
    // then dropped: only their stores and their share of amax/third are predicated off. ----
    uint32_t klo[kChunks], khi[kChunks], klo2[k16 ? 1 : kChunks], khi2[k16 ? 1 : kChunks];
    uint32_t amax = 0, third = 0;
    uint8_t* meta_row = meta_thread + static_cast<int64_t>(n) * 16;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      uint32_t byte, gmax = 0, gthird = 0;
      if constexpr (k16) {
        select_chunk16<kRequire>(src[i * nth], klo[i], khi[i], byte, gmax, gthird);
      } else {
        const uint4 g = src[(2 * i) * nth], h = src[(2 * i + 1) * nth];
        uint32_t ng, nh;
        select_group32<kRequire>(g.x, g.y, g.z, g.w, klo[i], khi[i], ng, gmax, gthird);
        select_group32<kRequire>(h.x, h.y, h.z, h.w, klo2[i], khi2[i], nh, gmax, gthird);
        byte = ng | (nh << 4);
      }
      if (i < nvalid) {
        meta_row[i * meta_step] = static_cast<uint8_t>(byte);
        amax = k16 ? vmax_u16x2(amax, gmax) : max(amax, gmax);
        if constexpr (kRequire) third |= gthird;
      }
    }
    if constexpr (k16) amax = max(amax & 0xFFFFu, amax >> 16);
    // NaN/Inf somewhere in this thread's chunks, or (require) a group with more than two non-zeros:
    // re-checked exactly below, after the stores.
    const bool suspect = amax >= MagTraits<T>::kInf || (kRequire && third != 0);

    // ---- the row's scale ----
    float s;
    if (scale_mode == 0) {
      const uint32_t wm = __reduce_max_sync(0xFFFFFFFFu, amax);
      if ((tid & 31) == 0) red[parity][tid >> 5] = wm;
      __syncthreads();
      const uint32_t rm = __reduce_max_sync(0xFFFFFFFFu, red[parity][tid & 31]);  // absent warps' slots are 0
      s = fp8_scale_from_amax(MagTraits<T>::to_float(rm), false);
      if (tid == 0) scales[n] = s;
    } else if (scale_mode == 1) {
      s = s_fixed;
      if (n == 0 && tid == 0) scales[0] = s;
    } else {
      s = given_scalar ? s_fixed : scales[n];
    }
    // A given scale that is unusable (0, negative, subnormal, NaN, Inf): recorded (one thread per
    // row; channel 0 for a per-tensor scale), and the row's values become zeros instead of NaN.
    const bool scale_ok = scale_mode != 2 || fp8_scale_is_valid(s);
    if (!scale_ok && tid == 0 && (!given_scalar || n == 0))
      atomicMin(&status->first_bad_scale, static_cast<unsigned long long>(given_scalar ? 0 : n));
    const float inv = scale_ok ? fp8_inv_scale(s) : 0.0f;

    // ---- quantize; write the values ----
    uint32_t* vals_row = reinterpret_cast<uint32_t*>(values + static_cast<int64_t>(n) * (K / 2)) + tid;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      uint32_t packed;
      if constexpr (k16) {
        const float2 lo = kept_to_float2<T>(klo[i]), hi = kept_to_float2<T>(khi[i]);  // .x: group g, .y: group h
        packed = fp8x2_quantize_inv(lo.x, hi.x, inv) | (fp8x2_quantize_inv(lo.y, hi.y, inv) << 16);
      } else {
        packed = fp8x2_quantize_inv(__uint_as_float(klo[i]), __uint_as_float(khi[i]), inv) |
                 (fp8x2_quantize_inv(__uint_as_float(klo2[i]), __uint_as_float(khi2[i]), inv) << 16);
      }
      if (i < nvalid) vals_row[i * nth] = packed;
    }

    // ---- rare: the exact checks of the old code (the slot is only refilled next iteration) ----
    if (suspect) {
      for (int i = 0; i < nvalid; ++i) {
        float v[8];
        if constexpr (k16) {
          const uint4 x = src[i * nth];
          const uint32_t wd[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const float2 f = kept_to_float2<T>(wd[q]);
            v[2 * q] = f.x;
            v[2 * q + 1] = f.y;
          }
        } else {
          const uint4 g = src[(2 * i) * nth], h = src[(2 * i + 1) * nth];
          v[0] = __uint_as_float(g.x), v[1] = __uint_as_float(g.y), v[2] = __uint_as_float(g.z);
          v[3] = __uint_as_float(g.w), v[4] = __uint_as_float(h.x), v[5] = __uint_as_float(h.y);
          v[6] = __uint_as_float(h.z), v[7] = __uint_as_float(h.w);
        }
        check_chunk_exact(v, n, (static_cast<int64_t>(i) * nth + tid) * 8, K, kRequire, status);
      }
    }
    slot = slot + 1 == stages ? 0 : slot + 1;
    parity ^= 1;
  }
  cp_async_wait(0);
}

// Per-tensor mode, pass 1: status->amax_bits = max over blocks of the max magnitude of W (which is
// the amax of the kept values, the largest entry of a group being always kept). NaN/Inf are left to
// the main pass, which checks every element.
template <class T>
__global__ void __launch_bounds__(kThreads) sparse24_amax_rows(const T* __restrict__ w, int64_t ldw, int64_t N,
                                                               int64_t K, Sparse24CompressStatus* status) {
  constexpr uint32_t kMag = sizeof(T) == 2 ? 0x7FFF7FFFu : 0x7FFFFFFFu;
  const int vpr = static_cast<int>(K * static_cast<int64_t>(sizeof(T)) / 16);  // 16-byte vectors per row
  uint32_t acc = 0;
  auto fold = [&](uint4 x) {
    if constexpr (sizeof(T) == 2) {
      acc = vmax_u16x2(acc, vmax_u16x2(vmax_u16x2(x.x & kMag, x.y & kMag), vmax_u16x2(x.z & kMag, x.w & kMag)));
    } else {
      acc = max(acc, max(max(x.x & kMag, x.y & kMag), max(x.z & kMag, x.w & kMag)));
    }
  };
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const uint4* row = reinterpret_cast<const uint4*>(w + n * ldw);
    int v = threadIdx.x;
    for (; v + 3 * kThreads < vpr; v += 4 * kThreads) {
      const uint4 a = __ldg(row + v), b = __ldg(row + v + kThreads), c = __ldg(row + v + 2 * kThreads),
                  d = __ldg(row + v + 3 * kThreads);
      fold(a);
      fold(b);
      fold(c);
      fold(d);
    }
    for (; v < vpr; v += kThreads) fold(__ldg(row + v));
  }
  if constexpr (sizeof(T) == 2) acc = max(acc & 0xFFFFu, acc >> 16);
  acc = __reduce_max_sync(0xFFFFFFFFu, acc);
  __shared__ uint32_t warp_max[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t m = 0;
    for (int i = 0; i < kThreads / 32; ++i) m = max(m, warp_max[i]);
    if (m != 0) atomicMax(&status->amax_bits, __float_as_uint(MagTraits<T>::to_float(m)));  // >= 0: int order
  }
}

// ================================================================================================
// Fallback for rows too long for the shared-memory ring: one block per row, two passes (the second
// re-reads the row from L2). The reference behaviour of every rule above.
// ================================================================================================

// sparse24_select (formats.cpp) on the device: the two largest magnitudes, ties to the lower index.
// "j beats i" is a strict total order (|x| first, then the lower index), so each entry's count of
// entries that beat it is its rank 0..3: six comparisons decide all four ranks, and the kept pair
// is the two entries of rank 0 and 1, reported in ascending index order.
__device__ __forceinline__ uint32_t select24(const float* g) {
  const float a0 = fabsf(g[0]), a1 = fabsf(g[1]), a2 = fabsf(g[2]), a3 = fabsf(g[3]);
  const int c01 = a1 > a0, c02 = a2 > a0, c03 = a3 > a0, c12 = a2 > a1, c13 = a3 > a1, c23 = a3 > a2;
  const int r0 = c01 + c02 + c03, r1 = (1 - c01) + c12 + c13, r2 = (2 - c02 - c12) + c23, r3 = 3 - c03 - c13 - c23;
  const uint32_t kept = (r0 < 2) | ((r1 < 2) << 1) | ((r2 < 2) << 2) | ((r3 < 2) << 3);
  const uint32_t i0 = __ffs(kept) - 1, i1 = 31 - __clz(kept);
  return i0 | (i1 << 2);
}

__device__ __forceinline__ int64_t meta_offset(int64_t rows_padded, int64_t n, int64_t k) {
  return ((k / kSparse24MetaKAlign) * rows_padded + n) * (kSparse24MetaKAlign / 8) + (k % kSparse24MetaKAlign) / 8;
}

// Selects the two groups of a chunk; checks finiteness and (require mode) 2:4-ness; returns the amax
// of the kept values and the metadata byte.
__device__ __forceinline__ float select_chunk(const float (&v)[8], int64_t n, int64_t k, int64_t K, bool require_24,
                                              Sparse24CompressStatus* status, uint32_t* meta_byte) {
  float amax = 0.0f;
  uint32_t byte = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float* g = v + 4 * h;
    int nonzero = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (!isfinite(g[i])) atomicMin(&status->first_nonfinite, static_cast<unsigned long long>(n * K + k + 4 * h + i));
      nonzero += g[i] != 0.0f;
    }
    if (require_24 && nonzero > 2)
      atomicMin(&status->first_not_24, static_cast<unsigned long long>(n * (K / 4) + (k / 4) + h));
    const uint32_t s = select24(g);
    amax = fmaxf(amax, fmaxf(fabsf(g[s & 3]), fabsf(g[s >> 2])));
    byte |= s << (4 * h);
  }
  *meta_byte = byte;
  return amax;
}

// The scale of row n. scale_mode 0: per-channel, from the block's partial amaxes of the row's kept
// values (a block-wide reduction: every thread of the block must call this); 1: per-tensor, from
// the amax that sparse24_amax left in the status; 2: given by the caller in scales[].
template <int kBlock>
__device__ __forceinline__ float row_scale(int scale_mode, bool given_scalar, float partial_amax, int64_t n,
                                           float* scales, const Sparse24CompressStatus* status) {
  if (scale_mode == 0) {
    const float s = fp8_scale_from_amax(block_max<kBlock>(partial_amax), false);
    if (threadIdx.x == 0) scales[n] = s;
    return s;
  }
  if (scale_mode == 1) {
    const float s = fp8_scale_from_amax(__uint_as_float(status->amax_bits), false);
    if (n == 0 && threadIdx.x == 0) scales[0] = s;
    return s;
  }
  return scales[given_scalar ? 0 : n];
}

// 1 / s for the quantization of row n; a given scale that is unusable is recorded (as in the fast
// path) and gives 0, so that the row's values are written as zeros, not NaN.
__device__ __forceinline__ float row_inv_scale(int scale_mode, bool given_scalar, float s, int64_t n,
                                               Sparse24CompressStatus* status) {
  if (scale_mode == 2 && !fp8_scale_is_valid(s)) {
    if (threadIdx.x == 0 && (!given_scalar || n == 0))
      atomicMin(&status->first_bad_scale, static_cast<unsigned long long>(given_scalar ? 0 : n));
    return 0.0f;
  }
  return fp8_inv_scale(s);
}

// Per-tensor mode, pass 1: the amax of the kept values of the whole weight.
template <class T>
__global__ void __launch_bounds__(kThreads) sparse24_amax(const T* __restrict__ w, int64_t ldw, int64_t K,
                                                          Sparse24CompressStatus* status) {
  const int64_t n = blockIdx.x;
  float amax = 0.0f;
  for (int64_t k = threadIdx.x * 8; k < K; k += kThreads * 8) {
    float v[8];
    load8(w + n * ldw + k, v);
    uint32_t byte;
    amax = fmaxf(amax, select_chunk(v, n, k, K, false, status, &byte));
  }
  amax = block_max<kThreads>(amax);
  if (threadIdx.x == 0) atomicMax(&status->amax_bits, __float_as_uint(amax));  // amax >= 0: int order == float order
}

// One block per row. scale_mode 0: per-channel (pass 1 here), 1: per-tensor (from
// status->amax_bits), 2: given (scales[] read).
template <class T>
__global__ void __launch_bounds__(kThreads) sparse24_compress(const T* __restrict__ w, int64_t ldw, int64_t N, int64_t K,
                                                              bool require_24, int scale_mode, bool given_scalar,
                                                              uint8_t* __restrict__ values, uint8_t* __restrict__ meta,
                                                              float* __restrict__ scales,
                                                              Sparse24CompressStatus* status) {
  const int64_t n = blockIdx.x;
  const T* row = w + n * ldw;
  float amax = 0.0f;
  if (scale_mode == 0) {  // pass 1: the row's amax (also validates)
    for (int64_t k = threadIdx.x * 8; k < K; k += kThreads * 8) {
      float v[8];
      load8(row + k, v);
      uint32_t byte;
      amax = fmaxf(amax, select_chunk(v, n, k, K, require_24, status, &byte));
    }
  }
  const float s = row_scale<kThreads>(scale_mode, given_scalar, amax, n, scales, status);
  const float inv = row_inv_scale(scale_mode, given_scalar, s, n, status);
  const int64_t rows_padded = (N + kSparse24MetaRowAlign - 1) / kSparse24MetaRowAlign * kSparse24MetaRowAlign;
  for (int64_t k = threadIdx.x * 8; k < K; k += kThreads * 8) {
    float v[8];
    load8(row + k, v);
    uint32_t byte;
    // Validation runs here for the modes that had no pass 1 over this row.
    select_chunk(v, n, k, K, require_24 && scale_mode != 0, status, &byte);
    uint32_t packed = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t sel = (byte >> (4 * h)) & 0xF;
      packed |= fp8x2_quantize_inv(v[4 * h + (sel & 3)], v[4 * h + (sel >> 2)], inv) << (16 * h);
    }
    *reinterpret_cast<uint32_t*>(values + n * (K / 2) + k / 2) = packed;
    meta[meta_offset(rows_padded, n, k)] = static_cast<uint8_t>(byte);
  }
}

template <class Out>
__global__ void __launch_bounds__(kThreads) sparse24_decompress(const uint8_t* __restrict__ values,
                                                                const uint8_t* __restrict__ meta,
                                                                const float* __restrict__ scales, bool scale_scalar,
                                                                int64_t N, int64_t K, Out* __restrict__ out,
                                                                int64_t ld_out) {
  const int64_t chunks = K / 8, total = N * chunks;
  const int64_t rows_padded = (N + kSparse24MetaRowAlign - 1) / kSparse24MetaRowAlign * kSparse24MetaRowAlign;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t n = i / chunks, k = (i % chunks) * 8;
    const float s = scales[scale_scalar ? 0 : n];
    const uint32_t byte = meta[meta_offset(rows_padded, n, k)];
    const uint32_t packed = *reinterpret_cast<const uint32_t*>(values + n * (K / 2) + k / 2);
    float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t sel = (byte >> (4 * h)) & 0xF;
      const __nv_fp8_e4m3* q = reinterpret_cast<const __nv_fp8_e4m3*>(&packed);
      d[4 * h + (sel & 3)] = static_cast<float>(q[2 * h]) * s;
      d[4 * h + (sel >> 2)] = static_cast<float>(q[2 * h + 1]) * s;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if constexpr (std::is_same_v<Out, float>)
        out[n * ld_out + k + j] = d[j];
      else
        out[n * ld_out + k + j] = __float2bfloat16_rn(d[j]);
    }
  }
}

// ================================================================================================
// Launch planning for the fast path.
// ================================================================================================
struct PipePlan {
  int chunks = 0;   // chunks per thread per row (kChunks)
  int threads = 0;  // block size
  int stages = 0;   // ring slots
  int smem = 0;     // dynamic shared memory bytes
};

// Chunks per thread: the most of 8, 4, 2, 1 (fp32: 2, 1 — its chunks are twice the bytes and its
// kept values twice the registers) that leaves >= 128 threads per row, fewer only for short rows.
// Blocks per SM: the most (<= 1024 threads per SM, which the 64-register bound allows) whose ring
// holds >= 2 slots per block and >= 112 KiB of loads in flight per SM ((slots - 1) rows per block);
// failing that, the most bytes in flight.
bool plan_pipeline(int64_t K, int elem_bytes, int smem_per_sm, int smem_per_block, int reserved_per_block,
                   PipePlan* plan) {
  constexpr int64_t kStaticSmem = 2 * 32 * 4 + 16;  // red[2][32] (+ alignment)
  constexpr int64_t kWantInFlight = 112 << 10;
  const int64_t cpr = K / 8;
  const int max_chunks = elem_bytes == 4 ? 2 : 8;
  int chunks = 1;
  while (chunks < max_chunks && cpr >= int64_t{chunks} * 2 * 128) chunks *= 2;
  const int64_t threads = ((cpr + chunks - 1) / chunks + 31) / 32 * 32;
  if (threads > 1024) return false;
  const int64_t stage = threads * chunks * 8 * elem_bytes;
  const int64_t max_blocks = std::max<int64_t>(1, std::min<int64_t>(16, 1024 / threads));
  int64_t best_blocks = 0, best_stages = 0, best_in_flight = -1;
  for (int64_t b = max_blocks; b >= 1; --b) {
    const int64_t avail = std::min<int64_t>(smem_per_sm / b - reserved_per_block, smem_per_block) - kStaticSmem;
    const int64_t s = std::min<int64_t>(kMaxStages, avail / stage);
    if (s < 2) continue;
    const int64_t in_flight = b * (s - 1) * stage;
    if (in_flight > best_in_flight) best_blocks = b, best_stages = s, best_in_flight = in_flight;
    if (in_flight >= kWantInFlight) break;
  }
  if (best_blocks == 0) return false;
  plan->chunks = chunks;
  plan->threads = static_cast<int>(threads);
  plan->stages = static_cast<int>(best_stages);
  plan->smem = static_cast<int>(best_stages * stage);
  return true;
}

template <class T>
using PipeKernel = void (*)(const T*, int64_t, int, int, int, int, bool, uint8_t*, uint8_t*, float*,
                            Sparse24CompressStatus*);

template <class T, bool kRequire, bool kFull>
PipeKernel<T> pipe_kernel(int chunks) {
  switch (chunks) {
    case 1: return sparse24_compress_pipelined<T, 1, kRequire, kFull>;
    case 2: return sparse24_compress_pipelined<T, 2, kRequire, kFull>;
    default: break;
  }
  if constexpr (sizeof(T) == 2) {
    if (chunks == 4) return sparse24_compress_pipelined<T, 4, kRequire, kFull>;
    if (chunks == 8) return sparse24_compress_pipelined<T, 8, kRequire, kFull>;
  }
  return nullptr;
}

// What the fast path needs to know about a device, read once per device.
struct CompressLimits {
  int sms = 0, smem_sm = 0, smem_block = 0, reserved = 0;
};

cudaError_t query_limits(int dev, CompressLimits* l) {
  cudaError_t e = cudaDeviceGetAttribute(&l->sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l->smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l->smem_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&l->reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
  return e;
}

// Raises every fast-path kernel of element type T to the largest dynamic shared memory the device
// allows (the opt-in limit less the kernel's static shared memory) and prefers the largest carveout.
// The attributes are per kernel and per device, not per call: set once to the maximum, they serve
// every shape (plan_pipeline never asks for more), so concurrent calls with different shapes cannot
// undo each other's limit between set and launch, as a per-call set to plan.smem could.
template <class T, bool kRequire, bool kFull>
cudaError_t set_attributes_for(int smem_block) {
  for (int chunks : {1, 2, 4, 8}) {
    const PipeKernel<T> kern = pipe_kernel<T, kRequire, kFull>(chunks);
    if (kern == nullptr) continue;
    cudaFuncAttributes fa{};
    cudaError_t e = cudaFuncGetAttributes(&fa, kern);
    if (e != cudaSuccess) return e;
    const int max_dynamic = smem_block - static_cast<int>(fa.sharedSizeBytes);
    e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic);
    if (e != cudaSuccess) return e;
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
template <class T>
cudaError_t set_attributes(int smem_block) {
  cudaError_t e = set_attributes_for<T, true, true>(smem_block);
  if (e == cudaSuccess) e = set_attributes_for<T, true, false>(smem_block);
  if (e == cudaSuccess) e = set_attributes_for<T, false, true>(smem_block);
  if (e == cudaSuccess) e = set_attributes_for<T, false, false>(smem_block);
  return e;
}

// The device's limits, and T's kernel attributes set, once per device (thread-safe). `dev` must be
// the current device (cudaFuncSetAttribute applies to the current one): launch_sparse24_compress
// makes the stream's device current.
template <class T>
CompressLimits device_setup(int dev) {
  static detail::PerDeviceOnce once;  // one per element type
  static CompressLimits limits[detail::PerDeviceOnce::kMaxDevices];
  CompressLimits local;
  const bool cached = dev >= 0 && dev < detail::PerDeviceOnce::kMaxDevices;
  CompressLimits* l = cached ? &limits[dev] : &local;
  const cudaError_t e = once.run(dev, [&] {
    const cudaError_t q = query_limits(dev, l);
    return q != cudaSuccess ? q : set_attributes<T>(l->smem_block);
  });
  detail::check_cuda(e, "sparse24_compress", "device set-up (cudaDeviceGetAttribute / cudaFuncSetAttribute)");
  return *l;  // written inside once.run, which orders it before every later call's read
}

// Launches the fast path (and, per-tensor, its amax pass); false when the shape does not fit it.
template <class T>
bool launch_pipelined(const T* w, int64_t ldw, int64_t N, int64_t K, bool require_24, int scale_mode,
                      bool given_scalar, uint8_t* values, uint8_t* meta, float* scales, Sparse24CompressStatus* status,
                      int dev, cudaStream_t stream) {
  const char* fn = "sparse24_compress";
  const CompressLimits lim = device_setup<T>(dev);
  const int sms = lim.sms;
  if (sparse24_meta_bytes(N, K) >= (int64_t{1} << 31)) return false;  // the kernel's 32-bit metadata offsets
  PipePlan plan;
  if (!plan_pipeline(K, static_cast<int>(sizeof(T)), lim.smem_sm, lim.smem_block, lim.reserved, &plan)) return false;
  const bool full = int64_t{plan.threads} * plan.chunks == K / 8;
  const PipeKernel<T> kern = require_24 ? (full ? pipe_kernel<T, true, true>(plan.chunks)
                                                : pipe_kernel<T, true, false>(plan.chunks))
                                        : (full ? pipe_kernel<T, false, true>(plan.chunks)
                                                : pipe_kernel<T, false, false>(plan.chunks));
  if (kern == nullptr) return false;
  int per_sm = 0;
  detail::check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, plan.threads, plan.smem), fn,
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (per_sm < 1) return false;
  // Persistent: exactly the blocks that are resident at once (each loops over rows).
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(N, int64_t{per_sm} * sms));
  if (scale_mode == 1)
    sparse24_amax_rows<T><<<static_cast<unsigned>(std::min<int64_t>(N, int64_t{sms} * 8)), kThreads, 0, stream>>>(
        w, ldw, N, K, status);
  kern<<<grid, plan.threads, plan.smem, stream>>>(w, ldw, static_cast<int>(N), static_cast<int>(K), plan.stages,
                                                  scale_mode, given_scalar, values, meta, scales, status);
  return true;
}

// Makes `device` current for its lifetime (nothing to do when it already is).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != device && cudaSetDevice(device) == cudaSuccess) prev_ = cur;
  }
  ~ScopedDevice() {
    if (prev_ >= 0) cudaSetDevice(prev_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace

void launch_sparse24_compress(const void* w, DType wt, int64_t ldw, int64_t N, int64_t K, bool require_24,
                              int scale_mode, bool given_scalar, uint8_t* values, uint8_t* meta, float* scales,
                              Sparse24CompressStatus* status, cudaStream_t stream) {
  const char* fn = "sparse24_compress";
  // The stream's device, made current for the attribute set-up and the launches (restored on return).
  int dev = 0;
  detail::check_cuda(cudaStreamGetDevice(stream, &dev), fn, "cudaStreamGetDevice");
  const ScopedDevice on_stream_device(dev);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* wp = static_cast<const T*>(w);
    if (launch_pipelined<T>(wp, ldw, N, K, require_24, scale_mode, given_scalar, values, meta, scales, status, dev,
                            stream))
      return;
    // Rows too long for the shared-memory ring: the two-pass kernel.
    const unsigned grid = static_cast<unsigned>(N);
    if (scale_mode == 1) sparse24_amax<T><<<grid, kThreads, 0, stream>>>(wp, ldw, K, status);
    sparse24_compress<T><<<grid, kThreads, 0, stream>>>(wp, ldw, N, K, require_24, scale_mode, given_scalar, values,
                                                        meta, scales, status);
  };
  switch (wt) {
    case DType::kBF16: run(__nv_bfloat16{}); break;
    case DType::kF16: run(__half{}); break;
    case DType::kF32: run(float{}); break;
    default: detail::fail(fn, Status::kInternal, "w", "unexpected dtype");
  }
  detail::check_launch(fn, "compress kernel");
}

void launch_sparse24_decompress(const uint8_t* values, const uint8_t* meta, const float* scales, bool scale_scalar,
                                int64_t N, int64_t K, void* out, DType out_dtype, int64_t ld_out, cudaStream_t stream) {
  const int64_t total = N * (K / 8);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 132 * 32));
  if (out_dtype == DType::kF32)
    sparse24_decompress<float><<<grid, kThreads, 0, stream>>>(values, meta, scales, scale_scalar, N, K,
                                                              static_cast<float*>(out), ld_out);
  else
    sparse24_decompress<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(values, meta, scales, scale_scalar, N, K,
                                                                      static_cast<__nv_bfloat16*>(out), ld_out);
  detail::check_launch("sparse24_decompress", "decompress kernel");
}

}  // namespace qsgemm::kernels
