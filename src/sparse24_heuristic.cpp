// The 2:4 sparse FP8 heuristic (src/sparse24_heuristic.h): pure host arithmetic.
#include "sparse24_heuristic.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace qsgemm::kernels {

bool sparse24_wide_token_tile(int64_t M_tokens) {
  const int64_t waste = (M_tokens + 191) / 192 * 192 - M_tokens;
  return M_tokens >= 8192 && 200 * waste <= 3 * M_tokens;
}

bool sparse24_narrow_wide_tile(int64_t M_tokens, int64_t N_out, int sm_count) {
  const int64_t sms = sm_count;
  const int64_t tiles192 = ((N_out + 127) / 128) * ((M_tokens + 191) / 192);
  return M_tokens >= 2048 && N_out < 2048 && 2 * tiles192 >= sms;
}

// 65-112 tokens on weights of >= 1.5 waves of 64-row tiles (promoted accumulation): one 64-row tile
// per weight tile, measured where the cost model (15 % RMS) is least sure, so sparse24_choose keeps
// it. The narrowest band or between tile whose one column holds M (sparse24_band_tile): a 64-row
// tile every 8 tokens, 64x72 at 65-72, 64x80, 64x88, 64x96, 64x104 and 64x112 at 105-112, so that at
// most 7 rows of X's box lie past M. On four layers of other models of >= 14336 rows
// (tuning/tune_sparse24_between_tiles2.jsonl) a column with 13-15 rows past M took 1.05-1.17x the
// time of the same tile with 2-8 (64x80 at 66 against 72 tokens, 64x96 at 81 against 88, 64x112 at
// 98 against 104), and 64x64 with a clamped second column was no faster; the 72-, 88- and
// 104-token tiles themselves are not measured yet (docs/experiments/log.md §30).
// 64x112 was as fast as the 128x128 stream-K tile or up to 1.15x faster at 104-110, whose box
// would carry more than 24 rows past M below 104 tokens (tuning/tune_sparse24_band.jsonl). Below
// 1.5 waves the model decides (10240 x 8192, M = 90: 128x32 stream-K 9 % faster,
// tune_sparse24_between.jsonl).
constexpr int64_t kSk128MinTokens = 104;
constexpr int64_t kSk32MaxTokens = 384;  // sparse24_partial_column weighs the 32-token stream-K tile up to here
constexpr int64_t kSk128MinModelTokens = 65;  // ... and the 128-token one from here (the band's first M)
namespace {
bool one_column_band(int64_t M_tokens, int64_t N_out, int sm_count, bool fast_accum) {
  return !fast_accum && M_tokens > 64 && M_tokens <= 112 && 2 * ((N_out + 63) / 64) >= 3 * int64_t{sm_count};
}
}  // namespace

int sparse24_band_tile(int64_t M_tokens) {
  using namespace sparse24_detail;
  if (M_tokens <= 64 || M_tokens > 112) return kDefault[1].index;  // 64x64 (outside the band)
  for (const int t : kBandTiles)  // ascending token columns: the narrowest that holds M
    if (M_tokens <= kSparse24Configs[t].tile_n) return t;
  return kPingpong64x112;
}

int sparse24_heuristic_stream_k(int64_t M_tokens, int64_t N_out, int sm_count) {
  using namespace sparse24_detail;
  const int64_t sms = sm_count;
  const int64_t rows64 = (N_out + 63) / 64;
  const auto last_wave_at_most_half = [&](int64_t tiles) { return tiles % sms != 0 && tiles % sms <= sms / 2; };
  if (M_tokens <= 32 && rows64 >= sms && last_wave_at_most_half(rows64)) return kStreamK128x32;
  if (M_tokens > 64 && M_tokens <= 128 && rows64 >= sms) return kStreamK128x128;
  const int64_t tiles128 = ((N_out + 127) / 128) * ((M_tokens + 127) / 128);
  if (M_tokens > 128 && M_tokens <= 256 && tiles128 >= sms && 2 * tiles128 <= 3 * sms) return kStreamK128x128;
  if (M_tokens >= 2048 && tiles128 < 4 * sms && last_wave_at_most_half(tiles128)) return kStreamK128x128;
  return -1;
}

bool sparse24_two_column_band(int64_t M_tokens, int64_t N_out, int sm_count) {
  return M_tokens > 32 && M_tokens <= 64 && (N_out + 63) / 64 >= sm_count;
}

bool sparse24_two_narrow_columns(int64_t M_tokens, int64_t N_out, int sm_count) {
  if (!sparse24_two_column_band(M_tokens, N_out, sm_count)) return false;
  const int64_t sms = sm_count, rows64 = (N_out + 63) / 64;
  const int64_t waves32 = (2 * rows64 + sms - 1) / sms, waves64 = (rows64 + sms - 1) / sms;
  return 10 * waves32 < 19 * waves64;
}

bool sparse24_skinny_decode(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count) {
  const int64_t sms = sm_count;
  return M_tokens <= 8 && (N_out + 63) / 64 < sms && N_out * K < (int64_t{1} << 24);
}

