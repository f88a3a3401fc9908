// The pure heuristic of the 2:4 sparse FP8 family: problem shape + SM count -> configuration (a row
// of kSparse24Configs, src/kernels/sm90/sparse24/sm90_sparse24_configs.h), split-K, tile order and
// the decode kernel's grid. No device calls: every function takes sm_count > 0 explicitly (the entry
// points resolve it once). Retuning it recompiles host code only. Tested in
// tests/cpu/test_sparse24_heuristic.cpp and test_sparse24_validation.cpp. Tuning data:
// bench/results/h200/tuning/ (file names below).
#pragma once

#include <cstdint>

#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "tile_order.h"

namespace qsgemm::kernels {

namespace sparse24_detail {
struct Tile {
  int index, tile_m, tile_n;  // tile_m: weight rows, tile_n: tokens
};
constexpr Tile tile(const char* name) {
  const int i = sparse24_named(name);
  return {i, kSparse24Configs[i].tile_m, kSparse24Configs[i].tile_n};
}
// Each accumulation mode's data-parallel tiles from the smallest token tile to the largest.
inline constexpr Tile kDefault[] = {tile("64x32x256_c1x1_pingpong"), tile("64x64x256_c1x1_pingpong"),
                                    tile("64x128x256_c1x1_pingpong"), tile("128x128x256_c1x2_coop")};
inline constexpr Tile kFast[] = {tile("64x32x256_c1x1_pingpong_fastaccum"), tile("64x64x256_c1x1_pingpong_fastaccum"),
                                 tile("64x128x256_c1x1_pingpong_fastaccum"), tile("128x128x256_c1x2_coop_fastaccum"),
                                 tile("128x256x128_c1x2_coop_fastaccum")};
inline constexpr Tile kWide = tile("128x192x256_c1x1_coop");  // promoted accumulation, cluster 1x1
inline constexpr Tile kFastWide = tile("128x192x256_c1x1_coop_fastaccum");  // its fast-accumulation twin
// The 2x1 cluster rows (X multicast over two weight-row tiles) and the rows they twin: the same tile
// without a cluster along the weight rows (sparse24_cluster_twin).
struct ClusterTwin {
  Tile cluster, base;
};
inline constexpr ClusterTwin kClusterTwins[] = {
    {tile("128x192x256_c2x1_coop"), tile("128x192x256_c1x1_coop")},
    {tile("128x192x256_c2x1_coop_fastaccum"), tile("128x192x256_c1x1_coop_fastaccum")},
    {tile("128x256x128_c2x1_coop_fastaccum"), tile("128x256x128_c1x2_coop_fastaccum")},
};
// The tiles between the powers of two (promoted accumulation, cluster 1x1): one column of 80 to 160
// tokens where 64 or 128 would need two. sparse24_band_tile and sparse24_partial_column take them,
// the latter up to max_columns token columns (as far as they were measured; three columns on
// weights of 72-96 128-row tiles at 280-336 tokens, tune_sparse24_subwave.jsonl; 0: the band only,
// as for 64x80, which the model took on the 10240-row l3-70b.qkv at 67 and 74 tokens, 3-6 % slower
// than the 64x32 and 128x32 stream-K tiles it had replaced). 128x160 up to eight: on weights of
// 48-80 row tiles at 900-1200 tokens it was the fastest promoted tile at 11 of 18 points, where the
// two-column bound left the 128x128 pair or 128x192 at 1.06-1.20x its time, as its rate (0.92x
// 128x192's per tile) and the waves say (h100/tuning/tune_sparse24_default_cluster_low.jsonl).
inline constexpr int kPingpong64x80 = sparse24_named("64x80x256_c1x1_pingpong");
inline constexpr int kPingpong64x96 = sparse24_named("64x96x256_c1x1_pingpong");
inline constexpr int kPingpong64x112 = sparse24_named("64x112x256_c1x1_pingpong");
// The band's 64-row tiles, every 8 tokens from 72 to 112 (sparse24_band_tile).
inline constexpr int kBandTiles[] = {sparse24_named("64x72x256_c1x1_pingpong"), kPingpong64x80,
                                     sparse24_named("64x88x256_c1x1_pingpong"), kPingpong64x96,
                                     sparse24_named("64x104x256_c1x1_pingpong"), kPingpong64x112};
struct BetweenTile {
  Tile t;
  int max_columns;
};
inline constexpr BetweenTile kBetween[] = {{tile("64x80x256_c1x1_pingpong"), 0},  {tile("64x96x256_c1x1_pingpong"), 3},
                                           {tile("64x112x256_c1x1_pingpong"), 3}, {tile("128x144x256_c1x1_coop"), 3},
                                           {tile("128x160x256_c1x1_coop"), 8}};
inline constexpr int kStreamK128x32 = sparse24_named("128x32x256_c1x1_coop_streamk");
inline constexpr int kStreamK128x128 = sparse24_named("128x128x256_c1x1_coop_streamk");
}  // namespace sparse24_detail

// The 128x192 promoted tile from 8192 tokens, where its 192-wide token tiles waste at most 1.5 %
// of M. Below 8192 its fewer, longer waves lost to the 128x128 tile. Data: tune_sparse24_192.txt.
bool sparse24_wide_token_tile(int64_t M_tokens);

// The 128x192 tile on narrow weights (fewer than 16 row tiles of 128, e.g. the 1280-row tensor-
// parallel shard) from 2048 tokens: there the token tiles decide the waves, and 192-wide ones leave
// fewer. Data: tune_sparse24_interleaved.jsonl.
bool sparse24_narrow_wide_tile(int64_t M_tokens, int64_t N_out, int sm_count);

// Stream-K (only when the caller gives a workspace): the cooperative 128x32 / 128x128 stream-K
// tiles where the data-parallel tiles leave a ragged last wave. -1 where the data-parallel tiles win.
// Data: tune_sparse24.jsonl. (A rule for 1-8 tokens on weights of at least four waves of 64-row
// tiles, for X rows read in lockstep, went: there the 64x32 tile, which loads only its rows of X,
// was the faster, log §44.)
int sparse24_heuristic_stream_k(int64_t M_tokens, int64_t N_out, int sm_count);

// The 64-row tile of the band of 65-112 tokens on weights of at least 1.5 waves of 64-row tiles
// (promoted accumulation; src/sparse24_heuristic.cpp says why): the narrowest of 64x72, 64x80, ...,
// 64x112 whose one column holds M (at most 7 rows past it); 64x64 outside the band.
int sparse24_band_tile(int64_t M_tokens);

// The split-K decode kernel at M <= 8 on small weights (fewer than 2^24 elements) whose 64-row tiles
// leave SMs idle; it lost on larger weights, and at 4096 x 4096 to the 64x8 tile by 9 %. Its sums are
// exact float32 sums of fp16 products, so it serves fast-accumulation requests too. Data:
// tune_sparse24_interleaved.jsonl, tune_sparse24_narrow.jsonl.
bool sparse24_skinny_decode(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count);

// Below 33 tokens the 32-token tiles (64x32, 128x32 stream-K) hold every M: their last column loads
// only its rows of X (common/token_row_boxes.cuh), so the 8- and 16-token tiles that the table had
// for the whole box's rows past M no longer paid: at 1-16 tokens, on six weights where the heuristic
// took them, they took 0.99-1.10x the 32-token tile's time (H100, tuning/tune_sparse24_decode.jsonl;
// `l3-8b.down` 20.9-21.3 us against 19.4), and on the H200's grid the 32-token tiles ran 0.90-1.04x
// their times (158 points, docs/experiments/log.md §39). The table dropped them.
//
// 33-64 tokens on weights of at least as many 64-row tiles as SMs (sparse24_two_column_band;
// promoted accumulation): two columns of 64x32 tiles or one of 64x64, whichever leaves fewer
// waves of 64-row tiles, a 64x64 wave weighing 1.9 of a 64x32 one (at equal wave occupancy the
// 64x64 tile did a column's work 5 % faster). Probe on nine weights of other models than the
// sweep's (H100, tuning/tune_sparse24_33to64.jsonl): 64x32 fastest where two columns leave fewer
// partial waves (9216 to 27648 rows whose 64-row tiles end in a wave at most 45 % full: 64x64 took
// 1.01-1.08x its time), 64x64 where one column fills its waves as well (13824, 14336, 22016 rows:
// 64x32 1.03-1.07x); the wave counts split them for any weight in (1.75, 2]. sparse24_choose keeps
// the pick: the cost model, whose rates were fitted on many columns, had the 64x64 tile at 52-64
// tokens where it took up to 1.08x the 64x32 tile's time. Narrower weights keep the rules and the
// cost model of before (not measured here).
bool sparse24_two_column_band(int64_t M_tokens, int64_t N_out, int sm_count);
bool sparse24_two_narrow_columns(int64_t M_tokens, int64_t N_out, int sm_count);

// Fast accumulation from kSparse24FastMinTokens tokens only. Below, the fast-accumulation plans
// measured slower than the promoted ones: on the users grid (12 layers; promoted / fast time,
// geomean per M) 0.87-0.98 from 24 to 384 tokens, 1.04 / 0.98 at 512 / 640, 1.01-1.15 from 768;
// between the grid points (4 layers, 40-900 tokens) 0.81-1.00 per M up to 700 and 1.00 at 900.
// The promoted mode has the 128x192 tile, the clamped stream-K band and the two-column band there.
// So a fast_accum request below it runs the promoted plan: as fast or faster, and more accurate
// (the stream-K, decode and narrow tiles already serve both modes). 768 rather than 1024: the same
// on both sets, and no break of monotonicity at the switch (at 1024, the fast plans at 1024 tokens
// ran 1.11-1.13x faster than the promoted ones at 768 on two layers). Data:
// bench/results/h200/sparse24.json, tuning/sparse24_fast_threshold.json.
// From kSparse24FastModelMinTokens the cost model weighs the promoted plan against one launch of the
// fast 128x256 pair, its 2x1 cluster row (sparse24_weighs_cluster_row) and the fast 128x192 tile,
// and takes the fastest if it models at least 3 % faster (sparse24_choose): where a fast tile needs
// fewer waves. Held out on an H100 at 30 random shapes of 577-761 tokens on 4608-11008 rows whose
// plan moved: the fast 128x256 cluster row took 0.856-0.955x the promoted plan's time (geomean
// 0.908x; h100/tuning/tune_sparse24_fast_low_heldout.jsonl); at 512 tokens the fast pair took
// 0.877-0.891x the promoted pair's on six weights (h100/tuning/tune_sparse24_fast_grid.jsonl).
inline constexpr int64_t kSparse24FastMinTokens = 768;
inline constexpr int64_t kSparse24FastModelMinTokens = 512;

// The configuration for a problem. Tokens pick the tile first (the narrowest token tile wastes the
// least at decode sizes; the 128-row cooperative tile wins past ~128 tokens, the fast 128x256 from
// 512); then, while the tile would give fewer than half as many tiles as SMs, step down to the next
// smaller tile of the same mode: narrow weights otherwise leave most SMs idle. stream_k: whether
// the stream-K rows may be chosen. Data: tune_sparse24.jsonl, tune_sparse24_fast16384.jsonl.
int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum, bool stream_k = false);

