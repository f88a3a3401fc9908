// Bad input to blockwise_linear is rejected before any GPU work, with the documented status and a
// message that names the offending value; and the configuration table / heuristic, which are pure
// host functions. Runs without a GPU (fake, well-aligned addresses are never dereferenced).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <string>

#include "blockwise_heuristic.h"
#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using G = ScaleGranularity;

using test::addr;
using test::expect_error;
using test::faddr;

// A valid DeepSeek-style problem (x 1x128 groups, w 128x128 blocks), M=16, N=256, K=512.
struct Case {
  MatrixView x{addr(0x100000), DType::kE4M3, 16, 512};
  ScaleView sx{faddr(0x200000), G::kGroup1x128, 16};
  MatrixView w{addr(0x300000), DType::kE4M3, 256, 512};
  ScaleView sw{faddr(0x400000), G::kBlock128x128, 0};
  VectorView bias{};
  MatrixView y{addr(0x500000), DType::kBF16, 16, 256};
  BlockwiseOptions opt{};
  void run() const { blockwise_linear(x, sx, w, sw, bias, y, opt, nullptr); }
};

TEST(BlockwiseValidation, OperandDtypes) {
  Case c;
  c.x.dtype = DType::kBF16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype bf16 is not accepted", "x");
  c = Case{};
  c.w.dtype = DType::kF16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype fp16 is not accepted", "w");
  c = Case{};
  c.y.dtype = DType::kE4M3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype e4m3 is not accepted", "y");
}

TEST(BlockwiseValidation, Shapes) {
  Case c;
  c.w.cols = c.w.ld = 256;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 256 columns, expected 512", "w");
  c = Case{};
  c.y.rows = 15;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 15 rows, expected 16", "y");
  c = Case{};
  c.y.cols = c.y.ld = 264;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 264 columns, expected 256", "y");
  c = Case{};
  c.x.ld = 500;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "ld=500 is smaller than cols=512", "x");
}

TEST(BlockwiseValidation, KRules) {
  Case c;
  c.x.cols = c.x.ld = c.w.cols = c.w.ld = 136;  // 16-byte rows need K % 16 == 0 (ld 136 is itself rejected later)
  c.x.ld = c.w.ld = 144;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "K=136 must be a multiple of 16", "K");
  c = Case{};
  c.x.cols = c.w.cols = 0;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "K=0 must be positive", "K");
}

TEST(BlockwiseValidation, NRules) {
  Case c;
  c.w.rows = 250;
  c.y.cols = c.y.ld = 250;
  c.y.ld = 256;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "N=250 must be a multiple of 8", "N");
  c.y.dtype = DType::kF32;  // fp32 output: 16-byte rows are 4 elements
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "N=250 must be a multiple of 4", "N");
  c = Case{};
  c.w.rows = 0;
  c.y.cols = 0;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "N=0 must be positive", "N");
}

TEST(BlockwiseValidation, Alignment) {
  Case c;
  c.x.data = addr(0x100008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "x");
  c = Case{};
  c.w.data = addr(0x300004);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "w");
  c = Case{};
  c.y.data = addr(0x500002);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "y");
  c = Case{};
  c.x.ld = 520;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=520", "x");
  c = Case{};
  c.w.ld = 536;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=536", "w");
  c = Case{};
  c.y.ld = 260;  // 520 bytes
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=260 (520 bytes) must be a multiple of 16 bytes", "y");
  // One row: TMA still needs 16-byte row strides.
  c = Case{};
  c.x.rows = c.y.rows = 1;
  c.x.ld = 520;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=520 (520 bytes) must be a multiple of 16 bytes", "x");
  c = Case{};
  c.x.rows = c.y.rows = 1;
  c.y.ld = 260;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=260", "y");
}

TEST(BlockwiseValidation, ScalePointers) {
  Case c;
  c.sx.data = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "null pointer", "x_scale");
  c = Case{};
  c.sw.data = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "null pointer", "w_scale");
  c = Case{};
  c.sx.data = faddr(0x200002);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "x_scale");
}

TEST(BlockwiseValidation, Granularities) {
  Case c;
  c.sx.granularity = G::kPerTensor;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "granularity per_tensor is not accepted", "x_scale");
  c = Case{};
  c.sw.granularity = G::kPerTensor;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "granularity per_tensor is not accepted", "w_scale");
  c = Case{};
  c.sx.granularity = G::kPerRow;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "per_row scales pair only with per_row scales: got x_scale per_row with w_scale block_128x128", "x_scale");
  c = Case{};
  c.sw.granularity = G::kPerRow;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "got x_scale group_1x128 with w_scale per_row", "w_scale");
  c = Case{};
  c.sx.granularity = G::kBlock128x128;
  c.sw.granularity = G::kPerRow;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "with w_scale per_row", "w_scale");
}

TEST(BlockwiseValidation, GroupScaleLeadingDimension) {
  Case c;
  c.sx.ld = 15;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "ld=15 must be >= M=16", "x_scale");
  // The ld of 128x128 block scales and of per-row scales is not used.
  c = Case{};
  c.sx = ScaleView{faddr(0x200000), G::kBlock128x128, 0};
  c.opt.config = 7;  // stops validation just before the GPU
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "config 7", "options.config");
}

TEST(BlockwiseValidation, Bias) {
  Case c;
  c.bias = VectorView(addr(0x600000), DType::kF32, 100);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias has 100 elements, expected N=256", "bias");
  c.bias = VectorView(addr(0x600000), DType::kF16, 256);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias dtype fp16 must be fp32 or the output dtype bf16", "bias");
  c.y.dtype = DType::kF32;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias dtype fp16 must be fp32 or the output dtype fp32", "bias");
  c = Case{};
  c.bias = VectorView(addr(0x600002), DType::kF32, 256);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
  c.bias = VectorView(addr(0x600001), DType::kBF16, 256);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
}

TEST(BlockwiseValidation, Config) {
  Case c;
  c.opt.config = 7;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "config 7 is outside [-1, 7)", "options.config");
  c.opt.config = -2;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "config -2 is outside [-1, 7)", "options.config");
  // The 128x192 tile serves per-row scales only.
  c.opt.config = 4;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "config 4 (128x192x128_c1x1_coop) cannot serve x_scale group_1x128 with w_scale block_128x128: "
               "serves x_scale per_row with w_scale per_row only",
               "options.config");
  // The skinny kernel serves M <= 32 only.
  c = Case{};
  c.x.rows = c.y.rows = 33;
  c.sx.ld = 33;
  c.opt.config = 3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "config 3 (skinny_m32_splitk) serves M <= 32; got M=33",
               "options.config");
  // Beyond 128 tokens the 64-row tile reads 128-row x-scale blocks through a copy in the workspace
  // (ForcedGroupTileWithXBlocksNeedsTheCopy): without one, rejected naming the bytes.
  c = Case{};
  c.x.rows = c.y.rows = 129;
  c.sx = ScaleView{faddr(0x200000), G::kBlock128x128, 0};
  c.opt.config = 1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "config 1 (64x128x128_c1x1_pingpong) reads x_scale block_128x128 beyond 128 tokens (M=129) through a "
               "copy as group_1x128 scales in the workspace: it needs 2112 bytes",
               "options.workspace_bytes");
  EXPECT_EQ(blockwise_plan(128, 256, 512, G::kBlock128x128, G::kBlock128x128, c.opt, 132).config, 1)
      << "up to 128 tokens x blocks are one row, which the 64-row tile reads";
}

// The skinny kernel's cluster size, a tuning knob: a power of two up to 8, with the skinny
// configuration only, and never more K splits than K groups.
TEST(BlockwiseValidation, SkinnyCluster) {
  Case c;
  c.opt.config = 3;
  c.opt.skinny_cluster = 3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "skinny_cluster=3 must be 0 (chosen by the library), 1, 2, 4 or 8",
               "options.skinny_cluster");
  c.opt.skinny_cluster = 16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "skinny_cluster=16 must be", "options.skinny_cluster");
  c.opt.skinny_cluster = 2;
  c.opt.config = -1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "skinny_cluster=2 applies to the skinny configuration only: set options.config=3 (got config -1)",
               "options.skinny_cluster");
  c.opt.config = 1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "(got config 1)", "options.skinny_cluster");
  // K = 512: 4 groups for 4 warps already.
  c.opt.config = 3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "skinny_cluster=2 x 4 warps leaves a warp without a 128-wide K group: K=512 has 4",
               "options.skinny_cluster");
  // K = 256: two warps, two groups.
  c.x.cols = c.x.ld = c.w.cols = c.w.ld = 256;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "skinny_cluster=2 x 2 warps", "options.skinny_cluster");
}

// The tuning band of tiles (BlockwiseOptions::max_swizzle): 0 (the library's order), 1, 2, 4 or 8.
TEST(BlockwiseValidation, MaxSwizzle) {
  for (int bad : {-1, 3, 16}) {
    Case c;
    c.opt.max_swizzle = bad;
    expect_error([&] { c.run(); }, Status::kInvalidArgument,
                 "max_swizzle=" + std::to_string(bad) + " must be 0 (the library's order), 1, 2, 4 or 8",
                 "options.max_swizzle");
  }
  for (int ok : {0, 1, 2, 4, 8}) {
    BlockwiseOptions o;
    o.max_swizzle = ok;
    EXPECT_NO_THROW(blockwise_plan(4096, 4096, 4096, G::kGroup1x128, G::kBlock128x128, o, 132)) << ok;
  }
}

