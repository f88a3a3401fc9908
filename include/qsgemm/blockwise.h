// qsgemm/blockwise.h — FP8 GEMM with groupwise / blockwise scales on Hopper (sm_90a).
//
//   Y[M,N] = Σ_g (a_scale[m,g] · b_scale[n,g]) · X_g · W_gᵀ  (+ bias)
//
// X e4m3 [M,K] row-major, W e4m3 [N,K] row-major (an nn.Linear weight), K split into groups of 128
// (the last may be partial). Scale granularities (docs/formats.md §2):
//   x_scale: kGroup1x128   float [ceil(K/128)][ld >= M]  (M-major, as quantize_fp8_per_token_group writes)
//            kBlock128x128 float [ceil(M/128)][ceil(K/128)]
//            kPerRow       float [M]   (only with w_scale kPerRow: the per-token x per-channel case)
//   w_scale: kBlock128x128 float [ceil(N/128)][ceil(K/128)]
//            kGroup1x128   float [N][ceil(K/128)]
//            kPerRow       float [N]   (only with x_scale kPerRow)
// Partial sums are promoted to float32 at least every 128 of K. Any M >= 1; no padding by the caller.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

// Rules: K % 16 == 0 (16-byte rows), N % 8 == 0 (16-byte output rows for bf16/fp16; 4 for fp32).
struct BlockwiseOptions {
  int config = -1;  // -1: heuristic; otherwise an index into the blockwise config table
};

//   x: e4m3 [M,K] row-major, ld % 16 == 0, 16-byte aligned.   w: e4m3 [N,K], same rules.
//   bias: optional [N] (bf16, fp16 or fp32).   y: bf16, fp16 or fp32 [M,N], ld >= N, 16-byte aligned.
void blockwise_linear(const MatrixView& x, const ScaleView& x_scale, const MatrixView& w, const ScaleView& w_scale,
                      const VectorView& bias, const MatrixView& y, const BlockwiseOptions& options,
                      cudaStream_t stream);

}  // namespace qsgemm