int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum, bool stream_k) {
  using sparse24_detail::Tile;
  if (M_tokens < kSparse24FastMinTokens) fast_accum = false;
  if (sparse24_skinny_decode(M_tokens, N_out, K, sm_count)) return kSparse24SkinnyConfig;
  if (!fast_accum && sparse24_narrow_wide_tile(M_tokens, N_out, sm_count)) return sparse24_detail::kWide.index;
  if (one_column_band(M_tokens, N_out, sm_count, fast_accum)) return sparse24_band_tile(M_tokens);
  if (stream_k) {
    const int c = sparse24_heuristic_stream_k(M_tokens, N_out, sm_count);
    // 128x128 stream-K below kSk128MinTokens: too many out-of-bounds rows (above); promoted mode only.
    const bool oob_heavy = c == sparse24_detail::kStreamK128x128 && !fast_accum && M_tokens < kSk128MinTokens;
    if (c >= 0 && !oob_heavy) return c;
  }
  const int64_t sms = sm_count;
  auto tiles = [&](const Tile& t) { return ((N_out + t.tile_m - 1) / t.tile_m) * ((M_tokens + t.tile_n - 1) / t.tile_n); };
  // The wide tile where it won, if it leaves at least half as many tiles as SMs (as below).
  if (!fast_accum && sparse24_wide_token_tile(M_tokens) && 2 * tiles(sparse24_detail::kWide) >= sms)
    return sparse24_detail::kWide.index;
  const Tile* family = fast_accum ? sparse24_detail::kFast : sparse24_detail::kDefault;
  int i;  // by tokens
  if (M_tokens <= 32) i = 0;
  else if (M_tokens <= 64) i = sparse24_two_narrow_columns(M_tokens, N_out, sm_count) ? 0 : 1;
  else if (M_tokens <= 128) i = 2;
  else if (!fast_accum || M_tokens <= 256) i = 3;
  else i = 4;
  // by weight rows: at least half as many tiles as SMs
  while (i > 0 && 2 * tiles(family[i]) < sms) --i;
  return family[i].index;
}

int sparse24_split_k(int64_t M_tokens, int64_t N_out, int64_t K, int tile_m, int tile_n, int sm_count) {
  const int64_t sms = sm_count;
  const int64_t tiles = ((N_out + tile_m - 1) / tile_m) * ((M_tokens + tile_n - 1) / tile_n);
  if (K % kSparse24SplitTileK != 0 || 3 * tiles > sms) return 1;
  const int64_t k_tiles = K / kSparse24SplitTileK;
  for (int s : {4, 2})
    if (k_tiles % s == 0 && K / s >= 2048 && tiles * s <= sms) return s;
  return 1;
}

Sparse24Profile sparse24_profile(double dram_gbps) {
  return dram_gbps > 0 && dram_gbps < kSparse24H200MinDramGBps ? Sparse24Profile::kH100 : Sparse24Profile::kH200;
}

int sparse24_cluster_twin(int config) {
  for (const sparse24_detail::ClusterTwin& t : sparse24_detail::kClusterTwins) {
    if (config == t.cluster.index) return t.base.index;
    if (config == t.base.index) return t.cluster.index;
  }
  return -1;
}

namespace {
bool is_cluster_row(int config) { return kSparse24Configs[config].unit == Sparse24Unit::kCluster; }
}  // namespace

namespace {
// The CTA tiles of `config` along CUTLASS's M (the weight rows) and N (the tokens), each a multiple
// of its cluster side.
std::pair<int64_t, int64_t> sparse24_ctas(int config, int64_t tokens, int64_t N_out) {
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  const int64_t rows = (N_out + c.tile_m - 1) / c.tile_m;
  const int64_t tile_cols = int64_t{c.tile_n} * c.cluster_n;
  return {(rows + c.cluster_m - 1) / c.cluster_m * c.cluster_m, (tokens + tile_cols - 1) / tile_cols * c.cluster_n};
}
}  // namespace

int64_t sparse24_scheduled_tiles(int config, int64_t tokens, int64_t N_out, int max_swizzle) {
  const auto [ctas_m, ctas_n] = sparse24_ctas(config, tokens, N_out);
  return scheduled_ctas(ctas_m, ctas_n, kSparse24Configs[config].cluster_m, kSparse24Configs[config].cluster_n,
                        max_swizzle);
}

int sparse24_fitted_band(int config, int64_t tokens, int64_t N_out, int sm_count) {
  const auto [ctas_m, ctas_n] = sparse24_ctas(config, tokens, N_out);
  return fitted_band(ctas_m, ctas_n, kSparse24Configs[config].cluster_m, kSparse24Configs[config].cluster_n, sm_count);
}

// The cluster rows keep the common rule (from 4096 tokens), as they were measured. The fast 128x192
// tile follows the promoted one's card rule: on an H100 at 2048-4000 tokens on 2304-8192 rows it
// took 0.70-0.89x its time in the default order (geomean 0.80x at 12 points; same run,
// h100/tuning/tune_sparse24_fast192_order_{off,on}.jsonl). Its rate keeps its fit (which had it in
// the default order there): the model takes it where it did before.
namespace {
// The order before the band is fitted: bands of 4 where the tokens and the weight rows call for them.
TileOrder banded_order(int64_t M_tokens, int64_t N_out, int config, Sparse24Profile profile) {
  const bool wide = config == sparse24_detail::kWide.index || config == sparse24_detail::kFastWide.index;
  const int64_t min_tokens = wide ? sparse24_card_traits(profile).wide_swizzle_min_tokens : 4096;
  return M_tokens >= min_tokens && N_out >= 2048 ? TileOrder{4, 1} : TileOrder{};
}
}  // namespace

