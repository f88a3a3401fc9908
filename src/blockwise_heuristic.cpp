// The blockwise FP8 heuristic (src/blockwise_heuristic.h): pure host arithmetic.
#include "blockwise_heuristic.h"

#include <algorithm>

#include "qsgemm/formats.h"

namespace qsgemm::kernels {

bool blockwise_config_reads(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M) {
  using G = ScaleGranularity;
  if (M >= 0) gx = blockwise_tile_gx(gx, M);
  if (config < 0 || config >= kBlockwiseNumConfigs) return false;
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  // Per-token x per-channel: the mainloop with unit scales (or the skinny kernel), any tile.
  if (gx == G::kPerRow || gw == G::kPerRow) return gx == gw;
  if (c.per_row_only) return false;
  if (c.clamped && gx == G::kBlock128x128) return false;  // a shifted tile would straddle two x blocks
  if (gx != G::kGroup1x128 && gx != G::kBlock128x128) return false;
  if (gw != G::kGroup1x128 && gw != G::kBlock128x128) return false;
  // The skinny kernel reads any scale layout per 16-row warp tile (M <= 32 lies in one 128-row block).
  if (c.schedule == BlockwiseSchedule::kSkinny) return true;
  // CUTLASS needs whole scale blocks per tile (tile % granularity == 0).
  if (gx == G::kBlock128x128 && c.tile_m % kScaleGroupK != 0) return false;
  if (gw == G::kBlock128x128 && c.tile_n % kScaleGroupK != 0) return false;
  return true;
}

bool blockwise_expands_x_scales(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M) {
  using G = ScaleGranularity;
  return gx == G::kBlock128x128 && M > 128 && !blockwise_config_reads(config, gx, gw, M) &&
         blockwise_config_reads(config, G::kGroup1x128, gw, M);
}

bool blockwise_config_supports(int config, ScaleGranularity gx, ScaleGranularity gw, int64_t M) {
  using G = ScaleGranularity;
  if (blockwise_config_reads(config, gx, gw, M)) return true;
  // Beyond 128 tokens (or for every M) x blocks reach the tiles of 1x128 activations as an expanded copy.
  return gx == G::kBlock128x128 && (M < 0 || M > 128) && blockwise_config_reads(config, G::kGroup1x128, gw, M);
}

int blockwise_choose_config(int64_t M, int64_t N, int64_t K, int sm_count, int64_t ld_x, int64_t ld_w,
                            double narrow_wave_cost) {
  using namespace blockwise_detail;
  const int64_t sms = sm_count;
  const int64_t n_tiles = ceil_div(N, 128);
  // Decode sizes: the skinny kernel (K split over the SMs) wins where the 64-row tiles (one per N
  // tile) leave SMs idle: at M <= 8 with K >= 1536 where they fill under 60 % of their waves' CTA
  // slots (up to 79 tiles on 132 SMs; 148 in two waves), at 9..16 tokens with K >= 4096 where they
  // are at most a quarter of the SMs, at 17..32 at most a sixth. Beyond, the tile (which loads only
  // its M rows of X) streams W as fast or faster: 0.76-1.01x the skinny kernel's time at 1-8 tokens
  // from 80 tiles in one wave, 0.90-0.99x at 10-16 tokens with 40-64. Tiny problems (one or two N
  // tiles) always take it: it sums each group exactly in float32.
  const bool tiles_fill_waves = 10 * n_tiles >= 6 * ceil_div(n_tiles, sms) * sms;
  if (M <= kSkinnyMaxM && n_tiles <= 2) return kSkinnyConfig;
  if (M <= 8 && K >= 1536 && !tiles_fill_waves) return kSkinnyConfig;
  if (M <= 16 && K >= 4096 && n_tiles <= sms / 4) return kSkinnyConfig;
  if (M <= kSkinnyMaxM && K >= 4096 && n_tiles <= sms / 6) return kSkinnyConfig;
  if (K <= kBlockwiseShortK) return kNarrow;
  // Rows off 128-byte lines (K % 128 != 0 packed): every TMA row of a tile spans two lines. There
  // the 1x2 cluster (W's tiles multicast) measured 1.27-1.31x faster than the 1x1 tile and
  // 1.77-1.94x faster than the 64-row ping-pong tile (M = 1024 and 4096, K = 4112,
  // bench/results/h200/tuning/partialk_ld_align.txt). Rows padded to 128 bytes (fp8_row_ld) run as
  // fast as K = 4224 with any tile, so they take the wave model like any K.
  if (!blockwise_rows_on_lines(K, ld_x, ld_w) && M > kMisalignedC1x2MinM) return kSquareC1x2;
  const int64_t waves_128 = ceil_div(ceil_div(M, 128) * n_tiles, sms);
  const int64_t waves_64 = ceil_div(ceil_div(M, 64) * n_tiles, sms);
  if (narrow_wave_cost <= 0) narrow_wave_cost = blockwise_narrow_wave_cost(M, K, ScaleGranularity::kBlock128x128);
  // Time per SM in units of one 64-row tile: a 128-row tile is two; a 64-row wave costs the
  // caller's narrow_wave_cost (blockwise_narrow_wave_cost: the W reload, and 1x128 weight scales).
  if (narrow_wave_cost * static_cast<double>(waves_64) < 2.0 * static_cast<double>(waves_128)) return kNarrow;
  if (M >= 4096 && (K >= 16384 || N * K >= (int64_t{1} << 28))) return kSquareC1x2;
  return kSquare;
}

bool blockwise_per_row_wide_tile(int64_t M, int64_t N, int config, int sm_count) {
  // Measured from M = 256 on; below, the 64x128 tile's partial waves were not compared with it.
  if (M < 256 || config == kSkinnyConfig || config == kPerRowWideConfig) return false;
  const int64_t sms = sm_count;
  const int64_t n_tiles = ceil_div(N, 128);
  const int64_t waves_64 = ceil_div(ceil_div(M, 64) * n_tiles, sms);
  const int64_t waves_128 = ceil_div(ceil_div(M, 128) * n_tiles, sms);
  const int64_t waves_192 = ceil_div(ceil_div(M, 128) * ceil_div(N, 192), sms);
  const int64_t waste = ceil_div(N, 192) * 192 - N;
  if (200 * waste > 3 * N) return false;  // more than 1.5 % of N wasted
  // In tenths of a 64x128 tile: 12 per 64-row wave, 20 per 128x128 wave, 30 per 128x192 wave.
  const int64_t picked = config == blockwise_detail::kNarrow ? 12 * waves_64 : 20 * waves_128;
  return 30 * waves_192 < picked;
}

bool blockwise_clamp_pays(int64_t M, int64_t N, int tile_m, int sm_count, int split_k) {
  if (tile_m <= 0 || M <= tile_m || split_k < 1) return false;  // one token tile: nothing to clamp
  const int64_t cols = ceil_div(M, int64_t{tile_m});
  const int64_t oob = cols * tile_m - M;  // rows of the last token tile past M
  if (2 * oob < tile_m || cols > kBlockwiseClampMaxTokenTiles) return false;
  const int64_t ctas10 = 10 * cols * ceil_div(N, int64_t{128}) * split_k;
  // From 0.8 of a wave for split tiles and for two 128-row token tiles (tune_blockwise_split_clamp.txt,
  // tune_blockwise_subwave_clamp.txt), 0.9 otherwise.
  const bool from_08 = split_k > 1 || (cols == 2 && tile_m == 128);
  return ctas10 >= (from_08 ? 8 : 9) * int64_t{sm_count};
}

int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw, int sm_count,
                            int64_t ld_x, int64_t ld_w) {
  using namespace blockwise_detail;
  gx = blockwise_tile_gx(gx, M);  // up to 128 tokens x blocks are 1x128 groups to the tiles
  const int config = blockwise_choose_config(M, N, K, sm_count, ld_x, ld_w, blockwise_narrow_wave_cost(M, K, gw));
  if (gx == ScaleGranularity::kPerRow && gw == ScaleGranularity::kPerRow && K > kBlockwiseShortK &&
      blockwise_per_row_wide_tile(M, N, config, sm_count))
    return kPerRowWideConfig;
  int pick = blockwise_config_reads(config, gx, gw) ? config : kSquare;  // kSquare serves every pair
  // 1x128 weight scales from kBlockwiseGroupWOneTileMinM to 128 tokens: one 128-row token tile, not
  // two 64-row ones (blockwise_group_w_one_tile).
  const bool one_tile = blockwise_group_w_one_tile(M, K, gw);
  if (one_tile && pick == kNarrow) pick = kSquare;
  // One 128-row tile mostly past M: two 64-row tiles, the second clamped, where that pays (the wave
  // model does not know the clamp; on the fit layers 1.05-1.27x faster at 70 and 90 tokens). Not
  // where the 128-row tiles fit in one wave and at most 47 of their rows lie past M: the 64-row
  // tiles then need two waves, and one ping-pong CTA runs its two tiles' K loops one after the
  // other (10240x8192 at 96 tokens: 37.7 us against 32.0; tune_blockwise_subwave_clamp.txt).
  const bool one_wave_128 = ceil_div(N, int64_t{128}) <= sm_count;
  if (!one_tile && pick == kSquare && M < 128 && blockwise_config_reads(kNarrowClamped, gx, gw) &&
      blockwise_clamp_pays(M, N, kBlockwiseConfigs[kNarrow].tile_m, sm_count) && !(one_wave_128 && 128 - M < 48))
    pick = kNarrow;
  const int clamped = pick == kSquare ? kSquareClamped : pick == kNarrow ? kNarrowClamped : -1;
  if (clamped >= 0 && blockwise_config_reads(clamped, gx, gw) &&
      blockwise_clamp_pays(M, N, kBlockwiseConfigs[pick].tile_m, sm_count))
    return clamped;
  return pick;
}

