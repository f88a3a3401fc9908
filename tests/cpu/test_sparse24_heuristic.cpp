// The 2:4 sparse family's config table and pure heuristic (src/sparse24_heuristic.h): the table's
// names, lookups by name, and that the heuristic takes the SM count it is given. Runs without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// ---- the cost model and the tail launch (issue #24) ------------------------------------------------
namespace {
namespace tail_model {

using namespace qsgemm;
using kernels::Sparse24Choice;
using kernels::kSparse24Configs;
constexpr int kSms = 132;
struct Shape {
  int64_t N, K;
};
// The bench's layers and a few others (l3-70b.gate_up, 57344 x 8192, is where the M = 288 cliff was
// measured).
constexpr Shape kShapes[] = {{57344, 8192}, {28672, 4096}, {6144, 4096}, {4096, 14336}, {8192, 28672},
                             {10240, 8192}, {1280, 8192},  {14336, 4096}, {3072, 8192}};

// The modelled time of what the library runs (given a workspace): the main launch plus the tail;
// -1 for the decode kernel and split-K plans, which the model does not cover.
double plan_us(int64_t M, const Shape& s, bool fast) {
  const Sparse24Choice c = kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, true);
  if (kSparse24Configs[c.config].skinny() || c.split_k > 1) return -1;
  return kernels::sparse24_choice_model_us(c, M, s.N, s.K, kSms);
}

TEST(Sparse24CostModel, OutOfBoundsRowsCostMoreThanValidOnes) {
  // Stream-K does not clamp, but from one whole column on the 128-token tile's last column loads
  // only its rows of X (rounded up to 8): 288 tokens read no row past M and model as 384 (same
  // tiles); 300 read 4.
  // Below one column the whole tile's rows past M are charged (as the model was fitted).
  const int sk = sparse24_config_index("128x128x256_c1x1_coop_streamk");
  EXPECT_FALSE(kernels::sparse24_clamps_last_column(sk));
  EXPECT_EQ(kernels::sparse24_oob_rows(sk, 384), 0);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk, 288), 0);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk, 300), 4);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk, 100), 28);
  EXPECT_DOUBLE_EQ(kernels::sparse24_model_us(sk, 288, 57344, 8192, kSms),
                   kernels::sparse24_model_us(sk, 384, 57344, 8192, kSms));
  EXPECT_GT(kernels::sparse24_model_us(sk, 100, 57344, 8192, kSms), kernels::sparse24_model_us(sk, 128, 57344, 8192, kSms));
  // The 32-token stream-K tile keeps 3/4 of the charge from one column on (its rate was fitted with
  // it): 40 tokens, 24 rows past M, 18 charged; 67 tokens, 29 past, 22 charged; below one column all.
  const int sk32 = sparse24_config_index("128x32x256_c1x1_coop_streamk");
  EXPECT_EQ(kernels::sparse24_oob_rows(sk32, 40), 18);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk32, 67), 22);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk32, 64), 0);
  EXPECT_EQ(kernels::sparse24_oob_rows(sk32, 20), 12);
  // What the 3/4 decides (h100/tuning/tune_sparse24_sk32_charge.jsonl): the stream-K tile at 67-73
  // tokens on 10240 x 8192 (0.96-0.97x the 64x32 tile's time), not at 35-53 tokens on 5120 x 5120
  // or 6144 x 4096 (there 1.02-1.06x the 64x64 tile's).
  for (kernels::Sparse24Profile p : {kernels::Sparse24Profile::kH200, kernels::Sparse24Profile::kH100}) {
    for (int64_t M : {67, 70, 73})
      EXPECT_EQ(kernels::sparse24_choose(M, 10240, 8192, -1, 0, false, kSms, true, p).config, sk32) << M;
    for (int64_t M : {35, 41, 48, 53}) {
      EXPECT_NE(kernels::sparse24_choose(M, 5120, 5120, -1, 0, false, kSms, true, p).config, sk32) << M;
      EXPECT_NE(kernels::sparse24_choose(M, 6144, 4096, -1, 0, false, kSms, true, p).config, sk32) << M;
    }
  }
  // Below one column the 128-token stream-K tile is weighed with its rows past M (on 10240 x 8192
  // at 97 and 101 tokens 0.83-0.96x the 64-row tiles' time, H100), but not without a workspace, and
  // not at 65-96 tokens there, where its 32-63 rows past M cost more than the 32-token tile's few.
  const int sk128 = kernels::sparse24_detail::kStreamK128x128;
  for (kernels::Sparse24Profile p : {kernels::Sparse24Profile::kH200, kernels::Sparse24Profile::kH100}) {
    for (int64_t M : {97, 101, 103}) {
      EXPECT_EQ(kernels::sparse24_choose(M, 10240, 8192, -1, 0, false, kSms, true, p).config, sk128) << M;
      EXPECT_NE(kernels::sparse24_choose(M, 10240, 8192, -1, 0, false, kSms, false, p).config, sk128) << M;
    }
    for (int64_t M : {66, 80, 96})
      EXPECT_NE(kernels::sparse24_choose(M, 10240, 8192, -1, 0, false, kSms, true, p).config, sk128) << M;
  }
  // The data-parallel rows clamp their last column inside M: nothing past M from one tile on (the
  // cluster pair's padding column included), the rest of one tile below.
  const int c = sparse24_config_index("64x128x256_c1x1_pingpong");
  const int coop = sparse24_config_index("128x128x256_c1x2_coop");
  EXPECT_TRUE(kernels::sparse24_clamps_last_column(c));
  EXPECT_EQ(kernels::sparse24_oob_rows(c, 288), 0);
  EXPECT_EQ(kernels::sparse24_oob_rows(c, 100), 28);
  EXPECT_EQ(kernels::sparse24_oob_rows(coop, 384), 0);
  EXPECT_EQ(kernels::sparse24_oob_rows(coop, 100), 28);
  EXPECT_EQ(kernels::sparse24_main_rows(coop, 300), 256);
  for (int i = 0; i < kernels::kSparse24NumConfigs; ++i)
    EXPECT_EQ(kernels::sparse24_clamps_last_column(i), kSparse24Configs[i].splittable()) << kSparse24Configs[i].name;
  // Full tiles: more tokens never model faster; clamped columns: from one tile on, no M models
  // slower than a larger one (a partial column costs what a full one does, nothing more).
  for (const Shape& s : kShapes) {
    for (int64_t m = 128; m <= 8192; m += 128)
      EXPECT_LE(kernels::sparse24_model_us(c, m, s.N, s.K, kSms), kernels::sparse24_model_us(c, m + 128, s.N, s.K, kSms))
          << s.N << "x" << s.K << " M=" << m;
    for (int cfg : {c, coop})
      for (int64_t m = kSparse24Configs[cfg].tile_n; m <= 2048; ++m)
        EXPECT_LE(kernels::sparse24_model_us(cfg, m, s.N, s.K, kSms),
                  kernels::sparse24_model_us(cfg, m + 1, s.N, s.K, kSms))
            << kSparse24Configs[cfg].name << " " << s.N << "x" << s.K << " M=" << m;
  }
}