TileOrder sparse24_tile_order(int64_t M_tokens, int64_t N_out, int config, int sm_count, Sparse24Profile profile) {
  // The stream-K rows keep bands of 4: the fitted band was measured on data-parallel tiles only.
  const TileOrder order = banded_order(M_tokens, N_out, config, profile);
  if (order.swizzle == 1 || !sparse24_card_traits(profile).fits_swizzle_band || kSparse24Configs[config].stream_k() ||
      sm_count <= 0)
    return order;
  return TileOrder{sparse24_fitted_band(config, M_tokens, N_out, sm_count), 1};
}

namespace {

// What the heuristic takes at M <= 32 when it does not take the decode kernel: the 64x32 tile of the
// accumulation mode.
int narrow_tile(bool fast_accum) { return (fast_accum ? sparse24_detail::kFast : sparse24_detail::kDefault)[0].index; }

// The library's split of `config` (split_k = 0, with a workspace): the rule of sparse24_split_k for
// a data-parallel configuration; where the heuristic took the decode kernel, the split 64x32 tile
// when the rule splits it (it measured faster on the 1280-row shard, tune_sparse24_splitk.jsonl).
Sparse24Choice library_split(int64_t M, int64_t N, int64_t K, int config, bool fast_accum, int sm_count) {
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  if (c.splittable()) return {config, sparse24_split_k(M, N, K, c.tile_m, c.tile_n, sm_count)};
  if (c.skinny()) {
    const int alt = narrow_tile(fast_accum);
    const Sparse24ConfigRow& r = kSparse24Configs[alt];
    const int s = sparse24_split_k(M, N, K, r.tile_m, r.tile_n, sm_count);
    if (s > 1) return {alt, s};
  }
  return {config, 1};
}

}  // namespace

namespace {

// Nanoseconds per wave of tiles per unit of K, and the other constants of sparse24_model_us:
// least-squares fit (of the log time) on tuning/tune_sparse24_between.jsonl, every default-mode
// configuration timed as one launch at M = 40, 90, ..., 2300 (none of them a sweep or bench M) on
// the four sweep layers; the fast-accumulation rows keep their grid fit (tune_sparse24.jsonl, at
// least 4 waves; 128x256: tune_sparse24_fast16384.jsonl). Fit error: 15 % RMS. The between tiles'
// rates: fitted on tune_sparse24_between_tiles*.jsonl with the others held (a refit of all of them
// put the out-of-bounds cost at 2.1-2.3, under which the model no longer took the one-column tiles
// that measured fastest); 128x144 and 128x160 at 0.92x 128x192's per tile, the ratio measured at
// two columns. The fast 128x192 tile: its H100 rate over the H100's of the fast 128x128 and 128x256
// tiles (1.12x theirs; 768-16384 tokens on six weights, h100/tuning/tune_sparse24_fast192.jsonl).
struct TileRate {
  const char* name;
  double ns_per_wave_k;
};
constexpr TileRate kTileRates[] = {
    {"64x32x256_c1x1_pingpong", 0.86},           {"64x64x256_c1x1_pingpong", 1.18},
    {"64x128x256_c1x1_pingpong", 1.76},          {"128x128x256_c1x2_coop", 2.32},
    {"64x32x256_c1x1_pingpong_fastaccum", 0.83}, {"64x64x256_c1x1_pingpong_fastaccum", 1.29},
    {"64x128x256_c1x1_pingpong_fastaccum", 2.0}, {"128x128x256_c1x2_coop_fastaccum", 2.50},
    {"128x256x128_c1x2_coop_fastaccum", 4.40},   {"128x192x256_c1x1_coop", 3.08},
    {"128x32x256_c1x1_coop_streamk", 1.26},      {"128x128x256_c1x1_coop_streamk", 2.56},
    {"64x96x256_c1x1_pingpong", 1.39},           {"128x160x256_c1x1_coop", 2.84},
    {"64x80x256_c1x1_pingpong", 1.29},           {"64x112x256_c1x1_pingpong", 1.57},
    {"128x144x256_c1x1_coop", 2.84},             {"128x192x256_c1x1_coop_fastaccum", 3.32},
};
constexpr double kFixedUs = 1.5;             // launch and prologue/epilogue of one call
constexpr double kStreamBytesPerUs = 3.1e6;  // HBM3e streaming rate the GEMMs reach (~73 % of copy)

// A cluster row's is its twin's (sparse24_model_us scales it by sparse24_cluster_rate).
double tile_rate(int config) {
  if (is_cluster_row(config)) config = sparse24_cluster_twin(config);
  for (const TileRate& r : kTileRates)
    if (sparse24_row(r.name) == config) return r.ns_per_wave_k;
  return -1.0;
}

// sparse24_cluster_rate: min(at_sms - slope * log2(row tiles / SMs), most), fitted on the
// H100 probe h100/tuning/tune_sparse24_cluster_{default,fast}.jsonl (1536-16384 tokens) on the bench's
// weights 57344 x 8192, 8192 x 28672, 28672 x 4096, 10240 x 8192 and 8192 x 8192 (the measured time
// over the twin's, divided by the model's ratio of the two, which carries the cluster's and the
// token columns' padding). Per weight, geomean over M: the promoted 128x192 row 1.04-1.06 on 64 row
// tiles, 1.00 on 80, 0.96 on 224, 0.90 on 448; the fast 128x192 row 0.85-0.97 on 64-80, 0.88 on
// 224, 0.81 on 448; the fast 128x256 row (against the 128x256 1x2 pair) 0.91-0.94 on every weight
// from 2048 tokens, 0.95-1.04 at 1536 (1.00-1.04 on weights of up to 112 row tiles). The fewest
// tokens at which sparse24_partial_column weighs each (min_tokens; on weights of more row tiles
// than SMs min_tokens_many_rows): as far as they measured faster. A second probe at 800-1885 tokens
// on four weights of 224-462 row tiles (h100/tuning/tune_sparse24_cluster_below2048*.jsonl) had
// both the promoted 128x192 row and the fast 128x256 row faster from 1200 tokens (0.84-0.97x) and
// even at 800-1000 (0.96-1.05x). The promoted row from 1153 tokens there: the seventh 192-token
// column, which 1200 already has (0.93-1.00x) and 1000 not (1.01-1.06x); below, at 1170 tokens, the
// 128x192 tile without the cluster took 1.05x the cluster row's time at 1287 (H100 sweep).
// twin_rate_from: on weights of up to as many row tiles as SMs the fast 128x256 row is weighed from
// here too, below min_tokens at its twin's rate (1.0) and never above its modelled time at
// min_tokens (more tokens never model faster). At 600-768 tokens on 10240 x 8192 it took 0.89-0.98x
// the pick's time where it needs fewer waves than the 1x2 pair (240 tiles of 128x256 in two waves,
// the pair's padding to an even column count three), and 1.07-1.50x where it does not
// (h100/tuning/tune_sparse24_fast_c2x1_low.jsonl); at 1536 and 1700 tokens on up to 112 row tiles
// 0.96-1.06x the pair's time where both need the same waves. Held out on an H100 at 29 random
// shapes of 1059-2014 tokens on 4096-16384 rows whose plan moved to it: 0.722-1.101x the old plan's
// time, geomean 0.916x, slower at 7 (1.08-1.10x where it replaced the fast 128x192 tile at five and
// six columns on 12800 rows; h100/tuning/tune_sparse24_fast_low_heldout.jsonl).
// most_from_rows: the fewest row tiles on which `most` caps the rate (below, the fitted line alone).
// The fast 128x192 row on 10-16 row tiles took 1.03-1.10x its twin's time at 11 of 11 points of
// 2048-12348 tokens (h100/tuning/tune_sparse24_fast_sk_heldout.jsonl,
// tune_sparse24_fast192_rates.jsonl), where the cap had it 5 % faster; on 18-28 row tiles
// 0.78-1.29x (not one rate). Held out on an H100 at 32 random shapes of 2095-6955 tokens on 8-16 row
// tiles whose plan moved to the fast 128x192 tile: 0.817-0.976x the cluster row's time
// (h100/tuning/tune_sparse24_fast192_narrow_heldout.jsonl).
struct ClusterRate {
  const char* name;
  double at_sms, slope, most;  // the rate where the row tiles equal the SMs, per doubling of them, its largest
  int64_t min_tokens, min_tokens_many_rows, twin_rate_from, most_from_rows;
};
constexpr ClusterRate kClusterRates[] = {
    {"128x192x256_c2x1_coop", 1.00, 0.06, 1.04, 1200, 1153, 0, 0},
    {"128x192x256_c2x1_coop_fastaccum", 0.93, 0.07, 0.95, 2048, 2048, 0, 17},
    {"128x256x128_c2x1_coop_fastaccum", 0.92, 0.0, 0.92, 2048, 1200, 512, 0},
};

int64_t token_column(int config) { return int64_t{kSparse24Configs[config].tile_n} * kSparse24Configs[config].cluster_n; }

const ClusterRate* cluster_rate_row(int config) {
  for (const ClusterRate& r : kClusterRates)
    if (sparse24_row(r.name) == config) return &r;
  return nullptr;
}

}  // namespace

