// Random fills for the benchmark harness, compiled into the qsgemm CLI.
//
// Every value is a pure function of (seed, index), so a run is reproducible, and none is zero or
// NaN: zeros hide unwritten outputs and can run faster than real data (METHOD.md).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

namespace {

// murmur3's 32-bit finalizer: a cheap, well-mixed hash of one word.
__device__ __forceinline__ uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

__device__ __forceinline__ uint32_t hash_index(uint64_t i, uint32_t seed) {
  return fmix32(static_cast<uint32_t>(i) ^ fmix32(seed * 0x9E3779B9u + static_cast<uint32_t>(i >> 32)));
}

// An odd integer in [-(2^23 - 1), 2^23 - 1] times amp / 2^23: symmetric, uniform, never zero, and
// exact in float (|numerator| < 2^24).
__device__ __forceinline__ float signed_uniform(uint32_t h, float amp) {
  const int32_t odd = static_cast<int32_t>((h >> 9) << 1) + 1 - (1 << 23);
  return static_cast<float>(odd) * (amp * (1.0f / 8388608.0f));
}

// float -> bf16 bits, round to nearest even (inputs are finite).
__device__ __forceinline__ uint16_t bf16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace

// bf16 [n]: uniform in (-amp, amp), never zero.
__global__ void fill_bf16_kernel(uint16_t* p, uint64_t n, uint32_t seed, float amp) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = bf16_bits(signed_uniform(hash_index(i, seed), amp));
}

// e4m3 [n]: random sign, exponent field 4..9 and mantissa, i.e. magnitudes 0.125 .. 7.5 —
// never zero, never the NaN code 0x7F/0xFF.
__global__ void fill_e4m3_kernel(uint8_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t h = hash_index(i, seed);
    const uint32_t sign = h & 1u, exponent = 4u + (h >> 1) % 6u, mantissa = (h >> 8) & 7u;
    p[i] = static_cast<uint8_t>((sign << 7) | (exponent << 3) | mantissa);
  }
}

// float [n]: uniform in (lo, hi) (scales: pass lo > 0).
__global__ void fill_f32_kernel(float* p, uint64_t n, uint32_t seed, float lo, float hi) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const float u = (static_cast<float>(hash_index(i, seed) >> 9) + 0.5f) * (1.0f / 8388608.0f);  // (0, 1)
    p[i] = lo + (hi - lo) * u;
  }
}

// Reads `n` 16-byte words and folds them into one word, written only if it equals a value no real
// fill produces: the loads cannot be elided, and the flush leaves L2 holding clean lines only.
__global__ void l2_read_flush_kernel(const uint4* p, uint64_t n, uint32_t* sink) {
  uint32_t acc = 0;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;
}

#include "bench_common.h"

namespace qsgemm::bench {
namespace {
// A grid-stride loop: a few waves of 256-thread blocks saturate the memory system.
unsigned fill_blocks(size_t n) { return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>((n + 255) / 256, 4096))); }
}  // namespace

void fill_bf16(void* p, size_t n, uint32_t seed, float amp, cudaStream_t stream) {
  if (n == 0) return;
  fill_bf16_kernel<<<fill_blocks(n), 256, 0, stream>>>(static_cast<uint16_t*>(p), n, seed, amp);
  QSB_CHECK_CUDA(cudaGetLastError());
}
void fill_e4m3(void* p, size_t n, uint32_t seed, cudaStream_t stream) {
  if (n == 0) return;
  fill_e4m3_kernel<<<fill_blocks(n), 256, 0, stream>>>(static_cast<uint8_t*>(p), n, seed);
  QSB_CHECK_CUDA(cudaGetLastError());
}
void l2_read_flush(const void* p, size_t bytes, uint32_t* sink, cudaStream_t stream) {
  const uint64_t n = bytes / 16;
  if (n == 0) return;
  l2_read_flush_kernel<<<fill_blocks(n), 256, 0, stream>>>(static_cast<const uint4*>(p), n, sink);
  QSB_CHECK_CUDA(cudaGetLastError());
}
void fill_f32(float* p, size_t n, uint32_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  fill_f32_kernel<<<fill_blocks(n), 256, 0, stream>>>(p, n, seed, lo, hi);
  QSB_CHECK_CUDA(cudaGetLastError());
}
}  // namespace qsgemm::bench
