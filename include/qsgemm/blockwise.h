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
// 128-group in float32. Given a workspace (BlockwiseOptions::workspace), narrow weights at small M,
// and deep ones whose only token tile is mostly past M, split K over more CTAs and a second kernel
// adds the slices. The configurations are listed in
// src/kernels/sm90/blockwise/sm90_blockwise_configs.h.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "qsgemm/linear.h"
#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

// Rules: K > 0 and K % 16 == 0 (16-byte rows), N > 0 and N % 8 == 0 for bf16/fp16 output
// (16-byte output rows; N % 4 == 0 suffices for fp32 output).
//
// The shared fields (qsgemm/linear.h):
//   config: -1 (the heuristic chooses) or an index of the config table (blockwise_config_index(name)).
//     A forced index must support the scale granularities (blockwise_config_supports) and the
//     problem (the split-K decode kernel, "skinny_m32_splitk", serves M <= 32): otherwise
//     kInvalidArgument. Beyond 128 tokens a tile that cannot hold whole x blocks (the 64-row and
//     clamped ones) serves x_scale kBlock128x128 through an expanded copy in the workspace (below),
//     and without that workspace is kInvalidArgument naming the bytes. Every configuration gives the
//     same result up to float32 rounding.
//   split_k: for the CUTLASS tiles (not the skinny kernel): the whole 128-wide groups of K are cut
//     into split_k equal slices, each slice's partial products go to a float32 slice of the
//     workspace ([split_k][M][N]), and a second kernel on `stream` adds the slices in slice order,
//     then a partial last group's products (K % 128 columns, float32 FMAs), then the bias, and
//     writes y. It fills the SMs that a narrow weight leaves idle at small M.
//     Deterministic; not bit-identical to the unsplit kernel, same error bounds.
//       0 (default): the library chooses (blockwise_plan) and splits only given the workspace the
//         plan needs; 1: never; 2..16: forced (for tuning: `qsgemm tune blockwise --split-k`):
//         requires floor(K / 128) to be a multiple of split_k (at least one group per slice), a
//         CUTLASS configuration (not the skinny kernel, whether forced or chosen) and the
//         workspace; otherwise kInvalidArgument.
//   workspace: 16-byte aligned (checked whenever it is non-null), for split-K's slices and, where
//     the plan runs x_scale kBlock128x128 beyond 128 tokens on a tile of 1x128 activations, after
//     them (on a 256-byte boundary) a copy of those scales as 1x128 groups, float [ceil(K/128)]
//     [(M + 3) / 4 * 4], written by a small kernel before the GEMM. It need not be zeroed: the call
//     writes every element it reads.
struct BlockwiseOptions : LinearOptions {
  // The skinny configuration splits K over a thread-block cluster of this many CTAs: 0 lets the
  // library choose (the default); 1, 2, 4 or 8 forces it, for tuning (`qsgemm tune blockwise
  // --skinny-clusters`). A nonzero value requires config == the skinny index and at least one
  // 128-wide K group per warp (C x min(4, ceil(K/128)) <= ceil(K/128)); otherwise kInvalidArgument.
  int skinny_cluster = 0;
  // Tuning: a last token tile that runs past M loads X's whole TMA box, the rows past M included
  // (what the library did before it loaded only the tile's rows), for same-run comparisons
  // (`qsgemm tune blockwise --whole-last-tile`). Same results; slower. Ignored by the skinny kernel.
  bool whole_last_tile = false;
  // Tuning: 0 (default) the library's tile order; 1, 2, 4 or 8 runs bands of that many tiles
  // (CUTLASS's max_swizzle_size, narrower where the shorter side has few tiles) rastered along M,
  // for same-run comparisons (`qsgemm tune blockwise --swizzles`). Same results. Other values:
  // kInvalidArgument. Ignored by the skinny kernel.
  int max_swizzle = 0;
};