namespace {
bool many_row_tiles(int config, int64_t N, int sm_count) {
  return (N + kSparse24Configs[config].tile_m - 1) / kSparse24Configs[config].tile_m > sm_count;
}
// The tokens from which cluster row `r` (`config`) has its fitted rate on an N-row weight.
int64_t fitted_rate_from(const ClusterRate& r, int config, int64_t N, int sm_count) {
  return many_row_tiles(config, N, sm_count) ? r.min_tokens_many_rows : r.min_tokens;
}
// Whether the row runs at its twin's rate at `tokens` (ClusterRate::twin_rate_from; up to as many
// row tiles as SMs, where the probe ran).
bool at_twin_rate(const ClusterRate& r, int config, int64_t tokens, int64_t N, int sm_count) {
  return r.twin_rate_from > 0 && !many_row_tiles(config, N, sm_count) && tokens < r.min_tokens;
}
}  // namespace

bool sparse24_weighs_cluster_row(int config, int64_t M, int64_t N, int sm_count) {
  const ClusterRate* r = cluster_rate_row(config);
  if (r == nullptr) return false;
  return at_twin_rate(*r, config, M, N, sm_count) ? M >= r->twin_rate_from
                                                  : M >= fitted_rate_from(*r, config, N, sm_count);
}

double sparse24_cluster_rate(int config, int64_t N, int sm_count) {
  const ClusterRate* r = cluster_rate_row(config);
  if (r == nullptr) return 1.0;
  const int64_t tiles = (N + kSparse24Configs[config].tile_m - 1) / kSparse24Configs[config].tile_m;
  const double line = r->at_sms - r->slope * std::log2(static_cast<double>(tiles) / sm_count);
  return tiles >= r->most_from_rows ? std::min(r->most, line) : line;
}

