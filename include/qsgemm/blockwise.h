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
// Partial sums are promoted to float32 at least every 128 of K. Any M >= 1; no padding by the caller:
// partial tiles in M and N and a partial last K group (K % 128 != 0) are handled by the kernel.
//
// Kernels: CUTLASS 4.2's sm90 blockwise-scaled FP8 kernels (each 128-wide K tile is accumulated
// into a zeroed register tile, then added to the float32 accumulators times sx·sw), most of them
// with qsgemm's mainloop that keeps the next K tile's MMAs running while one is promoted (same sums,
// bit-identical results); per_row x per_row runs them with unit scales in the K loop and applies
// the two scale vectors in the epilogue; M <= 32 mostly a split-K decode kernel that sums each
// 128-group in float32. Given a workspace (BlockwiseOptions::workspace), narrow weights at small M
// split K over more CTAs and a second kernel adds the slices. The configurations are listed in
// src/kernels/sm90/blockwise/sm90_blockwise_configs.h.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

// Rules: K > 0 and K % 16 == 0 (16-byte rows), N > 0 and N % 8 == 0 for bf16/fp16 output
// (16-byte output rows; N % 4 == 0 suffices for fp32 output).
struct BlockwiseOptions {
  // -1: the heuristic chooses; otherwise an index into the blockwise config table. A forced index
  // must support the scale granularities (the 64-row tile cannot serve x_scale kBlock128x128) and
  // the problem (the split-K decode kernel, "skinny_m32_splitk", serves M <= 32): otherwise
  // kInvalidArgument. Every configuration gives the same result up to float32 rounding: the
  // CUTLASS tiles promote the FP8 partial sums every 128 of K, the skinny kernel sums each group
  // exactly in float32.
  int config = -1;
  // The skinny configuration splits K over a thread-block cluster of this many CTAs: 0 lets the
  // library choose (the default); 1, 2, 4 or 8 forces it, for tuning (`qsgemm tune blockwise
  // --skinny-clusters`). A nonzero value requires config == the skinny index and at least one
  // 128-wide K group per warp (C x min(4, ceil(K/128)) <= ceil(K/128)); otherwise kInvalidArgument.
  int skinny_cluster = 0;
  // Split-K for the CUTLASS tiles (not the skinny kernel): K is cut into split_k equal slices
  // (slices of whole 128-wide groups), each slice's partial products go to a float32 slice of the
  // workspace ([split_k][M][N], row-major), and a second kernel on `stream` adds the slices in
  // slice order, adds the bias and writes y. It fills the SMs that a narrow weight leaves idle at
  // small M (N = 4096 gives 32 tiles of 64x128 on 132 SMs). Deterministic; not bit-identical to the
  // unsplit kernel (the float32 sums are grouped differently), same error bounds.
  //   0 (default): the library chooses (blockwise_plan), and splits only when a workspace of at
  //     least blockwise_linear_workspace_bytes() bytes is given; with none, or a smaller one, it
  //     runs unsplit.
  //   1: never split.   2..16: forced (for tuning: `qsgemm tune blockwise --split-k`); requires
  //     K % (128 * split_k) == 0, a CUTLASS configuration (not the skinny kernel, whether forced or
  //     chosen) and the workspace; otherwise kInvalidArgument.
  int split_k = 0;
  // Optional device workspace for split-K: blockwise_linear_workspace_bytes(...) bytes, 16-byte
  // aligned (checked whenever it is non-null). It need not be zeroed: the call writes every
  // element it reads. Do not share one workspace between calls that may run concurrently.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// ---- configurations (one table, src/kernels/sm90/blockwise/sm90_blockwise_configs.h) -----------
int blockwise_num_configs();
// e.g. "128x128x128_c1x1_coop"; kInvalidArgument for an index outside [0, blockwise_num_configs()).
std::string blockwise_config_name(int index);
// Whether configuration `index` serves the scale pair (gx, gw): the 64-row tile cannot hold
// x_scale kBlock128x128, the 128x192 tile serves per_row x per_row only. False for an index
// outside the table or a pair that blockwise_linear rejects.
bool blockwise_config_supports(int index, ScaleGranularity gx, ScaleGranularity gw);
// The configuration blockwise_linear runs for this problem when options.config == -1: the pure
// heuristic's pick (per_row x per_row may take the 128x192 tile where its waves come out fewer,
// except at K <= 512, where every pair it serves takes the 64x128 ping-pong tile), or configuration
// 0 where that pick cannot serve the scale granularities.
int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                            int sm_count);

// What blockwise_linear runs when it is given a workspace of blockwise_linear_workspace_bytes():
// the configuration and the number of K slices (split_k 1: no split). Without a workspace it runs
// blockwise_choose_config's pick unsplit. With options.split_k == 0 and options.config == -1, the
// library may also take a CUTLASS tile with a split where it would otherwise run the skinny
// decode kernel (9 <= M <= 32 on narrow weights with a long K: the 64x128 tile, or the 128x128
// tile from M = 17 when x has 128x128 blocks, which the 64-row tile cannot serve). Pure host arithmetic; the rule
// and its measurements are in src/blockwise.cpp (blockwise_split_k). kInvalidArgument for a bad
// shape (M < 0, N or K <= 0, any of them >= 2^31), config index or split_k, naming the value.
struct BlockwisePlan {
  int config = 0;
  int split_k = 1;
};
BlockwisePlan blockwise_plan(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                             const BlockwiseOptions& options, int sm_count);
// Bytes of workspace blockwise_linear needs for the split it would run with `options`
// (blockwise_plan's, or the forced one): split_k * M * N * 4, or 0 without a split. Host
// arithmetic only (sm_count 0: the current device's). kInvalidArgument for a bad shape, config
// index or split_k.
size_t blockwise_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                                        const BlockwiseOptions& options, int sm_count = 0);

//   x: e4m3 [M,K] row-major, ld % 16 == 0, 16-byte aligned.   w: e4m3 [N,K], same rules.
//   x_scale, w_scale: float, device memory, 4-byte aligned, non-null when M > 0 (layouts above).
//   bias: optional [N], fp32 or the output dtype, aligned to its element size. Calls without a bias
//      run kernels whose epilogue has no bias vectors; the bias kernels stage it in shared memory
//      every tile (with null bias pointers they took up to 1.19x the time of the no-bias kernels at
//      K <= 2048 on the H200, docs/performance.md).
//   y: bf16, fp16 or fp32 [M,N], ld >= N, ld * element size % 16 == 0, 16-byte aligned. Only the
//      [M,N] elements are written.
// M, N, K < 2^31. M == 0 is a no-op. Stream-ordered: enqueues one kernel on `stream` (two with
// split-K: the GEMM into the workspace, then the reduction, launched with programmatic dependent
// launch), never synchronizes, never allocates. Bad input throws qsgemm::Error before any GPU work.
void blockwise_linear(const MatrixView& x, const ScaleView& x_scale, const MatrixView& w, const ScaleView& w_scale,
                      const VectorView& bias, const MatrixView& y, const BlockwiseOptions& options,
                      cudaStream_t stream);

}  // namespace qsgemm