TEST(Sparse24CostModel, PartialColumnPlansKeepTheirRules) {
  // The measured cliff: M = 288 on the 128x128 cluster-pair tile ran past M by 224 rows; the plan
  // there is no longer that launch.
  const Sparse24Choice c = kernels::sparse24_choose(288, 57344, 8192, -1, 0, false, kSms, true);
  EXPECT_FALSE(c.config == sparse24_config_index("128x128x256_c1x2_coop") && c.tail_config < 0);
  int tails = 0;
  for (const Shape& s : kShapes)
    for (bool fast : {false, true})
      for (int64_t M = 1; M <= 9000; M += (M < 64 ? 1 : 7)) {
        const Sparse24Choice p = kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, true);
        // A configuration of the mode (the decode kernel and the promoted stream-K rows serve both;
        // fast requests below kSparse24FastMinTokens run the promoted plan, or from
        // kSparse24FastModelMinTokens one launch of a fast tile).
        const bool mode = fast && M >= kernels::kSparse24FastMinTokens;
        const bool either = fast && M >= kernels::kSparse24FastModelMinTokens && !mode;
        const auto& r = kSparse24Configs[p.config];
        if (either && r.fast_accum) EXPECT_LT(p.tail_config, 0) << r.name << " M=" << M;
        else if (!r.skinny() && !r.stream_k()) EXPECT_EQ(r.fast_accum, mode) << r.name << " M=" << M;
        if (p.tail_config < 0) {
          EXPECT_EQ(p.main_rows, M);
          continue;
        }
        ++tails;
        const auto& t = kSparse24Configs[p.tail_config];
        // The tail: a data-parallel tile of the same accumulation mode, no workspace.
        EXPECT_TRUE(t.splittable()) << t.name;
        EXPECT_EQ(t.fast_accum, mode) << t.name;
        EXPECT_EQ(p.split_k, 1);
        // The main launch covers whole token columns; the tail covers the rest, starts at a multiple
        // of 4 tokens, and runs at most 3 rows past M.
        const int64_t col = int64_t{kSparse24Configs[p.config].tile_n} * kSparse24Configs[p.config].cluster_n;
        EXPECT_EQ(p.main_rows % col, 0) << M;
        EXPECT_GT(p.main_rows, 0);
        EXPECT_LT(p.main_rows, M);
        EXPECT_GE(p.tail_rows, M - p.main_rows) << M;
        EXPECT_LE(p.tail_rows, M);
        EXPECT_EQ((M - p.tail_rows) % 4, 0) << M;
        EXPECT_LE(kernels::sparse24_oob_rows(p.tail_config, p.tail_rows), 3) << M;
        // A forced configuration runs as it is.
        const Sparse24Choice forced = kernels::sparse24_choose(M, s.N, s.K, p.config, 0, fast, kSms, true);
        EXPECT_LT(forced.tail_config, 0);
      }
  EXPECT_GT(tails, 0) << "no plan with a tail: the rules above checked nothing";
}

// Below 33 tokens the 32-token tiles (64x32, 128x32 stream-K), whose last column loads only its rows,
// hold every M, in both accumulation modes, with and without a workspace, split or not (the decode
// kernel aside).
TEST(Sparse24Heuristic, ThirtyTwoTokenTilesBelowThirtyThreeTokens) {
  int checked = 0;
  for (const Shape& s : kShapes)
    for (bool fast : {false, true})
      for (bool ws : {false, true})
        for (int64_t M = 1; M <= 32; ++M) {
          const Sparse24Choice p = kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, ws);
          const auto& r = kSparse24Configs[p.config];
          if (r.skinny()) continue;
          EXPECT_EQ(r.tile_n, 32) << r.name << " " << s.N << "x" << s.K << " M=" << M;
          checked += p.tail_config < 0;
        }
  EXPECT_GT(checked, 0);
}

// 33-64 tokens on weights of at least as many 64-row tiles as SMs: 64x32 where two columns leave
// fewer waves than one of 64x64 (a 64x64 wave weighing 1.9), kept by the cost model; the probe's
// weights on both sides of the rule (tune_sparse24_33to64.jsonl) and the wave arithmetic itself.
TEST(Sparse24Heuristic, TwoColumnBandByWaves) {
  const int pp32 = sparse24_config_index("64x32x256_c1x1_pingpong");
  const int pp64 = sparse24_config_index("64x64x256_c1x1_pingpong");
  struct Case {
    int64_t N, K;
    int want;
  };
  // 64x32: 9216 / 10240 / 12288 / 27648 rows (144 / 160 / 192 / 432 tiles of 64 rows: 2 / 2 / 2 / 4
  // waves against 3 / 3 / 3 / 7 of two columns); 64x64: 14336 / 22016 / 57344 rows (2 / 3 / 7
  // waves against 4 / 6 / 14).
  const Case cases[] = {{9216, 8192, pp32},  {10240, 8192, pp32}, {12288, 4096, pp32}, {27648, 5120, pp32},
                        {14336, 4096, pp64}, {22016, 4096, pp64}, {57344, 8192, pp64}};
  for (const Case& c : cases)
    for (bool ws : {false, true})
      for (int64_t M = 33; M <= 64; ++M) {
        ASSERT_TRUE(kernels::sparse24_two_column_band(M, c.N, kSms));
        const Sparse24Choice p = kernels::sparse24_choose(M, c.N, c.K, -1, 0, false, kSms, ws);
        EXPECT_EQ(p.config, c.want) << c.N << "x" << c.K << " M=" << M << " ws=" << ws;
        EXPECT_LT(p.tail_config, 0) << c.N << "x" << c.K << " M=" << M;
        EXPECT_EQ(p.split_k, 1);
      }
  // Outside the band: below 33 or above 64 tokens, or fewer 64-row tiles than SMs.
  EXPECT_FALSE(kernels::sparse24_two_column_band(32, 10240, kSms));
  EXPECT_FALSE(kernels::sparse24_two_column_band(65, 10240, kSms));
  EXPECT_FALSE(kernels::sparse24_two_column_band(48, 8192, kSms));
  EXPECT_FALSE(kernels::sparse24_two_narrow_columns(48, 8192, kSms));
  // The wave rule at the SM count it is given: 10240 rows on 80 SMs are 2 waves of 64x64 tiles
  // and 4 of 64x32 ones (4 > 1.9 * 2): 64x64.
  EXPECT_TRUE(kernels::sparse24_two_narrow_columns(48, 10240, kSms));
  EXPECT_FALSE(kernels::sparse24_two_narrow_columns(48, 10240, 80));
}