double sparse24_pair_rate(int config, int64_t tokens, int64_t N) {
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  if (!(c.tile_m == 128 && c.tile_n == 128 && c.cluster_n == 2) || tokens < kSparse24PairNarrowMinTokens) return 1.0;
  const int64_t row_tiles = (N + c.tile_m - 1) / c.tile_m;
  const double span = static_cast<double>(kSparse24PairWideRows - kSparse24PairNarrowRows);
  const double share = std::clamp(static_cast<double>(kSparse24PairWideRows - row_tiles) / span, 0.0, 1.0);
  return 1.0 + (kSparse24PairNarrowRate - 1.0) * share;
}

bool sparse24_clamps_last_column(int config) { return kSparse24Configs[config].splittable(); }

int64_t sparse24_oob_rows(int config, int64_t tokens) {
  const int64_t tile_n = kSparse24Configs[config].tile_n;
  if (sparse24_clamps_last_column(config)) return tokens >= tile_n ? 0 : tile_n - tokens;
  const int64_t col = token_column(config);
  const int64_t past = (tokens + col - 1) / col * col - tokens;
  // The 128-token stream-K tile from one whole column on: its last column loads only its rows of X,
  // rounded up to 8 (common/token_row_plan.h). The 32-token one keeps 3/4 of the charge, its rate
  // having been fitted with it: charged in full, the model took the 64x32 tile at 65-73 tokens on
  // 72-160 row tiles of 64, 1.03-1.07x its time; not charged, it took it at 33-56 tokens on 80-128
  // row tiles, 1.01-1.06x their time (h100/tuning/tune_sparse24_sk32_charge.jsonl).
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  if (c.stream_k() && c.cluster_n == 1 && tokens >= col) return c.tile_n >= 128 ? past % 8 : past - past / 4;
  return past;
}

int64_t sparse24_main_rows(int config, int64_t tokens) { return tokens / token_column(config) * token_column(config); }


double sparse24_fast_wide_swizzled_rate(int64_t tokens, int64_t N, int sm_count, Sparse24Profile profile) {
  const int config = sparse24_detail::kFastWide.index;
  const int64_t row_tiles = (N + kSparse24Configs[config].tile_m - 1) / kSparse24Configs[config].tile_m;
  const bool within = row_tiles % 4 == 0 && row_tiles >= kSparse24FastWideSwizzledMinRowTiles &&
                      row_tiles <= kSparse24FastWideSwizzledMaxRowTiles &&
                      tokens >= kSparse24FastWideSwizzledMinTokens && tokens <= kSparse24FastWideSwizzledMaxTokens;
  return within && sparse24_tile_order(tokens, N, config, sm_count, profile).swizzle > 1
             ? sparse24_card_traits(profile).wide_swizzled_rate
             : 1.0;
}

double sparse24_model_us(int config, int64_t tokens, int64_t N, int64_t K, int sm_count, Sparse24Profile profile) {
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  const double rate = tile_rate(config);
  if (rate < 0 || tokens <= 0) return 0.0;
  const int64_t row_tiles = (N + c.tile_m - 1) / c.tile_m;
  const int64_t tiles_m = (row_tiles + c.cluster_m - 1) / c.cluster_m * c.cluster_m;  // a cluster's padding
  // The tiles the scheduler runs: its swizzle band's padding too (sparse24_scheduled_tiles), where the
  // card's traits count it. Promoted rows only: the fast rows' constants (their cluster rates, the
  // fast 128x192 tile's swizzled rate) were fitted through the model without it and carry it;
  // counted for them too, it moved 75 plans of the H100's tuning files, slower at 14 of the 22 timed.
  // Bands of 4, not the fitted band (fits_swizzle_band): the plans this term picks were held out in
  // bands of 4 (log §50-§51); with the fitted band the 128x192 tile would take back 18 of those 30
  // points from its cluster row, which no run has compared yet.
  const bool counts_band = sparse24_card_traits(profile).counts_swizzle_band && !c.fast_accum;
  const int64_t run_tiles = sparse24_scheduled_tiles(
      config, tokens, N, counts_band ? banded_order(tokens, N, config, profile).swizzle : 1);
  double tile_us = rate * static_cast<double>(K) * 1e-3;
  // A cluster row: its twin's time per wave (in the twin's order) times sparse24_cluster_rate.
  const int rate_row = is_cluster_row(config) ? sparse24_cluster_twin(config) : config;
  if (rate_row == sparse24_detail::kWide.index && sparse24_tile_order(tokens, N, rate_row, sm_count, profile).swizzle > 1)
    tile_us *= sparse24_card_traits(profile).wide_swizzled_rate;  // its rate was fitted in the default order
  if (config == sparse24_detail::kFastWide.index) tile_us *= sparse24_fast_wide_swizzled_rate(tokens, N, sm_count, profile);
  const ClusterRate* cr = cluster_rate_row(config);
  const bool twin_rate = cr != nullptr && at_twin_rate(*cr, config, tokens, N, sm_count);
  if (rate_row != config && !twin_rate) tile_us *= sparse24_cluster_rate(config, N, sm_count);
  tile_us *= sparse24_pair_rate(config, tokens, N);
  const double waves = std::ceil(static_cast<double>(run_tiles) / sm_count);
  const double oob_tiles = kSparse24OobRowCost * static_cast<double>(tiles_m) *
                           static_cast<double>(sparse24_oob_rows(config, tokens)) / c.tile_n;
  const double compute = (waves + oob_tiles / sm_count) * tile_us;
  const double bytes = 0.625 * static_cast<double>(N) * K + static_cast<double>(tokens) * K + 2.0 * tokens * N;
  const double us = kFixedUs + std::max(compute, bytes / kStreamBytesPerUs);
  // Below its fitted rate's tokens, never above its time there (more tokens never model faster).
  return twin_rate ? std::min(us, sparse24_model_us(config, cr->min_tokens, N, K, sm_count, profile)) : us;
}