int blockwise_split_k(int64_t M, int64_t N, int64_t K, int config, ScaleGranularity gw, int sm_count) {
  constexpr int64_t kMinGroups = 32;          // K >= 4096
  constexpr int64_t kMinGroupsPerSlice = 8;
  if (config < 0 || config >= kBlockwiseNumConfigs || config == kSkinnyConfig) return 1;
  if (M <= 0 || N <= 0 || K <= 0) return 1;
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  const int64_t reach = gw == ScaleGranularity::kGroup1x128 ? 56 : 28;  // CUTLASS's mainloop: twice
  const int64_t kb = K / kScaleGroupK;  // whole groups: the slices share them, the reduction adds a partial one
  // A 128-row token tile at least 40 % past M streams its W tile more slowly than a full one, so two
  // slices pay beyond the reach, from 64 whole groups (tune_blockwise_empty_rows_split.txt; at
  // K = 4096 two slices were 1-5 % slower). Not the 64-row tile: loading only its M rows of X, its
  // two slices took 0.99-1.07x the unsplit tile's time at 17-38 tokens (blockwise.json, 3 layers).
  const bool empty_rows =
      c.tile_m > 64 && M > kBlockwiseSkinnyRuleMaxM && 5 * M <= 3 * int64_t{c.tile_m} && kb >= 2 * kMinGroups;
  const bool reached = reach * int64_t{c.tile_m + c.tile_n} >= N + M;
  if (!reached && !empty_rows) return 1;
  // The partial group costs the reduction 1-2.5 us (N = 4096, 24-120 tokens), more than a split gains
  // on half the groups: at K = 4112 the split lost 0.3-3 us, at 14352 it gained 4-6
  // (tune_blockwise_partialk_split.txt). Not with 1x128 weight scales at 17-128 tokens, whose
  // unsplit mainloop is slow enough that the split gains more (K = 4112: 18.4 -> 16.0 us and
  // 21.8 -> 17.1 at 20-40 tokens, tune_blockwise_partialk_split_pairs.txt); at 9-16 tokens the
  // skinny kernel, which the split would replace, was faster.
  const bool tail_pays = gw == ScaleGranularity::kGroup1x128 && M > kBlockwiseSkinnyRuleMaxM && M <= 128;
  if (kb < (K % kScaleGroupK != 0 && !tail_pays ? 2 * kMinGroups : kMinGroups)) return 1;
  const int64_t sms = sm_count;
  const int64_t tiles = ceil_div(M, c.tile_m) * ceil_div(N, c.tile_n);
  int best = 1;
  for (int s = 2; s <= (reached ? kBlockwiseMaxSplitK : 2); ++s)
    if (kb % s == 0 && kb / s >= kMinGroupsPerSlice && tiles * s <= sms) best = s;
  return best;
}