// 65-112 tokens on weights of at least 1.5 waves of 64-row tiles (promoted accumulation), with or
// without a workspace, kept by the cost model: the narrowest 64-row tile of 72, 80, ..., 112 token
// columns that holds M, at most 7 rows past it (tune_sparse24_between_tiles2.jsonl); 113-128 tokens:
// the 128x128 stream-K tile given a workspace (tune_sparse24_band.jsonl). On narrower weights the
// cost model decides (128x128 stream-K below 104 tokens only at 97-103 there).
TEST(Sparse24Heuristic, OneColumnBandTo112Tokens) {
  const int pp72 = sparse24_config_index("64x72x256_c1x1_pingpong");
  const int pp80 = sparse24_config_index("64x80x256_c1x1_pingpong");
  const int pp88 = sparse24_config_index("64x88x256_c1x1_pingpong");
  const int pp96 = sparse24_config_index("64x96x256_c1x1_pingpong");
  const int pp104 = sparse24_config_index("64x104x256_c1x1_pingpong");
  const int pp112 = sparse24_config_index("64x112x256_c1x1_pingpong");
  const int sk128 = sparse24_config_index("128x128x256_c1x1_coop_streamk");
  for (int64_t N : {8448, 10240, 14336, 28672, 57344})
    for (bool ws : {false, true}) {
      for (int64_t M = 65; M <= 112; ++M) {
        const Sparse24Choice p = kernels::sparse24_choose(M, N, 8192, -1, 0, false, kSms, ws);
        if (N >= 12672) {
          const int want = M <= 72 ? pp72 : M <= 80 ? pp80 : M <= 88 ? pp88 : M <= 96 ? pp96 : M <= 104 ? pp104 : pp112;
          EXPECT_EQ(p.config, want) << N << " M=" << M;
          EXPECT_EQ(kernels::sparse24_band_tile(M), want) << M;
          EXPECT_EQ(p.split_k, 1);
          EXPECT_LT(p.tail_config, 0);
          // one column of the 64-row tile holds M with at most 7 rows past it
          const kernels::Sparse24ConfigRow& row = kernels::kSparse24Configs[p.config];
          EXPECT_EQ(row.tile_m, 64);
          EXPECT_TRUE(M <= row.tile_n && row.tile_n - M <= 7) << N << " M=" << M;
        }
        // below 104 tokens only where the model weighs it, at 97-103 on a narrower weight (log §45)
        if (M < 104 && !(ws && N < 12672 && M >= 97)) EXPECT_NE(p.config, sk128) << N << " M=" << M;
      }
      for (int64_t M = 113; M <= 128; ++M) {
        const Sparse24Choice p = kernels::sparse24_choose(M, N, 8192, -1, 0, false, kSms, ws);
        if (ws && N > 8448) EXPECT_EQ(p.config, sk128) << N << " M=" << M;  // 8448 (one wave): the model's pick
      }
    }
}

// The tiles between the powers of two (promoted accumulation) through the cost model, on weights
// of several waves: 128x144 where its one column holds 129-144 tokens and 128x160 at 145-160 (the
// 128x128 pair computed 256 tokens there), 128x160 at 257-320 tokens (two clamped columns; the
// 128x192 tile computed 384); 128x192 where its one column holds 161-191 tokens. Never in fast
// accumulation from its threshold on, never beyond the columns they were measured on (three for
// 64x96, 64x112 and 128x144, eight for 128x160; 64x80 in the band only), never where one column would
// read more than 31 rows past M. 128x160 over several columns where its waves are fewer or shorter:
// 900 tokens on 56-64 row tiles (six columns in three waves, where the pair needs four), 1200 on 48
// (eight columns in three waves, where the pair needs four), 1024 on 56 (seven in three against eight
// in four, on the pair's whole columns). Data: tune_sparse24_between_tiles.jsonl,
// tune_sparse24_between_tiles2.jsonl, tune_sparse24_subwave.jsonl,
// h100/tuning/tune_sparse24_default_cluster_low.jsonl.
TEST(Sparse24Heuristic, BetweenTilesUpToTheirMeasuredColumns) {
  const int c144 = sparse24_config_index("128x144x256_c1x1_coop");
  const int c160 = sparse24_config_index("128x160x256_c1x1_coop");
  const int c192 = sparse24_config_index("128x192x256_c1x1_coop");
  std::vector<int> between;
  for (const auto& b : kernels::sparse24_detail::kBetween) between.push_back(b.t.index);
  EXPECT_EQ(between.size(), 5u);
  for (bool ws : {false, true}) {
    for (int64_t N : {14336, 28672, 57344}) {
      const auto pick = [&](int64_t M) { return kernels::sparse24_choose(M, N, 8192, -1, 0, false, kSms, ws).config; };
      for (int64_t M : {130, 136, 144}) EXPECT_EQ(pick(M), c144) << N << " M=" << M;
      for (int64_t M : {150, 158}) EXPECT_EQ(pick(M), c160) << N << " M=" << M;
      for (int64_t M : {174, 185}) EXPECT_EQ(pick(M), c192) << N << " M=" << M;
      EXPECT_EQ(pick(279), c144) << N << ": two columns, 9 rows past M";
      EXPECT_EQ(pick(307), c160) << N;
    }
    for (int64_t N : {7168, 8192})
      EXPECT_EQ(kernels::sparse24_choose(900, N, 8192, -1, 0, false, kSms, ws).config, c160) << N << " M=900";
    EXPECT_EQ(kernels::sparse24_choose(1200, 6144, 4096, -1, 0, false, kSms, ws).config, c160) << "6144 M=1200";
    // On the 128x128 pair's whole columns too: 1024 tokens on 56 row tiles.
    EXPECT_EQ(kernels::sparse24_choose(1024, 7168, 8192, -1, 0, false, kSms, ws).config, c160) << "7168 M=1024";
    // Weights of 1-1.5 waves of 128-row tiles at 279-338 tokens (l3-70b.qkv: 80 tiles): three
    // columns of a 64-row between tile or of 128x144 without a workspace
    // (tune_sparse24_subwave.jsonl); with one the 128x128 stream-K tile, whose last column loads
    // only its rows (h100/tuning/tune_sparse24_rows.jsonl at 288, tune_sparse24_qkv_streamk.jsonl
    // at 307-338: 0.86-0.96x the between tiles' time).
    const auto qkv = [&](int64_t M) { return kernels::sparse24_choose(M, 10240, 8192, -1, 0, false, kSms, ws).config; };
    const int sk128 = sparse24_config_index("128x128x256_c1x1_coop_streamk");
    EXPECT_EQ(qkv(279), ws ? sk128 : sparse24_config_index("64x96x256_c1x1_pingpong"));
    EXPECT_EQ(qkv(288), ws ? sk128 : sparse24_config_index("64x96x256_c1x1_pingpong"));
    EXPECT_EQ(qkv(307), ws ? sk128 : c144);
    EXPECT_EQ(qkv(338), ws ? sk128 : c144);
    for (const Shape& s : kShapes)
      for (int64_t M = 1; M <= 20000; M += (M < 1000 ? 1 : 97))
        for (bool fast : {false, true}) {
          const Sparse24Choice p = kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, ws);
          for (const auto& b : kernels::sparse24_detail::kBetween) {
            if (p.config != b.t.index && p.tail_config != b.t.index) continue;
            const int64_t tn = b.t.tile_n;
            EXPECT_TRUE(M < kernels::kSparse24FastMinTokens || !fast) << s.N << "x" << s.K << " M=" << M;
            if (b.max_columns == 0)  // the band's only
              EXPECT_EQ(kernels::sparse24_band_tile(M), b.t.index) << s.N << "x" << s.K << " M=" << M;
            else
              EXPECT_LE(M, b.max_columns * tn) << s.N << "x" << s.K << " M=" << M;
            EXPECT_GE(M + kernels::kSparse24FewOobRows, tn) << s.N << "x" << s.K << " M=" << M;
          }
        }
  }
}