Sparse24Choice sparse24_partial_column(int64_t M, int64_t N, int64_t K, int config, bool fast_accum, bool with_workspace,
                                       int sm_count, Sparse24Profile profile) {
  Sparse24Choice best{config, 1, -1, 0, M};
  const Sparse24ConfigRow& c = kSparse24Configs[config];
  if (tile_rate(config) < 0 || !(c.splittable() || c.stream_k())) return best;
  // Another plan must model 3 % faster; 10 % to leave the 128x192 tile, which the heuristic takes
  // where it measured faster on the grid (sparse24_wide_token_tile, sparse24_narrow_wide_tile).
  const double margin = config == sparse24_detail::kWide.index ? 0.90 : 0.97;
  // A configuration's cluster twin (the same tile with X multicast over two weight-row tiles) where
  // sparse24_weighs_cluster_row weighs it (the tokens it measured faster from), else -1; and the
  // twin in the configuration's place where it models 3 % faster.
  const auto weighed_twin = [&](int t) {
    const int tw = sparse24_cluster_twin(t);
    return tw >= 0 && sparse24_weighs_cluster_row(tw, M, N, sm_count) ? tw : -1;
  };
  const auto or_faster_twin = [&](int t) {
    const int tw = weighed_twin(t);
    return tw >= 0 && sparse24_model_us(tw, M, N, K, sm_count, profile) <
                          0.97 * sparse24_model_us(t, M, N, K, sm_count, profile)
               ? tw
               : t;
  };
  // The pick or its twin; the other plans must beat that by the pick's margin.
  best.config = or_faster_twin(config);
  double best_us = margin * sparse24_model_us(best.config, M, N, K, sm_count, profile);
  const auto consider_one = [&](int t) {
    t = or_faster_twin(t);
    if (t == config || t == best.config) return;
    const double us = sparse24_model_us(t, M, N, K, sm_count, profile);
    if (us < best_us) {
      best_us = us;
      best = Sparse24Choice{t, 1, -1, 0, M};
    }
  };
  // The fast 128x192 tile, in fast accumulation, on weights of at most half as many 128-row tiles
  // as SMs, 5 % below the best plan so far: its rate comes from one probe
  // (h100/tuning/tune_sparse24_fast192.jsonl). On larger weights it measured slower than the model
  // says from seven token columns on (57344 x 8192 at 807-2302 tokens: 1.01-1.27x the old plan's
  // time, h100/tuning/ab_sparse24_fast192.jsonl; nine weights of 72-462 row tiles at 1250-2000
  // tokens: up to 1.31x the fast pair's, tune_sparse24_fast_wide_rows.jsonl), but 0.66-0.87x the
  // plan's time at 950-1130 tokens on 72-296 row tiles where the model has it 14 % below it (the
  // pair pads 1100 tokens to three columns of 512; tune_sparse24_fast_wide_rows.jsonl,
  // ab_sparse24_fast_wide_columns.jsonl): there, up to three times as many row tiles as SMs, it is
  // weighed up to six columns (1152 tokens) with that margin. On 57344 x 8192 (448 row tiles) it
  // measured even there (0.97-1.01x; 1.01-1.08x the pair's time at 807-1300 tokens, stop 64).
  const auto consider_fast_wide = [&] {
    const int t = sparse24_detail::kFastWide.index;
    const int64_t tn = sparse24_detail::kFastWide.tile_n;
    const int64_t row_tiles = (N + 127) / 128;
    const bool narrow_weight = 2 * row_tiles <= sm_count;
    if (!fast_accum || M < tn) return;
    if (!narrow_weight && (M > kSparse24FastWideMaxColumns * tn || row_tiles > 3 * int64_t{sm_count})) return;
    if (sparse24_model_us(t, M, N, K, sm_count, profile) < (narrow_weight ? 0.95 : 0.86) * best_us) consider_one(t);
  };
  // The between tiles (promoted accumulation) where one column holds M with at most
  // kSparse24FewOobRows rows past it, up to their max_columns columns, as far as they were measured.
  const auto consider_between = [&] {
    if (fast_accum) return;
    for (const sparse24_detail::BetweenTile& b : sparse24_detail::kBetween)
      if (M + kSparse24FewOobRows >= b.t.tile_n && M <= b.max_columns * b.t.tile_n) consider_one(b.t.index);
  };
  if (M % token_column(config) == 0) {
    // Whole token columns (the grid points the heuristic was tuned on): a few plans only, until the
    // model is refitted with the tile orders (docs/experiments/pending.md 0). The 128x192 tile for
    // the 128x128 pair below 8192 tokens (sparse24_wide_token_tile decides from there) on a card
    // that measured it the faster there (Sparse24CardTraits::wide_on_whole_columns); and, given a
    // workspace, with promoted accumulation, the 128-token stream-K tile: on weights under 2048 rows
    // the 128x192 tile of sparse24_narrow_wide_tile leaves a last wave of a few tiles at some whole
    // columns (1280 x 8192 at 3072 tokens: 160 tiles), where stream-K spreads it (and the other way
    // round below). The between tiles, as on partial columns. In fast accumulation the fast 128x192
    // tile, whose 192-token columns need no cluster padding.
    const int wide = sparse24_detail::kWide.index;
    if (sparse24_card_traits(profile).wide_on_whole_columns && config == sparse24_detail::kDefault[3].index &&
        M < 8192)
      consider_one(wide);
    const int sk = sparse24_detail::kStreamK128x128;
    if (with_workspace && !fast_accum && M >= kSparse24Configs[sk].tile_n) consider_one(sk);
    // Where sparse24_heuristic_stream_k took that tile for a short last wave (2048-3584 rows from
    // 2048 tokens), the 128x192 tile of the mode too: the promoted one took 0.64-0.97x the stream-K
    // tile's time at most points of 2048-3500 tokens on 2560-4608 rows on an H100
    // (h100/tuning/tune_sparse24_sk_waves.jsonl, tune_sparse24_regret.jsonl), 0.89-0.91x at 2048
    // tokens on 4096 rows on an H200 (tune_sparse24_interleaved.jsonl); the stream-K tile serves
    // both modes, and the fast 128x192 tile took 0.95-0.97x the promoted one's time elsewhere.
    if (config == sk) consider_one(fast_accum ? sparse24_detail::kFastWide.index : wide);
    // The between tiles as on partial columns: whole columns of the pick need not be fewer waves (on
    // 56 row tiles at 1024 tokens 128x160 took 0.85x the 128x128 pair's time, seven columns in three
    // waves against eight in four; h100/tuning/tune_sparse24_default_low.jsonl).
    consider_between();
    consider_fast_wide();
    return best;
  }
  // The data-parallel tiles of the accumulation mode (no workspace), narrowest token tile first.
  const sparse24_detail::Tile* family = fast_accum ? sparse24_detail::kFast : sparse24_detail::kDefault;
  const int n_family = fast_accum ? 5 : 4;
  // One launch of another tile whose token tile fits in M (its last column clamped inside M): the
  // data-parallel tiles of the mode and, given a workspace, the stream-K tiles.
  for (int i = 0; i < n_family; ++i)
    if (M >= kSparse24Configs[family[i].index].tile_n) consider_one(family[i].index);
  // With promoted accumulation also the 128x192 tile and the between tiles where one column holds M
  // with at most kSparse24FewOobRows rows past it; the between tiles only up to max_columns
  // columns, as far as they were measured (tuning/tune_sparse24_between_tiles*.jsonl).
  consider_fast_wide();
  if (!fast_accum && M + kSparse24FewOobRows >= sparse24_detail::kWide.tile_n) consider_one(sparse24_detail::kWide.index);
  consider_between();
  // The 32-token stream-K tile up to kSk32MaxTokens (12 token columns): its rate, fitted on one
  // column, holds less the more columns it runs. At 13 columns (400-409 tokens) its time over the
  // model's, against the fastest other tile's, was 1.29x on 8 row tiles and 1.43-1.49x on 10, where
  // the 64x128 tile ran 0.89-0.92x its time (1280 x 8192; 1.00x at K = 1024); at 9-11 columns
  // 1.19-1.21x, still the fastest tile (0.91-0.96x the next); at 1287-3036 tokens 1.6-2.6x the
  // fastest tile's time (H100, h100/tuning/tune_sparse24_sk32_columns.jsonl,
  // tune_sparse24_narrow_weights.jsonl). The 128-token one also below one column from 65 tokens,
  // its rows past M charged in full: at 97 and 101 tokens on 9216 and 10240 x 8192 it took
  // 0.83-0.96x the time of the 64x64 / 64x112 tiles the model took without it (H100,
  // h100/tuning/tune_sparse24_sk32_charge.jsonl).
  if (with_workspace) {
    if (M <= kSk32MaxTokens && M >= kSparse24Configs[sparse24_detail::kStreamK128x32].tile_n)
      consider_one(sparse24_detail::kStreamK128x32);
    if (M >= kSk128MinModelTokens) consider_one(sparse24_detail::kStreamK128x128);
  }
  // Two launches: a main launch on whole token columns (of `config`; where M is less than one of
  // them, e.g. 129..255 tokens on the 128x128 cluster pair, of a narrower tile of the mode), then
  // a tail launch on the rest. Each reads the whole weight, so this pays only where one launch
  // would leave most of a wave or a cluster pair's column idle.
  int mains[7];
  int n_mains = 0;
  if (sparse24_main_rows(config, M) > 0) {
    mains[n_mains++] = config;
    // Its cluster twin on the same whole columns.
    const int twin = weighed_twin(config);
    if (twin >= 0 && token_column(twin) == token_column(config)) mains[n_mains++] = twin;
  } else {
    for (int i = 0; i < n_family; ++i)
      if (token_column(family[i].index) < token_column(config) && sparse24_main_rows(family[i].index, M) > 0)
        mains[n_mains++] = family[i].index;
  }
  for (int mi = 0; mi < n_mains; ++mi) {
    const int main = mains[mi];
    const int64_t main_rows = sparse24_main_rows(main, M);
    if (main_rows == M) continue;
    const double main_us = sparse24_model_us(main, main_rows, N, K, sm_count, profile);
    for (int i = 0; i < n_family; ++i) {
      const int t = family[i].index;
      const int64_t tn = token_column(t);
      const int64_t want = (M - main_rows + tn - 1) / tn * tn;  // whole tail columns over the rest
      if (want > M) continue;
      const int64_t start = (M - want + 3) / 4 * 4;  // 16-byte aligned per-token scales
      const int64_t rows = M - start;                // >= M - main_rows: main_rows % 4 == 0
      const double us = main_us + sparse24_model_us(t, rows, N, K, sm_count, profile);
      if (us < best_us) {
        best_us = us;
        best = Sparse24Choice{main, 1, t, rows, main_rows};
      }
    }
  }
  return best;
}