// Split-K for a data-parallel tile (tile_m weight rows x tile_n tokens): the number of K slices, 1
// for none. Only where the tiles fill at most a third of the SMs: the sparse tiles' small-M time is
// mostly the fixed cost of a call, so splitting pays only on very narrow weights. Data:
// tune_sparse24_splitk.jsonl.
inline constexpr int kSparse24MaxSplitK = 16;         // the largest forced split
inline constexpr int64_t kSparse24SplitTileK = 256;   // slices are whole K tiles of 256
int sparse24_split_k(int64_t M_tokens, int64_t N_out, int64_t K, int tile_m, int tile_n, int sm_count);

// The card whose measurements the heuristic follows where two cards disagreed. The 128x192 tile
// against the 128x128 cluster pair at 512-8191 tokens: on the H200 the pair was as fast or faster
// at 1024-4096 tokens (the 128x192 tile 1.07-1.35x its time at 1024, h200/tuning/tune_sparse24_192.txt;
// geomean 0.99-1.05x per M at 2048-4096 on eight weights, tune_sparse24_wide_vs_pair.jsonl), on an
// H100 the 128x192 tile swizzled from 2048 tokens (0.73-0.99x the pair's time at 85 of 86 points,
// 2048-8018 tokens on 21 weights, 1.13x at one; same run: h100/tuning/tune_sparse24_wide_rule_*.jsonl,
// tune_sparse24_ab_swizzled_rate_*.jsonl) and in the default order below (Sparse24CardTraits). The
// rest of the heuristic (fitted on the H200) serves both. A card follows the H100's measurements
// where its peak DRAM bandwidth is known and below kSparse24H200MinDramGBps (the H100 SXM's
// 3.35 TB/s; the H200's 4.8 TB/s), the H200's otherwise (also where it is unknown: planning without
// a GPU).
enum class Sparse24Profile : uint8_t { kH200, kH100 };
inline constexpr double kSparse24H200MinDramGBps = 4000.0;
Sparse24Profile sparse24_profile(double dram_gbps);

