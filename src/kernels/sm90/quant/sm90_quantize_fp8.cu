// FP8 (e4m3) quantization kernels: per-token / 1x128 groups / static / 128x128 blocks.
// Memory-bound: every thread moves 16-byte chunks of 8 elements; the group's amax is reduced in
// registers and shuffles, then the chunk (still in registers) is quantized and stored. Nothing is
// read twice from memory except in the per-token kernel for long rows (the second read hits L2).
#include <algorithm>

#include "kernels/sm90/quant/fp8_common.cuh"
#include "kernels/sm90/quant/quant_launch.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

constexpr int kThreads = 256;

// One 16-lane half-warp per group of <= 128 columns (16 lanes x 8 elements). Used for 1x128 groups.
template <class T>
__global__ void __launch_bounds__(kThreads) quantize_small_groups(const T* __restrict__ x, int64_t ldx,
                                                                  uint8_t* __restrict__ q, int64_t ldq, int64_t rows,
                                                                  int64_t cols, float* __restrict__ scales,
                                                                  int64_t s_row, int64_t s_grp, bool pow2) {
  const int64_t groups_per_row = (cols + 127) / 128;
  const int64_t total = rows * groups_per_row;
  const int lane16 = threadIdx.x & 15;
  // Loop on a warp-uniform base (two groups per warp) so that every lane reaches the shuffles.
  for (int64_t base = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / 32 * 2; base < total;
       base += static_cast<int64_t>(gridDim.x) * (kThreads / 16)) {
    const int64_t gid = base + ((threadIdx.x >> 4) & 1);
    const bool group_ok = gid < total;
    const int64_t r = group_ok ? gid / groups_per_row : 0, g = group_ok ? gid % groups_per_row : 0;
    const int64_t c = g * 128 + lane16 * 8;
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const bool active = group_ok && c < cols;
    if (active) load8(x + r * ldx + c, v);
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
    const float s = fp8_scale_from_amax(amax, pow2), inv = fp8_inv_scale(s);
    if (active) store8_fp8(q + r * ldq + c, v, inv);
    if (group_ok && lane16 == 0) scales[r * s_row + g * s_grp] = s;
  }
}

// One block per row (per-token scales): pass 1 reduces the amax, pass 2 quantizes.
template <class T>
__global__ void __launch_bounds__(kThreads) quantize_rows(const T* __restrict__ x, int64_t ldx, uint8_t* __restrict__ q,
                                                          int64_t ldq, int64_t cols, float* __restrict__ scales,
                                                          int64_t s_row, bool pow2) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  float amax = 0.0f;
  for (int64_t c = threadIdx.x * 8; c < cols; c += kThreads * 8) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  }
  amax = block_max<kThreads>(amax);
  const float s = fp8_scale_from_amax(amax, pow2), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[r * s_row] = s;
  for (int64_t c = threadIdx.x * 8; c < cols; c += kThreads * 8) {
    float v[8];
    load8(xr + c, v);
    store8_fp8(q + r * ldq + c, v, inv);
  }
}

// One row per block of kRowThreads threads, each holding kChunks chunks of 8 elements in registers:
// all loads of the row are issued before the amax reduction and the row is read from memory once.
// Chunk i of thread t covers columns (i * kRowThreads + t) * 8 .. +8, so each load is coalesced.
template <class T, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads) quantize_rows_resident(const T* __restrict__ x, int64_t ldx,
                                                                      uint8_t* __restrict__ q, int64_t ldq,
                                                                      int64_t cols, float* __restrict__ scales,
                                                                      int64_t s_row, bool pow2) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * ldx;
  Chunk8<T> c[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t col = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (col < cols) c[i].load(xr + col); else c[i].zero();
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    float v[8];
    c[i].to_floats(v);
#pragma unroll
    for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[j]));
  }
  const float s = fp8_scale_from_amax(block_max<kRowThreads>(amax), pow2), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[r * s_row] = s;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t col = (static_cast<int64_t>(i) * kRowThreads + threadIdx.x) * 8;
    if (col < cols) {
      float v[8];
      c[i].to_floats(v);
      store8_fp8(q + r * ldq + col, v, inv);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) quantize_static(const T* __restrict__ x, int64_t ldx, uint8_t* __restrict__ q,
                                                            int64_t ldq, int64_t rows, int64_t cols,
                                                            const float* __restrict__ scale) {
  const float inv = fp8_inv_scale(*scale);
  const int64_t chunks = cols / 8, total = rows * chunks;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = i / chunks, c = (i % chunks) * 8;
    float v[8];
    load8(x + r * ldx + c, v);
    store8_fp8(q + r * ldq + c, v, inv);
  }
}