// A fast-accumulation request below kSparse24FastModelMinTokens gets exactly the promoted plan
// (measured as fast or faster there, and more accurate); from it to kSparse24FastMinTokens the
// promoted plan or one launch of the fast 128x256 pair, its 2x1 cluster row or the fast 128x192
// tile, modelled at least 3 % faster; from kSparse24FastMinTokens on, a fast-accumulation tile. A
// forced configuration is not touched.
TEST(Sparse24Heuristic, FastAccumulationFromItsThresholds) {
  int fast_tiles = 0, fast_below = 0;
  const int fast_pair = kernels::sparse24_detail::kFast[4].index;
  const int fast_twin = kernels::sparse24_cluster_twin(fast_pair);
  const int fast_wide = kernels::sparse24_detail::kFastWide.index;
  for (const Shape& s : kShapes)
    for (bool ws : {false, true})
      for (int64_t M = 1; M <= 4096; M += (M < 600 ? 1 : 37)) {
        const Sparse24Choice f = kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, ws);
        const Sparse24Choice d = kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, ws);
        if (M < kernels::kSparse24FastMinTokens)
          EXPECT_EQ(kernels::sparse24_heuristic(M, s.N, s.K, kSms, true, ws),
                    kernels::sparse24_heuristic(M, s.N, s.K, kSms, false, ws));
        const bool same = f.config == d.config && f.split_k == d.split_k && f.tail_config == d.tail_config &&
                          f.tail_rows == d.tail_rows && f.main_rows == d.main_rows;
        if (M < kernels::kSparse24FastModelMinTokens) {
          EXPECT_TRUE(same) << s.N << "x" << s.K << " M=" << M;
        } else if (M < kernels::kSparse24FastMinTokens) {
          if (same) continue;
          ++fast_below;
          EXPECT_TRUE(f.config == fast_pair || f.config == fast_twin || f.config == fast_wide)
              << kSparse24Configs[f.config].name << " " << s.N << "x" << s.K << " M=" << M;
          EXPECT_EQ(f.split_k, 1);
          EXPECT_LT(f.tail_config, 0);
          EXPECT_EQ(f.main_rows, M);
          const double promoted = kernels::sparse24_choice_model_us(d, M, s.N, s.K, kSms);
          EXPECT_LT(kernels::sparse24_model_us(f.config, M, s.N, s.K, kSms), 0.97 * promoted)
              << s.N << "x" << s.K << " M=" << M;
        } else {
          fast_tiles += kSparse24Configs[f.config].fast_accum;
        }
      }
  EXPECT_GT(fast_tiles, 0) << "no fast-accumulation tile from the threshold on";
  EXPECT_GT(fast_below, 0) << "no fast plan between the two thresholds";
  // Measured (H100, h100/tuning/tune_sparse24_fast_c2x1_low.jsonl, tune_sparse24_fast_grid.jsonl):
  // the cluster row at 660 tokens on 10240 x 8192 (0.905x the promoted pair's time), the fast pair
  // at 512 on 8192 x 8192 (0.891x).
  for (auto p : {kernels::Sparse24Profile::kH100, kernels::Sparse24Profile::kH200}) {
    EXPECT_EQ(kernels::sparse24_choose(660, 10240, 8192, -1, 0, true, kSms, true, p).config, fast_twin);
    EXPECT_EQ(kernels::sparse24_choose(512, 8192, 8192, -1, 0, true, kSms, true, p).config, fast_pair);
  }
  const int forced = sparse24_config_index("64x32x256_c1x1_pingpong_fastaccum");
  EXPECT_EQ(kernels::sparse24_choose(100, 28672, 4096, forced, 0, true, kSms, true).config, forced);
}

TEST(Sparse24CostModel, StreamKOnlyWithAWorkspace) {
  for (const Shape& s : kShapes)
    for (int64_t M = 1; M <= 4000; M += 13) {
      const Sparse24Choice p = kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, false);
      EXPECT_FALSE(kSparse24Configs[p.config].stream_k()) << s.N << "x" << s.K << " M=" << M;
    }
}

TEST(Sparse24CostModel, NoTailAtFullColumnsAndThePlanIsNearlyMonotone) {
  for (const Shape& s : kShapes)
    for (bool fast : {false, true}) {
      for (int64_t M : {256, 512, 1024, 2048, 4096, 8192, 16384})
        EXPECT_LT(kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, true).tail_config, 0)
            << s.N << "x" << s.K << " M=" << M;
    }
  // Between two full columns of the measured cliff's layer, every M models within 1.25x of the next
  // full column (without the tail: 2.3x at M = 288). The coarse model (one rate per tile) does not
  // decide the rest of the heuristic's bands; the H200 sweep is held to the 1.05x rule
  // (scripts/check_cliffs.py).
  const double at512 = plan_us(512, {57344, 8192}, false);
  for (int64_t M = 257; M < 512; ++M) EXPECT_LE(plan_us(M, {57344, 8192}, false), 1.25 * at512) << M;
  // The example of the issue: the pick at M = 288 does not model worse than the one at M = 512.
  EXPECT_LE(plan_us(288, {57344, 8192}, false), plan_us(512, {57344, 8192}, false));
}

// Whole 256-token columns of the 128x128 pair below 8192 tokens, on the H100 profile
// (Sparse24CardTraits::wide_on_whole_columns): from kSparse24WideSwizzleMinTokens tokens on weights
// of 2048 rows or more, where the 128x192 tile runs the swizzled order, the model takes that tile, as
// measured at every such point tried (H100, same run: h100/tuning/tune_sparse24_wide_rule_*.jsonl);
// below, in the default order, where its waves fit better (0.65-0.84x the pair's time at the points
// below, h100/tuning/tune_sparse24_wide_whole_any_m.jsonl); not in fast accumulation. On the H200
// profile the pair stays (the H200 measured it the faster there: h200/tuning/tune_sparse24_192.txt).
TEST(Sparse24CostModel, WideTileOnWholeColumnsByCard) {
  using kernels::Sparse24Profile;
  const Sparse24Profile h100 = Sparse24Profile::kH100, h200 = Sparse24Profile::kH200;
  const int wide = kernels::sparse24_detail::kWide.index;
  // The tile, or on weights of more row tiles than SMs its 2x1 cluster twin (ClusterRows... below).
  const auto wide_or_twin = [&](int c) { return c == wide || c == kernels::sparse24_cluster_twin(wide); };
  int taken = 0;
  for (const Shape& s : kShapes) {
    if (s.N < 2048) continue;  // there sparse24_narrow_wide_tile decides
    for (int64_t M = kernels::kSparse24WideSwizzleMinTokens; M < 8192; M += 256) {
      EXPECT_TRUE(wide_or_twin(kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, false, h100).config))
          << s.N << " M=" << M;
      // Given a workspace, the 128-token stream-K rule's wave rule may come first.
      const int with_ws = kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, true, h100).config;
      EXPECT_TRUE(wide_or_twin(with_ws) || kSparse24Configs[with_ws].stream_k()) << s.N << " M=" << M;
      EXPECT_GT(kernels::sparse24_tile_order(M, s.N, wide, kSms, h100).swizzle, 1) << s.N << " M=" << M;
      EXPECT_NE(kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, true, h100).config, wide) << s.N << " M=" << M;
      EXPECT_NE(kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, false, h200).config, wide) << s.N << " M=" << M;
      ++taken;
    }
  }
  EXPECT_GT(taken, 0);
  struct Point {
    int64_t M, N, K;
  };
  for (const Point& p : {Point{768, 4096, 14336}, Point{1536, 10240, 8192}, Point{1280, 14336, 4096},
                         Point{1536, 3584, 8192}, Point{1792, 1280, 8192}}) {
    EXPECT_EQ(kernels::sparse24_tile_order(p.M, p.N, wide, kSms, h100).swizzle, 1) << p.N << " M=" << p.M;
    EXPECT_EQ(kernels::sparse24_choose(p.M, p.N, p.K, -1, 0, false, kSms, true, h100).config, wide) << p.N << " M=" << p.M;
    EXPECT_NE(kernels::sparse24_choose(p.M, p.N, p.K, -1, 0, false, kSms, true, h200).config, wide) << p.N << " M=" << p.M;
  }
  // The GPU test's shape (Sparse24Gpu.LinearWideTokenTileByHeuristic, no workspace).
  EXPECT_EQ(kernels::sparse24_choose(2304, 2176, 1024, -1, 0, false, kSms, false, h100).config, wide);
  EXPECT_NE(kernels::sparse24_choose(2304, 2176, 1024, -1, 0, false, kSms, false, h200).config, wide);
}

