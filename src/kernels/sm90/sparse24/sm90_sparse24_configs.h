// The one table of 2:4 sparse FP8 kernel configurations: the public API (sparse24_config,
// sparse24_config_index), the heuristic (src/sparse24_heuristic.cpp) and the explicit
// instantiations (sm90_sparse24_gemm_*.cu) all read it. Host-only: no CUTLASS, no device code.
//
// Kernel coordinates: the weight is the sparse A operand, so the kernel's M is the weight's N
// (output channels) and the kernel's N is the token count M. Every configuration keeps
// tile_k >= 128 so that one compressed weight serves all of them (docs/formats.md §4.3).
//
// To add a configuration: append a row and choose its translation-unit group (`unit`). A new kMain
// row grows five ~10 GB translation units (sm90_sparse24_gemm_out_*.cu): prefer kWide, whose units
// (sm90_sparse24_gemm_wide_*.cu) hold two rows. Indices of later rows shift: refer to rows by
// name (sparse24_config_index, sparse24_row below), not by index.
#pragma once

#include <cstdint>

namespace qsgemm::kernels {

// Which group of translation units instantiates a row (the grouping keeps each unit's compiler peak
// at ~10 GB, docs/build.md).
enum class Sparse24Unit : uint8_t {
  kMain,     // sm90_sparse24_gemm_out_<out>_bias_<bias>.cu: data-parallel CUTLASS tiles
  kWide,     // sm90_sparse24_gemm_wide_*.cu: more data-parallel tiles, in units of their own
  kStreamK,  // sm90_sparse24_gemm_streamk_*.cu: CUTLASS's stream-K scheduler (needs a workspace)
  kSkinny,   // not CUTLASS: the split-K decode kernel (sm90_sparse24_skinny.cu)
  kBetween,  // sm90_sparse24_gemm_between_*.cu: token tiles between the powers of two (80-160)
  kBand,     // sm90_sparse24_gemm_band_*.cu: the 64-row band tiles between those (72, 88, 104)
  kCluster,  // sm90_sparse24_gemm_cluster_*.cu: clusters along the weight rows (X multicast)
};

struct Sparse24ConfigRow {
  const char* name;            // the public name (sparse24_config(i).name(), the CLI's --configs)
  int tile_m, tile_n, tile_k;  // kernel tile: m = weight rows, n = tokens
  int cluster_m, cluster_n;
  bool cooperative;            // two consumer warpgroups on one tile, or ping-pong
  // false: the FP8 mainloop promotes partial sums to float32 every 4 MMAs (256 of K); true: the
  // tensor core accumulates the whole K (faster; error in docs/performance.md).
  bool fast_accum;
  // Promoted accumulation only: our mainloop (sm90_sparse24_two_partials.cuh), which keeps two
  // partial tiles in flight instead of waiting for every K tile's MMAs; same output bits. Not on the
  // 128x192 tile (three of its accumulator tiles need 288 registers).
  bool two_partials;
  Sparse24Unit unit;

