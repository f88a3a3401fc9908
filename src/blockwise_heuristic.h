// The pure heuristic of the blockwise FP8 family: problem shape + scale granularities + SM count ->
// configuration (a row of kBlockwiseConfigs, src/kernels/sm90/blockwise/sm90_blockwise_configs.h),
// split-K, tile order and the skinny decode kernel's grid. No device calls: every function takes
// sm_count > 0 explicitly (the entry points resolve it once). Tested in
// tests/cpu/test_blockwise_heuristic.cpp and test_blockwise_validation.cpp. Tuning data:
// bench/results/h200/tuning/ (file names below).
#pragma once

#include <cstdint>

#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "qsgemm/quant.h"
#include "tile_order.h"

namespace qsgemm::kernels {

namespace blockwise_detail {
inline constexpr int kSquare = blockwise_named("128x128x128_c1x1_coop");     // serves every scale pair
inline constexpr int kNarrow = blockwise_named("64x128x128_c1x1_pingpong");  // not x_scale kBlock128x128
inline constexpr int kSquareC1x2 = blockwise_named("128x128x128_c1x2_coop");
inline constexpr int kSquareClamped = blockwise_named("128x128x128_c1x1_coop_clamped");
inline constexpr int kNarrowClamped = blockwise_named("64x128x128_c1x1_pingpong_clamped");
}  // namespace blockwise_detail

// The x-scale granularity the tiles see for M tokens: up to 128 tokens x_scale kBlock128x128 is one
// row of blocks, one scale per K group for every token, which the kernels read as kGroup1x128 with
// a row stride of 0 (BlockwiseGemmArgs::x_scale_row_stride). So there every tile of the 1x128
// activations serves it, the 64-row and clamped ones included: on the users grid the 128x128 tile,
// the only CUTLASS tile that holds whole x blocks, took 1.04-1.62x the time of the 1x128 pair's
// plan at 12-64 tokens (64-116 of its rows past M) and up to 1.29x at 96-128 (blockwise.json at
// 8394977, block_128x128 against group_1x128 x scales, same layers and M).
constexpr ScaleGranularity blockwise_tile_gx(ScaleGranularity gx, int64_t M) {
  return gx == ScaleGranularity::kBlock128x128 && M <= 128 ? ScaleGranularity::kGroup1x128 : gx;
}

// Whether configuration `config`'s kernels read the scale granularities (gx, gw) — a valid pair of
// include/qsgemm/blockwise.h — as the caller gives them, for M tokens (M < 0: for every M). A
// 128-row scale block must cover whole tiles along M, except up to 128 tokens (blockwise_tile_gx).
bool blockwise_config_reads(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M = -1);

// Whether blockwise_linear runs `config` on x_scale kBlock128x128 through an expanded copy of those
// scales as 1x128 groups in the workspace (sm90_blockwise_expand_x_scales.h): beyond 128 tokens, on
// a tile of 1x128 activations that cannot hold whole x blocks (the 64-row, clamped ones).
bool blockwise_expands_x_scales(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M);

// Whether `config` serves (gx, gw) for M tokens (M < 0: for every M), with the expanded copy where
// it needs one: blockwise_config_reads, or x_scale kBlock128x128 on a tile of 1x128 activations.
bool blockwise_config_supports(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M = -1);

// Whether every row of x (row stride ld_x elements) and w (ld_w) starts on a 128-byte line, for
// bases on such a line (cudaMalloc's are). ld 0 stands for K: packed rows, on lines iff K % 128 == 0.
constexpr bool blockwise_rows_on_lines(int64_t K, int64_t ld_x, int64_t ld_w) {
  return (ld_x > 0 ? ld_x : K) % 128 == 0 && (ld_w > 0 ? ld_w : K) % 128 == 0;
}

// The configuration for Y[M,N] = X[M,K]·W[N,K]ᵀ, before the scale granularities are looked at:
//  * decode sizes take the split-K skinny kernel where the 64-row tiles would leave SMs idle: at
//    M <= 8 where they fill under 60 % of their waves, at 9..16 up to a quarter of the SMs, at
//    17..32 a sixth (it streams W from every SM; tune_skinny.jsonl, tune_blockwise_decode.jsonl,
//    blockwise.json at a18afde, bench/results/h100/tuning/tune_blockwise_decode*.jsonl);
//  * short K (<= 512) the 64x128 ping-pong tile, which hides one warp group's epilogue under the
//    other's MMAs (tune_blockwise_k512.txt);
//  * rows off 128-byte lines (blockwise_rows_on_lines false: K % 128 != 0 packed, or an odd ld)
//    above kMisalignedC1x2MinM tokens: the 1x2 cluster (partialk_ld_align.txt);
//  * otherwise a wave model: 64-row tiles where 128-row tiles quantize badly onto the SMs, the 1x2
//    cluster on large weights from M = 4096 (tune_blockwise_two_partials.jsonl), else 128x128.
// ld_x, ld_w: the operands' row strides (0: K).
// narrow_wave_cost: a 64-row wave's cost where a 128x128 wave costs 2; <= 0 (the default):
// blockwise_narrow_wave_cost(M, K, block_128x128). The 64-row tile also reloads its W tile for
// every 64 rows: 20 % over half a 128x128 wave (more from kBlockwiseNarrowLargeM tokens).
inline constexpr double kBlockwiseNarrowWaveCost = 1.2;
int blockwise_choose_config(int64_t M, int64_t N, int64_t K, int sm_count, int64_t ld_x = 0, int64_t ld_w = 0,
                            double narrow_wave_cost = 0);
// K up to which blockwise_choose_config takes the 64x128 ping-pong tile above the decode sizes.
inline constexpr int64_t kBlockwiseShortK = 512;
// M above which rows off 128-byte lines take the 1x2 cluster (below: two 128-row tiles or fewer,
// where the ping-pong tile's extra CTAs were not measured against it).
inline constexpr int64_t kMisalignedC1x2MinM = 256;

// Per-row scales: whether the 128x192 tile (kPerRowWideConfig) should replace `config`
// (blockwise_choose_config's pick). A wave model in units of one 64x128 tile (a 64-row wave 1.2, a
// 128x128 wave 2, a 128x192 wave 3), from M = 256, on weights whose last 192-row tile wastes at most
// 1.5 % of N. Data: tune_blockwise_two_partials.jsonl (per_row x per_row).
bool blockwise_per_row_wide_tile(int64_t M, int64_t N, int config, int sm_count);

// Whether the clamped row of a tile with tile_m token rows (128x128 or 64x128: their last token tile
// computes tokens [M - tile_m, M), sm90_blockwise_clamped_rows.cuh) should run in place of the plain
// one. A tile's rows past M cost more than rows inside it, but the clamped kernels are 2-4 % slower
// on whole tiles, so the clamp pays only where most of the last token tile lies past M (at least
// half of it), on at least ~a wave of tiles (0.9 x the SMs; fewer leave SMs idle and the partial
// tiles off the critical path), and on at most 4 token tiles. Fitted on layers of other models
// (tune_blockwise_clamp.txt): at 70-3000 tokens on 8 layers its picks were 0.6 % slower than the
// faster row, geomean (16 % at worst: a 5120x5120 layer at 137 tokens, 80 tiles, where the clamp was
// 1.16x faster). Beyond 4 token tiles the clamp won only at 2074-2200 tokens (1.07-1.12x on 7 of 9
// layers) and lost 2-11 % elsewhere (the sweep at 9705831, which also took it where 3/4 of the last
// tile lay past M: 660-12684 tokens). Two 128-row token tiles clamp from 0.8 of a wave: on
// 6912-7168-row weights (54-56 tiles, 0.82-0.85 waves) at 140-192 tokens the clamp was 1.07-1.46x
// faster on 7 of 8 shapes, 0.98x at 176 tokens on 7168x2048 (tune_blockwise_subwave_clamp.txt).
// A tile split split_k ways over K (blockwise_split_k) runs tiles x split_k CTAs, and clamps from 0.8
// of a wave of them: split 64-row tiles at 67-90 tokens (two token tiles, 2 x 28-32 weight tiles,
// K = 4096-18944) ran the clamped row 1.00-1.19x faster; from 100 tokens, and on 20 weight tiles
// (0.6 waves), 1-3 % slower (tune_blockwise_split_clamp.txt).
bool blockwise_clamp_pays(int64_t M, int64_t N, int tile_m, int sm_count, int split_k = 1);
inline constexpr int64_t kBlockwiseClampMaxTokenTiles = 4;

// 1x128 weight scales (CUTLASS's mainloop, which loads a scale per weight row and K group) from
// kBlockwiseGroupWOneTileMinM to 128 tokens with K >= 4096: one 128-row token tile where the wave
// model or the clamp rule would take two 64-row ones. The 64-row tile loads the same weight scales
// for half the rows: on the users grid at 96 and 128 tokens the 128-row plans of the
// block_128x128 x group_1x128 pair ran the 64-row plans of group_1x128 x group_1x128 in 0.77-0.98x
// the time on the 11 layers with K >= 4096 (1.11-1.12x at K = 2048; blockwise.json at 8394977).
// Checked on six weights of other models at 70-124 tokens (tune_blockwise_group_w_one_tile.txt):
// the plans' time over the best measured 1.054x -> 1.003x geomean (worst 1.241x -> 1.034x); at
// K = 3584 (4608 rows) the 64-row tile stayed 5-9 % faster.
constexpr int64_t kBlockwiseGroupWOneTileMinM = 65;
constexpr bool blockwise_group_w_one_tile(int64_t M, int64_t K, ScaleGranularity gw) {
  return gw == ScaleGranularity::kGroup1x128 && M >= kBlockwiseGroupWOneTileMinM && M <= 128 && K >= 4096;
}

// The wave model's cost of a 64-row wave, where a 128x128 wave costs 2: kBlockwiseNarrowWaveCost,
// but kBlockwiseGroupWNarrowCost with 1x128 weight scales beyond 128 tokens and K >= 4096, where
// the 64-row tile also loads a weight scale per row and K group for half the rows: on seven
// weights of other models at 152-1184 tokens
// (bench/results/h100/tuning/tune_blockwise_group_w_tiles.jsonl, an H100) the 128-row tile's time
// per wave was 1.42-1.54x the 64-row tile's on the five with K >= 4096 (1.60-1.71x at K = 3584,
// where the 1.2 of the wave model holds). At wave ratios of 1.57-1.64 the 128-row tile ran
// 1.07-1.15x faster, at 1.5 from 2.4 % slower to 3.5 % faster, at 1.33 1.12x slower (5120x13824 at
// 800 tokens, which this keeps on the 64-row tile).
inline constexpr double kBlockwiseGroupWNarrowCost = 1.35;
// From kBlockwiseNarrowLargeM tokens (eight 128-row token tiles) a 64-row wave costs at least
// kBlockwiseNarrowLargeMCost, any scale pair: at 1024-16384 tokens with K >= 1536 the 64-row tile's
// time per wave was 1.07-1.74x half the 128-row tile's (median 1.28; 191 points of the h100 and h200
// tuning/tune_blockwise*.jsonl files that time both), and at
// 1.2 the wave model took it at 2074 tokens on 4096-row weights (eight full 64-row waves against
// five 128-row ones), where it ran 1.14-1.18x the 128-row tile's time at 2281 tokens (H100 sweep).
inline constexpr int64_t kBlockwiseNarrowLargeM = 1024;
inline constexpr double kBlockwiseNarrowLargeMCost = 1.5;
constexpr double blockwise_narrow_wave_cost(int64_t M, int64_t K, ScaleGranularity gw) {
  const double cost = gw == ScaleGranularity::kGroup1x128 && M > 128 && K >= 4096 ? kBlockwiseGroupWNarrowCost
                                                                                  : kBlockwiseNarrowWaveCost;
  return M >= kBlockwiseNarrowLargeM && cost < kBlockwiseNarrowLargeMCost ? kBlockwiseNarrowLargeMCost : cost;
}

// The public heuristic (blockwise.h's blockwise_choose_config): the pick refined for the scale pair
// (the 128x192 tile for per-row scales, the clamped rows where blockwise_clamp_pays; below 128
// tokens two clamped 64-row tiles in place of one 128-row tile mostly past M).
int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw, int sm_count,
                            int64_t ld_x = 0, int64_t ld_w = 0);