TileOrder blockwise_tile_order(int64_t M, int64_t N, int config, int sm_count) {
  using namespace blockwise_detail;
  if (config == kNarrow || config == kNarrowClamped) return TileOrder{1, 1};
  return M >= 2048 && N >= 4096 ? TileOrder{blockwise_fitted_band(config, M, N, sm_count), 1} : TileOrder{};
}

int64_t blockwise_scheduled_tiles(int config, int64_t M, int64_t N, int max_swizzle) {
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  return scheduled_ctas(ceil_div(ceil_div(M, c.tile_m), c.cluster_m) * c.cluster_m,
                        ceil_div(ceil_div(N, c.tile_n), c.cluster_n) * c.cluster_n, c.cluster_m, c.cluster_n,
                        max_swizzle);
}

int blockwise_fitted_band(int config, int64_t M, int64_t N, int sm_count) {
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  return fitted_band(ceil_div(ceil_div(M, c.tile_m), c.cluster_m) * c.cluster_m,
                     ceil_div(ceil_div(N, c.tile_n), c.cluster_n) * c.cluster_n, c.cluster_m, c.cluster_n, sm_count);
}

namespace {

// blockwise_choose for the pair as the tiles read it, without the expanded copy of x blocks.
BlockwiseChoice choose_as_read(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw, int config,
                               int split_k, int sm_count, bool with_workspace, int64_t ld_x, int64_t ld_w) {
  using namespace blockwise_detail;
  BlockwiseChoice plan;
  plan.config = config >= 0 ? config : blockwise_choose_config(M, N, K, gx, gw, sm_count, ld_x, ld_w);
  const ScaleGranularity gx_in = gx;
  gx = blockwise_tile_gx(gx, M);
  if (split_k >= 1) {  // forced (or none); the caller rejects a forced split of the skinny kernel
    plan.split_k = plan.config == kSkinnyConfig ? 1 : split_k;
    return plan;
  }
  if (!with_workspace) return plan;
  if (plan.config != kSkinnyConfig) {
    plan.split_k = blockwise_split_k(M, N, K, plan.config, gw, sm_count);
    // The split multiplies the CTAs, so a plain 64-row tile that was under the clamp rule's wave may
    // clear it (only a pick of the library's own, config == -1; the split 128-row tile was not measured).
    if (config < 0 && plan.split_k > 1 && plan.config == kNarrow && blockwise_config_reads(kNarrowClamped, gx, gw) &&
        blockwise_clamp_pays(M, N, kBlockwiseConfigs[kNarrow].tile_m, sm_count, plan.split_k))
      plan.config = kNarrowClamped;
    return plan;
  }
  // In place of the skinny kernel at 9..32 tokens (not for one or two tiles of W, which it always
  // takes): the 64x128 tile split over K where the rule splits it. It serves every scale pair at
  // these M (x in 128x128 blocks is one row of them, blockwise_tile_gx), but such x scales keep the
  // skinny kernel up to 16 tokens: there the split tile took 1.01-1.10x its time on six of the
  // users grid's layers at 12 tokens (the 1x128 pairs' rule was fitted without that comparison).
  const bool x_blocks = gx_in == ScaleGranularity::kBlock128x128;
  if (config == -1 && M > (x_blocks ? kBlockwiseSkinnyRuleMaxM : 8) && ceil_div(N, int64_t{128}) > 2 &&
      blockwise_config_reads(kNarrow, gx, gw)) {
    const int s = blockwise_split_k(M, N, K, kNarrow, gw, sm_count);
    if (s > 1) plan = {kNarrow, s};
  }
  return plan;
}

}  // namespace

