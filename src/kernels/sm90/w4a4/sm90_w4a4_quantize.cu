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
//  * each thread accumulates up to 8 outputs (row i, rank j) of X2 over the chunk in float32, in
//    ascending k.
// Non-finite inputs are reported through *bad (the packer) as the smallest row-major index.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::kernels {
namespace {

constexpr int kRows = 16;
constexpr int kChunk = 128;
constexpr int kThreads = 256;
constexpr int kXPitch = kChunk + 1;   // floats
constexpr int kLPitch = kChunk + 2;   // bf16
constexpr int kMaxOut = kRows * kW4A4MaxRank / kThreads;  // X2 outputs per thread
static_assert(kRows * kW4A4MaxRank % kThreads == 0, "X2 outputs divide evenly over the threads");

__device__ __forceinline__ float load_f32(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_f32(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float load_f32(const __half* p, int64_t i) { return __half2float(p[i]); }

__device__ __forceinline__ int int4_code(float x, float s) {
  const float r = rintf(__fdiv_rn(x, s));  // ties to even, as nearbyint in the default mode
  return r > 7.0f ? 7 : (r < -8.0f ? -8 : static_cast<int>(r));
}

template <class InT>
__global__ void __launch_bounds__(kThreads) sm90_w4a4_quantize_kernel(const W4A4QuantArgs a) {
  __shared__ float xs[kRows][kXPitch];
  __shared__ uint16_t ls[kW4A4MaxRank * kLPitch];

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
    for (int e = tid; e < kRows * kChunk; e += kThreads) {
      const int i = e / kChunk, k = e % kChunk;
      const int64_t r = r0 + i, c = c0 + k;
      float v = 0.0f;
      if (r < a.rows && c < a.cols) {
        v = load_f32(x, r * a.ldx + c);
        if (a.bad != nullptr && !isfinite(v))
          atomicMin(a.bad, static_cast<unsigned long long>(r * a.cols + c));
      }
      xs[i][k] = v;
    }
    for (int e = tid; e < rank * kChunk; e += kThreads) {
      const int j = e / kChunk, k = e % kChunk;
      const int64_t c = c0 + k;
      ls[j * kLPitch + k] = c < a.cols ? l1[j * a.ld_l1 + c] : uint16_t{0};
    }
    __syncthreads();

    // ---- quantize: warp w owns rows w and w + 8 of the tile ----------------------------------------
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int i = warp + 8 * rr;
      const int64_t r = r0 + i;
      const int64_t c = c0 + 4 * lane;
      float v[4];
      float amax = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        v[u] = xs[i][4 * lane + u];
        amax = fmaxf(amax, fabsf(v[u]));
      }
      // Reduce over the group's lanes: 16 lanes (64 columns) or the whole warp (128).
#pragma unroll
      for (int off = 8; off >= 1; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
      if (a.group == 128) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 16));
      if (r >= a.rows || c >= a.cols) continue;  // after the shuffles: every lane takes part in them
      const float s = amax > 0.0f ? fmaxf(__fdiv_rn(amax, 7.0f), FLT_MIN) : 1.0f;
      const int q0 = int4_code(v[0], s), q1 = int4_code(v[1], s), q2 = int4_code(v[2], s), q3 = int4_code(v[3], s);
      const uint16_t packed = static_cast<uint16_t>((q0 & 0xF) | ((q1 & 0xF) << 4) | ((q2 & 0xF) << 8) | ((q3 & 0xF) << 12));
      *reinterpret_cast<uint16_t*>(a.q + r * a.ldq + c / 2) = packed;  // c % 4 == 0: 2-byte aligned
      if ((4 * lane) % a.group == 0) a.scales[r * a.s_row + (c / a.group) * a.s_grp] = s;
    }

    // ---- X2 partial sums over this chunk --------------------------------------------------------
    if (rank > 0) {
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

  if (rank > 0) {
#pragma unroll
    for (int q = 0; q < kMaxOut; ++q) {
      const int o = tid + kThreads * q;
      if (o >= kRows * rank) continue;
      const int i = o / rank, j = o % rank;
      const int64_t r = r0 + i;
      if (r >= a.rows) continue;
      if (a.x2_f32)
        static_cast<float*>(a.x2)[r * a.ld_x2 + j] = acc[q];
      else
        static_cast<__nv_bfloat16*>(a.x2)[r * a.ld_x2 + j] = __float2bfloat16_rn(acc[q]);
    }
  }
}

}  // namespace

void run_w4a4_quantize(const W4A4QuantArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const dim3 grid(static_cast<unsigned>((a.rows + kRows - 1) / kRows));
  switch (a.x_dtype) {
    case DType::kBF16: sm90_w4a4_quantize_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(a); break;
    case DType::kF16: sm90_w4a4_quantize_kernel<__half><<<grid, kThreads, 0, stream>>>(a); break;
    default: sm90_w4a4_quantize_kernel<float><<<grid, kThreads, 0, stream>>>(a); break;
  }
}

}  // namespace qsgemm::kernels