// Partial columns where the 128x192 tile runs swizzled, on the H100 profile: the model carries the
// order's gain (kSparse24WideSwizzledRate), so it leaves the 128x128 pair where that tile measured
// faster (H100, same run, h100/tuning/tune_sparse24_regret.jsonl: the pair 1.16-1.28x its time at
// these points). The H200 profile models the tile at its fitted rate.
TEST(Sparse24CostModel, WideTileOnPartialColumnsWhereItIsSwizzled) {
  using kernels::Sparse24Profile;
  const Sparse24Profile h100 = Sparse24Profile::kH100, h200 = Sparse24Profile::kH200;
  const int wide = kernels::sparse24_detail::kWide.index;
  for (const Shape& s : {Shape{7168, 4096}, Shape{4608, 3584}, Shape{3584, 18944}})
    for (int64_t M : {2300, 3500}) {
      EXPECT_EQ(kernels::sparse24_tile_order(M, s.N, wide, kSms, h100).swizzle, 4) << s.N << " M=" << M;
      EXPECT_EQ(kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, true, h100).config, wide) << s.N << " M=" << M;
    }
  // The factor applies to the swizzled order on the H100 profile only: below 2048 tokens, on
  // weights under 2048 rows and on the H200 profile the model of the 128x192 tile is its fitted rate's.
  const auto model = [&](int64_t M, int64_t N, Sparse24Profile p) {
    return kernels::sparse24_model_us(wide, M, N, 65536, kSms, p);
  };
  EXPECT_LT(model(3072, 4096, h100), 0.9 * model(3072, 4096, h200));
  EXPECT_EQ(model(3072, 1536, h100), model(3072, 1536, h200));
  EXPECT_EQ(model(2047, 4096, h100), model(2047, 4096, h200));
}

// Whole columns of the 128x192 tile on weights under 2048 rows (sparse24_narrow_wide_tile): given a
// workspace, with promoted accumulation, the model weighs the 128-token stream-K tile there too. At
// 3072 tokens on 1280 x 8192 the 128x192 tile leaves a last wave of 28 of its 160 tiles; measured
// 42.4 us for stream-K against 52.9 (H100, h100/tuning/tune_sparse24_tp8qkv.jsonl). At 2048 and
// 4096 tokens (whole waves of it, 1.0 and 1.7) the 128x192 tile stays.
TEST(Sparse24CostModel, StreamKOnNarrowWholeColumns) {
  const int wide = kernels::sparse24_detail::kWide.index;
  const int sk = kernels::sparse24_detail::kStreamK128x128;
  EXPECT_EQ(kernels::sparse24_choose(3072, 1280, 8192, -1, 0, false, kSms, true).config, sk);
  EXPECT_EQ(kernels::sparse24_choose(3072, 1280, 8192, -1, 0, false, kSms, false).config, wide);
  EXPECT_NE(kernels::sparse24_choose(3072, 1280, 8192, -1, 0, true, kSms, true).config, sk);
  for (int64_t M : {2048, 4096, 6144})
    EXPECT_EQ(kernels::sparse24_choose(M, 1280, 8192, -1, 0, false, kSms, true).config, wide) << M;
  // The other way round: where the heuristic takes the stream-K tile for a short last wave (2560
  // rows at 2048 and 2560 tokens: 320 and 400 tiles of 128), the model weighs 128x192 against it
  // (0.73x and 0.84x its time, H100, h100/tuning/tune_sparse24_sk_waves.jsonl).
  for (kernels::Sparse24Profile p : {kernels::Sparse24Profile::kH200, kernels::Sparse24Profile::kH100})
    for (int64_t M : {2048, 2560}) {
      ASSERT_EQ(kernels::sparse24_heuristic(M, 2560, 5120, kSms, false, true), sk) << M;
      EXPECT_EQ(kernels::sparse24_choose(M, 2560, 5120, -1, 0, false, kSms, true, p).config, wide) << M;
    }
  // Elsewhere on the test's weights (whole 256-token columns of 2048 rows or more, or fast
  // accumulation) the stream-K tile runs only where the heuristic itself takes it.
  for (const Shape& s : kShapes)
    for (int64_t M = 256; M <= 16384; M += 256)
      for (bool fast : {false, true}) {
        if ((s.N < 2048 && !fast) || kernels::sparse24_heuristic(M, s.N, s.K, kSms, fast, true) == sk) continue;
        EXPECT_NE(kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, true).config, sk)
            << s.N << "x" << s.K << " M=" << M << " fast=" << fast;
      }
}

// The fast 128x192 tile (kFastWide), weighed by the model in fast accumulation only, on weights of
// at most half as many 128-row tiles as SMs (on larger ones up to six columns, below). At 768
// tokens the 128x256 cluster pair pads three token columns to four: the fast 128x192 tile took
// 0.78-0.79x its time on 4096 x 14336 and 8192 x 8192 (H100, h100/tuning/tune_sparse24_fast192.jsonl);
// on 57344 x 8192 and 28672 x 4096 it measured slower than the model says at 1573-3707 tokens
// (h100/tuning/ab_sparse24_fast192.jsonl), so the pair stays there; at 3072 and 16384 tokens (whole
// pairs of columns) the pair stays too.
TEST(Sparse24CostModel, FastWideTileOnNarrowWeights) {
  const int fast_wide = kernels::sparse24_detail::kFastWide.index;
  EXPECT_TRUE(kSparse24Configs[fast_wide].fast_accum);
  EXPECT_EQ(kSparse24Configs[fast_wide].tile_n, 192);
  const int pair256 = kernels::sparse24_detail::kFast[4].index;
  for (const Shape& s : {Shape{4096, 14336}, Shape{8192, 8192}}) {
    for (bool ws : {false, true}) {
      EXPECT_EQ(kernels::sparse24_choose(768, s.N, s.K, -1, 0, true, kSms, ws).config, fast_wide) << s.N << "x" << s.K;
      // Promoted accumulation never takes it.
      EXPECT_NE(kernels::sparse24_choose(768, s.N, s.K, -1, 0, false, kSms, ws).config, fast_wide) << s.N << "x" << s.K;
    }
    // Beyond it the 128x256 tile: the 1x2 pair, or its 2x1 cluster twin (ClusterRows... below).
    for (int64_t M : {3072, 16384}) {
      const int c = kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, true).config;
      EXPECT_TRUE(c == pair256 || c == kernels::sparse24_cluster_twin(pair256)) << s.N << "x" << s.K << " M=" << M;
    }
  }
  // Weights of 67-396 row tiles: up to six token columns only, where the 256-token pair pads most
  // (0.66-0.81x the plan's time at 1100-1152 tokens on 10240-27648 rows and 768 on 28672 x 4096,
  // H100: tune_sparse24_fast_wide_rows.jsonl, tune_sparse24_fast_no_streamk.jsonl,
  // tune_sparse24_fast192.jsonl); larger weights never (57344 x 8192: even).
  for (const Shape& s : kShapes)
    for (int64_t M = 192; M <= 16384; M += 97)
      if (2 * ((s.N + 127) / 128) > kSms &&
          (M > kernels::kSparse24FastWideMaxColumns * 192 || (s.N + 127) / 128 > 3 * kSms))
        EXPECT_NE(kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, true).config, fast_wide) << s.N << " M=" << M;
  for (const Shape& s : {Shape{10240, 5120}, Shape{13824, 5120}, Shape{22016, 5120}})
    EXPECT_EQ(kernels::sparse24_choose(1100, s.N, s.K, -1, 0, true, kSms, true).config, fast_wide) << s.N << "x" << s.K;
  EXPECT_EQ(kernels::sparse24_choose(768, 28672, 4096, -1, 0, true, kSms, true).config, fast_wide);
  // Below kSparse24FastMinTokens a fast request runs the promoted plan, which never holds it.
  for (const Shape& s : kShapes)
    for (int64_t M = 192; M < kernels::kSparse24FastMinTokens; M += 37)
      EXPECT_NE(kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, true).config, fast_wide) << s.N << " M=" << M;
}