// Split-K on the CUTLASS tiles: the number of K slices for `config`, or 1. At small M a narrow
// weight gives few tiles and each busy SM streams its W tile far below DRAM speed; cutting K into S
// slices runs tiles x S CTAs. Taken when one CTA per tile is clearly slower than DRAM
// (28·(tile_m + tile_n) >= N + M, twice that with CUTLASS's slower mainloop for 1x128 weight
// scales), at least 32 whole 128-wide groups in K, 8 per slice, and one wave. Beyond that reach,
// two slices where the one 128-row token tile is at least 40 % past M (17-76 tokens) and K has at
// least 64 whole groups: 1.06-1.36x faster at 18-70 tokens (tune_blockwise_empty_rows_split.txt).
// The 64-row tile had the same rule until its last tile loaded only its M rows of X; since, two
// slices took 0.99-1.07x its unsplit time at 17-38 tokens (H200 grid; 1.003-1.079x on an H100). The
// slices hold the whole groups; a partial last group is added by the reduction kernel, so
// K = 14352 splits like K = 14336, but only from 64 whole groups (the tail costs more than a
// shorter K gains), except with 1x128 weight scales at 17-128 tokens (their slower unsplit
// mainloop loses more). Data: tune_blockwise_splitk*.jsonl, tune_blockwise_partialk_split*.txt.
int blockwise_split_k(int64_t M, int64_t N, int64_t K, int config, ScaleGranularity gw, int sm_count);
// Tokens up to which blockwise_split_k keeps to the reach and the 64-group rule: at 9-16 tokens a
// split replaces the skinny kernel (blockwise_choose), which these two rules were not fitted against.
inline constexpr int64_t kBlockwiseSkinnyRuleMaxM = 16;

