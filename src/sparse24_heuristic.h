// The pure heuristic that picks a 2:4 sparse FP8 configuration (an index of
// QSGEMM_SPARSE24_CONFIGS) from the problem shape. Kept apart from the kernels so that retuning it
// recompiles only host code. Unit-tested in tests/cpu/test_sparse24_validation.cpp.
#pragma once

#include <cstdint>

#include "tile_order.h"

namespace qsgemm::kernels {

// Tokens (the kernel's N) decide the tile first. At decode sizes the kernel streams the weight once
// and the narrowest token tile wastes the least work; past ~128 tokens the 128-row cooperative tile
// with a 1x2 cluster wins, and with fast accumulation the 128x256x128 tile (its accumulators fit
// only without promotion) wins from 512 tokens on (at 16384 tokens against the fast 128x128 tile,
// which this rule took there before: 1.075-1.144x on all 12 benchmark layers, interleaved;
// bench/results/h200/tune_sparse24_fast16384.jsonl).
//
// Then the weight rows (N_out) correct it: while that tile would cover the problem in fewer than
// half as many tiles as the GPU has SMs, step down to the next smaller tile of the same family
// (128x256 -> 128x128 -> 64x128 -> 64x64 -> 64x32). Narrow layers (a tensor-parallel shard, N_out =
// 1280 or 4096) otherwise leave most SMs idle: e.g. M=256, 1280x8192 ran 51% slower on the
// 128x128 tile (10 tiles) than on 64x64 (80 tiles).
//
// Thresholds from `qsgemm tune sparse24` on the H200 over the 12 benchmark layers at M = 64 ... 2048
// (scripts/tune_sweep.sh; bench/results/h200/tune_sparse24.jsonl): the rule picks the measured best
// configuration at all 72 points without fast accumulation, and within 1.2% geomean (worst 16%)
// with it (sweep at da3d820; the file's rerun with the stream-K build, its data-parallel rows: all
// 72 again, and 0.4%, worst 16%). Re-checked with the two-partials mainloop (0dcf36d; the
// contenders of each M range timed interleaved on the 12 layers at M = 1 ... 16384,
// tune_sparse24_interleaved.jsonl): the picks are within 0.6% geomean of the fastest, worst 0.89x;
// only the narrow-weight rule below (sparse24_narrow_wide_tile) changed.
namespace sparse24_detail {
struct Tile {
  int index, tile_m, tile_n;  // tile_m: weight rows, tile_n: tokens
};
// Each family from the smallest tile to the largest (indices of QSGEMM_SPARSE24_CONFIGS).
inline constexpr Tile kDefault[] = {{0, 64, 32}, {1, 64, 64}, {2, 64, 128}, {3, 128, 128}};
inline constexpr Tile kFast[] = {{4, 64, 32}, {5, 64, 64}, {6, 64, 128}, {7, 128, 128}, {8, 128, 256}};
inline constexpr Tile kWide = {9, 128, 192};  // promoted accumulation, cluster 1x1
}  // namespace sparse24_detail

// The 128x192 tile (configuration 9, promoted accumulation) from 8192 tokens, where the 192-wide
// token tiles waste at most 1.5 % of M. Measured on the H200 against configuration 3 (128x128,
// cluster 1x2) on the 12 benchmark layers, same run, with the tile order of sparse24_tile_order
// (bench/results/h200/tune_sparse24_192.txt; 57344x8192 not run past 4096 tokens, 8192x28672
// not at 16384): 1.03-1.12x at 8192 tokens on 10 of 11 layers (4096x14336: 478 against 524 us)
// and 0.97x on 28672x4096; 1.03-1.21x at 16384 on all 10 (the 1280-row shard: 180 against 219 us);
// but
// 0.84-0.92x at 4096 tokens (22 tiles of 192: 3 % wasted, and fewer, longer waves) and worse
// below. With a 1x2 cluster it lost at 8192 too.
// Fast accumulation keeps its own rule (its 128x256 tile fits without the promoted copy).
inline bool sparse24_wide_token_tile(int64_t M_tokens) {
  const int64_t waste = (M_tokens + 191) / 192 * 192 - M_tokens;
  return M_tokens >= 8192 && 200 * waste <= 3 * M_tokens;
}

// The 128x192 tile on narrow weights (under 2048 rows: fewer than 16 row tiles of 128, e.g. the
// 1280-row tensor-parallel qkv shard) from 2048 tokens, with or without a workspace: there the token
// tiles decide the waves, and 192-wide ones leave fewer. Measured on the H200 with the two-partials
// mainloop in configurations 3 and 11, interleaved, on the 1280x8192 shard
// (bench/results/h200/tune_sparse24_interleaved.jsonl): 28.7 against 41.2 us (128x128, cluster
// 1x2) and 33.0 (stream-K 128x128) at 2048 tokens, 52.8 against 64.1 and 55.0 at 4096, 177.1
// against 213.6 and 182.5 at 16384; at 8192 stream-K was faster (94.6 against 101.8). On the
// 4096-row and wider layers the 128x128 tile won at 2048 and 4096 tokens (e.g. 44.5 against 48.1
// on 4096x4096 at 2048).
inline bool sparse24_narrow_wide_tile(int64_t M_tokens, int64_t N_out, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t tiles192 = ((N_out + 127) / 128) * ((M_tokens + 191) / 192);
  return M_tokens >= 2048 && N_out < 2048 && 2 * tiles192 >= sms;
}

// Stream-K (when the caller gives a workspace): the cooperative 128x32 / 128x128 tiles on CUTLASS's
// stream-K scheduler (configurations 10 and 11) win where the tile rule above leaves a ragged last
// wave or where every CTA would read the same token rows at the same time. Measured on the H200
// (`qsgemm tune sparse24`, 12 layers x M = 1 ... 4096, bench/results/h200/tune_sparse24.jsonl;
// gains over the best configuration without stream-K):
//  * M <= 32 when the 64-row tiles fill at least one wave and the last wave at most half
//    (10240 rows: 160 tiles, 1.08-1.12x; 28672: 448 tiles, 1.04-1.20x); and at M <= 8 on at least
//    four waves (57344x8192: 84.6 against 102.5 us at M = 1, 1.09x at 8): at one or a few tokens
//    all CTAs read the same X rows in lockstep, which stream-K's staggered K ranges break up. It
//    loses on the layers that fit one wave (1280-8192 rows: 0.78-0.94x) and at M = 16-64 on 57344.
//  * 64 < M <= 128 with at least one wave of 64-row tiles: 128x128 (10240x8192: 24.9 against 32.1
//    us, the one point where the dense baseline had won; 28672x4096 1.13x; 57344x8192 1.09x).
//  * 128 < M <= 256 with 1 to 1.5 waves of 128x128 tiles (10240x8192: 35.8 against 40.8 us).
//  * M >= 2048 with fewer than 4 waves of 128x128 tiles, the last at most half full (the 1280-row
//    shard: 34.3 against 42.8 us at M = 2048, 57.1 against 66.8 at 4096).
// Elsewhere it loses (up to 2x at M >= 512, where the data-parallel tiles already fill the GPU).
inline int sparse24_heuristic_stream_k(int64_t M_tokens, int64_t N_out, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t rows64 = (N_out + 63) / 64;
  const auto last_wave_at_most_half = [&](int64_t tiles) { return tiles % sms != 0 && tiles % sms <= sms / 2; };
  constexpr int k128x32 = 10, k128x128 = 11;  // QSGEMM_SPARSE24_STREAMK_CONFIGS
  if (M_tokens <= 32 && rows64 >= sms && last_wave_at_most_half(rows64)) return k128x32;
  if (M_tokens <= 8 && rows64 >= 4 * sms) return k128x32;
  if (M_tokens > 64 && M_tokens <= 128 && rows64 >= sms) return k128x128;
  const int64_t tiles128 = ((N_out + 127) / 128) * ((M_tokens + 127) / 128);
  if (M_tokens > 128 && M_tokens <= 256 && tiles128 >= sms && 2 * tiles128 <= 3 * sms) return k128x128;
  if (M_tokens >= 2048 && tiles128 < 4 * sms && last_wave_at_most_half(tiles128)) return k128x128;
  return -1;
}

// The split-K decode kernel (configuration 12, not CUTLASS: src/kernels/sm90/sparse24/
// sm90_sparse24_skinny.cu) at M <= 8 on small weights whose 64-row CUTLASS tiles leave SMs idle
// (fewer tiles than SMs) and that hold at most 2^24 weight elements. Measured on the H200 against the
// configuration the rest of this heuristic picks, same run, M = 1 and 8 (docs/performance.md): 1.30x
// on 1280x8192 (13.1 against 10.1 us at M = 1), 1.16x / 1.03x on 8192x1024, 1.13x / 1.00x on
// 4096x4096; where either condition fails it lost: 0.99x / 0.84x on 4096x14336 (58.7M elements),
// 0.99x / 0.95x on 6144x4096 (25.2M), 0.72-0.89x on the larger layers (7168 rows or more, K >= 3584).
// Its sums are exact float32 sums of fp16 products, so it serves fast-accumulation requests too.
inline bool sparse24_skinny_decode(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  return M_tokens <= 8 && (N_out + 63) / 64 < sms && N_out * K <= (int64_t{1} << 24);
}

inline int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum,
                              bool stream_k = false) {
  using sparse24_detail::Tile;
  constexpr int kSkinny = 12;  // kernels::kSparse24SkinnyConfig
  if (sparse24_skinny_decode(M_tokens, N_out, K, sm_count)) return kSkinny;
  if (!fast_accum && sparse24_narrow_wide_tile(M_tokens, N_out, sm_count)) return sparse24_detail::kWide.index;
  if (stream_k) {
    const int c = sparse24_heuristic_stream_k(M_tokens, N_out, sm_count);
    if (c >= 0) return c;
  }
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  auto tiles = [&](const Tile& t) { return ((N_out + t.tile_m - 1) / t.tile_m) * ((M_tokens + t.tile_n - 1) / t.tile_n); };
  // The wide tile where it won, if it leaves at least half as many tiles as SMs (as below).
  if (!fast_accum && sparse24_wide_token_tile(M_tokens) && 2 * tiles(sparse24_detail::kWide) >= sms)
    return sparse24_detail::kWide.index;
  const Tile* family = fast_accum ? sparse24_detail::kFast : sparse24_detail::kDefault;
  int i;  // by tokens
  if (M_tokens <= 32) i = 0;
  else if (M_tokens <= 64) i = 1;
  else if (M_tokens <= 128) i = 2;
  else if (!fast_accum || M_tokens <= 256) i = 3;
  else i = 4;
  // by weight rows: at least half as many tiles as SMs
  while (i > 0 && 2 * tiles(family[i]) < sms) --i;
  return family[i].index;
}