// The 2x1 cluster rows (kCluster: X multicast over two weight-row tiles) and their twins. The
// model weighs a cluster row at its twin's time per wave times sparse24_cluster_rate, which falls
// with the weight's row tiles beyond the SMs; a cluster row runs where that models 3 % faster than
// its twin (H100 probe: h100/tuning/tune_sparse24_cluster_*.jsonl).
TEST(Sparse24CostModel, ClusterRowsWhereTheWeightHasMoreRowTilesThanSms) {
  int cluster_rows = 0;
  for (int i = 0; i < kernels::kSparse24NumConfigs; ++i) {
    const kernels::Sparse24ConfigRow& r = kSparse24Configs[i];
    const int twin = kernels::sparse24_cluster_twin(i);
    if (r.unit != kernels::Sparse24Unit::kCluster) {
      EXPECT_EQ(kernels::sparse24_cluster_rate(i, 57344, kSms), 1.0) << r.name;
      continue;
    }
    ++cluster_rows;
    ASSERT_GE(twin, 0) << r.name;
    const kernels::Sparse24ConfigRow& b = kSparse24Configs[twin];
    EXPECT_EQ(kernels::sparse24_cluster_twin(twin), i) << r.name;
    EXPECT_EQ(r.cluster_m, 2) << r.name;
    EXPECT_EQ(r.cluster_n, 1) << r.name;
    EXPECT_EQ(b.cluster_m, 1) << b.name;
    EXPECT_TRUE(r.tile_m == b.tile_m && r.tile_n == b.tile_n && r.tile_k == b.tile_k && r.fast_accum == b.fast_accum &&
                r.cooperative == b.cooperative)
        << r.name << " / " << b.name;
    EXPECT_TRUE(r.splittable());
    EXPECT_TRUE(kernels::sparse24_clamps_last_column(i));
    // The rate never grows with the weight's rows; whole columns: more tokens never model faster.
    double last = 2.0;
    for (int64_t n = 128; n <= 262144; n += 128) {
      const double rate = kernels::sparse24_cluster_rate(i, n, kSms);
      EXPECT_LE(rate, last) << r.name << " N=" << n;
      EXPECT_GT(rate, 0.5) << r.name << " N=" << n;
      last = rate;
    }
    for (const Shape& s : kShapes)
      for (int64_t m = r.tile_n; m <= 16384; m += r.tile_n)
        EXPECT_LE(kernels::sparse24_model_us(i, m, s.N, s.K, kSms), kernels::sparse24_model_us(i, m + r.tile_n, s.N, s.K, kSms))
            << r.name << " " << s.N << "x" << s.K << " M=" << m;
  }
  EXPECT_EQ(cluster_rows, 3);
  EXPECT_EQ(kernels::sparse24_cluster_twin(sparse24_config_index("128x128x256_c1x2_coop")), -1);
  const int wide = kernels::sparse24_detail::kWide.index;
  const int wide_c2 = kernels::sparse24_cluster_twin(wide);
  // The promoted 128x192 cluster row models no faster than its twin up to as many row tiles as SMs
  // (measured 1.00-1.06x its time on 64-112 row tiles): no promoted plan holds a cluster row there.
  EXPECT_GE(kernels::sparse24_cluster_rate(wide_c2, 128 * kSms, kSms), 1.0);
  // The fast 128x192 cluster row models slower than its twin on up to 16 row tiles (measured
  // 1.03-1.10x its time there), capped at 0.95 from 17.
  const int fast_wide_c2 = kernels::sparse24_cluster_twin(kernels::sparse24_detail::kFastWide.index);
  for (int64_t rows = 1; rows <= 16; ++rows)
    EXPECT_GT(kernels::sparse24_cluster_rate(fast_wide_c2, 128 * rows, kSms), 1.0) << rows;
  EXPECT_DOUBLE_EQ(kernels::sparse24_cluster_rate(fast_wide_c2, 128 * 17, kSms), 0.95);
  using kernels::Sparse24Profile;
  // Except on the H100's profile where the 128x192 tile runs swizzled and the cluster row not
  // (2048-4095 tokens) and the tile's last swizzle band is padded: the cluster row measured 0.84-0.98x
  // the tile's time there (log §50).
  const auto padded_band = [](Sparse24Profile p, int64_t M) {
    return p == Sparse24Profile::kH100 && M >= kernels::kSparse24WideSwizzleMinTokens && M < 4096 &&
           (M + 191) / 192 % 4 != 0;
  };
  for (const Shape& s : kShapes) {
    if ((s.N + 127) / 128 > kSms) continue;
    for (int64_t M = 1; M <= 16384; M += M < 512 ? 13 : 211)
      for (Sparse24Profile p : {Sparse24Profile::kH200, Sparse24Profile::kH100}) {
        const Sparse24Choice c = kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, true, p);
        if (c.config == wide_c2 && padded_band(p, M)) continue;
        EXPECT_NE(kSparse24Configs[c.config].unit, kernels::Sparse24Unit::kCluster) << s.N << "x" << s.K << " M=" << M;
        if (c.tail_config >= 0)
          EXPECT_NE(kSparse24Configs[c.tail_config].unit, kernels::Sparse24Unit::kCluster) << s.N << " M=" << M;
      }
  }
  // Measured faster (H100, 0.78-0.97x the 128x192 tile's time; 0.79-0.95x the fast 128x256 pair's):
  // the bench's two weights of 224 and 448 row tiles from 1416 tokens, in both modes and by card.
  for (const Shape& s : {Shape{57344, 8192}, Shape{28672, 4096}})
    for (int64_t M : {1416, 1885, 2300, 4445, 9530, 16384})
      for (Sparse24Profile p : {Sparse24Profile::kH200, Sparse24Profile::kH100}) {
        EXPECT_EQ(kernels::sparse24_choose(M, s.N, s.K, -1, 0, false, kSms, false, p).config, wide_c2) << s.N << " M=" << M;
        EXPECT_EQ(kSparse24Configs[kernels::sparse24_choose(M, s.N, s.K, -1, 0, true, kSms, true, p).config].unit,
                  kernels::Sparse24Unit::kCluster)
            << s.N << " M=" << M;
      }
  // The fast 128x256 cluster row at its fitted rate from 2048 tokens; on weights of up to as many
  // row tiles as SMs from kSparse24FastModelMinTokens at its twin's rate, its modelled time never
  // above its time at 2048 tokens; on weights of more row tiles than SMs from 1200 (0.84-0.93x the
  // fast plan's time).
  const int fast256_c2 = sparse24_config_index("128x256x128_c2x1_coop_fastaccum");
  EXPECT_FALSE(kernels::sparse24_weighs_cluster_row(fast256_c2, kernels::kSparse24FastModelMinTokens - 1, 8192, kSms));
  EXPECT_TRUE(kernels::sparse24_weighs_cluster_row(fast256_c2, kernels::kSparse24FastModelMinTokens, 8192, kSms));
  EXPECT_TRUE(kernels::sparse24_weighs_cluster_row(fast256_c2, 2048, 8192, kSms));
  for (const Shape& s : kShapes) {
    if ((s.N + 127) / 128 > kSms) continue;
    for (int64_t m = kernels::kSparse24FastModelMinTokens; m <= 2304; ++m)
      EXPECT_LE(kernels::sparse24_model_us(fast256_c2, m, s.N, s.K, kSms),
                kernels::sparse24_model_us(fast256_c2, m + 1, s.N, s.K, kSms))
          << s.N << "x" << s.K << " M=" << m;
  }
  EXPECT_TRUE(kernels::sparse24_weighs_cluster_row(fast256_c2, 1200, 57344, kSms));
  EXPECT_FALSE(kernels::sparse24_weighs_cluster_row(fast256_c2, 1199, 57344, kSms));
  // The promoted row from the seventh 192-token column on weights of more row tiles than SMs.
  const int wide_c2x1 = sparse24_config_index("128x192x256_c2x1_coop");
  EXPECT_TRUE(kernels::sparse24_weighs_cluster_row(wide_c2x1, 1153, 57344, kSms));
  EXPECT_FALSE(kernels::sparse24_weighs_cluster_row(wide_c2x1, 1152, 57344, kSms));
  EXPECT_FALSE(kernels::sparse24_weighs_cluster_row(wide_c2x1, 1153, 8192, kSms));
  EXPECT_FALSE(kernels::sparse24_weighs_cluster_row(wide, 4096, 57344, kSms));  // not a cluster row
  // No plan weighs a cluster row below kSparse24ClusterMinTokens (the fast 128x256 row from 512
  // tokens on up to as many row tiles as SMs; the others from 1153, at 800-1000 tokens the rows
  // were even with their twins, 0.96-1.05x).
  for (const Shape& s : kShapes)
    for (int64_t M = 1; M < kernels::kSparse24ClusterMinTokens; M += M < 256 ? 7 : 61)
      for (bool fast : {false, true})
        for (Sparse24Profile p : {Sparse24Profile::kH200, Sparse24Profile::kH100}) {
          const Sparse24Choice c = kernels::sparse24_choose(M, s.N, s.K, -1, 0, fast, kSms, true, p);
          EXPECT_NE(kSparse24Configs[c.config].unit, kernels::Sparse24Unit::kCluster) << s.N << "x" << s.K << " M=" << M;
          if (c.tail_config >= 0)
            EXPECT_NE(kSparse24Configs[c.tail_config].unit, kernels::Sparse24Unit::kCluster) << s.N << " M=" << M;
        }
}

