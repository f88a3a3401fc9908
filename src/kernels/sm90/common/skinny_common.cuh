// What the two split-K decode ("skinny") kernels share: sm90_blockwise_skinny.cu (dense FP8 with
// group / block / per-row scales) and sm90_sparse24_skinny.cu (2:4 sparse FP8). Both put the weight
// rows on the MMA's A operand in 16-row tiles and the tokens in n8 tiles, split K over the warps of a
// CTA and over a thread-block cluster along gridDim.y, keep a per-thread cp.async ring in dynamic
// shared memory, and reduce the partial tiles through shared and distributed shared memory.
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "per_device_once.h"
#include "validate.h"

namespace qsgemm::kernels::skinny {

// 16-byte asynchronous copies global -> shared; bytes = 0 zero-fills. The weight is streamed once
// (.cg: not kept in L1); the activations are read by every CTA (.ca).
__device__ __forceinline__ void cp_async_cg(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_ca(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Four e4m3 (the bytes of w) to two f16x2: lo from bytes 0-1, hi from bytes 2-3 (low half = lower
// byte). Exact: e4m3 is a subset of fp16. Splitting w into its 16-bit halves inside the asm lets
// ptxas read the high half in place (F2FP ... R.H1) instead of shifting it down first.
__device__ __forceinline__ void e4m3x4_to_f16x2x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  asm("{\n"
      "  .reg .b16 l, h;\n"
      "  mov.b32 {l, h}, %2;\n"
      "  cvt.rn.f16x2.e4m3x2 %0, l;\n"
      "  cvt.rn.f16x2.e4m3x2 %1, h;\n"
      "}"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
}

template <class OutT>
__device__ __forceinline__ OutT to_out(float v);
template <>
__device__ __forceinline__ float to_out<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 to_out<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half to_out<__half>(float v) { return __float2half_rn(v); }

// The end of both kernels: every warp parks its float32 partial tile acc[MT][T][4] (m16n8 fragments
// of rows row_base + 16·mt + ..., tokens 8·t + ...) at the start of its own ring (red + warp ·
// kWarpFloats; the caller has waited for its copies and synchronized the warp), the CTAs of the
// cluster meet, and rank 0 sums the KW warps of every CTA for each element inside N x M and hands
// the sum to store(v, row, token). The other CTAs' shared memory outlives rank 0's reads.
template <int MT, int T, int kWarpFloats, class Store>
__device__ __forceinline__ void reduce_and_store(const float (&acc)[MT][T][4], float* red, int warp, int lane, int KW,
                                                 int row_base, int N, int M, Store&& store) {
  namespace cg = cooperative_groups;
  const int C = static_cast<int>(gridDim.y), rank = static_cast<int>(blockIdx.y);
  auto slot = [&](int w, int mt, int t, int e, int ln) { return w * kWarpFloats + (((mt * T + t) * 4 + e) * 32 + ln); };
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) red[slot(warp, mt, t, e, lane)] = acc[mt][t][e];

  cg::cluster_group cluster = cg::this_cluster();
  if (C > 1)
    cluster.sync();
  else
    __syncthreads();

  if (rank == 0) {
    constexpr int kElems = MT * T * 4 * 32;
    for (int el = static_cast<int>(threadIdx.x); el < kElems; el += static_cast<int>(blockDim.x)) {
      const int ln = el & 31, e = (el >> 5) & 3, t = (el >> 7) % T, mt = (el >> 7) / T;
      const int row = row_base + 16 * mt + (ln >> 2) + 8 * (e >> 1);
      const int tok = 8 * t + 2 * (ln & 3) + (e & 1);
      if (row >= N || tok >= M) continue;
      float v = 0.0f;
      for (int c = 0; c < C; ++c) {
        const float* src = C > 1 ? cluster.map_shared_rank(red, c) : red;
        for (int w = 0; w < KW; ++w) v += src[slot(w, mt, t, e, ln)];
      }
      store(v, row, tok);
    }
  }
  if (C > 1) cluster.sync();
}

// Launches kernel<<<(row_ctas, C), 32·warps, smem>>>(p) in clusters of (1, C, 1), after asking once
// per device (`once`) for `smem` bytes of dynamic shared memory and the largest shared-memory
// carveout (the ring is the kernels' only large resource). Errors name `fn` and `what`.
template <class Params>
void launch_split_k(void (*kernel)(Params), const Params& p, detail::PerDeviceOnce& once, int device, int row_ctas,
                    int C, int warps, int smem, cudaStream_t stream, const char* fn, const char* what) {
  const cudaError_t attr_status = once.run(device, [&] {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                static_cast<int>(cudaSharedmemCarveoutMaxShared));
  });
  detail::check_cuda(attr_status, fn, "cudaFuncSetAttribute(split-K kernel shared memory)");
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(row_ctas), static_cast<unsigned>(C), 1);
  cfg.blockDim = dim3(static_cast<unsigned>(32 * warps), 1, 1);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = static_cast<unsigned>(C);
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  detail::check_cuda(cudaLaunchKernelEx(&cfg, kernel, p), fn, what);
}

}  // namespace qsgemm::kernels::skinny