// What the profiles measured differently, as data: the tokens from which the 128x192 tile runs the
// swizzled order (sparse24_tile_order); its time per wave there as a share of its rate, which was
// fitted in the default order on the H200 (sparse24_model_us); and whether the model weighs that
// tile against the 128x128 pair on the pair's whole token columns below 8192 tokens
// (sparse24_partial_column). The H100's: from kSparse24WideSwizzleMinTokens at
// kSparse24WideSwizzledRate (measured 0.72-0.94x, geomean 0.83x, at 2300-3800 tokens on eight
// weights, h100/tuning/tune_sparse24_order_{off,on}.jsonl; rounded toward 1), and weighed on whole
// columns (at the 67 whole columns of 512-1792 tokens where that weighing takes it, 0.65-1.15x
// the pair's time, geomean 0.84x, 64 faster: h100/tuning/tune_sparse24_wide_whole_any_m.jsonl); the
// H200's: from 4096 like the other tiles, at its fitted rate, and the pair kept on whole columns
// (the H200 measured the pair as fast or faster at 1024-4096 tokens). counts_swizzle_band: whether
// the model counts the tiles of a swizzle band's padding (sparse24_scheduled_tiles) in the promoted
// rows' waves. CUTLASS pads on both cards; counted on the H100's profile, checked on its probes
// (log §50: 36 moved plans timed, 0.84-0.98x the old plan's time). Counted on the H200's it would
// move plans at ~2 % of random shapes (the 128x128 pair and the 128x192 tile, both ways, from 4096
// tokens), which no H200 run has checked. fits_swizzle_band: whether sparse24_tile_order runs
// sparse24_fitted_band instead of bands of 4: on the H100's profile (measured there, log §51:
// scripts/probe_swizzle_band.sh), not yet on the H200's.
struct Sparse24CardTraits {
  int64_t wide_swizzle_min_tokens;
  double wide_swizzled_rate;
  bool wide_on_whole_columns;
  bool counts_swizzle_band;
  bool fits_swizzle_band;
};
inline constexpr int64_t kSparse24WideSwizzleMinTokens = 2048;
inline constexpr double kSparse24WideSwizzledRate = 0.85;
// The fast 128x192 tile's rate was fitted in the default order; it takes wide_swizzled_rate only
// where it measured faster than the model had it, swizzled: on weights of 20-36 row tiles, a
// multiple of 4 (the swizzle's bands of 4 row tiles fill the weight), at 4096-7167 tokens
// (sparse24_fast_wide_swizzled_rate). Elsewhere it measured slower than that: 18-31 row tiles not a
// multiple of 4, from ~7700 tokens, and 2048-4000 tokens, where its 2x1 cluster row is faster
// (h100/tuning/tune_sparse24_fast192_swizzled_heldout_{A,B,C}.jsonl, log §49).
inline constexpr int64_t kSparse24FastWideSwizzledMinRowTiles = 20;
inline constexpr int64_t kSparse24FastWideSwizzledMaxRowTiles = 36;
inline constexpr int64_t kSparse24FastWideSwizzledMinTokens = 4096;
inline constexpr int64_t kSparse24FastWideSwizzledMaxTokens = 7167;
constexpr Sparse24CardTraits sparse24_card_traits(Sparse24Profile profile) {
  return profile == Sparse24Profile::kH100
             ? Sparse24CardTraits{kSparse24WideSwizzleMinTokens, kSparse24WideSwizzledRate, true, true, true}
             : Sparse24CardTraits{4096, 1.0, false, false, false};
}

