// The blockwise family's config table and pure heuristic (src/blockwise_heuristic.h): the table's
// names, lookups by name, and that the heuristic takes the SM count it is given. Runs without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "blockwise_heuristic.h"
#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "qsgemm/blockwise.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using G = ScaleGranularity;
using test::expect_error;

// The format the names follow (the table spells them out; this is the rule they obey).
std::string formatted(const kernels::BlockwiseConfig& c) {
  if (c.schedule == kernels::BlockwiseSchedule::kSkinny) return "skinny_m" + std::to_string(c.tile_m) + "_splitk";
  return std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" + std::to_string(c.tile_k) + "_c" +
         std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n) +
         (c.schedule == kernels::BlockwiseSchedule::kCooperative ? "_coop" : "_pingpong") + (c.clamped ? "_clamped" : "");
}

TEST(BlockwiseTable, NamesFollowTheFormatAndLookUp) {
  for (int i = 0; i < blockwise_num_configs(); ++i) {
    EXPECT_EQ(blockwise_config_name(i), formatted(kernels::kBlockwiseConfigs[i])) << i;
    EXPECT_EQ(blockwise_config_index(blockwise_config_name(i)), i);
  }
  EXPECT_EQ(blockwise_config_index("skinny_m32_splitk"), kernels::kSkinnyConfig);
  EXPECT_EQ(blockwise_config_index("128x192x128_c1x1_coop"), kernels::kPerRowWideConfig);
  EXPECT_EQ(kernels::blockwise_row("nope"), -1);
  expect_error([] { blockwise_config_index("256x128x128_c1x1_coop"); }, Status::kInvalidArgument,
               "no configuration named '256x128x128_c1x1_coop'; valid names: 128x128x128_c1x1_coop, 64x128x128_c1x1_pingpong",
               "name");
}

TEST(BlockwiseHeuristic, TakesTheSmCountItIsGiven) {
  // M = 16, N = 4096 (32 tiles), K = 7168: the skinny kernel where the 64-row tile has at most half
  // the SMs' worth of CTAs.
  EXPECT_EQ(kernels::blockwise_choose_config(16, 4096, 7168, 132), kernels::kSkinnyConfig);
  EXPECT_NE(kernels::blockwise_choose_config(16, 4096, 7168, 32), kernels::kSkinnyConfig);
  expect_error([] { blockwise_choose_config(16, 4096, 7168, G::kGroup1x128, G::kBlock128x128, 0); },
               Status::kInvalidArgument, "sm_count=0 must be positive", "sm_count");
  // The split rule fills one wave of the SMs it is told about.
  EXPECT_EQ(kernels::blockwise_split_k(64, 2112, 7168, blockwise_config_index("64x128x128_c1x1_pingpong"),
                                       G::kBlock128x128, 132),
            7);
  EXPECT_EQ(kernels::blockwise_split_k(64, 2112, 7168, blockwise_config_index("64x128x128_c1x1_pingpong"),
                                       G::kBlock128x128, 17),
            1);
  // The skinny grid's cluster is bounded by the SMs' CTA slots.
  EXPECT_EQ(kernels::skinny_shape(1, 256, 16384, 132).C, 4);
  EXPECT_EQ(kernels::skinny_shape(1, 256, 16384, 1).C, 1);
}

}  // namespace