// Split-K: 0 (library), 1 (none) or a forced 2..16 that needs whole groups per slice, a CUTLASS
// configuration and a large enough, aligned workspace. All checked before the GPU.
TEST(BlockwiseValidation, SplitK) {
  Case c;  // M = 16, N = 256, K = 512
  c.opt.split_k = -1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=-1 must be 0 (chosen by the library), 1 (no split) or 2..16", "options.split_k");
  c.opt.split_k = 17;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "split_k=17 must be", "options.split_k");
  c.opt.split_k = 3;  // 512 = 4 groups
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=3 needs the whole 128-wide groups of K to be a multiple of 3 (the same number per slice): "
               "K=512 has 4",
               "options.split_k");
  // A partial last group is not counted (the reduction adds it), and every slice needs a group.
  for (const auto& [K, whole] : {std::pair<int64_t, int>{400, 3}, {112, 0}}) {  // 400 = 3 groups + 16
    Case p;
    p.x.cols = p.w.cols = K;
    p.opt.split_k = 2;
    expect_error([&] { p.run(); }, Status::kInvalidArgument, "K=" + std::to_string(K) + " has " + std::to_string(whole),
                 "options.split_k");
  }
  c.opt.split_k = 2;
  c.opt.config = 3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=2 applies to the CUTLASS configurations, not config 3 (skinny_m32_splitk)", "options.split_k");
  c.opt.config = 1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=2 needs a workspace of 32768 bytes (2 x M=16 x N=256 x 4); got none", "options.workspace");
  c.opt.workspace = addr(0x600000);
  c.opt.workspace_bytes = 32767;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "got workspace_bytes=32767", "options.workspace");
  c.opt.workspace_bytes = 32768;
  c.opt.workspace = addr(0x600008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "options.workspace");
  // A misaligned workspace is an error even when the library would not split.
  c.opt.split_k = 0;
  c.opt.config = -1;
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "options.workspace");
  c.opt.workspace = addr(0x600000);
  if (!device_info().supports_kernels())
    expect_error([&] { c.run(); }, Status::kUnsupported, "sm_90a");
  // The workspace size function applies the same rules to its arguments.
  BlockwiseOptions o;
  o.split_k = 17;
  expect_error([&] { blockwise_linear_workspace_bytes(16, 256, 512, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "split_k=17 must be", "options.split_k");
  o = BlockwiseOptions{};
  o.config = 7;
  expect_error([&] { blockwise_linear_workspace_bytes(16, 256, 512, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "config 7 is outside [-1, 7)", "options.config");
  o.config = -1;
  expect_error([&] { blockwise_linear_workspace_bytes(16, 0, 512, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "shape M=16 N=0 K=512");
  // blockwise_plan checks the same.
  expect_error([&] { blockwise_plan(-1, 256, 512, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "blockwise_plan: shape M=-1 N=256 K=512", "M");
  o.split_k = -2;
  expect_error([&] { blockwise_plan(16, 256, 512, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "split_k=-2 must be", "options.split_k");
}

TEST(BlockwiseValidation, ProblemTooLarge) {
  Case c;
  c.x.rows = c.y.rows = int64_t{1} << 31;
  c.sx.ld = c.x.rows;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "M=2147483648", "x");
  c = Case{};
  c.sx.ld = int64_t{1} << 30;  // x 4 K groups > 2^31 scales: the kernel's scale layout is 32-bit
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "ld=1073741824 x 4 K groups", "x_scale");
}

// M == 0 enqueues nothing and needs neither scales nor a GPU.
TEST(BlockwiseValidation, MZeroIsNoOp) {
  Case c;
  c.x.rows = c.y.rows = 0;
  c.sx = ScaleView{nullptr, G::kGroup1x128, 0};
  c.sw.data = nullptr;
  EXPECT_NO_THROW(c.run());
}

// Valid input on a machine without an sm_90 GPU: kUnsupported, after all the checks above.
TEST(BlockwiseValidation, ValidInputWithoutGpuIsUnsupported) {
  if (device_info().supports_kernels()) GTEST_SKIP() << "an sm_90 GPU is present (fake pointers would be used)";
  Case c;
  expect_error([&] { c.run(); }, Status::kUnsupported, "sm_90a");
}

// ---- configuration table and heuristic ---------------------------------------------------------

using kernels::blockwise_choose_config;
using kernels::kBlockwiseConfigs;
using kernels::kBlockwiseNumConfigs;

TEST(BlockwiseConfigs, TableAndNames) {
  ASSERT_EQ(kBlockwiseNumConfigs, 7);
  EXPECT_EQ(kBlockwiseConfigs[0].name(), "128x128x128_c1x1_coop");
  EXPECT_EQ(kBlockwiseConfigs[1].name(), "64x128x128_c1x1_pingpong");
  EXPECT_EQ(kBlockwiseConfigs[2].name(), "128x128x128_c1x2_coop");
  EXPECT_EQ(kBlockwiseConfigs[3].name(), "skinny_m32_splitk");
  EXPECT_EQ(kBlockwiseConfigs[4].name(), "128x192x128_c1x1_coop");
  EXPECT_EQ(blockwise_config_name(4), "128x192x128_c1x1_coop");
  EXPECT_EQ(kBlockwiseConfigs[5].name(), "128x128x128_c1x1_coop_clamped");
  EXPECT_EQ(kBlockwiseConfigs[6].name(), "64x128x128_c1x1_pingpong_clamped");
  std::set<std::string> names;
  for (const auto& c : kBlockwiseConfigs) {
    EXPECT_EQ(c.tile_k, 128) << c.name() << ": the K tile must equal the scale group";
    if (c.schedule == kernels::BlockwiseSchedule::kSkinny) {
      names.insert(c.name());
      continue;
    }
    if (!c.per_row_only)
      EXPECT_EQ(c.tile_n % 128, 0) << c.name() << ": 128x128 weight-scale blocks must cover whole tiles";
    if (c.schedule == kernels::BlockwiseSchedule::kCooperative) EXPECT_GE(c.tile_m, 128) << c.name();
    names.insert(c.name());
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kBlockwiseNumConfigs)) << "names must be unique";
}

TEST(BlockwiseConfigs, Supports) {
  const G valid[][2] = {{G::kGroup1x128, G::kBlock128x128}, {G::kGroup1x128, G::kGroup1x128},
                        {G::kBlock128x128, G::kBlock128x128}, {G::kBlock128x128, G::kGroup1x128},
                        {G::kPerRow, G::kPerRow}};
  // Configuration 0 is the fallback of the heuristic: it must read every valid pair.
  for (const auto& p : valid) EXPECT_TRUE(kernels::blockwise_config_reads(0, p[0], p[1]));
  // The 64-row tile reads x blocks only as one row of them (up to 128 tokens), and serves them for
  // every M through the expanded copy beyond.
  EXPECT_FALSE(kernels::blockwise_config_reads(1, G::kBlock128x128, G::kBlock128x128));
  EXPECT_FALSE(kernels::blockwise_config_reads(1, G::kBlock128x128, G::kGroup1x128));
  EXPECT_TRUE(kernels::blockwise_config_supports(1, G::kBlock128x128, G::kBlock128x128));
  EXPECT_TRUE(kernels::blockwise_config_supports(1, G::kBlock128x128, G::kGroup1x128));
  EXPECT_TRUE(kernels::blockwise_config_supports(1, G::kGroup1x128, G::kBlock128x128));
  EXPECT_TRUE(kernels::blockwise_config_supports(1, G::kPerRow, G::kPerRow));
  for (const auto& p : valid) EXPECT_TRUE(kernels::blockwise_config_supports(2, p[0], p[1]));
  for (const auto& p : valid) EXPECT_TRUE(kernels::blockwise_config_supports(3, p[0], p[1]));
  EXPECT_FALSE(kernels::blockwise_config_supports(3, G::kPerRow, G::kGroup1x128));
  EXPECT_FALSE(kernels::blockwise_config_supports(0, G::kPerRow, G::kBlock128x128));
  EXPECT_FALSE(kernels::blockwise_config_supports(0, G::kGroup1x128, G::kPerRow));
  EXPECT_FALSE(kernels::blockwise_config_supports(0, G::kPerTensor, G::kBlock128x128));
  EXPECT_FALSE(kernels::blockwise_config_supports(-1, G::kGroup1x128, G::kBlock128x128));
  EXPECT_FALSE(kernels::blockwise_config_supports(kBlockwiseNumConfigs, G::kGroup1x128, G::kBlock128x128));
  // The 128x192 tile: per-row scales only (a 192-wide tile cannot hold whole 128-row weight blocks).
  EXPECT_TRUE(kernels::blockwise_config_supports(4, G::kPerRow, G::kPerRow));
  for (const auto& p : valid)
    if (p[0] != G::kPerRow) EXPECT_FALSE(kernels::blockwise_config_supports(4, p[0], p[1])) << granularity_name(p[0]);
  // The clamped rows read every pair but x_scale in 128x128 blocks (a shifted tile would straddle
  // two), which they serve through the copy.
  for (int c : {5, 6})
    for (const auto& p : valid) {
      EXPECT_EQ(kernels::blockwise_config_reads(c, p[0], p[1]), p[0] != G::kBlock128x128) << c << " " << granularity_name(p[0]);
      EXPECT_TRUE(kernels::blockwise_config_supports(c, p[0], p[1])) << c << " " << granularity_name(p[0]);
    }
  // The public query says the same.
  for (int c = -1; c <= kBlockwiseNumConfigs; ++c)
    for (const auto& p : valid) EXPECT_EQ(qsgemm::blockwise_config_supports(c, p[0], p[1]), kernels::blockwise_config_supports(c, p[0], p[1]));
}

// Per-row scales take the 128x192 tile where its waves, charged 3 units each against 1.2 for a
// 64-row wave and 2 for a 128x128 wave, come out fewer than those of the heuristic's pick, and its
// last tile is nearly full (measured: bench/results/h200/tuning/tune_blockwise_two_partials.jsonl).
TEST(BlockwiseHeuristic, PerRowWideTile) {
  const auto wide = [](int64_t M, int64_t N, int config) {
    return kernels::blockwise_per_row_wide_tile(M, N, config, 132);
  };
  // Measured wins (tune_blockwise_two_partials.jsonl, per_row x per_row), against the pick:
  EXPECT_TRUE(wide(256, 10240, 1)) << "64x128: 50.6 us, 128x192: 40.1 (3 waves of 64 rows against 1)";
  EXPECT_TRUE(wide(1024, 2112, 1)) << "44.3 against 34.6 us";
  EXPECT_TRUE(wide(2048, 32768, 0)) << "112.5 against 103.8 us";
  EXPECT_TRUE(wide(4096, 2112, 0)) << "119.8 against 101.3 us";
  EXPECT_TRUE(wide(8192, 57344, 2)) << "6879 against 6740 us";
  // Measured losses: 4096 rows (3.1 % of the last tile wasted) and 7168 rows (1.8 %) everywhere;
  // 10240 and 28672 rows, where the 128x128 tile's waves are nearly full, from M = 1024.
  for (int64_t M : {256, 512, 1024, 2048, 4096, 8192, 16384})
    for (int config : {0, 1, 2}) {
      EXPECT_FALSE(wide(M, 4096, config)) << M;
      EXPECT_FALSE(wide(M, 7168, config)) << M;
    }
  for (int64_t M : {1024, 2048, 4096, 8192, 16384}) {
    EXPECT_FALSE(wide(M, 10240, 0)) << M;
    EXPECT_FALSE(wide(M, 28672, 0)) << M;
  }
  // Not measured below 256 tokens; never instead of the skinny kernel or itself.
  for (int64_t M : {1, 64, 128, 255})
    for (int config : {0, 1}) EXPECT_FALSE(wide(M, 24576, config)) << M;
  EXPECT_FALSE(wide(4096, 2112, kernels::kSkinnyConfig));
  EXPECT_FALSE(wide(4096, 2112, kernels::kPerRowWideConfig));
  // The public choice: per_row x per_row only.
  EXPECT_EQ(qsgemm::blockwise_choose_config(4096, 2112, 7168, G::kPerRow, G::kPerRow, 132), 4);
  EXPECT_EQ(qsgemm::blockwise_choose_config(4096, 2112, 7168, G::kGroup1x128, G::kBlock128x128, 132), 0);
  EXPECT_EQ(qsgemm::blockwise_choose_config(4096, 2112, 7168, G::kGroup1x128, G::kGroup1x128, 132), 0);
  EXPECT_EQ(qsgemm::blockwise_choose_config(4096, 4096, 4096, G::kPerRow, G::kPerRow, 132), 0);
  EXPECT_EQ(qsgemm::blockwise_choose_config(8192, 57344, 8192, G::kPerRow, G::kPerRow, 132), 4);
  EXPECT_EQ(qsgemm::blockwise_choose_config(8192, 57344, 8192, G::kGroup1x128, G::kBlock128x128, 132), 2);
  EXPECT_EQ(qsgemm::blockwise_choose_config(8, 6144, 4096, G::kPerRow, G::kPerRow, 132), 3) << "decode: skinny";
  for (int64_t M = 1; M <= 70000; M = M * 3 + 1)
    for (int64_t N : {8, 2112, 6144, 24576, 129280})
      for (int64_t K : {4096, 16384}) {
        const int base = blockwise_choose_config(M, N, K, 132);
        const int c = qsgemm::blockwise_choose_config(M, N, K, G::kPerRow, G::kPerRow, 132);
        EXPECT_EQ(c, wide(M, N, base) ? kernels::kPerRowWideConfig : base) << M << "x" << N << "x" << K;
      }
}

// The decode rule: the skinny kernel at M <= 8 unless K is short, where the 64-row tiles fill under
// 60 % of their waves; at M <= 16 with K >= 4096 where they are at most a quarter of the SMs; at
// M <= 32 with K >= 4096 at most a sixth; the 64-row tile elsewhere.
TEST(BlockwiseHeuristic, DecodeUsesTheSkinnyKernelWhereItWins) {
  // Up to 8 tokens: the skinny kernel where the 64-row tiles fill under 60 % of their waves (79 of
  // 132 SMs; 148 tiles in two waves).
  for (int64_t M : {1, 2, 7, 8}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{4096, 14336}, {8192, 28672}, {2112, 7168}, {4096, 7168}, {1280, 8192},
                        {8192, 8192}, {6144, 4096}, {7168, 2048}, {7168, 16384}, {4096, 32768}, {10112, 4096},
                        {18944, 3584}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 3) << M << "x" << N << "x" << K;
    for (auto [N, K] : {std::pair<int64_t, int64_t>{32768, 512}, {4096, 1024}, {10240, 8192}, {28672, 4096},
                        {57344, 8192}, {24576, 1536}, {13824, 5120}, {27648, 5120}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 1) << M << "x" << N << "x" << K;
  }
  // 9..16 tokens: at most 33 CTAs (a quarter), K >= 4096.
  for (int64_t M : {9, 16}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{4096, 7168}, {4096, 14336}, {4096, 4096}, {2112, 7168}, {1280, 8192},
                        {4224, 4096}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 3) << M << "x" << N << "x" << K;
    for (auto [N, K] : {std::pair<int64_t, int64_t>{10240, 8192}, {4096, 2048}, {7168, 2048}, {28672, 4096}, {57344, 8192},
                        {24576, 1536}, {8192, 28672}, {8192, 8192}, {6144, 4096}, {7168, 16384}, {4352, 4096}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 1) << M << "x" << N << "x" << K;
  }
  for (int64_t M : {17, 32}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{2112, 7168}, {1280, 8192}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 3) << M << "x" << N << "x" << K;
    // 32 tiles of 64 rows: the two-partials 64-row tile won there (4096x4096, 4096x7168) or tied.
    for (auto [N, K] : {std::pair<int64_t, int64_t>{4096, 14336}, {4096, 7168}, {4096, 4096}, {6144, 4096},
                        {7168, 16384}, {8192, 8192}, {4096, 2048}})
      EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 1) << M << "x" << N << "x" << K;
    EXPECT_EQ(blockwise_choose_config(M, 256, 7168, 132), 3) << "tiny: two N tiles";
  }
}

TEST(BlockwiseHeuristic, SmallMUsesTheNarrowTile) {
  for (int64_t M : {1, 16, 32})
    for (int64_t N : {8, 136, 256}) EXPECT_EQ(blockwise_choose_config(M, N, 128, 132), 3) << "tiny: " << M << "x" << N;
  for (int64_t M : {17, 32})
    for (int64_t N : {384, 2112, 7168, 18432}) EXPECT_EQ(blockwise_choose_config(M, N, 2048, 132), 1) << M << "x" << N;
  for (int64_t M : {33, 64})
    for (int64_t N : {384, 2112, 7168, 18432}) EXPECT_EQ(blockwise_choose_config(M, N, 4096, 132), 1) << M << "x" << N;
  for (int64_t M : {1, 8, 16})
    for (int64_t N : {384, 7168, 18432}) EXPECT_EQ(blockwise_choose_config(M, N, 1024, 132), 1) << M << "x" << N;
  for (int64_t M : {33, 64})
    for (int64_t N : {384, 2112, 7168, 18432}) EXPECT_EQ(blockwise_choose_config(M, N, 7168, 132), 1) << M << "x" << N;
}

// The skinny kernel's cover of a problem: every token and row, at most 4 warps and a portable
// cluster, at least one K group per warp; K is split over a cluster only into SMs that would
// otherwise be idle (no second wave) and only while every warp keeps 6 groups, and then as far as
// that allows (measured: bench/results/h200/tuning/tune_skinny.jsonl).
TEST(BlockwiseHeuristic, SkinnyShape) {
  for (int M = 1; M <= 32; ++M)
    for (int N : {8, 16, 120, 1280, 2112, 4096, 32768})
      for (int K : {16, 128, 400, 512, 4096, 7168, 28672}) {
        const kernels::SkinnyShape s = kernels::skinny_shape(M, N, K, 132);
        const int kb = (K + 127) / 128;
        SCOPED_TRACE(::testing::Message() << M << "x" << N << "x" << K);
        EXPECT_GE(8 * s.T, M);
        EXPECT_TRUE(s.T == 1 || s.T == 2 || s.T == 4);
        EXPECT_LE(s.T == 1 ? 0 : 8 * s.T / 2, M - 1) << "a smaller token tile would do";
        EXPECT_TRUE(s.R == 1 || s.R == 2);
        EXPECT_EQ(128 % (16 * s.R), 0) << "a warp's rows must lie in one 128-row weight-scale block";
        EXPECT_GE(s.KW, 1);
        EXPECT_LE(s.KW, 4);
        EXPECT_GE(s.R * 16 * s.row_ctas, N);
        EXPECT_LT(s.R * 16 * (s.row_ctas - 1), N);
        EXPECT_GE(s.C, 1);
        EXPECT_LE(s.C, 8);
        EXPECT_LE(s.C * s.KW, std::max(kb, 1)) << "a warp without a K group";
        EXPECT_TRUE(s.C == 1 || s.C == 2 || s.C == 4 || s.C == 8) << s.C;
        const int slots = 132 * (s.T == 1 ? 4 : 2);
        const auto fits = [&](int c) { return c <= 8 && s.row_ctas * c <= slots && kb >= 24 * c; };
        if (s.C > 1) EXPECT_TRUE(fits(s.C)) << "C=" << s.C << " adds a wave or leaves a warp under 6 groups";
        EXPECT_FALSE(fits(2 * s.C)) << "C=" << s.C << " could double";
        // A forced cluster size is taken as is.
        EXPECT_EQ(kernels::skinny_shape(M, N, K, 132, 2).C, 2);
      }
}

TEST(BlockwiseHeuristic, MediumAndLargeM) {
  // 2 x 56 = 112 tiles of 128 rows: one wave; 64-row tiles would need two.
  EXPECT_EQ(blockwise_choose_config(256, 7168, 7168, 132), 0);
  // Many waves: the 1x1 tile, except on large weights from M = 4096 (K >= 16384 or N x K >= 2^28),
  // where the 1x2 cluster measured faster (see the heuristic).
  for (int64_t M : {1024, 2048, 4096, 16384, 65536})
    for (int64_t N : {2048, 7168, 7296}) EXPECT_EQ(blockwise_choose_config(M, N, 7168, 132), 0) << M << "x" << N;
  for (int64_t M : {1024, 2048}) {
    EXPECT_EQ(blockwise_choose_config(M, 57344, 8192, 132), 0) << M;
    EXPECT_EQ(blockwise_choose_config(M, 7168, 16384, 132), 0) << M;
  }
  for (int64_t M : {4096, 8192, 16384, 65536}) {
    EXPECT_EQ(blockwise_choose_config(M, 57344, 8192, 132), 2) << M;
    EXPECT_EQ(blockwise_choose_config(M, 8192, 28672, 132), 2) << M;
    EXPECT_EQ(blockwise_choose_config(M, 7168, 16384, 132), 2) << M;
    EXPECT_EQ(blockwise_choose_config(M, 10240, 8192, 132), 0) << M;
    EXPECT_EQ(blockwise_choose_config(M, 4096, 14336, 132), 0) << M;
  }
  // Few N tiles, many rows: 64-row tiles fill the SMs (130 tiles vs. 66).
  EXPECT_EQ(blockwise_choose_config(4099, 256, 7168, 132), 1);
}

// K not a multiple of 128 (packed rows start off 128-byte lines): the 1x2 cluster above 256 tokens,
// what measured fastest at K = 4112 (tuning/partialk_ld_align.txt); the same shapes with K = 4096
// keeps the wave model's pick (no cluster pair below M = 4096), and the decode sizes the skinny kernel.
TEST(BlockwiseHeuristic, MisalignedRowsTakeTheClusterPair) {
  for (int64_t K : {4112, 14352, 7200})
    for (int64_t M : {257, 288, 600, 1024, 4096, 16384})
      for (int64_t N : {2112, 4096, 7168}) {
        EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 2) << M << "x" << N << "x" << K;
        if (M < 4096) EXPECT_NE(blockwise_choose_config(M, N, K - K % 128, 132), 2) << M << "x" << N << "x" << K;
      }
  EXPECT_EQ(blockwise_choose_config(1024, 4096, 4096, 132), 0);
  EXPECT_EQ(blockwise_choose_config(256, 4096, 4112, 132), blockwise_choose_config(256, 4096, 4096, 132));
  EXPECT_EQ(blockwise_choose_config(8, 4096, 4112, 132), 3) << "decode: the skinny kernel";
  for (G g : {G::kGroup1x128, G::kBlock128x128})
    EXPECT_EQ(qsgemm::blockwise_choose_config(1024, 4096, 4112, g, G::kBlock128x128, 132), 2);
}

// The rule looks at the row strides, not K: rows padded to 128 bytes (fp8_row_ld, what the Python
// package's quantizers write) take the wave model like K = 4096 (1x1 and 1x2 tied there, the 1x1
// 2 % ahead at M = 1024: tuning/partialk_ld_align.txt), and an odd stride with K % 128 == 0 is off
// the lines as well.
TEST(BlockwiseHeuristic, PaddedRowsTakeTheWaveModel) {
  EXPECT_EQ(fp8_row_ld(4096), 4096);
  EXPECT_EQ(fp8_row_ld(4112), 4224);
  EXPECT_EQ(fp8_row_ld(14352), 14464);
  EXPECT_EQ(fp8_row_ld(16), 128);
  for (int64_t K : {4112, 14352, 7200})
    for (int64_t M : {257, 288, 600, 1024, 4096, 16384})
      for (int64_t N : {2112, 4096, 7168}) {
        const int64_t ld = fp8_row_ld(K);
        const int64_t K128 = K - K % 128;
        for (G g : {G::kGroup1x128, G::kBlock128x128}) {
          EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, g, G::kBlock128x128, 132, ld, ld),
                    qsgemm::blockwise_choose_config(M, N, K128, g, G::kBlock128x128, 132))
              << M << "x" << N << "x" << K;
          // One operand off the lines is enough for the cluster pair.
          EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, g, G::kBlock128x128, 132, ld, 0), 2);
          EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, g, G::kBlock128x128, 132, 0, ld), 2);
        }
        EXPECT_EQ(blockwise_choose_config(M, N, K128, 132, K128 + 16, K128), 2) << M << "x" << N << "x" << K128;
      }
  // The plan functions take the same strides and reject one blockwise_linear would reject.
  BlockwiseOptions o;
  EXPECT_EQ(blockwise_plan(1024, 4096, 4112, G::kGroup1x128, G::kBlock128x128, o, 132, 4224, 4224).config,
            blockwise_plan(1024, 4096, 4096, G::kGroup1x128, G::kBlock128x128, o, 132).config);
  EXPECT_EQ(blockwise_plan(1024, 4096, 4112, G::kGroup1x128, G::kBlock128x128, o, 132).config, 2);
  expect_error([&] { blockwise_plan(1024, 4096, 4112, G::kGroup1x128, G::kBlock128x128, o, 132, 4100, 0); },
               Status::kInvalidArgument, "ld_x=4100 must be 0 (packed rows) or >= K=4112", "ld_x");
  expect_error([&] { blockwise_linear_workspace_bytes(64, 4096, 4112, G::kGroup1x128, G::kBlock128x128, o, 132, 0, 4120); },
               Status::kInvalidArgument, "ld_w=4120", "ld_w");
  expect_error([&] { qsgemm::blockwise_choose_config(64, 4096, 4112, G::kGroup1x128, G::kBlock128x128, 132, -16, 0); },
               Status::kInvalidArgument, "ld_x=-16", "ld_x");
}