// CUTLASS's tile order for `config`: bands of 4 tiles rastered along M from M = 2048 on weights of at
// least 4096 rows (bands of 2 where tile_order.h's fitted_band takes them: where bands of 4 pad
// the tiles into 5 % more waves on sm_count SMs; measured on an H100, log §51); CUTLASS's default
// elsewhere, where the swizzle measured slower (tune_tile_order.txt); but the 64-row ping-pong
// tiles always along M: where CUTLASS's default rasters along N (token tiles outnumbering weight
// tiles) the ping-pong schedule ran up to 1.3x slower, along M never
// (tune_blockwise_pingpong_order.txt).
TileOrder blockwise_tile_order(int64_t M, int64_t N, int config, int sm_count);
// The CTA tiles CUTLASS's persistent scheduler runs for `config` on M tokens x N weight rows in
// bands of max_swizzle (tile_order.h's scheduled_ctas: both counts padded to a whole band times the
// cluster, the padded tiles run in full), and tile_order.h's fitted_band for it.
int64_t blockwise_scheduled_tiles(int config, int64_t M, int64_t N, int max_swizzle);
int blockwise_fitted_band(int config, int64_t M, int64_t N, int sm_count);

// The heuristic's part of a plan: the configuration and the number of K slices for the options
// (config: -1 or forced; split_k: 0 library, 1 none, >= 2 forced). with_workspace: the caller gives
// a large enough workspace, so the library may split (and at 9..32 tokens take a split CUTLASS
// tile instead of the skinny kernel, tune_blockwise_splitk.jsonl, tune_blockwise_decode_2d.jsonl);
// without, never (a forced split is kept: the caller reports the missing workspace). With a
// workspace and x, w scales in 128x128 blocks at 129-383 tokens, the 1x128 activations' plan where
// blockwise_expand_pays (the caller expands the x scales: blockwise_expands_x_scales).
struct BlockwiseChoice {
  int config = 0;
  int split_k = 1;
};
BlockwiseChoice blockwise_choose(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                                 int config, int split_k, int sm_count, bool with_workspace, int64_t ld_x = 0,
                                 int64_t ld_w = 0);

