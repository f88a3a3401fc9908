// Device helpers shared by the FP8 quantizers and compressors. Each mirrors a host function of
// src/formats.cpp bit for bit (docs/formats.md §1–§2).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <cstdint>

namespace qsgemm::kernels {

// Same as fp8_scale_from_amax (formats.cpp): IEEE division, 1 for amax == 0, at least FLT_MIN (so
// that 1/s is finite for a tiny amax), optional pow2 round-up.
__device__ __forceinline__ float fp8_scale_from_amax(float amax, bool pow2) {
  if (!(amax > 0.0f)) return 1.0f;
  const float s = fmaxf(__fdiv_rn(amax, 448.0f), FLT_MIN);
  if (!pow2) return s;
  const uint32_t b = __float_as_uint(s);
  if ((b & 0x7FFFFFu) == 0) return s;
  return __uint_as_float(((b >> 23) + 1) << 23);
}

// Same as fp8_scale_is_valid (formats.h): positive, normal and finite. False for NaN.
__device__ __forceinline__ bool fp8_scale_is_valid(float s) { return s >= FLT_MIN && s <= FLT_MAX; }

// 1 / s, correctly rounded (== fp8_inv_scale on the host): computed once per group.
__device__ __forceinline__ float fp8_inv_scale(float s) { return __frcp_rn(s); }

// e4m3 code of x * inv_s with the hardware's satfinite RNE conversion (== fp8_quantize_inv).
// __fmul_rn: never contracted into an FMA, so the product is the host's.
__device__ __forceinline__ uint8_t fp8_quantize_inv(float x, float inv_s) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(__fmul_rn(x, inv_s), __NV_SATFINITE, __NV_E4M3));
}
// Two codes at once (one cvt.rn.satfinite.e4m3x2 instruction): lo in bits 0-7, hi in bits 8-15.
__device__ __forceinline__ uint32_t fp8x2_quantize_inv(float lo, float hi, float inv_s) {
  const float2 v = make_float2(__fmul_rn(lo, inv_s), __fmul_rn(hi, inv_s));
  return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3));
}

template <class T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// Loads 8 consecutive elements (16 bytes for 16-bit types, 32 for float) as floats.
template <class T>
__device__ __forceinline__ void load8(const T* p, float (&v)[8]) {
  if constexpr (sizeof(T) == 4) {
    const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = to_float<T>(e[i]);
  }
}

// 8 consecutive elements kept as raw bits (4 registers for 16-bit types, 8 for float), so that a
// thread can hold many chunks of a row in registers and issue all their loads before the first use.
template <class T>
struct Chunk8 {
  static constexpr int kWords = sizeof(T) == 4 ? 2 : 1;
  uint4 raw[kWords];
  __device__ __forceinline__ void load(const T* p) {
#pragma unroll
    for (int w = 0; w < kWords; ++w) raw[w] = __ldg(reinterpret_cast<const uint4*>(p) + w);
  }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int w = 0; w < kWords; ++w) raw[w] = make_uint4(0, 0, 0, 0);
  }
  __device__ __forceinline__ void to_floats(float (&v)[8]) const {
    const T* e = reinterpret_cast<const T*>(raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = to_float<T>(e[i]);
  }
};

// Max over a block of kThreads threads (a multiple of 32). All threads get the result.
template <int kThreads>
__device__ __forceinline__ float block_max(float v) {
  static_assert(kThreads % 32 == 0, "whole warps");
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
  if constexpr (kThreads == 32) {
    return v;
  } else {
    __shared__ float warp_max[kThreads / 32];
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_max[0];
#pragma unroll
    for (int w = 1; w < kThreads / 32; ++w) v = fmaxf(v, warp_max[w]);
    return v;
  }
}

// Quantizes 8 floats (multiplying by inv_s = 1/scale) and stores them as 8 bytes (one 8-byte store).
__device__ __forceinline__ void store8_fp8(uint8_t* q, const float (&v)[8], float inv_s) {
  const uint32_t lo = fp8x2_quantize_inv(v[0], v[1], inv_s) | (fp8x2_quantize_inv(v[2], v[3], inv_s) << 16);
  const uint32_t hi = fp8x2_quantize_inv(v[4], v[5], inv_s) | (fp8x2_quantize_inv(v[6], v[7], inv_s) << 16);
  *reinterpret_cast<uint2*>(q) = make_uint2(lo, hi);
}

}  // namespace qsgemm::kernels