// The 128x128 cluster pairs on narrow weights (sparse24_pair_rate): 1.18x their rate on up to 10
// row tiles from 1024 tokens, 1 from 16 row tiles or below 1024 tokens. On the 1280-row shard the
// 128-token stream-K tile replaces the pair at 1287-3036 tokens (0.81-0.96x its time, H100,
// h100/tuning/tune_sparse24_narrow_weights.jsonl), in both accumulation modes, given a workspace.
TEST(Sparse24CostModel, PairRateOnNarrowWeights) {
  const int pair = sparse24_config_index("128x128x256_c1x2_coop");
  const int fast_pair = sparse24_config_index("128x128x256_c1x2_coop_fastaccum");
  const int sk = kernels::sparse24_detail::kStreamK128x128;
  const int sk32 = kernels::sparse24_detail::kStreamK128x32;
  for (int c : {pair, fast_pair}) {
    EXPECT_DOUBLE_EQ(kernels::sparse24_pair_rate(c, 2048, 1280), kernels::kSparse24PairNarrowRate);
    EXPECT_DOUBLE_EQ(kernels::sparse24_pair_rate(c, 1023, 1280), 1.0);
    EXPECT_DOUBLE_EQ(kernels::sparse24_pair_rate(c, 2048, 2048), 1.0);
    const double mid = kernels::sparse24_pair_rate(c, 2048, 13 * 128);
    EXPECT_GT(mid, 1.0);
    EXPECT_LT(mid, kernels::kSparse24PairNarrowRate);
  }
  EXPECT_DOUBLE_EQ(kernels::sparse24_pair_rate(sk, 2048, 1280), 1.0);
  EXPECT_DOUBLE_EQ(kernels::sparse24_pair_rate(kernels::sparse24_detail::kWide.index, 2048, 1280), 1.0);
  // (In fast accumulation from 2048 tokens the fast 128x256 cluster row, as before.)
  for (int64_t M : {1287, 1416, 2760, 3036})
    for (bool fast : {false, true})
      for (kernels::Sparse24Profile p : {kernels::Sparse24Profile::kH200, kernels::Sparse24Profile::kH100}) {
        if (!(fast && M >= 2048))
          EXPECT_EQ(kernels::sparse24_choose(M, 1280, 8192, -1, 0, fast, kSms, true, p).config, sk) << M << " fast=" << fast;
        EXPECT_NE(kernels::sparse24_choose(M, 1280, 8192, -1, 0, fast, kSms, false, p).config, sk) << M;
      }
  for (const Shape& s : kShapes)
    for (int64_t N : {s.N, int64_t{896}, int64_t{1024}})
      for (int64_t M = 513; M <= 16384; M += 97)
        for (bool fast : {false, true}) {
          const Sparse24Choice c = kernels::sparse24_choose(M, N, s.K, -1, 0, fast, kSms, true);
          EXPECT_NE(c.config, sk32) << N << "x" << s.K << " M=" << M;
        }
}

// The 32-token stream-K tile is weighed up to 12 token columns (384 tokens): at 13 (400-409 tokens)
// on the 1280-row shard the 64x128 tile ran 0.89-0.92x its time (H100,
// h100/tuning/tune_sparse24_sk32_columns.jsonl), where its one-column rate had it 1.3x faster.
// At 9-11 columns it stays, where it was the fastest tile (0.91-0.96x the next).
TEST(Sparse24CostModel, ThirtyTwoTokenStreamKUpTo12Columns) {
  const int sk32 = kernels::sparse24_detail::kStreamK128x32;
  const int tile64x128 = sparse24_config_index("64x128x256_c1x1_pingpong");
  for (kernels::Sparse24Profile p : {kernels::Sparse24Profile::kH200, kernels::Sparse24Profile::kH100})
    for (bool fast : {false, true}) {
      for (int64_t M : {385, 400, 409, 450, 512})
        EXPECT_EQ(kernels::sparse24_choose(M, 1280, 8192, -1, 0, fast, kSms, true, p).config, tile64x128)
            << M << " fast=" << fast;
      for (int64_t N = 128; N <= 16384; N += 128)
        for (int64_t M = 385; M <= 512; M += 9)
          EXPECT_NE(kernels::sparse24_choose(M, N, 4096, -1, 0, fast, kSms, true, p).config, sk32) << N << " M=" << M;
      EXPECT_EQ(kernels::sparse24_choose(340, 1536, 4096, -1, 0, fast, kSms, true, p).config, sk32) << fast;
      EXPECT_EQ(kernels::sparse24_choose(280, 1792, 8192, -1, 0, fast, kSms, true, p).config, sk32) << fast;
    }
}