// x and w scales in 128x128 blocks at 129..kBlockwiseExpandMaxM tokens: whether the plan of 1x128
// activations (`groups`: its clamped and 64-row tiles, through the expanded copy) should run in
// place of the plan of the blocks (`blocks`: 128-row tiles, whose last token tile cannot be clamped
// because a shifted tile straddles two x blocks). On the users grid (blockwise.json at 748d373, 16
// layers) the 1x128 plans ran 160 / 192 / 288 tokens 1.32x / 1.18x / 1.23x faster geomean where
// they took another tile (15 / 15 / 11 layers; 0.95-1.96x, l3-70b.qkv at 160: 70.1 -> 35.8 us) and
// 3-5 % slower on the same tile (the per-token scale loads), so the copy runs only where the tile
// differs. The copy and
// its launch cost a few microseconds, so it also needs at least kBlockwiseExpandMinRowsPastM rows
// past M in the blocks' last token tile and a block plan of at least kBlockwiseExpandMinWork waves
// of 128x128 tiles times 128-wide K groups (~0.4 us each on the H200: ~25 us).
// Not for w in 1x128 groups: there the 1x128 activations' 64-row tiles ran 0.78-0.97x as fast on
// most layers (CUTLASS's mainloop loads a scale per weight row and K group).
// The constants are first estimates from the grid; the device tune probe refits them.
inline constexpr int64_t kBlockwiseExpandMaxM = 383;
inline constexpr int64_t kBlockwiseExpandMinRowsPastM = 32;
inline constexpr int64_t kBlockwiseExpandMinWork = 64;
bool blockwise_expand_pays(int64_t M, int64_t N, int64_t K, const BlockwiseChoice& blocks, const BlockwiseChoice& groups,
                           int sm_count);