// K <= 512 (four K tiles or fewer): the 64x128 ping-pong tile above the decode sizes, for every pair
// it serves and instead of the per-row 128x192 tile; the 128-row scale blocks fall back to the
// 128x128 tile (measured: bench/results/h200/tuning/tune_blockwise_k512.txt).
TEST(BlockwiseHeuristic, ShortKUsesThePingPongTile) {
  for (int64_t K : {16, 128, 400, 512})
    for (int64_t M : {33, 256, 2048, 8192, 65536})
      for (int64_t N : {2112, 7168, 32768}) {
        EXPECT_EQ(blockwise_choose_config(M, N, K, 132), 1) << M << "x" << N << "x" << K;
        EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, G::kPerRow, G::kPerRow, 132), 1) << M << "x" << N << "x" << K;
        EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, G::kGroup1x128, G::kGroup1x128, 132), 1);
        EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, G::kBlock128x128, G::kBlock128x128, 132), M <= 128 ? 1 : 0);
      }
  EXPECT_EQ(qsgemm::blockwise_choose_config(2048, 32768, 512, G::kPerRow, G::kPerRow, 132), 1)
      << "the 128x192 tile took it before: 92.8 us against 83.6";
  EXPECT_EQ(qsgemm::blockwise_choose_config(2048, 32768, 640, G::kPerRow, G::kPerRow, 132), 4) << "K > 512: the wave model";
  EXPECT_EQ(blockwise_choose_config(4096, 8192, 1024, 132), 0);
}

