// The 2:4 sparse family's config table and pure heuristic (src/sparse24_heuristic.h): the table's
// names, lookups by name, and that the heuristic takes the SM count it is given. Runs without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "qsgemm/sparse24.h"
#include "sparse24_heuristic.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using test::expect_error;

TEST(Sparse24Table, NamesFollowTheFormatAndLookUp) {
  ASSERT_EQ(sparse24_num_configs(), kernels::kSparse24NumConfigs);
  for (int i = 0; i < sparse24_num_configs(); ++i) {
    const Sparse24Config c = sparse24_config(i);
    // The table's name is the one the public struct formats from its fields.
    EXPECT_EQ(c.name(), kernels::kSparse24Configs[i].name) << i;
    EXPECT_EQ(sparse24_config_index(c.name()), i);
    EXPECT_EQ(kernels::sparse24_row(kernels::kSparse24Configs[i].name), i);
  }
  EXPECT_EQ(kernels::sparse24_row("no_such_row"), -1);
  EXPECT_EQ(sparse24_config_index("skinny_m32_splitk"), kernels::kSparse24SkinnyConfig);
  EXPECT_TRUE(sparse24_config(kernels::kSparse24SkinnyConfig).skinny);
  EXPECT_EQ(kernels::kSparse24SkinnyMaxM, 32);
  EXPECT_TRUE(sparse24_config(sparse24_config_index("128x32x256_c1x1_coop_streamk")).stream_k);
  EXPECT_TRUE(sparse24_config(sparse24_config_index("64x32x256_c1x1_pingpong_fastaccum")).fast_accum);
  expect_error([] { sparse24_config_index("128x128x256_c1x1_nope"); }, Status::kInvalidArgument,
               "no configuration named '128x128x256_c1x1_nope'; valid names: 64x32x256_c1x1_pingpong, ", "name");
  expect_error([] { sparse24_config_index(""); }, Status::kInvalidArgument, "skinny_m32_splitk");
  // The heuristic's families are rows of the table with the tiles they claim.
  for (const auto& t : kernels::sparse24_detail::kDefault) {
    EXPECT_EQ(kernels::kSparse24Configs[t.index].tile_m, t.tile_m);
    EXPECT_EQ(kernels::kSparse24Configs[t.index].tile_n, t.tile_n);
    EXPECT_FALSE(kernels::kSparse24Configs[t.index].fast_accum);
  }
  for (const auto& t : kernels::sparse24_detail::kFast) EXPECT_TRUE(kernels::kSparse24Configs[t.index].fast_accum);
}

TEST(Sparse24Heuristic, TakesTheSmCountItIsGiven) {
  // The 1280-row shard at M = 1: 20 tiles of 64 rows, fewer than the SMs: the decode kernel; on a GPU
  // with 16 SMs the tiles fill it and the CUTLASS tile wins.
  EXPECT_EQ(sparse24_choose_config(1, 1280, 8192, 132), kernels::kSparse24SkinnyConfig);
  EXPECT_NE(sparse24_choose_config(1, 1280, 8192, 16), kernels::kSparse24SkinnyConfig);
  expect_error([] { sparse24_choose_config(1, 1280, 8192, 0); }, Status::kInvalidArgument, "sm_count=0 must be positive",
               "sm_count");
  // The plan with an explicit SM count is host arithmetic.
  const LinearPlan p = sparse24_plan(1, 1280, 8192, Sparse24Options{}, 132);
  EXPECT_EQ(p.split_k, 4);
  EXPECT_EQ(p.workspace_bytes, 4u * 1 * 1280 * 4);
  EXPECT_EQ(sparse24_plan(1, 1280, 8192, Sparse24Options{}, 16).split_k, 1);
  // The decode kernel's grid: one CTA per 16 weight rows, a cluster only while the SMs are not full.
  EXPECT_EQ(kernels::sparse24_skinny_shape(1, 1280, 8192, 132).C, 2);
  EXPECT_EQ(kernels::sparse24_skinny_shape(1, 1280, 8192, 80).C, 1);
}

}  // namespace