// ---- the skinny kernel's grid (sm90_blockwise_skinny.cu) ------------------------------------------
// Per token-tile count T (1, 2 or 4): m16 tiles per warp (MT), ring stages (S) and the CTAs an SM
// holds (the ring is the limit: 48 KB per CTA at T = 1, 96 KB above).
struct BlockwiseSkinnyTiling {
  int MT, S, ctas_per_sm;
};
constexpr BlockwiseSkinnyTiling blockwise_skinny_tiling(int T) {
  return T == 1 ? BlockwiseSkinnyTiling{1, 4, 4} : T == 2 ? BlockwiseSkinnyTiling{2, 4, 2} : BlockwiseSkinnyTiling{2, 3, 2};
}
inline constexpr int kBlockwiseSkinnyMaxCluster = 8;        // portable cluster size
inline constexpr int kBlockwiseSkinnyMinGroupsPerWarp = 6;  // K groups a warp keeps when K is split over a cluster
// T token tiles of 8 (M <= 8T); CTAs of KW warps (each a K split) over 16·R rows of W (R m16 tiles
// per warp); row_ctas CTAs along N; clusters of C CTAs along K (reduced through distributed shared
// memory).
struct SkinnyShape {
  int T = 1, R = 1, KW = 1, row_ctas = 1, C = 1;
};
// The cluster splits K only to put CTAs on SMs that would otherwise hold none, never into a second
// wave, and while every warp keeps at least 6 K groups (a CTA's fixed cost is worth several groups).
// Data: tune_skinny.jsonl. cluster > 0 forces C (the caller checks C x KW <= ceil(K/128)).
SkinnyShape skinny_shape(int M, int N, int K, int sm_count, int cluster = 0);

}  // namespace qsgemm::kernels