// CUTLASS's persistent tile scheduler order for `config`: bands of 4 tiles rastered along the weight
// rows on weights of at least 2048 rows, from 4096 tokens (the promoted and fast 128x192 tiles from
// their card traits' wide_swizzle_min_tokens; the fast one on an H100 at 2048-4000 tokens took
// 0.70-0.89x its time in the default order, h100/tuning/tune_sparse24_fast192_order_*.jsonl);
// CUTLASS's default elsewhere, where the swizzle measured slower (256-1024 tokens on 128x128 up to
// 3x, the 1280-row shard 7-25 %). Data: tune_tile_order.txt; the
// 128x192 tile at 2300-3800 tokens: h100/tuning/tune_sparse24_order_*.jsonl (0.72-0.94x the
// default order's time on eight weights; the 128x128 cluster pair 1.13-1.21x at 2300 tokens).
// CUTLASS pads both tile counts to a whole band (sparse24_scheduled_tiles); where the card's traits
// fit the band (fits_swizzle_band), the data-parallel rows run sparse24_fitted_band's (bands of 2
// where bands of 4 pad into 5 % more waves).
TileOrder sparse24_tile_order(int64_t M_tokens, int64_t N_out, int config, int sm_count,
                              Sparse24Profile profile = Sparse24Profile::kH200);