// CUTLASS's tile order: swizzled bands along M from M = 2048 on weights of 4096 rows or more,
// CUTLASS's default otherwise (measured: the 2112-row weight ran slower with it); the 64-row
// ping-pong tiles (plain and clamped) along M at every shape.
TEST(BlockwiseHeuristic, TileOrder) {
  const int sq = blockwise_config_index("128x128x128_c1x1_coop"), c12 = blockwise_config_index("128x128x128_c1x2_coop");
  for (int config : {sq, c12}) {
    for (int64_t N : {4096, 7168, 57344}) {
      for (int64_t M : {1, 64, 1024, 2047}) {
        EXPECT_EQ(kernels::blockwise_tile_order(M, N, config, 132).swizzle, 1) << M << "x" << N;
        EXPECT_EQ(kernels::blockwise_tile_order(M, N, config, 132).raster, 0) << M << "x" << N;
      }
      for (int64_t M : {2048, 4096, 1 << 20}) {
        // Bands of 4, or of 2 where bands of 4 pad into 5 % more waves (BlockwiseHeuristic.FittedBand).
        EXPECT_EQ(kernels::blockwise_tile_order(M, N, config, 132).swizzle,
                  kernels::blockwise_fitted_band(config, M, N, 132)) << M << "x" << N;
        EXPECT_EQ(kernels::blockwise_tile_order(M, N, config, 132).raster, 1) << M << "x" << N;
      }
    }
    for (int64_t N : {8, 2112, 4095}) EXPECT_EQ(kernels::blockwise_tile_order(16384, N, config, 132).swizzle, 1) << N;
  }
  for (const char* name : {"64x128x128_c1x1_pingpong", "64x128x128_c1x1_pingpong_clamped"})
    for (int64_t M : {1, 100, 1287, 4096})
      for (int64_t N : {1536, 2112, 4096, 57344}) {
        const kernels::TileOrder o = kernels::blockwise_tile_order(M, N, blockwise_config_index(name), 132);
        EXPECT_EQ(o.swizzle, 1) << name << " " << M << "x" << N;
        EXPECT_EQ(o.raster, 1) << name << " " << M << "x" << N << ": along M";
      }
}

