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
// only without promotion) wins from 512 to 8192 tokens.
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
// with it.
namespace sparse24_detail {
struct Tile {
  int index, tile_m, tile_n;  // tile_m: weight rows, tile_n: tokens
};
// Each family from the smallest tile to the largest (indices of QSGEMM_SPARSE24_CONFIGS).
inline constexpr Tile kDefault[] = {{0, 64, 32}, {1, 64, 64}, {2, 64, 128}, {3, 128, 128}};
inline constexpr Tile kFast[] = {{4, 64, 32}, {5, 64, 64}, {6, 64, 128}, {7, 128, 128}, {8, 128, 256}};
}  // namespace sparse24_detail

inline int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum) {
  using sparse24_detail::Tile;
  (void)K;
  const Tile* family = fast_accum ? sparse24_detail::kFast : sparse24_detail::kDefault;
  int i;  // by tokens
  if (M_tokens <= 32) i = 0;
  else if (M_tokens <= 64) i = 1;
  else if (M_tokens <= 128) i = 2;
  else if (!fast_accum || M_tokens <= 256 || M_tokens > 8192) i = 3;
  else i = 4;
  // by weight rows: at least half as many tiles as SMs
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  auto tiles = [&](const Tile& t) { return ((N_out + t.tile_m - 1) / t.tile_m) * ((M_tokens + t.tile_n - 1) / t.tile_n); };
  while (i > 0 && 2 * tiles(family[i]) < sms) --i;
  return family[i].index;
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