// The most token columns of the fast 128x192 tile on weights of more than half as many 128-row tiles
// as SMs, up to three times as many (sparse24_partial_column; never on larger weights).
inline constexpr int64_t kSparse24FastWideMaxColumns = 6;

// The 2x1 cluster rows (kCluster) against their twins (sparse24_detail::kClusterTwins): the other of
// the pair, or -1 for a row without one.
int sparse24_cluster_twin(int config);

// A cluster row's time per wave as a share of its twin's (sparse24_model_us), by the weight's row
// tiles against the SMs: 1 for other rows. At large M the sparse GEMM is bound by L2 traffic (every
// CTA reads a weight tile and a token tile per K step); where the weight has more row tiles than
// SMs, a wave covers less than one token column and all its CTAs read the same token tiles, which
// two CTAs of a cluster along the weight rows share (TMA multicast). Measured on an H100 (same run,
// h100/tuning/tune_sparse24_cluster_*.jsonl, tune_sparse24_c2x1.jsonl): the promoted 128x192 cluster
// row 1.00-1.06x its twin's time on weights of up to 112 row tiles, 0.90-0.96x on 216-448; the fast
// rows faster on every weight measured from 2048 tokens, but the fast 128x192 row slower on 10-16
// row tiles (the constants and the fit in src/sparse24_heuristic.cpp). Not yet measured on an H200
// (the same L2 and SMs; faster DRAM).
double sparse24_cluster_rate(int config, int64_t N_out, int sm_count);
// Whether sparse24_partial_column weighs cluster row `config` at M tokens on an N-row weight: from
// the tokens where it measured faster (per row, fewer on weights of more row tiles than SMs; the
// constants and their data in src/sparse24_heuristic.cpp). The fast 128x256 row, on weights of up
// to as many row tiles as SMs, also from kSparse24FastModelMinTokens: below 2048 tokens at its
// twin's rate (1), so that it wins where it needs fewer waves, and never above its modelled time
// at 2048. Never below kSparse24ClusterMinTokens (the promoted rows from 1153).
bool sparse24_weighs_cluster_row(int config, int64_t M_tokens, int64_t N_out, int sm_count);
inline constexpr int64_t kSparse24ClusterMinTokens = kSparse24FastModelMinTokens;