// The tiles CUTLASS's scheduler runs in bands (both counts padded to a whole band times the
// cluster) and the fitted band: 2 where bands of 4 pad into at least 5 % more waves, else 4. The
// sweep's breaks on l3-70b.down (8192 rows, 64 tiles): 2074 tokens are 17 token tiles, run as 20 in
// bands of 4 (10 waves of 132) and as 18 in bands of 2 (9 waves).
TEST(BlockwiseHeuristic, FittedBand) {
  const int sq = blockwise_config_index("128x128x128_c1x1_coop"), c12 = blockwise_config_index("128x128x128_c1x2_coop");
  EXPECT_EQ(kernels::blockwise_scheduled_tiles(sq, 2074, 8192, 4), 20 * 64);
  EXPECT_EQ(kernels::blockwise_scheduled_tiles(sq, 2074, 8192, 2), 18 * 64);
  EXPECT_EQ(kernels::blockwise_scheduled_tiles(sq, 2074, 8192, 1), 17 * 64);
  EXPECT_EQ(kernels::blockwise_fitted_band(sq, 2074, 8192, 132), 2);
  EXPECT_EQ(kernels::blockwise_tile_order(2074, 8192, sq, 132).swizzle, 2);
  EXPECT_EQ(kernels::blockwise_fitted_band(sq, 2509, 8192, 132), 4);  // 20 token tiles: whole bands
  // The 1x2 cluster pads the weight's tiles to the band times 2: 4100 rows are 33 tiles, 34 in
  // clusters, 40 in bands of 4 (x 2), 36 in bands of 2.
  EXPECT_EQ(kernels::blockwise_scheduled_tiles(c12, 4096, 4100, 4), 32 * 40);
  EXPECT_EQ(kernels::blockwise_scheduled_tiles(c12, 4096, 4100, 2), 32 * 36);
  // A saving under 5 %: 6771 tokens on 8192 rows, 28 waves against 27, keep bands of 4.
  EXPECT_EQ(kernels::blockwise_fitted_band(sq, 6771, 8192, 132), 4);
  int narrowed = 0;
  for (int64_t m = 2048; m <= 16384; m += 89)
    for (int64_t n : {4096, 7168, 8192, 28672, 57344})
      for (int config : {sq, c12}) {
        const int band = kernels::blockwise_fitted_band(config, m, n, 132);
        const auto waves = [&](int b) { return (kernels::blockwise_scheduled_tiles(config, m, n, b) + 131) / 132; };
        ASSERT_TRUE(band == 4 || band == 2) << band;
        EXPECT_EQ(band == 2, 100 * waves(2) <= 95 * waves(4)) << m << "x" << n << " config " << config;
        narrowed += band == 2;
      }
  EXPECT_GT(narrowed, 0);
}