double sparse24_choice_model_us(const Sparse24Choice& p, int64_t M, int64_t N, int64_t K, int sm_count,
                                Sparse24Profile profile) {
  if (p.tail_config < 0) return sparse24_model_us(p.config, M, N, K, sm_count, profile);
  return sparse24_model_us(p.config, p.main_rows, N, K, sm_count, profile) +
         sparse24_model_us(p.tail_config, p.tail_rows, N, K, sm_count, profile);
}

namespace {

// Fast accumulation requested at kSparse24FastModelMinTokens..kSparse24FastMinTokens tokens: the
// promoted plan `p` unless one launch of the fast 128x256 pair (or its 2x1 cluster twin where
// sparse24_weighs_cluster_row weighs it) or the fast 128x192 tile models 3 % faster.
Sparse24Choice fast_below_min(const Sparse24Choice& p, int64_t M, int64_t N, int64_t K, int sm_count,
                              Sparse24Profile profile) {
  Sparse24Choice best = p;
  double best_us = 0.97 * sparse24_choice_model_us(p, M, N, K, sm_count, profile);
  const int pair = sparse24_detail::kFast[4].index;
  const int twin = sparse24_cluster_twin(pair);
  for (const int t : {pair, twin, sparse24_detail::kFastWide.index}) {
    if (t == twin && !sparse24_weighs_cluster_row(t, M, N, sm_count)) continue;
    const double us = sparse24_model_us(t, M, N, K, sm_count, profile);
    if (us < best_us) {
      best_us = us;
      best = Sparse24Choice{t, 1, -1, 0, M};
    }
  }
  return best;
}

}  // namespace