  constexpr bool stream_k() const { return unit == Sparse24Unit::kStreamK; }
  constexpr bool skinny() const { return unit == Sparse24Unit::kSkinny; }
  // Split-K runs on the data-parallel CUTLASS tiles only.
  constexpr bool splittable() const {
    return unit == Sparse24Unit::kMain || unit == Sparse24Unit::kWide || unit == Sparse24Unit::kBetween ||
           unit == Sparse24Unit::kBand || unit == Sparse24Unit::kCluster;
  }
};

// The names follow <tile_m>x<tile_n>x<tile_k>_c<cluster_m>x<cluster_n>_<coop|pingpong>[_fastaccum]
// [_streamk] (tests/cpu/test_sparse24_heuristic.cpp checks it). Why two partials where it is on:
// bench/results/h200/tuning/tune_sparse_two_partials.txt.
inline constexpr Sparse24ConfigRow kSparse24Configs[] = {
    // promoted accumulation, smallest token tile first
    {"64x32x256_c1x1_pingpong", 64, 32, 256, 1, 1, false, false, true, Sparse24Unit::kMain},
    {"64x64x256_c1x1_pingpong", 64, 64, 256, 1, 1, false, false, true, Sparse24Unit::kMain},
    {"64x128x256_c1x1_pingpong", 64, 128, 256, 1, 1, false, false, true, Sparse24Unit::kMain},
    {"128x128x256_c1x2_coop", 128, 128, 256, 1, 2, true, false, true, Sparse24Unit::kMain},
    // fast accumulation
    {"64x32x256_c1x1_pingpong_fastaccum", 64, 32, 256, 1, 1, false, true, false, Sparse24Unit::kMain},
    {"64x64x256_c1x1_pingpong_fastaccum", 64, 64, 256, 1, 1, false, true, false, Sparse24Unit::kMain},
    {"64x128x256_c1x1_pingpong_fastaccum", 64, 128, 256, 1, 1, false, true, false, Sparse24Unit::kMain},
    {"128x128x256_c1x2_coop_fastaccum", 128, 128, 256, 1, 2, true, true, false, Sparse24Unit::kMain},
    {"128x256x128_c1x2_coop_fastaccum", 128, 256, 128, 1, 2, true, true, false, Sparse24Unit::kMain},
    // 128x192, promoted: 192 token columns keep the accumulators and their promoted copy at 192
    // registers a thread (128x256 would need 256).
    {"128x192x256_c1x1_coop", 128, 192, 256, 1, 1, true, false, false, Sparse24Unit::kWide},
    // Stream-K: cooperative tiles on CUTLASS's stream-K scheduler with its heuristic decomposition
    // and deterministic reduction (partial tiles added in K order). Need a caller workspace.
    {"128x32x256_c1x1_coop_streamk", 128, 32, 256, 1, 1, true, false, true, Sparse24Unit::kStreamK},
    {"128x128x256_c1x1_coop_streamk", 128, 128, 256, 1, 1, true, false, true, Sparse24Unit::kStreamK},
    // The split-K decode kernel: 16 weight rows per warp (tile_m), up to 32 tokens (tile_n),
    // 128-wide K panels (tile_k); its cluster is chosen per call (sparse24_skinny_shape).
    {"skinny_m32_splitk", 16, 32, 128, 1, 1, false, false, false, Sparse24Unit::kSkinny},
    // Token tiles between the powers of two (issue #24). Where M is a little over 64 or 128 tokens,
    // the 64- and 128-token tiles need a second (clamped) column, i.e. twice the MMA work, and the
    // next wider tile reads up to 63 rows of X past M, each costing about as much as a valid row:
    // 65-128 tokens fit one column of 80, 96 or 112 tokens, 129-160 one of 144 or 160, with at most
    // 15 rows past M. The 128-row ones keep one accumulator tile and its promoted copy (two partials
    // would need 216-240 registers). sparse24_heuristic.h says where they run.
    {"64x96x256_c1x1_pingpong", 64, 96, 256, 1, 1, false, false, true, Sparse24Unit::kBetween},
    {"128x160x256_c1x1_coop", 128, 160, 256, 1, 1, true, false, false, Sparse24Unit::kBetween},
    {"64x80x256_c1x1_pingpong", 64, 80, 256, 1, 1, false, false, true, Sparse24Unit::kBetween},
    {"64x112x256_c1x1_pingpong", 64, 112, 256, 1, 1, false, false, true, Sparse24Unit::kBetween},
    {"128x144x256_c1x1_coop", 128, 144, 256, 1, 1, true, false, false, Sparse24Unit::kBetween},
    // The 64-row tiles every 8 tokens of the 65-112 band (sparse24_band_tile): a column of 80, 96 or
    // 112 tokens still reads up to 15 rows of X past M, and at 67, 81 and 98 tokens such a column
    // took 1.07-1.14x the time of the same tile a few tokens later (the sweep's band-edge breaks).
    // 72, 88 and 104 bound that to 7 rows. In units of their own, so that the between units do not
    // grow.
    {"64x72x256_c1x1_pingpong", 64, 72, 256, 1, 1, false, false, true, Sparse24Unit::kBand},
    {"64x88x256_c1x1_pingpong", 64, 88, 256, 1, 1, false, false, true, Sparse24Unit::kBand},
    {"64x104x256_c1x1_pingpong", 64, 104, 256, 1, 1, false, false, true, Sparse24Unit::kBand},
    // 128x192 in fast accumulation: per token as fast as 128x256x128 (its rate in
    // src/sparse24_heuristic.cpp), in waves of 192-token columns without the 1x2 cluster's padding.
    // Where the 256-token pair leaves a partly idle wave or pads an odd column (768 tokens: four
    // columns of 256 for three) it took 0.67-0.87x its time (H100, tune_sparse24_fast192.jsonl).
    // sparse24_partial_column weighs it in fast accumulation on weights of up to 66 row tiles, and
    // up to 396 of them at up to 1152 tokens (six columns).
    {"128x192x256_c1x1_coop_fastaccum", 128, 192, 256, 1, 1, true, true, false, Sparse24Unit::kWide},
    // Clusters of two CTAs along the weight rows: the pair shares one token tile, which TMA
    // multicasts (each CTA loads half of it), so X crosses L2 once per two row tiles. At large M the
    // sparse GEMM is bound by L2 traffic, not the tensor cores: cuSPARSELt's fastest kernels there
    // cluster 2-4 CTAs this way and move 0.6x the L2 bytes of its unclustered 128x192 kernel
    // (bench/results/h100/tuning/ncu_large_m_h100.txt). The 1x2 pairs above multicast the weight's
    // tile instead (16 KB a stage against X's 48 KB for 192 tokens). sparse24_heuristic.h says where
    // the model takes them (large weights).
    {"128x192x256_c2x1_coop", 128, 192, 256, 2, 1, true, false, false, Sparse24Unit::kCluster},
    {"128x192x256_c2x1_coop_fastaccum", 128, 192, 256, 2, 1, true, true, false, Sparse24Unit::kCluster},
    {"128x256x128_c2x1_coop_fastaccum", 128, 256, 128, 2, 1, true, true, false, Sparse24Unit::kCluster},
};
inline constexpr int kSparse24NumConfigs = static_cast<int>(sizeof(kSparse24Configs) / sizeof(kSparse24Configs[0]));

namespace sparse24_table_detail {
constexpr bool same(const char* a, const char* b) {
  while (*a != 0 && *a == *b) ++a, ++b;
  return *a == *b;
}
}  // namespace sparse24_table_detail

// The index of the row named `name`, or -1. constexpr: `static_assert(sparse24_row("...") >= 0)`.
constexpr int sparse24_row(const char* name) {
  for (int i = 0; i < kSparse24NumConfigs; ++i)
    if (sparse24_table_detail::same(kSparse24Configs[i].name, name)) return i;
  return -1;
}
// A row by name that must exist (a compile error otherwise, when used in a constant expression).
constexpr int sparse24_named(const char* name) {
  const int i = sparse24_row(name);
  return i >= 0 ? i : throw "no sparse24 configuration of that name";
}

// The decode kernel's row and the largest token count it serves (four n8 token tiles).
inline constexpr int kSparse24SkinnyConfig = sparse24_named("skinny_m32_splitk");
inline constexpr int kSparse24SkinnyMaxM = kSparse24Configs[kSparse24SkinnyConfig].tile_n;

}  // namespace qsgemm::kernels