// The 128x128 cluster pairs' time per wave as a share of their rate, by the weight's row tiles
// (sparse24_model_us) from kSparse24PairNarrowMinTokens tokens: kSparse24PairNarrowRate on weights of
// up to kSparse24PairNarrowRows 128-row tiles, falling linearly to 1 at kSparse24PairWideRows (1 below
// those tokens, where the rate would hand the pair's plans to tiles not measured there: 64x64 and
// the 32-token stream-K tile at 516-800 tokens). On an H100 (same run; 256-7424 tokens,
// h100/tuning/tune_sparse24_sk_waves.jsonl) the promoted pair's measured time over the model's was
// 1.20-1.22x on 8-10 row tiles and 1.08-1.23x on 20-64, while the 128x192 tile's was 1.02-1.03x and
// 1.06-1.23x there: against the other tiles the pair runs 1.17-1.20x slower on narrow weights
// (the 1280-row tensor-parallel shard: 0.78-0.79x cuSPARSELt on the H200 at 2760-3036 tokens with
// the pair, where the 128-token stream-K tile took 0.86-0.88x its time on the H100).
inline constexpr double kSparse24PairNarrowRate = 1.18;
inline constexpr int64_t kSparse24PairNarrowRows = 10;
inline constexpr int64_t kSparse24PairWideRows = 16;
inline constexpr int64_t kSparse24PairNarrowMinTokens = 1024;
double sparse24_pair_rate(int config, int64_t tokens, int64_t N_out);

// The heuristic's part of a plan: the configuration and the number of K slices for the options
// (config: -1 or forced; split_k: 0 library, 1 none, >= 2 forced). with_workspace: the caller gives
// a large enough workspace, so stream-K rows and the library's split may be chosen; without, never
// (a forced split is kept: the caller reports the missing workspace).
struct Sparse24Choice {
  int config = -1;
  int split_k = 1;
  // A tail launch (sparse24_partial_column): tail_config on the last tail_rows tokens [M - tail_rows, M) after
  // `config` on the first main_rows = M - (M mod its token column) tokens. -1: one launch on all M.
  int tail_config = -1;
  int64_t tail_rows = 0;
  int64_t main_rows = 0;
};
// ---- the cost model (issue #24) ---------------------------------------------------------------------
// A token tile that runs past M costs more than its share: the rows of X beyond M are
// out-of-bounds boxes of the B operand's TMA loads. Measured on the H200: l3-70b.gate_up, 64x128
// tile, 295 us at M = 384, 540 us at M = 288 on the same grid (tuning/cliff_m288.txt). The cost
// per row is fitted with the tile rates below (tuning/tune_sparse24_between.jsonl); it now applies
// to token counts below one tile and, at 3/4, to the 32-token stream-K tile (sparse24_oob_rows): the
// 128-token stream-K tile loads only its last column's rows (common/token_row_boxes.cuh), and its
// rows past M cost nothing there (l3-70b.qkv: 40.8 us at 307 tokens, 77 rows past M, 41.8 at 372;
// bench/results/h100/tuning/tune_sparse24_qkv_streamk.jsonl, an H100).
inline constexpr double kSparse24OobRowCost = 1.75;  // an out-of-bounds token row, in valid rows
// The 128x192 and between tiles (kWide, kBetween) are weighed where their one column reads at most
// this many rows of X past M (M + this >= tile_n), or where M fills a column (later columns clamp).
inline constexpr int64_t kSparse24FewOobRows = 31;

