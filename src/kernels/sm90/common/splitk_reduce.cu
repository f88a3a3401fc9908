// The second kernel of a split-K call (blockwise_linear, sparse24_linear): the GEMM wrote S float32
// partial products ws[s][M][N] (one per K slice, scales applied, no bias); this kernel writes
//   y[m,n] = round(((ws[0][m][n] + ws[1][m][n]) + ... + ws[S-1][m][n]) + bias_f32[n] + bias_out[n])
// in slice order, so the result does not depend on scheduling. Four consecutive columns per
// thread (N % 4 == 0: blockwise_linear's output rules), float4 loads, one store of 4 outputs.
//
// It is launched with programmatic dependent launch: its CTAs may be scheduled while the GEMM's
// last tiles run (on the SMs the GEMM leaves idle, which is why there is a split at all), and
// griddepcontrol.wait holds every thread until the GEMM has finished and its writes are visible.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

template <class Out>
__global__ void __launch_bounds__(256) splitk_reduce_kernel(const SplitKReduceParams<Out> p) {
  // Wait for the GEMM (a no-op when launched without programmatic dependent launch).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int n4 = p.N / 4;
  const int64_t chunks = static_cast<int64_t>(p.M) * n4;
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < chunks; c += int64_t(gridDim.x) * blockDim.x) {
    const int m = static_cast<int>(c / n4), n = static_cast<int>(c % n4) * 4;
    const float* src = p.ws + static_cast<int64_t>(m) * p.N + n;
    float4 acc = *reinterpret_cast<const float4*>(src);
    for (int s = 1; s < p.splits; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(src + s * p.slice);
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
  const int64_t chunks = p.slice / 4;
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
  detail::check_cuda(cudaLaunchKernelEx(&cfg, splitk_reduce_kernel<Out>, p), a.fn, "cudaLaunchKernelEx(split-K reduction)");
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