// One block per 128x128 tile: 16 column chunks x 16 row slices per pass, 8 passes.
template <class T>
__global__ void __launch_bounds__(kThreads) quantize_blocks(const T* __restrict__ x, int64_t ldx, uint8_t* __restrict__ q,
                                                            int64_t ldq, int64_t rows, int64_t cols,
                                                            float* __restrict__ scales) {
  const int64_t kb = (cols + 127) / 128;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * 128, c0 = static_cast<int64_t>(blockIdx.x) * 128;
  const int cc = threadIdx.x & 15, rr = threadIdx.x >> 4;  // chunk column, row within a pass
  const int64_t c = c0 + cc * 8;
  float v[8][8];
  float amax = 0.0f;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int64_t r = r0 + p * 16 + rr;
#pragma unroll
    for (int i = 0; i < 8; ++i) v[p][i] = 0.0f;
    if (r < rows && c < cols) load8(x + r * ldx + c, v[p]);
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[p][i]));
  }
  amax = block_max<kThreads>(amax);
  const float s = fp8_scale_from_amax(amax, false), inv = fp8_inv_scale(s);
  if (threadIdx.x == 0) scales[blockIdx.y * kb + blockIdx.x] = s;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int64_t r = r0 + p * 16 + rr;
    if (r < rows && c < cols) store8_fp8(q + r * ldq + c, v[p], inv);
  }
}

int grid_for(int64_t work_items, int per_block) {
  const int64_t b = (work_items + per_block - 1) / per_block;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(b, 1), 132 * 16));
}

template <template <class> class Launch, class... A>
void dispatch(DType t, A... a) {
  switch (t) {
    case DType::kBF16: Launch<__nv_bfloat16>::run(a...); break;
    case DType::kF16: Launch<__half>::run(a...); break;
    case DType::kF32: Launch<float>::run(a...); break;
    default: break;  // validated by the caller
  }
}

template <class T>
struct LaunchGroups {
  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, int64_t group,
                  float* scales, int64_t s_row, int64_t s_grp, bool pow2, cudaStream_t st) {
    if (group >= cols) {
      // Rows up to 32768 columns stay in registers (one read of memory); longer rows loop twice.
      const T* xp = static_cast<const T*>(x);
      const unsigned grid = static_cast<unsigned>(rows);
      const int64_t chunks = cols / 8;
      if (chunks <= 128 * 1) quantize_rows_resident<T, 128, 1><<<grid, 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 128 * 2) quantize_rows_resident<T, 128, 2><<<grid, 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 128 * 4) quantize_rows_resident<T, 128, 4><<<grid, 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 128 * 8) quantize_rows_resident<T, 128, 8><<<grid, 128, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 256 * 8) quantize_rows_resident<T, 256, 8><<<grid, 256, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else if (chunks <= 256 * 16) quantize_rows_resident<T, 256, 16><<<grid, 256, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
      else quantize_rows<T><<<grid, kThreads, 0, st>>>(xp, ldx, q, ldq, cols, scales, s_row, pow2);
    } else {
      const int64_t groups = rows * ((cols + 127) / 128);
      quantize_small_groups<T><<<grid_for(groups, kThreads / 16), kThreads, 0, st>>>(
          static_cast<const T*>(x), ldx, q, ldq, rows, cols, scales, s_row, s_grp, pow2);
    }
  }
};
template <class T>
struct LaunchStatic {
  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, const float* s,
                  cudaStream_t st) {
    quantize_static<T><<<grid_for(rows * (cols / 8), kThreads), kThreads, 0, st>>>(static_cast<const T*>(x), ldx, q,
                                                                                   ldq, rows, cols, s);
  }
};
template <class T>
struct LaunchBlocks {
  static void run(const void* x, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows, int64_t cols, float* s,
                  cudaStream_t st) {
    const dim3 grid(static_cast<unsigned>((cols + 127) / 128), static_cast<unsigned>((rows + 127) / 128));
    quantize_blocks<T><<<grid, kThreads, 0, st>>>(static_cast<const T*>(x), ldx, q, ldq, rows, cols, s);
  }
};

}  // namespace

void launch_quantize_fp8_groups(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, int64_t group, float* scales, int64_t s_row, int64_t s_grp, bool pow2,
                                cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchGroups>(xt, x, ldx, q, ldq, rows, cols, group, scales, s_row, s_grp, pow2, stream);
  detail::check_launch("quantize_fp8", "quantize kernel launch");
}

void launch_quantize_fp8_static(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, const float* scale, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchStatic>(xt, x, ldx, q, ldq, rows, cols, scale, stream);
  detail::check_launch("quantize_fp8_static", "quantize kernel launch");
}

void launch_quantize_fp8_blocks(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, float* scales, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  dispatch<LaunchBlocks>(xt, x, ldx, q, ldq, rows, cols, scales, stream);
  detail::check_launch("quantize_fp8_weight", "quantize kernel launch");
}

}  // namespace qsgemm::kernels
