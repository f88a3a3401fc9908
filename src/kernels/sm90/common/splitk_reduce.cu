// The second kernel of a split-K call (blockwise_linear, sparse24_linear): the GEMM wrote S float32
// partial products ws[s][M][N] (one per K slice, scales applied, no bias); this kernel writes
//   y[m,n] = round(((ws[0][m][n] + ws[1][m][n]) + ... + ws[S-1][m][n]) + bias_f32[n] + bias_out[n])
// in slice order, so the result does not depend on scheduling. Four consecutive columns per
// thread (N % 4 == 0: blockwise_linear's output rules), float4 loads, one store of 4 outputs.
// A blockwise K with a partial last group (SplitKTail) adds that group's dot products after the
// slices: at most 112 columns, cheaper on CUDA cores here than as a GEMM launch of its own, and it
// lets K = 112·128 + 16 split like K = 112·128 (whole groups per slice).
//
// It is launched with programmatic dependent launch, and griddepcontrol.wait holds every thread
// until the GEMM has finished and its writes are visible. CUTLASS's kernels here are built without
// CUTLASS_ENABLE_GDC_FOR_SM90, so they signal their dependents only as their CTAs exit: what the
// launch overlaps is the GEMM's end, not its last tiles.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/sm90/common/splitk_reduce.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

template <class Out>
struct SplitKReduceParams {
  const float* ws;         // [splits][M][N]
  int64_t slice;           // M * N
  int splits;
  int M, N;
  const float* bias_f32;   // [N] or null
  const Out* bias_out;     // [N] or null
  Out* y;                  // [M][ldy]
  int64_t ldy;
};

__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<uint32_t*>(&lo);
  u.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(p) = u;
}
__device__ __forceinline__ void store4(__half* p, float4 v) {
  __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<uint32_t*>(&lo);
  u.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(p) = u;
}
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// 16 e4m3 values (exact in float).
__device__ __forceinline__ void e4m3x16_to_float(const uint4 v, float (&f)[16]) {
  const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(u[i] >> (16 * h)), __NV_E4M3);
      const float2 t = __half22float2(*reinterpret_cast<const __half2*>(&r));
      f[4 * i + 2 * h] = t.x;
      f[4 * i + 2 * h + 1] = t.y;
    }
}

// The tail group's contribution to outputs (m, n..n+3): SplitKTail in splitk_reduce.h.
__device__ __forceinline__ float4 tail_dot(const SplitKTail& t, int m, int n) {
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  const uint8_t* xr = t.x + m * t.ldx;
  for (int k = 0; k < t.kt; k += 16) {
    float xf[16], wf[16];
    e4m3x16_to_float(__ldg(reinterpret_cast<const uint4*>(xr + k)), xf);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      e4m3x16_to_float(__ldg(reinterpret_cast<const uint4*>(t.w + (n + j) * t.ldw + k)), wf);
#pragma unroll
      for (int i = 0; i < 16; ++i) d[j] = fmaf(xf[i], wf[i], d[j]);
    }
  }
  const float sx = t.sx[(m >> t.sx_shift) * t.sx_stride];
  float4 r;
  r.x = d[0] * (sx * t.sw[((n + 0) >> t.sw_shift) * t.sw_stride]);
  r.y = d[1] * (sx * t.sw[((n + 1) >> t.sw_shift) * t.sw_stride]);
  r.z = d[2] * (sx * t.sw[((n + 2) >> t.sw_shift) * t.sw_stride]);
  r.w = d[3] * (sx * t.sw[((n + 3) >> t.sw_shift) * t.sw_stride]);
  return r;
}