bool blockwise_expand_pays(int64_t M, int64_t N, int64_t K, const BlockwiseChoice& blocks, const BlockwiseChoice& groups,
                           int sm_count) {
  if (M <= 128 || M > kBlockwiseExpandMaxM) return false;
  // The same tile reads per-token scales more slowly; so does its clamped twin, whose copy and scale
  // loads cost more than the rows it saves: the 128-row tile clamped through the copy took
  // 1.06-1.11x the plain tile's time at 150-240 tokens on four weights of other models
  // (bench/results/h100/tuning/tune_blockwise_group_w_tiles.jsonl, block_128x128 pairs).
  const auto unclamped = [](int c) {
    using namespace blockwise_detail;
    return c == kSquareClamped ? kSquare : c == kNarrowClamped ? kNarrow : c;
  };
  if (unclamped(groups.config) == blocks.config) return false;
  const int64_t rows_past_m = ceil_div(M, int64_t{128}) * 128 - M;
  if (rows_past_m < kBlockwiseExpandMinRowsPastM) return false;
  const int64_t waves = ceil_div(ceil_div(M, int64_t{128}) * ceil_div(N, int64_t{128}), int64_t{sm_count});
  return waves * ceil_div(K, kScaleGroupK) >= kBlockwiseExpandMinWork;
}