// The clamped rows run where most of the last token tile lies past M, on at least ~a wave of tiles,
// and on at most 4 token tiles (blockwise_clamp_pays).
TEST(BlockwiseHeuristic, ClampedRowsWhereTheLastTokenTileIsMostlyPastM) {
  using kernels::blockwise_clamp_pays;
  EXPECT_TRUE(blockwise_clamp_pays(131, 8192, 128, 132));    // 125 rows past M, 128 tiles
  EXPECT_TRUE(blockwise_clamp_pays(192, 8192, 128, 132));    // exactly half
  EXPECT_FALSE(blockwise_clamp_pays(193, 8192, 128, 132));
  EXPECT_FALSE(blockwise_clamp_pays(256, 8192, 128, 132));   // whole tiles
  EXPECT_FALSE(blockwise_clamp_pays(128, 8192, 128, 132));
  EXPECT_FALSE(blockwise_clamp_pays(100, 8192, 128, 132));   // one token tile: nothing to clamp
  EXPECT_FALSE(blockwise_clamp_pays(131, 4096, 128, 132));   // 64 tiles: under 0.9 of a wave
  EXPECT_TRUE(blockwise_clamp_pays(160, 7168, 128, 132));    // two token tiles: 112 tiles, 0.85 waves
  EXPECT_TRUE(blockwise_clamp_pays(150, 6912, 128, 132));    // 108 tiles, 0.82 waves
  EXPECT_FALSE(blockwise_clamp_pays(160, 6656, 128, 132));   // 104 tiles, 0.79 waves
  EXPECT_FALSE(blockwise_clamp_pays(300, 4480, 128, 132));   // three token tiles: 105 tiles
  EXPECT_FALSE(blockwise_clamp_pays(80, 7168, 64, 132));     // the 64-row tile: 0.9 waves still
  EXPECT_TRUE(blockwise_clamp_pays(131, 4096, 128, 64));     // ... of 64 SMs: over it
  EXPECT_TRUE(blockwise_clamp_pays(70, 28672, 64, 132));
  EXPECT_FALSE(blockwise_clamp_pays(100, 28672, 64, 132));   // 28 rows past M
  EXPECT_TRUE(blockwise_clamp_pays(390, 28672, 128, 132));   // 4 token tiles, 122 rows past M
  EXPECT_FALSE(blockwise_clamp_pays(514, 28672, 128, 132));  // 5 token tiles
  EXPECT_FALSE(blockwise_clamp_pays(2074, 8192, 128, 132));

  // Through the pair-aware choice (without a workspace): the clamped row of the tile the wave model
  // picks, not for x scales in 128x128 blocks beyond 128 tokens (up to 128 they are one row of
  // blocks, read as 1x128 groups; beyond, only given a workspace for their copy:
  // XBlocksTakeTheGroupPlanThroughTheCopy), never for whole tiles.
  const int sq = kernels::blockwise_row("128x128x128_c1x1_coop"), sq_c = kernels::blockwise_row("128x128x128_c1x1_coop_clamped");
  const int nr = kernels::blockwise_row("64x128x128_c1x1_pingpong"), nr_c = kernels::blockwise_row("64x128x128_c1x1_pingpong_clamped");
  EXPECT_EQ(kernels::blockwise_choose_config(131, 8192, 28672, G::kGroup1x128, G::kBlock128x128, 132), sq_c);
  EXPECT_EQ(kernels::blockwise_choose_config(131, 8192, 28672, G::kPerRow, G::kPerRow, 132), sq_c);
  EXPECT_EQ(kernels::blockwise_choose_config(131, 8192, 28672, G::kBlock128x128, G::kBlock128x128, 132), sq);
  EXPECT_EQ(kernels::blockwise_choose_config(67, 8192, 28672, G::kGroup1x128, G::kBlock128x128, 132), nr_c);
  // One 128-row tile mostly past M, where the wave model takes it: two 64-row tiles, clamped.
  EXPECT_EQ(kernels::blockwise_choose_config(70, 28672, 4096, 132), sq);
  EXPECT_EQ(kernels::blockwise_choose_config(70, 28672, 4096, G::kGroup1x128, G::kBlock128x128, 132), nr_c);
  EXPECT_EQ(kernels::blockwise_choose_config(70, 28672, 4096, G::kBlock128x128, G::kBlock128x128, 132), nr_c);
  EXPECT_EQ(kernels::blockwise_choose_config(110, 28672, 4096, G::kGroup1x128, G::kBlock128x128, 132), sq);
  // ... but not where the 128-row tiles make one wave and fewer than 48 of their rows lie past M.
  EXPECT_EQ(kernels::blockwise_choose_config(96, 10240, 8192, G::kGroup1x128, G::kBlock128x128, 132), sq);
  EXPECT_EQ(kernels::blockwise_choose_config(96, 10240, 8192, G::kPerRow, G::kPerRow, 132), sq);
  EXPECT_EQ(kernels::blockwise_choose_config(80, 10240, 8192, G::kGroup1x128, G::kBlock128x128, 132), nr_c);
  EXPECT_EQ(kernels::blockwise_choose_config(96, 28672, 4096, G::kGroup1x128, G::kBlock128x128, 132), nr_c);
  EXPECT_EQ(kernels::blockwise_choose_config(160, 7168, 16384, G::kGroup1x128, G::kBlock128x128, 132), sq_c);
  for (int64_t M = 128; M <= 8192; M += 128)
    for (int64_t N : {2112, 4096, 8192, 28672}) {
      const int c = kernels::blockwise_choose_config(M, N, 4096, G::kGroup1x128, G::kBlock128x128, 132);
      EXPECT_FALSE(kernels::kBlockwiseConfigs[c].clamped) << M << "x" << N;
    }
  // A split tile clamps where its CTAs (tiles x splits) make 0.8 of a wave: 4096-row weights at 67-96
  // tokens (2 x 32 tiles, split 2), not 2560-row ones (2 x 20 tiles: 80 CTAs), not a forced config.
  for (int64_t M : {67, 80, 96}) {
    const kernels::BlockwiseChoice c = kernels::blockwise_choose(M, 4096, 14336, G::kGroup1x128, G::kBlock128x128, -1, 0, 132, true);
    EXPECT_EQ(c.config, nr_c) << M;
    EXPECT_EQ(c.split_k, 2) << M;
    EXPECT_EQ(kernels::blockwise_choose(M, 4096, 14336, G::kGroup1x128, G::kBlock128x128, -1, 0, 132, false).config, nr) << M;
    EXPECT_EQ(kernels::blockwise_choose(M, 4096, 14336, G::kGroup1x128, G::kBlock128x128, nr, 0, 132, true).config, nr) << M;
    EXPECT_EQ(kernels::blockwise_choose(M, 2560, 8192, G::kGroup1x128, G::kBlock128x128, -1, 0, 132, true).config, nr) << M;
  }
  EXPECT_EQ(kernels::blockwise_choose(100, 4096, 14336, G::kGroup1x128, G::kBlock128x128, -1, 0, 132, true).config, nr);
  EXPECT_EQ(blockwise_plan(67, 2312, 6144, G::kGroup1x128, G::kBlock128x128, BlockwiseOptions{}, 132).config, nr_c)
      << "the GPU test's case (BlockwiseGpu.SplitKByHeuristic)";
  EXPECT_TRUE(kernels::blockwise_clamp_pays(67, 3584, 64, 132, 2));   // 112 CTAs, 0.85 waves
  EXPECT_FALSE(kernels::blockwise_clamp_pays(67, 3584, 64, 132, 1));
  // A clamped pick is the clamped row of the plain pick's tile (or, below 128 tokens, of the 64-row
  // tile in place of one 128-row tile).
  for (int64_t M = 65; M <= 3000; M += 7) {
    const int c = kernels::blockwise_choose_config(M, 28672, 4096, G::kGroup1x128, G::kBlock128x128, 132);
    const int plain = kernels::blockwise_choose_config(M, 28672, 4096, 132);
    if (c == sq_c) EXPECT_EQ(plain, sq) << M;
    if (c == nr_c) EXPECT_TRUE(plain == nr || (plain == sq && M < 128)) << M;
  }
}