// Split-K (given a workspace): only the CUTLASS tiles, only where one CTA per tile streams the
// weight slower than DRAM (28 x (tile_m + tile_n) >= N + M; 56 x with per-channel weight scales), at
// least 32 whole 128-wide groups (64 with a partial last group, but with 1x128 weight scales at
// 17-128 tokens) and eight per slice, never more CTAs
// than SMs; the largest such split.
TEST(BlockwiseHeuristic, SplitK) {
  using kernels::blockwise_split_k;
  // Narrow weights at small M: N = 4096 is 32 tiles of 64x128 -> 4 slices (128 CTAs); 2112 is 17 -> 7.
  EXPECT_EQ(blockwise_split_k(64, 4096, 14336, 1, G::kBlock128x128, 132), 4);
  EXPECT_EQ(blockwise_split_k(32, 2112, 7168, 1, G::kBlock128x128, 132), 7);
  EXPECT_EQ(blockwise_split_k(128, 4096, 4096, 1, G::kBlock128x128, 132), 2);   // 64 tiles
  EXPECT_EQ(blockwise_split_k(256, 4096, 4096, 0, G::kBlock128x128, 132), 2);   // 64 tiles of 128x128
  EXPECT_EQ(blockwise_split_k(64, 4096, 14336, 1, G::kBlock128x128, 64), 2);    // fewer SMs
  EXPECT_EQ(blockwise_split_k(64, 2112, 28672, 1, G::kBlock128x128, 132), 7);   // 224 groups: 7 x 17 tiles
  // A partial last group splits like the whole groups before it (the reduction adds it), from 64
  // whole groups.
  EXPECT_EQ(blockwise_split_k(64, 4096, 14352, 1, G::kBlock128x128, 132), 4);
  EXPECT_EQ(blockwise_split_k(32, 4096, 8208, 1, G::kGroup1x128, 132), 4);
  EXPECT_EQ(blockwise_split_k(32, 4096, 8176, 1, G::kBlock128x128, 132), 1);  // 63 whole groups
  EXPECT_EQ(blockwise_split_k(32, 4096, 4112, 1, G::kBlock128x128, 132), 1);   // 32 whole groups
  EXPECT_EQ(blockwise_split_k(32, 4096, 4096, 1, G::kGroup1x128, 132), 4);
  // With 1x128 weight scales at 17-128 tokens, from 32 whole groups.
  EXPECT_EQ(blockwise_split_k(32, 4096, 4112, 1, G::kGroup1x128, 132), 4);
  EXPECT_EQ(blockwise_split_k(128, 4096, 4112, 0, G::kGroup1x128, 132), 4);
  EXPECT_EQ(blockwise_split_k(129, 4096, 4112, 0, G::kGroup1x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(16, 4096, 4112, 1, G::kGroup1x128, 132), 1);   // the skinny kernel's range
  EXPECT_EQ(blockwise_split_k(32, 4096, 8176, 1, G::kGroup1x128, 132), 3);   // 63 whole groups: 3 x 21
  // Never: the skinny kernel, fewer than 32 whole groups, a full GPU, a weight wide enough that one
  // CTA per tile draws it at DRAM speed.
  EXPECT_EQ(blockwise_split_k(16, 4096, 4096, kernels::kSkinnyConfig, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(64, 4096, 4080, 1, G::kBlock128x128, 132), 1);  // 31 whole groups
  EXPECT_EQ(blockwise_split_k(64, 4096, 2048, 1, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(4096, 4096, 4096, 0, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(64, 6144, 8192, 1, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(64, 8192, 28672, 1, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(64, 6144, 8192, 0, G::kBlock128x128, 132), 2);    // the 128x128 tile: 48 tiles, 6208 <= 7168
  // Per-channel weight scales (CUTLASS's mainloop, slower per CTA): twice the reach.
  EXPECT_EQ(blockwise_split_k(64, 8192, 28672, 1, G::kGroup1x128, 132), 2);   // 8256 <= 56 x 192
  EXPECT_EQ(blockwise_split_k(128, 7168, 16384, 0, G::kGroup1x128, 132), 2);  // 7296 <= 56 x 256
  EXPECT_EQ(blockwise_split_k(64, 8192, 28672, 1, G::kPerRow, 132), 1);
  EXPECT_EQ(blockwise_split_k(64, 10240, 8192, 1, G::kGroup1x128, 132), 1);   // 80 tiles: no room for 2
  for (int sms : {0, 78, 132})
    for (G gw : {G::kBlock128x128, G::kGroup1x128})
    for (int config : {0, 1, 2, 4})
      for (int64_t M : {1, 17, 64, 100, 256, 1000, 5000})
        for (int64_t N : {136, 2112, 4096, 28672})
          for (int64_t K : {400, 512, 1536, 4096, 7168, 14336, 28672}) {
            const int s = blockwise_split_k(M, N, K, config, gw, sms);
            ASSERT_GE(s, 1);
            ASSERT_LE(s, kernels::kBlockwiseMaxSplitK);
            if (s == 1) continue;
            const auto& c = kBlockwiseConfigs[config];
            const int64_t kb = K / 128, tiles = ((M + c.tile_m - 1) / c.tile_m) * ((N + c.tile_n - 1) / c.tile_n);
            EXPECT_EQ(K % 128, 0);
            EXPECT_GE(kb, 32);
            EXPECT_EQ(kb % s, 0) << M << "x" << N << "x" << K;
            EXPECT_GE(kb / s, 8) << M << "x" << N << "x" << K;
            EXPECT_LE(tiles * s, sms > 0 ? sms : 132) << M << "x" << N << "x" << K;
            // Beyond the reach only a token tile at least 40 % past M, and only into two slices.
            if (N + M > (gw == G::kGroup1x128 ? 56 : 28) * (c.tile_m + c.tile_n)) {
              EXPECT_TRUE(M > 16 && 5 * M <= 3 * c.tile_m && kb >= 64) << M << "x" << N << "x" << K;
              EXPECT_EQ(s, 2) << M << "x" << N << "x" << K;
            }
          }
}

// Beyond the reach: two slices where the one token tile is at least 40 % past M, from 17 tokens
// (64-row tiles up to 38 tokens, 128-row tiles up to 76), from 64 whole groups, when two fit in a wave.
TEST(BlockwiseHeuristic, SplitKTokenTileMostlyEmpty) {
  using kernels::blockwise_split_k;
  const int nr = blockwise_config_index("64x128x128_c1x1_pingpong"), sq = blockwise_config_index("128x128x128_c1x1_coop");
  // The 64-row tile loads only its M rows: no split beyond the reach however empty it is.
  EXPECT_EQ(blockwise_split_k(17, 8192, 28672, nr, G::kBlock128x128, 132), 1);   // 64 tiles, 47 rows past M
  EXPECT_EQ(blockwise_split_k(38, 8192, 28672, nr, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(39, 8192, 28672, nr, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(30, 6144, 8192, nr, G::kPerRow, 132), 1);
  EXPECT_EQ(blockwise_split_k(76, 8192, 14336, sq, G::kBlock128x128, 132), 2);  // 52 of 128 rows past M
  EXPECT_EQ(blockwise_split_k(77, 8192, 14336, sq, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(50, 7168, 18432, sq, G::kGroup1x128, 132), 2);     // within the reach: as before
  EXPECT_EQ(blockwise_split_k(24, 10240, 8192, nr, G::kBlock128x128, 132), 1);   // 80 tiles: two do not fit
  EXPECT_EQ(blockwise_split_k(24, 8192, 29568, nr, G::kBlock128x128, 132), 1);   // 231 groups: not even
  EXPECT_EQ(blockwise_split_k(24, 8192, 2048, nr, G::kBlock128x128, 132), 1);    // 16 groups
  EXPECT_EQ(blockwise_split_k(24, 6144, 4096, nr, G::kBlock128x128, 132), 1);    // 32 groups: under 64
  EXPECT_EQ(blockwise_split_k(24, 6144, 8192, nr, G::kBlock128x128, 132), 1);
  EXPECT_EQ(blockwise_split_k(32, 6144, 4096, nr, G::kBlock128x128, 132), 1);
  // What blockwise_linear runs: l3-70b.down (8192 x 28672) at 24 and 48 tokens one 64-row tile,
  // unsplit, for x in 128x128 blocks too (one row of them).
  const auto plan = [](int64_t M, int64_t N, int64_t K, G gx, G gw) {
    const LinearPlan p = blockwise_plan(M, N, K, gx, gw, BlockwiseOptions{}, 132);
    return std::pair<int, int>{p.config, p.split_k};
  };
  EXPECT_EQ(plan(24, 8192, 28672, G::kGroup1x128, G::kBlock128x128), std::make_pair(nr, 1));
  EXPECT_EQ(plan(48, 8192, 28672, G::kBlock128x128, G::kBlock128x128), std::make_pair(nr, 1));
  EXPECT_EQ(plan(48, 8192, 28672, G::kGroup1x128, G::kBlock128x128), std::make_pair(nr, 1));
}

// What blockwise_linear runs given a workspace, and the workspace it needs for it.
TEST(BlockwiseHeuristic, Plan) {
  using qsgemm::blockwise_plan;
  BlockwiseOptions o;
  auto plan = [&](int64_t M, int64_t N, int64_t K, G gx = G::kGroup1x128, G gw = G::kBlock128x128) {
    const LinearPlan p = blockwise_plan(M, N, K, gx, gw, o, 132);
    return std::pair<int, int>{p.config, p.split_k};
  };
  using P = std::pair<int, int>;
  EXPECT_EQ(plan(64, 4096, 14336), P(1, 4));
  EXPECT_EQ(plan(64, 8192, 8192), P(1, 1));
  EXPECT_EQ(plan(4096, 4096, 4096), P(blockwise_choose_config(4096, 4096, 4096, 132), 1));
  // 9..32 tokens: the skinny kernel's pick gives way to the split 64x128 tile where the rule splits
  // it; not at M <= 8, not on one or two W tiles. x in 128x128 blocks (one row of them up to 128
  // tokens, which the 64-row tile reads as 1x128 groups) takes the same plans from 17 tokens.
  ASSERT_EQ(blockwise_choose_config(16, 4096, 14336, 132), kernels::kSkinnyConfig);
  EXPECT_EQ(plan(16, 4096, 14336), P(1, 4));
  EXPECT_EQ(plan(32, 2112, 7168), P(1, 7));
  EXPECT_EQ(plan(8, 4096, 14336), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(16, 136, 28672), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(16, 4096, 14336, G::kBlock128x128, G::kBlock128x128), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(16, 2112, 7168, G::kBlock128x128, G::kGroup1x128), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(17, 2112, 7168, G::kBlock128x128, G::kGroup1x128), P(1, 7));
  EXPECT_EQ(plan(32, 2112, 7168, G::kBlock128x128, G::kBlock128x128), P(1, 7));
  EXPECT_EQ(plan(24, 256, 7168, G::kBlock128x128, G::kBlock128x128), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(32, 2112, 8208, G::kBlock128x128, G::kGroup1x128), P(1, 4))
      << "a partial last group splits like the whole groups before it (the reduction adds it)";
  EXPECT_EQ(plan(32, 2112, 4112, G::kBlock128x128, G::kBlock128x128), P(kernels::kSkinnyConfig, 1))
      << "below 64 whole groups a partial last group is not split, so the skinny kernel stays";
  EXPECT_EQ(plan(32, 2112, 4112, G::kBlock128x128, G::kGroup1x128), P(1, 4))
      << "with 1x128 weight scales at 17-128 tokens, from 32 whole groups";
  EXPECT_EQ(plan(16, 4096, 4112, G::kGroup1x128, G::kGroup1x128), P(kernels::kSkinnyConfig, 1));
  EXPECT_EQ(plan(16, 4096, 14336, G::kPerRow, G::kPerRow), P(1, 4));
  // A forced configuration is kept (and the skinny kernel is never split); a forced split is taken.
  o.config = kernels::kSkinnyConfig;
  EXPECT_EQ(plan(16, 4096, 14336), P(kernels::kSkinnyConfig, 1));
  o.config = 0;
  EXPECT_EQ(plan(16, 4096, 14336), P(0, 4));
  o.split_k = 7;
  EXPECT_EQ(plan(16, 4096, 14336), P(0, 7));
  o = BlockwiseOptions{};
  o.split_k = 1;
  EXPECT_EQ(plan(64, 4096, 14336), P(1, 1));

  // The public size: split x M x N floats for the plan's split; 0 without one.
  o = BlockwiseOptions{};
  EXPECT_EQ(blockwise_linear_workspace_bytes(64, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132),
            size_t{4} * 64 * 4096 * 4);
  EXPECT_EQ(blockwise_linear_workspace_bytes(16, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132),
            size_t{4} * 16 * 4096 * 4);
  EXPECT_EQ(blockwise_linear_workspace_bytes(0, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132), 0u);
  EXPECT_EQ(blockwise_linear_workspace_bytes(8, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132), 0u)
      << "M = 8 takes the skinny kernel";
  o.split_k = 1;
  EXPECT_EQ(blockwise_linear_workspace_bytes(64, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132), 0u);
  o.split_k = 7;
  EXPECT_EQ(blockwise_linear_workspace_bytes(64, 4096, 14336, G::kGroup1x128, G::kBlock128x128, o, 132),
            size_t{7} * 64 * 4096 * 4);
}

// Up to 128 tokens x_scale block_128x128 is one row of blocks, which the tiles of 1x128 groups read
// with a row stride of 0: the same plans as x 1x128 groups; beyond, those tiles read an expanded
// copy in the workspace, and without a workspace the plans are the tiles that hold whole blocks.
TEST(BlockwiseHeuristic, OneRowOfXBlocksTakesTheGroupPlans) {
  EXPECT_EQ(kernels::blockwise_tile_gx(G::kBlock128x128, 128), G::kGroup1x128);
  EXPECT_EQ(kernels::blockwise_tile_gx(G::kBlock128x128, 129), G::kBlock128x128);
  EXPECT_EQ(kernels::blockwise_tile_gx(G::kGroup1x128, 4096), G::kGroup1x128);
  EXPECT_EQ(kernels::blockwise_tile_gx(G::kPerRow, 1), G::kPerRow);
  for (const char* name : {"64x128x128_c1x1_pingpong", "64x128x128_c1x1_pingpong_clamped", "128x128x128_c1x1_coop_clamped"}) {
    const int c = kernels::blockwise_row(name);
    for (G gw : {G::kBlock128x128, G::kGroup1x128}) {
      EXPECT_TRUE(qsgemm::blockwise_config_supports(c, G::kBlock128x128, gw, 1)) << name;
      EXPECT_TRUE(qsgemm::blockwise_config_supports(c, G::kBlock128x128, gw, 128)) << name;
      EXPECT_TRUE(qsgemm::blockwise_config_supports(c, G::kBlock128x128, gw, 129)) << name << ": the copy";
      EXPECT_TRUE(qsgemm::blockwise_config_supports(c, G::kBlock128x128, gw)) << name << ": every M";
      EXPECT_TRUE(kernels::blockwise_config_reads(c, G::kBlock128x128, gw, 128)) << name;
      EXPECT_FALSE(kernels::blockwise_config_reads(c, G::kBlock128x128, gw, 129)) << name;
      EXPECT_FALSE(kernels::blockwise_config_reads(c, G::kBlock128x128, gw)) << name << ": every M";
      EXPECT_FALSE(kernels::blockwise_expands_x_scales(c, G::kBlock128x128, gw, 128)) << name;
      EXPECT_TRUE(kernels::blockwise_expands_x_scales(c, G::kBlock128x128, gw, 129)) << name;
      EXPECT_FALSE(kernels::blockwise_expands_x_scales(c, G::kGroup1x128, gw, 129)) << name;
    }
  }
  EXPECT_FALSE(kernels::blockwise_expands_x_scales(0, G::kBlock128x128, G::kBlock128x128, 200)) << "reads the blocks";
  EXPECT_FALSE(qsgemm::blockwise_config_supports(kernels::kPerRowWideConfig, G::kBlock128x128, G::kBlock128x128, 64));
  BlockwiseOptions o;
  for (int sms : {78, 132})
    for (int64_t M : {1, 9, 16, 17, 24, 33, 48, 64, 65, 80, 96, 100, 127, 128})
      for (int64_t N : {256, 2112, 4096, 7168, 28672, 57344})
        for (int64_t K : {512, 2048, 4096, 4112, 7168, 14352, 28672})
          for (G gw : {G::kBlock128x128, G::kGroup1x128}) {
            SCOPED_TRACE(testing::Message() << M << "x" << N << "x" << K << " w " << granularity_name(gw) << " sms " << sms);
            EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, G::kBlock128x128, gw, sms),
                      qsgemm::blockwise_choose_config(M, N, K, G::kGroup1x128, gw, sms));
            const LinearPlan a = qsgemm::blockwise_plan(M, N, K, G::kBlock128x128, gw, o, sms);
            const LinearPlan b = qsgemm::blockwise_plan(M, N, K, G::kGroup1x128, gw, o, sms);
            if (M <= kernels::kBlockwiseSkinnyRuleMaxM && a.config == kernels::kSkinnyConfig) {
              // x blocks keep the skinny kernel up to 16 tokens where the 1x128 pair splits the
              // 64-row tile in its place.
              EXPECT_EQ(qsgemm::blockwise_choose_config(M, N, K, G::kGroup1x128, gw, sms), kernels::kSkinnyConfig);
              EXPECT_EQ(a.split_k, 1);
              continue;
            }
            EXPECT_EQ(a.config, b.config);
            EXPECT_EQ(a.split_k, b.split_k);
          }
  // Beyond 128 tokens every pick without a workspace reads whole x blocks.
  for (int64_t M : {129, 160, 200, 288, 1000, 4099})
    for (int64_t N : {2112, 7168, 57344})
      for (G gw : {G::kBlock128x128, G::kGroup1x128}) {
        const int c = qsgemm::blockwise_choose_config(M, N, 8192, G::kBlock128x128, gw, 132);
        EXPECT_TRUE(kernels::blockwise_config_reads(c, G::kBlock128x128, gw)) << M << "x" << N << ": " << c;
        const kernels::BlockwiseChoice p =
            kernels::blockwise_choose(M, N, 8192, G::kBlock128x128, gw, -1, 0, 132, false);
        EXPECT_TRUE(kernels::blockwise_config_reads(p.config, G::kBlock128x128, gw)) << M << "x" << N;
      }
}

// x and w in 128x128 blocks at 129-383 tokens, given a workspace: the 1x128 activations' plan
// through the expanded copy where it takes another tile, the blocks' last token tile has at least
// 32 rows past M and the problem is large enough to pay for the copy; the plan's workspace holds
// the copy after any split-K slices.
TEST(BlockwiseHeuristic, XBlocksTakeTheGroupPlanThroughTheCopy) {
  using kernels::BlockwiseChoice;
  using kernels::blockwise_choose;
  const auto plan = [](int64_t M, int64_t N, int64_t K, G gx, G gw, bool ws) {
    return blockwise_choose(M, N, K, gx, gw, -1, 0, 132, ws);
  };
  const auto same = [](const BlockwiseChoice& a, const BlockwiseChoice& b) {
    return a.config == b.config && a.split_k == b.split_k;
  };
  const auto expected_bytes = [](int64_t M, int64_t N, int64_t K, const BlockwiseChoice& c) {
    const size_t split = c.split_k > 1 ? size_t{4} * c.split_k * M * N : 0;
    return (split + 255) / 256 * 256 + size_t{4} * ((M + 3) / 4 * 4) * ((K + 127) / 128);
  };
  BlockwiseOptions o;
  int expanded = 0;
  for (int64_t M : {129, 131, 144, 160, 191, 192, 210, 254, 256, 279, 288, 307, 338, 352, 372, 383, 384, 400, 512})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{8192, 28672}, {57344, 8192}, {10240, 8192}, {28672, 4096},
                        {4096, 4096}, {2112, 7168}, {7168, 2048}, {4096, 14352}, {32768, 512}}) {
      SCOPED_TRACE(testing::Message() << "M=" << M << " N=" << N << " K=" << K);
      const BlockwiseChoice blocks = plan(M, N, K, G::kBlock128x128, G::kBlock128x128, false);
      const BlockwiseChoice groups = plan(M, N, K, G::kGroup1x128, G::kBlock128x128, true);
      const BlockwiseChoice with_ws = plan(M, N, K, G::kBlock128x128, G::kBlock128x128, true);
      const int64_t past = (M + 127) / 128 * 128 - M;
      const int64_t waves = ((M + 127) / 128 * ((N + 127) / 128) + 131) / 132;
      const bool pays = M > 128 && M <= 383 && past >= 32 && waves * ((K + 127) / 128) >= 64;
      const bool expands = kernels::blockwise_expands_x_scales(with_ws.config, G::kBlock128x128, G::kBlock128x128, M);
      const LinearPlan lp = qsgemm::blockwise_plan(M, N, K, G::kBlock128x128, G::kBlock128x128, o, 132);
      EXPECT_EQ(lp.config, with_ws.config);
      EXPECT_EQ(lp.split_k, with_ws.split_k);
      if (expands) {
        ++expanded;
        EXPECT_TRUE(pays);
        EXPECT_TRUE(same(with_ws, groups)) << "the 1x128 activations' plan";
        EXPECT_FALSE(kernels::blockwise_config_reads(with_ws.config, G::kBlock128x128, G::kBlock128x128, M));
        EXPECT_EQ(lp.workspace_bytes, expected_bytes(M, N, K, with_ws));
        EXPECT_EQ(qsgemm::blockwise_linear_workspace_bytes(M, N, K, G::kBlock128x128, G::kBlock128x128, o, 132),
                  lp.workspace_bytes);
      } else {
        // The blocks' own plan (split as the workspace allows).
        EXPECT_TRUE(kernels::blockwise_config_reads(with_ws.config, G::kBlock128x128, G::kBlock128x128, M));
        EXPECT_EQ(with_ws.config, blocks.config);
        // Where it would pay, the 1x128 plan is the same tile or its clamped twin (no copy for that).
        const int twin = groups.config == kernels::blockwise_row("128x128x128_c1x1_coop_clamped")
                             ? kernels::blockwise_row("128x128x128_c1x1_coop")
                             : groups.config;
        if (pays) EXPECT_EQ(twin, blocks.config) << "pays, but the same tile";
        if (M > 128) EXPECT_EQ(lp.workspace_bytes, with_ws.split_k > 1 ? size_t{4} * with_ws.split_k * M * N : 0);
      }
      // Not for 1x128 weight scales; never without a workspace.
      EXPECT_FALSE(kernels::blockwise_expands_x_scales(plan(M, N, K, G::kBlock128x128, G::kGroup1x128, true).config,
                                                      G::kBlock128x128, G::kGroup1x128, M));
      EXPECT_FALSE(kernels::blockwise_expands_x_scales(blocks.config, G::kBlock128x128, G::kBlock128x128, M));
    }
  EXPECT_GE(expanded, 20) << "the large layers at 129-383 tokens";
  // l3-70b.down at 160 tokens: the 1x128 plan is the clamped 128-row tile, whose copy costs more
  // than its rows save (1.06-1.11x the plain tile on four other weights): the plain tile, no copy.
  EXPECT_EQ(plan(160, 8192, 28672, G::kGroup1x128, G::kBlock128x128, true).config,
            kernels::blockwise_row("128x128x128_c1x1_coop_clamped"));
  EXPECT_EQ(plan(160, 8192, 28672, G::kBlock128x128, G::kBlock128x128, true).config,
            kernels::blockwise_row("128x128x128_c1x1_coop"));
  // The 64-row tiles through the copy stay (l3-70b.gate_up at 160 tokens: 2 x 448 tiles).
  EXPECT_TRUE(kernels::blockwise_expands_x_scales(plan(160, 57344, 8192, G::kBlock128x128, G::kBlock128x128, true).config,
                                                 G::kBlock128x128, G::kBlock128x128, 160));
  // A small layer keeps the blocks' plan (the copy would cost more than it gains).
  EXPECT_FALSE(kernels::blockwise_expands_x_scales(plan(160, 4096, 4096, G::kBlock128x128, G::kBlock128x128, true).config,
                                                  G::kBlock128x128, G::kBlock128x128, 160));
  // A forced split or configuration is the caller's plan: no copy chosen by the library.
  EXPECT_EQ(blockwise_choose(160, 8192, 28672, G::kBlock128x128, G::kBlock128x128, -1, 1, 132, true).config,
            blockwise_choose(160, 8192, 28672, G::kBlock128x128, G::kBlock128x128, -1, 0, 132, false).config);
}

// A forced tile of 1x128 activations with x blocks beyond 128 tokens runs through the copy: its
// plan needs the copy's workspace, and without one blockwise_linear and the plan functions reject it
// naming the bytes (as a forced split without its workspace).
TEST(BlockwiseValidation, ForcedGroupTileWithXBlocksNeedsTheCopy) {
  BlockwiseOptions o;
  o.config = kernels::blockwise_row("64x128x128_c1x1_pingpong");
  o.split_k = 1;
  const int64_t M = 200, N = 4096, K = 4096;
  const LinearPlan p = qsgemm::blockwise_plan(M, N, K, G::kBlock128x128, G::kBlock128x128, o, 132);
  EXPECT_EQ(p.config, o.config);
  EXPECT_EQ(p.workspace_bytes, size_t{4} * 200 * 32);  // [32 K groups][200 tokens]
  EXPECT_EQ(qsgemm::blockwise_plan(128, N, K, G::kBlock128x128, G::kBlock128x128, o, 132).workspace_bytes, 0u)
      << "up to 128 tokens: one row of blocks, no copy";
  EXPECT_EQ(qsgemm::blockwise_plan(M, N, K, G::kGroup1x128, G::kBlock128x128, o, 132).workspace_bytes, 0u);
  o.split_k = 2;
  EXPECT_EQ(qsgemm::blockwise_plan(M, N, K, G::kBlock128x128, G::kBlock128x128, o, 132).workspace_bytes,
            size_t{2} * 200 * 4096 * 4 + size_t{4} * 200 * 32);  // the slices (256-byte multiple), the copy
  o.split_k = 1;
  // blockwise_linear without the workspace: rejected before any GPU work, naming the bytes.
  Case c;
  c.x = {addr(0x1000000), DType::kE4M3, M, K};
  c.sx = {faddr(0x2000000), G::kBlock128x128, 0};
  c.w = {addr(0x3000000), DType::kE4M3, N, K};
  c.y = {addr(0x5000000), DType::kBF16, M, N};
  c.opt = o;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "reads x_scale block_128x128 beyond 128 tokens (M=200) through a copy as group_1x128 scales in the "
               "workspace: it needs 25600 bytes of workspace (blockwise_linear_workspace_bytes), 0 given",
               "options.workspace_bytes");
  c.opt.workspace = addr(0x7000000);
  c.opt.workspace_bytes = 25599;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "needs 25600 bytes of workspace", "options.workspace_bytes");
  c.opt.split_k = 2;
  c.opt.workspace_bytes = size_t{2} * 200 * 4096 * 4;  // the slices, not the copy after them
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "needs 6579200 bytes", "options.workspace_bytes");
}

// From 1024 tokens a 64-row wave costs 1.5 of a 128x128 wave's 2, any scale pair (the 64-row tile
// ran 1.07-1.74x half the 128-row tile's time per wave there). At 2074 tokens on 4096x14336 the
// 64-row tiles fill eight waves exactly against five 128-row waves: 9.6 < 10 took them at 1.2,
// 12 > 10 does not. Below 1024 tokens nothing changes; K <= 512 keeps the 64-row tile.
TEST(BlockwiseHeuristic, NarrowTileCostsMoreFromLargeM) {
  using qsgemm::blockwise_plan;
  BlockwiseOptions o;
  const int square = kernels::blockwise_row("128x128x128_c1x1_coop");
  const int narrow = kernels::blockwise_row("64x128x128_c1x1_pingpong");
  const auto config = [&](int64_t M, int64_t N, int64_t K, G gw) {
    return blockwise_plan(M, N, K, G::kGroup1x128, gw, o, 132).config;
  };
  for (G gw : {G::kBlock128x128, G::kGroup1x128}) {
    EXPECT_EQ(kernels::blockwise_narrow_wave_cost(1023, 8192, gw), gw == G::kGroup1x128 ? 1.35 : 1.2);
    EXPECT_EQ(kernels::blockwise_narrow_wave_cost(1024, 8192, gw), kernels::kBlockwiseNarrowLargeMCost);
    EXPECT_EQ(kernels::blockwise_narrow_wave_cost(16384, 2048, gw), kernels::kBlockwiseNarrowLargeMCost);
  }
  EXPECT_EQ(config(2074, 4096, 14336, G::kBlock128x128), square);
  EXPECT_EQ(config(2074, 4096, 4096, G::kBlock128x128), square);
  // 2112x7168 at 1064 tokens: 3 waves of 64-row tiles (4.5) against 2 of 128-row ones (4).
  EXPECT_EQ(config(1064, 2112, 7168, G::kBlock128x128), square);
  // Below 1024 tokens the wave model's 1.2: 4096x14336 at 545 tokens, 3 against 2 waves (3.6 < 4).
  EXPECT_EQ(config(545, 4096, 14336, G::kBlock128x128), narrow);
  // K <= 512 takes the 64-row tile at any M.
  EXPECT_EQ(config(4096, 32768, 512, G::kBlock128x128), narrow);
}

// 1x128 weight scales beyond 128 tokens, K >= 4096: a 64-row wave costs 1.35 (not 1.2) of a
// 128x128 wave's 2 in the wave model, so the 128-row tile takes over from a wave ratio of 1.48
// (src/blockwise_heuristic.h). Not with 128x128 weight blocks, not at K < 4096, not at 1.33; from
// 4096 tokens on large weights the model's 1x2 cluster, as with any scales.
TEST(BlockwiseHeuristic, GroupWeightScalesWeighTheNarrowTileHigher) {
  using qsgemm::blockwise_plan;
  BlockwiseOptions o;
  const int square = kernels::blockwise_row("128x128x128_c1x1_coop");
  const int square_c = kernels::blockwise_row("128x128x128_c1x1_coop_clamped");
  const int narrow = kernels::blockwise_row("64x128x128_c1x1_pingpong");
  const auto config = [&](int64_t M, int64_t N, int64_t K, G gw) {
    return blockwise_plan(M, N, K, G::kGroup1x128, gw, o, 132).config;
  };
  EXPECT_EQ(kernels::blockwise_narrow_wave_cost(296, 8192, G::kGroup1x128), kernels::kBlockwiseGroupWNarrowCost);
  EXPECT_EQ(kernels::blockwise_narrow_wave_cost(296, 8192, G::kBlock128x128), 1.2);
  EXPECT_EQ(kernels::blockwise_narrow_wave_cost(296, 3584, G::kGroup1x128), 1.2);
  EXPECT_EQ(kernels::blockwise_narrow_wave_cost(128, 8192, G::kGroup1x128), 1.2);
  // 59136x8192 at 296 tokens: 18 waves of 64-row tiles against 11 of 128-row ones (1.64).
  const int c296 = config(296, 59136, 8192, G::kGroup1x128);
  EXPECT_TRUE(c296 == square || c296 == square_c) << c296;
  EXPECT_EQ(config(296, 59136, 8192, G::kBlock128x128), narrow);
  // 14336x4096 at 544 tokens: 8 against 5 waves (1.6); at 416: 6 against 4 (1.5).
  EXPECT_EQ(config(544, 14336, 4096, G::kGroup1x128), square);
  const int c416 = config(416, 14336, 4096, G::kGroup1x128);  // 96 rows past M: clamped
  EXPECT_TRUE(c416 == square || c416 == square_c) << c416;
  // 5120x13824 at 800 tokens: 4 against 3 waves (1.33): the 64-row tile stays.
  EXPECT_EQ(config(800, 5120, 13824, G::kGroup1x128), narrow);
  // K = 3584 keeps the wave model's charge (the 64-row tile measured faster there).
  EXPECT_EQ(config(296, 18944, 3584, G::kGroup1x128), narrow);
  // From 4096 tokens a large weight takes the 1x2 cluster as with 128x128 weight blocks, not the
  // 1x1 128-row tile (57344x8192 at 4200 tokens: 119 against 66 waves, ratio 1.8).
  EXPECT_EQ(config(4200, 57344, 8192, G::kGroup1x128), config(4200, 57344, 8192, G::kBlock128x128));
  // Where 1x128 weights take a 128-row tile and 128x128 blocks the 64-row one, the 64-row tiles
  // need at least 1.48x the 128-row tiles' waves; below 1.48 both pairs take the same tile.
  for (int64_t M = 129; M <= 4096; M += 7)
    for (int64_t N : {4096, 7168, 14336, 28672, 57344}) {
      const int cg = config(M, N, 8192, G::kGroup1x128), cb = config(M, N, 8192, G::kBlock128x128);
      const int64_t nt = (N + 127) / 128;
      const int64_t w64 = ((M + 63) / 64 * nt + 131) / 132, w128 = ((M + 127) / 128 * nt + 131) / 132;
      if (cb == narrow && cg != narrow) EXPECT_GE(1.35 * w64, 2.0 * w128) << M << "x" << N;
      if (1.35 * w64 < 2.0 * w128) EXPECT_EQ(cg == narrow, cb == narrow) << M << "x" << N;
    }
}

// 1x128 weight scales at 65-128 tokens with K >= 4096: one 128-row token tile where the wave model
// or the clamp rule would take two 64-row ones (the 64-row tile loads the same weight scales for
// half the rows); not at 64 tokens or fewer (one 64-row tile), not at K < 4096, not with 128x128
// weight blocks.
TEST(BlockwiseHeuristic, GroupWeightScalesTakeOneTokenTileTo128) {
  using qsgemm::blockwise_plan;
  BlockwiseOptions o;
  const auto config = [&](int64_t M, int64_t N, int64_t K, G gw) {
    return blockwise_plan(M, N, K, G::kGroup1x128, gw, o, 132).config;
  };
  for (int64_t M : {65, 80, 96, 113, 128})
    for (int64_t N : {4096, 6144, 8192, 28672, 57344})
      for (int64_t K : {4096, 4112, 8192, 14336, 28672}) {
        EXPECT_TRUE(kernels::blockwise_group_w_one_tile(M, K, G::kGroup1x128));
        EXPECT_EQ(config(M, N, K, G::kGroup1x128), 0) << M << "x" << N << "x" << K;
      }
  EXPECT_EQ(config(96, 28672, 4096, G::kBlock128x128), kernels::blockwise_row("64x128x128_c1x1_pingpong_clamped"));
  EXPECT_EQ(config(64, 28672, 4096, G::kGroup1x128), 1);
  EXPECT_EQ(config(96, 7168, 2048, G::kGroup1x128), 1) << "K = 2048: the 64-row tile was faster";
  EXPECT_FALSE(kernels::blockwise_group_w_one_tile(64, 8192, G::kGroup1x128));
  EXPECT_FALSE(kernels::blockwise_group_w_one_tile(129, 8192, G::kGroup1x128));
  EXPECT_FALSE(kernels::blockwise_group_w_one_tile(96, 2048, G::kGroup1x128));
  EXPECT_FALSE(kernels::blockwise_group_w_one_tile(96, 8192, G::kBlock128x128));
  // The split rule then splits the 128-row tile (l3-8b.down: four slices of 32 tiles).
  EXPECT_EQ(blockwise_plan(96, 4096, 14336, G::kGroup1x128, G::kGroup1x128, o, 132).split_k, 4);
}

TEST(BlockwiseHeuristic, PureAndInRange) {
  for (int sms : {1, 78, 114, 132})
    for (int64_t M = 1; M <= 70000; M = M * 3 + 1)
      for (int64_t N : {8, 120, 136, 4096, 7168, 129280})
        for (int64_t K : {128, 400, 28672}) {
          const int c = blockwise_choose_config(M, N, K, sms);
          ASSERT_GE(c, 0);
          ASSERT_LT(c, kBlockwiseNumConfigs);
          ASSERT_EQ(c, blockwise_choose_config(M, N, K, sms)) << "not deterministic";
        }
}

}  // namespace

namespace {

TEST(BlockwiseConfigs, PublicTableAndChoice) {
  using qsgemm::ScaleGranularity;
  ASSERT_EQ(qsgemm::blockwise_num_configs(), qsgemm::kernels::kBlockwiseNumConfigs);
  EXPECT_EQ(qsgemm::blockwise_config_name(0), "128x128x128_c1x1_coop");
  qsgemm::test::expect_error([] { qsgemm::blockwise_config_name(7); }, qsgemm::Status::kInvalidArgument,
                             "config index 7 is outside [0, 7)");
  // Decode sizes over a long K pick the skinny kernel for every pair; otherwise small M picks the
  // 64-row tile, where x has 128x128 blocks too up to 128 tokens (one row of them), not beyond.
  EXPECT_EQ(qsgemm::blockwise_choose_config(8, 4096, 7168, ScaleGranularity::kBlock128x128,
                                            ScaleGranularity::kBlock128x128, 132), 3);
  EXPECT_EQ(qsgemm::blockwise_choose_config(8, 4096, 7168, ScaleGranularity::kPerRow, ScaleGranularity::kPerRow, 132), 3);
  EXPECT_EQ(qsgemm::blockwise_choose_config(48, 4096, 4096, ScaleGranularity::kGroup1x128,
                                            ScaleGranularity::kBlock128x128, 132), 1);
  EXPECT_EQ(qsgemm::blockwise_choose_config(48, 4096, 4096, ScaleGranularity::kBlock128x128,
                                            ScaleGranularity::kBlock128x128, 132), 1);
  EXPECT_EQ(qsgemm::blockwise_choose_config(130, 57344, 4096, ScaleGranularity::kBlock128x128,
                                            ScaleGranularity::kBlock128x128, 132), 0);
}

}  // namespace
