// 2:4 pruning, FP8 quantization and compression of a dense weight, and the inverse.
//
// One thread handles 8 consecutive columns = two groups of 4 = exactly one metadata byte and four
// kept values (one 4-byte store), so every write is whole bytes and no atomics touch the outputs.
// Per-channel scales need the amax of a row's kept values before any value is quantized: one block
// owns a row, reduces the amax in pass 1 and quantizes in pass 2 (the re-read of the row hits L2).
// Layouts: docs/formats.md §4; the host twin is ref::sparse24_compress (src/reference.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/sm90/quant/fp8_common.cuh"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

constexpr int kThreads = 256;

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

// Main pass: one block per row. scale_mode 0: per-channel (pass 1 here), 1: per-tensor (from
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
  const float inv = fp8_inv_scale(s);
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

// The fast path of sparse24_compress: one row per block, kChunks chunks of 8 per thread held in
// registers, so the row is read from memory once and all its loads are in flight together.
// scale_mode as in sparse24_compress. Validation (NaN/Inf, 2:4) runs here in every mode.
template <class T, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads) sparse24_compress_resident(
    const T* __restrict__ w, int64_t ldw, int64_t N, int64_t K, bool require_24, int scale_mode, bool given_scalar,
    uint8_t* __restrict__ values, uint8_t* __restrict__ meta, float* __restrict__ scales,
    Sparse24CompressStatus* status) {
  const int64_t n = blockIdx.x;
  const T* row = w + n * ldw;
  Chunk8<T> c[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t k = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (k < K) c[i].load(row + k); else c[i].zero();
  }
  uint32_t bytes[kChunks];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t k = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    bytes[i] = 0;
    if (k < K) {
      float v[8];
      c[i].to_floats(v);
      amax = fmaxf(amax, select_chunk(v, n, k, K, require_24, status, &bytes[i]));
    }
  }
  const float s = row_scale<kRowThreads>(scale_mode, given_scalar, amax, n, scales, status);
  const float inv = fp8_inv_scale(s);
  const int64_t rows_padded = (N + kSparse24MetaRowAlign - 1) / kSparse24MetaRowAlign * kSparse24MetaRowAlign;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t k = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (k < K) {
      float v[8];
      c[i].to_floats(v);
      uint32_t packed = 0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t sel = (bytes[i] >> (4 * h)) & 0xF;
        packed |= fp8x2_quantize_inv(v[4 * h + (sel & 3)], v[4 * h + (sel >> 2)], inv) << (16 * h);
      }
      *reinterpret_cast<uint32_t*>(values + n * (K / 2) + k / 2) = packed;
      meta[meta_offset(rows_padded, n, k)] = static_cast<uint8_t>(bytes[i]);
    }
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

}  // namespace

void launch_sparse24_compress(const void* w, DType wt, int64_t ldw, int64_t N, int64_t K, bool require_24,
                              int scale_mode, bool given_scalar, uint8_t* values, uint8_t* meta, float* scales,
                              Sparse24CompressStatus* status, cudaStream_t stream) {
  const char* fn = "sparse24_compress";
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* wp = static_cast<const T*>(w);
    const unsigned grid = static_cast<unsigned>(N);
    if (scale_mode == 1) sparse24_amax<T><<<grid, kThreads, 0, stream>>>(wp, ldw, K, status);
    // Rows that fit in registers (K <= 32768 for 16-bit weights, 16384 for fp32) take the one-read path.
    const int64_t chunks = K / 8;
    constexpr bool kWide = sizeof(T) == 4;
#define QSGEMM_RESIDENT(THREADS, CHUNKS)                                                                   \
  sparse24_compress_resident<T, THREADS, CHUNKS><<<grid, THREADS, 0, stream>>>(wp, ldw, N, K, require_24, \
                                                                              scale_mode, given_scalar,   \
                                                                              values, meta, scales, status)
    if (chunks <= 128 * 1) QSGEMM_RESIDENT(128, 1);
    else if (chunks <= 128 * 2) QSGEMM_RESIDENT(128, 2);
    else if (chunks <= 128 * 4) QSGEMM_RESIDENT(128, 4);
    else if (chunks <= 128 * 8) QSGEMM_RESIDENT(128, 8);
    else if (chunks <= 256 * 8) QSGEMM_RESIDENT(256, 8);
    else if (!kWide && chunks <= 256 * 16) QSGEMM_RESIDENT(256, 16);
    else
      sparse24_compress<T><<<grid, kThreads, 0, stream>>>(wp, ldw, N, K, require_24, scale_mode, given_scalar, values,
                                                          meta, scales, status);
#undef QSGEMM_RESIDENT
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