Sparse24Choice sparse24_choose(int64_t M, int64_t N, int64_t K, int config, int split_k, bool fast_accum, int sm_count,
                               bool with_workspace, Sparse24Profile profile) {
  Sparse24Choice p;
  const bool fast_requested = fast_accum;
  if (config < 0 && M < kSparse24FastMinTokens) fast_accum = false;  // the promoted plan (kSparse24FastMinTokens)
  // Stream-K only with a workspace, and not under a forced split.
  p.config = config >= 0 ? config : sparse24_heuristic(M, N, K, sm_count, fast_accum, with_workspace && split_k < 2);
  if (split_k >= 2) {
    // Where the heuristic took the decode kernel: the tile it would take otherwise.
    if (config < 0 && kSparse24Configs[p.config].skinny()) p.config = narrow_tile(fast_accum);
    if (kSparse24Configs[p.config].splittable()) p.split_k = split_k;
    return p;
  }
  if (with_workspace && split_k != 1 && (config < 0 || kSparse24Configs[p.config].splittable()))
    p = library_split(M, N, K, p.config, fast_accum, sm_count);
  // The library's own pick, unsplit, where its last token column is partial: the plan the cost
  // model prefers (sparse24_partial_column).
  // one_column_band's pick and the two-column band's (sparse24_two_narrow_columns) are measured
  // where the model (15 % RMS) is least sure; they are kept.
  if (config < 0 && p.split_k == 1 && !one_column_band(M, N, sm_count, fast_accum) &&
      !sparse24_two_column_band(M, N, sm_count))
    p = sparse24_partial_column(M, N, K, p.config, fast_accum, with_workspace, sm_count, profile);
  if (config < 0 && fast_requested && !fast_accum && M >= kSparse24FastModelMinTokens && p.split_k == 1)
    p = fast_below_min(p, M, N, K, sm_count, profile);
  if (p.tail_config < 0) p.main_rows = M;
  return p;
}

Sparse24SkinnyShape sparse24_skinny_shape(int64_t m_tok, int64_t n_out, int64_t k, int sm_count) {
  Sparse24SkinnyShape s;
  s.T = m_tok <= 8 ? 1 : m_tok <= 16 ? 2 : 4;
  const int64_t kp = (k + kSparse24SkinnyPanel - 1) / kSparse24SkinnyPanel;
  const int64_t sms = sm_count;
  s.KW = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kSparse24SkinnyMaxWarps, kp)));
  // 16 rows per warp (MT = 1, the only one instantiated): 32 (MT = 2) measured slower on every layer
  // the heuristic gives this kernel.
  s.MT = 1;
  s.row_ctas = static_cast<int>((n_out + 16 * s.MT - 1) / (16 * s.MT));
  for (int c = 1; c <= kSparse24SkinnyMaxCluster; c *= 2) {
    if (c > 1 && kp < static_cast<int64_t>(kSparse24SkinnyMinPanelsPerWarp) * s.KW * c) break;
    s.C = c;
    if (static_cast<int64_t>(s.row_ctas) * c >= sms) break;
  }
  return s;
}

}  // namespace qsgemm::kernels