// Split-K for a data-parallel tile of tile_m weight rows x tile_n tokens (Sparse24LinearOptions::
// split_k = 0, given a workspace): the number of K slices, 1 for none. S slices of whole 256-wide K
// tiles run as S batches of the same kernel, so a weight with few row tiles gets S times the CTAs.
// Unlike the blockwise tiles the sparse ones gain little from it: their small-M time on the narrow
// layers is mostly the fixed cost of a call, not too few SMs streaming the weight. Measured on the
// H200 (`qsgemm tune sparse24 --configs 0,1,2,10,12 --split-k 1,2,4,7,8,14,16 --interleave`, 8
// layers of 1280-8192 rows x M = 1..128; bench/results/h200/tune_sparse24_splitk.jsonl): on the
// 1280-row tensor-parallel shard (20 tiles of 64 rows) 4 slices took 10.1-10.3 us at M = 1-32
// against 10.8-11.3 for the best unsplit kernel, and 2 slices of the 40 tiles at M = 64 10.96
// against 11.47; on the 4096-row weights (64 tiles) every split was slower (4096x4096 at M = 16:
// 9.7 us unsplit, 10.9 / 11.0 with 2 / 4 slices; 4096x14336: 16.4 against 17.3 / 17.4), as on all
// wider ones. Hence: only where the tiles fill at most a third of the SMs, 4 or 2 slices (the
// largest that keeps tiles x S within one wave, divides the K tiles and leaves >= 2048 of K each).
inline constexpr int kSparse24MaxSplitK = 16;         // the largest forced split
inline constexpr int64_t kSparse24SplitTileK = 256;   // slices are whole K tiles of 256
inline int sparse24_split_k(int64_t M_tokens, int64_t N_out, int64_t K, int tile_m, int tile_n, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t tiles = ((N_out + tile_m - 1) / tile_m) * ((M_tokens + tile_n - 1) / tile_n);
  if (K % kSparse24SplitTileK != 0 || 3 * tiles > sms) return 1;
  const int64_t k_tiles = K / kSparse24SplitTileK;
  for (int s : {4, 2})
    if (k_tiles % s == 0 && K / s >= 2048 && tiles * s <= sms) return s;
  return 1;
}

// CUTLASS's persistent tile scheduler order (Sparse24GemmArgs::swizzle / raster). From 4096 tokens:
// bands of 4 tiles, rastered along CUTLASS's M (the weight rows); measured on the H200 against
// CUTLASS's default (no swizzle, its raster heuristic) on the 128x128 cooperative tile: 3-6 % faster
// at 4096 tokens, 9 % at 8192 (4096x14336), 4-26 % at 16384 (l3-70b.gate_up: 11.05 against
// 14.86 ms). Below 4096 the default: at 2048 it was -2..+6 %, and at 256-1024 tokens the swizzled
// order ran up to 3x slower (bench/results/h200/tune_tile_order.txt). Not for narrow weights either:
// on the 1280-row tensor-parallel shard (10 row tiles) the benchmark measured it 7-25 % slower at
// 4096-16384 tokens (bench/results/h200/sparse24.json at a953f87 against 7b32013).
inline TileOrder sparse24_tile_order(int64_t M_tokens, int64_t N_out) {
  return M_tokens >= 4096 && N_out >= 2048 ? TileOrder{4, 1} : TileOrder{};
}

}  // namespace qsgemm::kernels