// Whether `config` clamps its last token column inside M: the data-parallel CUTLASS rows do
// (src/kernels/sm90/common/clamped_token_column.cuh): from tokens >= tile_n on, the tiles of the
// last column and of a cluster pair's padding all compute tokens [M - tile_n, M), so no row of X
// past M is read. Stream-K rows keep CUTLASS's out-of-bounds tiles.
bool sparse24_clamps_last_column(int config);

// Token rows one launch of `config` reads past M (out-of-bounds TMA rows). Clamping rows: 0 from
// tokens >= tile_n on, tile_n - tokens below. The 128-token stream-K tile from one whole column on:
// the rows past M up to a multiple of 8 (0-7); the 32-token one from one whole column on: 3/4 of
// them (rounded up). Others: round_up(tokens, tile_n * cluster_n) - tokens.
int64_t sparse24_oob_rows(int config, int64_t tokens);

// The tokens a launch of `config` covers in whole token columns (tile_n * cluster_n): the main
// launch of a plan with a tail.
int64_t sparse24_main_rows(int config, int64_t tokens);

// The CTA tiles CUTLASS's persistent scheduler runs for `config` on `tokens` tokens of an N-row
// weight with `max_swizzle` (TileOrder::swizzle; src/tile_order.h's scheduled_ctas): both tile
// counts rounded up to a whole band times the cluster, the padded tiles run in full.
int64_t sparse24_scheduled_tiles(int config, int64_t tokens, int64_t N_out, int max_swizzle);

// tile_order.h's fitted_band for `config`: bands of 2 where they run at least 5 % fewer waves on
// `sm_count` SMs than bands of 4, else 4. On 18 token columns of 80 row tiles bands of 4 run 20
// columns in 13 waves of 132, bands of 2 run 18 in 11.
int sparse24_fitted_band(int config, int64_t tokens, int64_t N_out, int sm_count);

// The factor on the fast 128x192 tile's rate at `tokens` on an N-row weight: its card traits'
// wide_swizzled_rate where it runs swizzled within the kSparse24FastWideSwizzled* bounds, else 1.
double sparse24_fast_wide_swizzled_rate(int64_t tokens, int64_t N_out, int sm_count, Sparse24Profile profile);

// The modelled time (microseconds) of one launch of data-parallel or stream-K `config` on `tokens`
// tokens of an N x K weight: a fixed cost per call plus the larger of the tile waves (each wave one
// tile time, linear in K, a rate per configuration; the 128x192 tile's scaled by its card traits'
// wide_swizzled_rate where it runs swizzled, the fast one's by sparse24_fast_wide_swizzled_rate; a
// cluster row's its twin's times sparse24_cluster_rate, the fast 128x256 row's below 2048 tokens
// on up to as many row tiles as SMs its twin's, the whole time never above its time at 2048
// (sparse24_weighs_cluster_row); the 128x128 pairs' times sparse24_pair_rate; the waves over the
// tiles the scheduler runs, on the H100's profile its swizzle band's padding included for the
// promoted rows: sparse24_scheduled_tiles, Sparse24CardTraits) with the
// out-of-bounds rows added at kSparse24OobRowCost, and the bytes
// every launch moves (the whole compressed weight, X and Y) at the H200's streaming rate. A model
// for choosing between plans, not a prediction to quote: 15 % RMS error on the points it was
// fitted on (the constants in src/sparse24_heuristic.cpp).
double sparse24_model_us(int config, int64_t tokens, int64_t N_out, int64_t K, int sm_count,
                         Sparse24Profile profile = Sparse24Profile::kH200);