BlockwiseChoice blockwise_choose(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw, int config,
                                 int split_k, int sm_count, bool with_workspace, int64_t ld_x, int64_t ld_w) {
  using G = ScaleGranularity;
  const BlockwiseChoice plan = choose_as_read(M, N, K, gx, gw, config, split_k, sm_count, with_workspace, ld_x, ld_w);
  // The library's own plan, given a workspace: x blocks may take the 1x128 activations' plan
  // through the expanded copy (blockwise_expand_pays).
  if (config >= 0 || split_k != 0 || !with_workspace || gx != G::kBlock128x128 || gw != G::kBlock128x128 ||
      M <= 128 || M > kBlockwiseExpandMaxM)
    return plan;
  const BlockwiseChoice groups = choose_as_read(M, N, K, G::kGroup1x128, gw, -1, 0, sm_count, true, ld_x, ld_w);
  return blockwise_expand_pays(M, N, K, plan, groups, sm_count) ? groups : plan;
}

SkinnyShape skinny_shape(int M, int N, int K, int sm_count, int cluster) {
  SkinnyShape s;
  s.T = M <= 8 ? 1 : M <= 16 ? 2 : 4;
  const BlockwiseSkinnyTiling t = blockwise_skinny_tiling(s.T);
  const int kb = (K + kScaleGroupK - 1) / kScaleGroupK;
  s.R = t.MT;  // m16 tiles per warp
  s.KW = std::max(1, std::min(kSkinnyMaxWarps, kb));
  s.row_ctas = (N + 16 * t.MT - 1) / (16 * t.MT);
  const int64_t slots = static_cast<int64_t>(sm_count) * t.ctas_per_sm;
  for (int c = 2; c <= kBlockwiseSkinnyMaxCluster; c *= 2)
    if (static_cast<int64_t>(s.row_ctas) * c <= slots && kb >= kBlockwiseSkinnyMinGroupsPerWarp * kSkinnyMaxWarps * c)
      s.C = c;
  if (cluster > 0) s.C = cluster;
  return s;
}

}  // namespace qsgemm::kernels