// The fast 128x192 tile at the swizzled rate on weights of 20-36 row tiles, a multiple of 4, at
// 4096-7167 tokens, on the H100 profile only (the H200's swizzled rate is 1). Held out on an H100 at
// 30 random shapes whose plan moved: 0.74-1.27x the old plan's time, geomean 0.887x, 4 slower
// (h100/tuning/tune_sparse24_fast192_swizzled_heldout_D.jsonl).
TEST(Sparse24CostModel, SwizzleBandPaddingCounted) {
  using kernels::Sparse24Profile;
  // CUTLASS's get_log_swizzle_size: the band narrows where the shorter side has few tiles.
  EXPECT_EQ(kernels::swizzle_band(80, 18, 4), 4);
  EXPECT_EQ(kernels::swizzle_band(80, 2, 4), 2);
  EXPECT_EQ(kernels::swizzle_band(1, 50, 4), 1);
  EXPECT_EQ(kernels::swizzle_band(10, 10, 1), 1);
  EXPECT_EQ(kernels::swizzle_band(10, 10, 8), 8);
  EXPECT_EQ(kernels::swizzle_band(10, 5, 8), 4);
  // The promoted 128x192 tile runs swizzled from 2048 tokens on the H100 profile: on 14 token
  // columns bands of 4 run 16, so 13 columns and one token cost what 16 whole columns do. The model
  // counts bands of 4 even where the launch runs the fitted band (bands of 2 there: 14 columns in 9
  // waves against 10), as its plans were held out.
  const int wide = kernels::sparse24_detail::kWide.index;
  ASSERT_EQ(kernels::sparse24_tile_order(192 * 13 + 1, 10240, wide, kSms, Sparse24Profile::kH100).swizzle, 2);
  EXPECT_DOUBLE_EQ(kernels::sparse24_model_us(wide, 192 * 13 + 1, 10240, 8192, kSms, Sparse24Profile::kH100),
                   kernels::sparse24_model_us(wide, 192 * 16, 10240, 8192, kSms, Sparse24Profile::kH100));
  // Whole bands: one column more costs more.
  EXPECT_LT(kernels::sparse24_model_us(wide, 192 * 16, 10240, 8192, kSms, Sparse24Profile::kH100),
            kernels::sparse24_model_us(wide, 192 * 16 + 1, 10240, 8192, kSms, Sparse24Profile::kH100));
  // The H200's profile counts no band (not held out there), swizzled or not.
  ASSERT_FALSE(kernels::sparse24_card_traits(Sparse24Profile::kH200).counts_swizzle_band);
  for (int64_t cols : {13, 22})
    EXPECT_LT(kernels::sparse24_model_us(wide, 192 * cols + 1, 10240, 8192, kSms, Sparse24Profile::kH200),
              kernels::sparse24_model_us(wide, 192 * (cols + 2), 10240, 8192, kSms, Sparse24Profile::kH200))
        << cols;
  // The fast rows keep the model their constants were fitted through (no band).
  const int fast_wide = kernels::sparse24_detail::kFastWide.index;
  EXPECT_LT(kernels::sparse24_model_us(fast_wide, 192 * 13 + 1, 10240, 8192, kSms, Sparse24Profile::kH100),
            kernels::sparse24_model_us(fast_wide, 192 * 16, 10240, 8192, kSms, Sparse24Profile::kH100));
  // Measured on an H100: at 2048 tokens on 10240 x 8192 (11 columns of 192, run as 12 by the
  // swizzled tile) the 2x1 cluster row, which keeps CUTLASS's default order there, took
  // 0.949-0.955x the 128x192 tile's time (h100/tuning/tune_sparse24_c2x1.jsonl, _default_low.jsonl).
  EXPECT_EQ(kernels::sparse24_choose(2048, 10240, 8192, -1, 0, false, kSms, true, Sparse24Profile::kH100).config,
            kernels::sparse24_cluster_twin(wide));
}

TEST(Sparse24CostModel, FastWideTileSwizzledOnNarrowWeights) {
  using kernels::Sparse24Profile;
  const int fast_wide = kernels::sparse24_detail::kFastWide.index;
  const double rate = kernels::sparse24_card_traits(Sparse24Profile::kH100).wide_swizzled_rate;
  ASSERT_LT(rate, 1.0);
  for (int64_t rows : {20, 24, 28, 32, 36})
    for (int64_t M : {4096, 5000, 7167}) {
      EXPECT_DOUBLE_EQ(kernels::sparse24_fast_wide_swizzled_rate(M, 128 * rows, kSms, Sparse24Profile::kH100), rate)
          << rows << " M=" << M;
      EXPECT_DOUBLE_EQ(kernels::sparse24_fast_wide_swizzled_rate(M, 128 * rows, kSms, Sparse24Profile::kH200), 1.0);
      // The profiles' models of this tile differ by that rate only (their fixed cost aside).
      EXPECT_LT(kernels::sparse24_model_us(fast_wide, M, 128 * rows, 8192, kSms, Sparse24Profile::kH100),
                0.9 * kernels::sparse24_model_us(fast_wide, M, 128 * rows, 8192, kSms, Sparse24Profile::kH200))
          << rows << " M=" << M;
    }
  for (int64_t rows : {16, 18, 22, 30, 40}) {
    EXPECT_DOUBLE_EQ(kernels::sparse24_fast_wide_swizzled_rate(5000, 128 * rows, kSms, Sparse24Profile::kH100), 1.0) << rows;
    EXPECT_DOUBLE_EQ(kernels::sparse24_model_us(fast_wide, 5000, 128 * rows, 8192, kSms, Sparse24Profile::kH100),
                     kernels::sparse24_model_us(fast_wide, 5000, 128 * rows, 8192, kSms, Sparse24Profile::kH200))
        << rows;
  }
  for (int64_t M : {2048, 4095, 7168, 12000})
    EXPECT_DOUBLE_EQ(kernels::sparse24_fast_wide_swizzled_rate(M, 2560, kSms, Sparse24Profile::kH100), 1.0) << M;
  // Its 2x1 cluster row keeps its twin's fitted rate (its cap was fitted against it).
  const int fast_wide_c2 = kernels::sparse24_cluster_twin(fast_wide);
  EXPECT_DOUBLE_EQ(kernels::sparse24_model_us(fast_wide_c2, 5000, 2560, 8192, kSms, Sparse24Profile::kH100),
                   kernels::sparse24_model_us(fast_wide_c2, 5000, 2560, 8192, kSms, Sparse24Profile::kH200));
  // Measured (held out): at 5146 tokens on 2560 x 24576 the fast tile took 0.740x the fast 128x256
  // cluster row's time; a fast-accumulation request runs it there on the H100 profile.
  EXPECT_EQ(kernels::sparse24_choose(5146, 2560, 24576, -1, 0, true, kSms, true, Sparse24Profile::kH100).config,
            fast_wide);
  EXPECT_NE(kernels::sparse24_choose(5146, 2304, 24576, -1, 0, true, kSms, true, Sparse24Profile::kH100).config,
            fast_wide);
}

}  // namespace tail_model

}  // namespace