// Where `config` (the heuristic's data-parallel or stream-K pick) leaves a partial token column,
// the plan with the lowest modelled time among: `config` as it is; one launch of another
// configuration whose token tile fits in M (the data-parallel tiles of the mode: their last column
// is clamped inside M; given a workspace, the 32-token stream-K tile up to 384 tokens (12 columns)
// and the 128-token one from 65 tokens, its rows past M charged below one column) or, with promoted
// accumulation, of the 128x192 and between tiles (kBetween, up to their max_columns) where one
// column holds M with at most kSparse24FewOobRows rows past it, with fast accumulation of the fast
// 128x192 tile (kFastWide); and a main launch on whole token columns (`config`, or where M is less
// than one column a narrower tile of the mode) followed by a second launch on the last tokens,
// overlapping the main launch's last rows instead of reading past M. Another plan must model at
// least 3 % faster than `config` (10 % where `config` is the 128x192 tile, which the heuristic takes
// where it measured faster: at 1280 x 8192, M = 8192, the model's 6 % for the 128x128 pair was a
// 7 % loss; the fast 128x192 tile 5 % below the best plan so far, its rate from one probe, and on
// weights of 67-396 row tiles 14 % below it, up to kSparse24FastWideMaxColumns columns). The
// tail starts at a multiple of 4 tokens (the per-token scales keep the main launch's 16-byte
// alignment), so it may keep up to 3 out-of-bounds rows.
// {config, 1, -1, 0, M} where nothing pays. At an M that is a multiple of config's column (the grid
// points the heuristic was tuned on) the model weighs a few plans only, with the margins above: given
// a workspace with promoted accumulation, the 128-token stream-K tile; with promoted accumulation
// the between tiles as on partial columns; the 128x192 tile of the mode where `config` is that
// stream-K tile; with fast accumulation the fast 128x192 tile; and, for the 128x128 pair below
// 8192 tokens on a card whose traits say so (wide_on_whole_columns: the H100 profile), the 128x192
// tile.
Sparse24Choice sparse24_partial_column(int64_t M_tokens, int64_t N_out, int64_t K, int config, bool fast_accum,
                                       bool with_workspace, int sm_count,
                                       Sparse24Profile profile = Sparse24Profile::kH200);

// The modelled time (sparse24_model_us) of a plan without split-K: one launch on all M tokens, or
// the main launch on its main_rows and the tail launch on its tail_rows.
double sparse24_choice_model_us(const Sparse24Choice& plan, int64_t M_tokens, int64_t N_out, int64_t K, int sm_count,
                                Sparse24Profile profile = Sparse24Profile::kH200);

Sparse24Choice sparse24_choose(int64_t M_tokens, int64_t N_out, int64_t K, int config, int split_k, bool fast_accum,
                               int sm_count, bool with_workspace, Sparse24Profile profile = Sparse24Profile::kH200);

// ---- the decode kernel's grid (sm90_sparse24_skinny.cu) -------------------------------------------
inline constexpr int kSparse24SkinnyPanel = 128;          // logical K of one metadata panel
inline constexpr int kSparse24SkinnyMaxWarps = 4;         // warps per CTA, each a K split
inline constexpr int kSparse24SkinnyMaxCluster = 8;       // portable cluster size
inline constexpr int kSparse24SkinnyMinPanelsPerWarp = 4; // panels a warp keeps when K is split over a cluster
// T token tiles of 8 (M <= 8T); CTAs of KW warps, each a K split over 128-wide panels, on 16·MT
// weight rows; row_ctas CTAs along N; clusters of C CTAs along K (reduced through distributed
// shared memory, no workspace).
struct Sparse24SkinnyShape {
  int T = 1, MT = 1, KW = 1, row_ctas = 1, C = 1;
};
// The cluster: the smallest that gives every SM a CTA, up to 8, while every warp keeps at least 4
// panels. Data: tune_sparse24_interleaved.jsonl (1280x8192 fastest at C = 2, 4096x4096 at C = 1).
Sparse24SkinnyShape sparse24_skinny_shape(int64_t m_tok, int64_t n_out, int64_t k, int sm_count);

}  // namespace qsgemm::kernels