// Outputs (m, n..n+3): the slices in order, the tail, the bias; one store.
template <class Out, bool kTail>
__device__ __forceinline__ void reduce4(const SplitKReduceParams<Out>& p, const SplitKTail& t, int m, int n) {
  const float* src = p.ws + static_cast<int64_t>(m) * p.N + n;
  float4 acc = *reinterpret_cast<const float4*>(src);
  for (int s = 1; s < p.splits; ++s) {
    const float4 v = *reinterpret_cast<const float4*>(src + s * p.slice);
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  if constexpr (kTail) {
    const float4 v = tail_dot(t, m, n);
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  if (p.bias_f32) {
    acc.x += p.bias_f32[n];
    acc.y += p.bias_f32[n + 1];
    acc.z += p.bias_f32[n + 2];
    acc.w += p.bias_f32[n + 3];
  }
  if (p.bias_out) {
    acc.x += to_float(p.bias_out[n]);
    acc.y += to_float(p.bias_out[n + 1]);
    acc.z += to_float(p.bias_out[n + 2]);
    acc.w += to_float(p.bias_out[n + 3]);
  }
  store4(p.y + m * p.ldy + n, acc);
}

// Without a tail, a warp takes 128 consecutive columns of one row. With one, a warp takes 8 rows x
// 16 columns: the tail reads a row of x and four rows of w per thread, and along one row every
// thread would read different rows of w (32 x 4 sectors per warp, M·N·32 bytes from L2: 3 us at
// 119 tokens on N = 4096); in 8 x 16 the warp reads 8 rows of x and 16 of w.
template <class Out, bool kTail>
__global__ void __launch_bounds__(256) splitk_reduce_kernel(const SplitKReduceParams<Out> p, const SplitKTail t) {
  // Wait for the GEMM (a no-op when launched without programmatic dependent launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  if constexpr (!kTail) {
    const int n4 = p.N / 4;
    const int64_t chunks = static_cast<int64_t>(p.M) * n4;
    for (int64_t c = first; c < chunks; c += step)
      reduce4<Out, false>(p, t, static_cast<int>(c / n4), static_cast<int>(c % n4) * 4);
  } else {
    const int n16 = (p.N + 15) / 16;  // warp tiles per band of 8 rows
    const int64_t slots = static_cast<int64_t>((p.M + 7) / 8) * n16 * 32;
    for (int64_t c = first; c < slots; c += step) {  // step % 32 == 0: a warp keeps its tile
      const int64_t tile = c >> 5;
      const int lane = static_cast<int>(c & 31);
      const int m = static_cast<int>(tile / n16) * 8 + (lane >> 2), n = static_cast<int>(tile % n16) * 16 + (lane & 3) * 4;
      if (m < p.M && n < p.N) reduce4<Out, true>(p, t, m, n);
    }
  }
}

template <class Out>
void launch(const SplitKReduceArgs& a, cudaStream_t stream) {
  SplitKReduceParams<Out> p;
  p.ws = a.ws;
  p.slice = static_cast<int64_t>(a.M) * a.N;
  p.splits = a.splits;
  p.M = a.M;
  p.N = a.N;
  const bool f32 = a.bias_dtype == DType::kF32;
  p.bias_f32 = f32 ? static_cast<const float*>(a.bias) : nullptr;
  p.bias_out = f32 ? nullptr : static_cast<const Out*>(a.bias);
  p.y = static_cast<Out*>(a.y);
  p.ldy = a.ldy;
  constexpr int kThreads = 256;
  const int64_t chunks = a.tail ? int64_t{(a.M + 7) / 8} * ((a.N + 15) / 16) * 32 : p.slice / 4;  // threads' work items
  const int64_t max_blocks = int64_t{8} * std::max(a.sm_count, 1);  // 8 x 256 threads per SM
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((chunks + kThreads - 1) / kThreads, max_blocks));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks, 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t e = a.tail ? cudaLaunchKernelEx(&cfg, splitk_reduce_kernel<Out, true>, p, *a.tail)
                               : cudaLaunchKernelEx(&cfg, splitk_reduce_kernel<Out, false>, p, SplitKTail{});
  detail::check_cuda(e, a.fn, "cudaLaunchKernelEx(split-K reduction)");
}

}  // namespace

void run_splitk_reduce(const SplitKReduceArgs& a, cudaStream_t stream) {
  switch (a.y_dtype) {
    case DType::kBF16: return launch<__nv_bfloat16>(a, stream);
    case DType::kF16: return launch<__half>(a, stream);
    case DType::kF32: return launch<float>(a, stream);
    default: break;
  }
  detail::fail(a.fn, Status::kInternal, "y",
               detail::cat("no split-K reduction for output dtype ", dtype_name(a.y_dtype)));
}

void check_splitk_workspace(const char* fn, int split_k, int64_t M, int64_t N, const void* workspace, size_t bytes) {
  const size_t need = splitk_workspace_bytes(M, N, split_k);
  if (workspace != nullptr && bytes >= need) return;
  detail::fail(fn, Status::kInvalidArgument, "options.workspace",
               detail::cat("split_k=", split_k, " needs a workspace of ", need, " bytes (", split_k, " x M=", M, " x N=", N,
                           " x 4); got ", workspace == nullptr ? std::string("none") : detail::cat("workspace_bytes=", bytes)));
}

}  // namespace qsgemm::kernels