// ---- configurations (one table: src/kernels/sm90/blockwise/sm90_blockwise_configs.h) ----------
int blockwise_num_configs();
// e.g. "128x128x128_c1x1_coop"; kInvalidArgument for an index outside [0, blockwise_num_configs()).
std::string blockwise_config_name(int index);
// The index of the configuration named `name`; kInvalidArgument naming the name and listing the
// valid ones otherwise. Indices shift when rows are added: prefer names.
int blockwise_config_index(const std::string& name);
// Whether configuration `index` serves the scale pair (gx, gw) for M tokens (M < 0: for every M):
// the 128x192 tile serves per_row x per_row only. x_scale kBlock128x128 reaches every tile of
// group_1x128 x scales: up to 128 tokens those scales are one row of blocks, which the tiles read
// as it is; beyond, the tiles that cannot hold whole 128-row blocks (the 64-row tile and the
// *_clamped rows, whose last token tile is moved back inside M) read an expanded copy in the
// workspace (BlockwiseOptions::workspace). False for an index outside the table or a pair that
// blockwise_linear rejects.
bool blockwise_config_supports(int index, ScaleGranularity gx, ScaleGranularity gw, int64_t M = -1);
// The configuration blockwise_linear runs without a workspace when options.config == -1: the pure
// heuristic's pick (per_row x per_row may take the 128x192 tile where its waves come out fewer,
// except at K <= 512), or the 128x128 tile where that pick cannot serve the scale granularities;
// the clamped row of that tile (below 128 tokens possibly of the 64-row tile in place of the
// 128-row one) where most of the last token tile would lie past M.
// sm_count > 0 (kInvalidArgument otherwise). ld_x, ld_w: the row strides of x and w that
// blockwise_linear will get (0: K, packed rows); rows off 128-byte lines take another tile from 257
// tokens (see x below).
int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                            int sm_count, int64_t ld_x = 0, int64_t ld_w = 0);

// The plan (qsgemm/linear.h) blockwise_linear runs given a workspace of at least
// plan.workspace_bytes: the configuration, the K slices (1: no split) and the workspace: split_k * M
// * N * 4 bytes for a split, plus the expanded x-scale copy where the plan needs one (0 without
// either, and for M = 0). With options.split_k == 0 and options.config == -1 the library may take a
// CUTLASS tile with a split where it would otherwise run the skinny decode kernel (9 <= M <= 32 on
// narrow weights with a long K), a split 64-row tile's clamped row where the split's CTAs make most
// of a wave, and, for x and w scales in 128x128 blocks at 129-383 tokens on large problems, the
// plan of group_1x128 x scales (its clamped and 64-row tiles) with the expanded copy. Host arithmetic on a GPU with `sm_count`
// SMs (0: the current device's; kUnsupported when there is none); the rule is in
// src/blockwise_heuristic.h. kInvalidArgument for a bad shape (M < 0, N or K <= 0, any of them
// >= 2^31), config index, skinny_cluster or split_k (a forced split of the skinny kernel included),
// as blockwise_linear would. ld_x, ld_w as for blockwise_choose_config (0: K).
LinearPlan blockwise_plan(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                          const BlockwiseOptions& options, int sm_count = 0, int64_t ld_x = 0, int64_t ld_w = 0);
// blockwise_plan(...).workspace_bytes.
size_t blockwise_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                                        const BlockwiseOptions& options, int sm_count = 0, int64_t ld_x = 0,
                                        int64_t ld_w = 0);

//   x: e4m3 [M,K] row-major, ld % 16 == 0, 16-byte aligned.   w: e4m3 [N,K], same rules.
//      Fastest with rows on 128-byte lines: ld % 128 == 0 and 128-byte aligned bases; give an
//      operand whose K % 128 != 0 the stride fp8_row_ld(K) (qsgemm/quant.h). Rows off the lines
//      cost every tile's loads a second line (K = 4112 packed: 126.5 us on the 1x2 cluster the
//      heuristic takes there, 165.6 on the 1x1 tile; ld = 4224: 114.0 us, as fast as K = 4224;
//      M = N = 4096 on the H200).
//   x_scale, w_scale: float, device memory, 4-byte aligned, non-null when M > 0 (layouts above).
//   bias: optional: size 0 = none; otherwise [N] (size N, non-null data), fp32 or the output dtype,
//      base 16-byte aligned (the same rule as sparse24_linear's bias). Calls without a bias run
//      kernels whose epilogue has no bias vectors.
//   y: bf16, fp16 or fp32 [M,N], ld >= N, ld * element size % 16 == 0, 16-byte aligned. Only the
//      [M,N] elements are written. y may not overlap x, w, the scales, the bias or the workspace
//      (nor the workspace the inputs); kInvalidArgument.
// M, N, K < 2^31. Runs on the device of `stream` (its SM count picks the plan). M == 0 is a no-op.
// Stream-ordered: enqueues one kernel on `stream` (with split-K two: the GEMM into the workspace,
// then the reduction, launched with programmatic dependent launch; where the plan expands x blocks,
// their copy before the GEMM), never synchronizes, never allocates. Bad input throws qsgemm::Error before any GPU work.
void blockwise_linear(const MatrixView& x, const ScaleView& x_scale, const MatrixView& w, const ScaleView& w_scale,
                      const VectorView& bias, const MatrixView& y, const BlockwiseOptions& options,
                      cudaStream_t stream);

}  // namespace qsgemm
