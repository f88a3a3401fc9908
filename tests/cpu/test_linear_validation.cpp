// The contract both families share (include/qsgemm/linear.h, src/linear_common.h): *_plan,
// *_linear_workspace_bytes and *_linear apply the same rules and throw the same errors; the bias,
// overlap, alignment and shape rules are the same in both families. Runs without a GPU: validation
// runs before any device work, on fake (never dereferenced) addresses.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "linear_common.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/sparse24.h"
#include "qsgemm/version.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using G = ScaleGranularity;
using test::addr;
using test::expect_error;
using test::faddr;

// M = 16, N = 256, K = 2048 in both families; the operands lie apart (y at 0x600000).
struct SparseCase {
  MatrixView x{addr(0x100000), DType::kE4M3, 16, 2048};
  ScaleView sx{faddr(0x200000), G::kPerRow, 0};
  SparseFp8Weight w{256, 2048, static_cast<uint8_t*>(addr(0x300000)), static_cast<uint8_t*>(addr(0x400000)),
                    static_cast<float*>(addr(0x500000)), false};
  VectorView bias{};
  MatrixView y{addr(0x600000), DType::kBF16, 16, 256};
  Sparse24Options opt{};
  void run() const { sparse24_linear(x, sx, w, bias, y, opt, nullptr); }
};
struct BlockCase {
  MatrixView x{addr(0x100000), DType::kE4M3, 16, 2048};
  ScaleView sx{faddr(0x200000), G::kGroup1x128, 16};
  MatrixView w{addr(0x300000), DType::kE4M3, 256, 2048};
  ScaleView sw{faddr(0x500000), G::kBlock128x128, 0};
  VectorView bias{};
  MatrixView y{addr(0x600000), DType::kBF16, 16, 256};
  BlockwiseOptions opt{};
  void run() const { blockwise_linear(x, sx, w, sw, bias, y, opt, nullptr); }
};

bool no_gpu() { return !device_info().supports_kernels(); }

TEST(LinearContract, ForcedSkinnySplitIsAnErrorEverywhere) {
  // blockwise: the skinny kernel forced with a split. plan, workspace_bytes and linear agree.
  BlockwiseOptions o;
  o.config = blockwise_config_index("skinny_m32_splitk");
  o.split_k = 4;
  const std::string msg = "split_k=4 applies to the CUTLASS configurations, not config 3 (skinny_m32_splitk)";
  expect_error([&] { blockwise_plan(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "blockwise_plan: " + msg, "options.split_k");
  expect_error([&] { blockwise_linear_workspace_bytes(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "blockwise_linear_workspace_bytes: " + msg, "options.split_k");
  BlockCase c;
  c.opt = o;
  c.opt.workspace = addr(0x1000000);
  c.opt.workspace_bytes = 1 << 20;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "blockwise_linear: " + msg, "options.split_k");
  // The heuristic's skinny pick under a forced split (two tiles of W at M = 16): plan and
  // workspace_bytes throw, as blockwise_linear does once it knows the device.
  o.config = -1;
  expect_error([&] { blockwise_plan(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "the heuristic chose config 3 (skinny_m32_splitk)", "options.split_k");
  expect_error([&] { blockwise_linear_workspace_bytes(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132); },
               Status::kInvalidArgument, "the heuristic chose config 3", "options.split_k");
  // A forced CUTLASS tile splits: the plan names its workspace.
  o.config = blockwise_config_index("128x128x128_c1x1_coop");
  const LinearPlan p = blockwise_plan(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132);
  EXPECT_EQ(p.config, o.config);
  EXPECT_EQ(p.split_k, 4);
  EXPECT_EQ(p.workspace_bytes, 4u * 16 * 256 * 4);
  EXPECT_EQ(blockwise_linear_workspace_bytes(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, o, 132), p.workspace_bytes);
  // sparse24: the decode kernel forced with a split, the same way.
  Sparse24Options s;
  s.config = sparse24_config_index("skinny_m32_splitk");
  s.split_k = 2;
  expect_error([&] { sparse24_plan(16, 256, 2048, s, 132); }, Status::kInvalidArgument,
               "sparse24_plan: split_k=2 applies to the data-parallel configurations, not config 12", "options.split_k");
  expect_error([&] { sparse24_linear_workspace_bytes(16, 256, 2048, s, 132); }, Status::kInvalidArgument,
               "split_k=2 applies to the data-parallel configurations", "options.split_k");
  SparseCase sc;
  sc.opt = s;
  expect_error([&] { sc.run(); }, Status::kInvalidArgument, "split_k=2 applies to the data-parallel configurations",
               "options.split_k");
}

TEST(LinearContract, ForcedStreamKNeedsItsWorkspace) {
  Sparse24Options o;
  o.config = sparse24_config_index("128x128x256_c1x1_coop_streamk");
  const LinearPlan p = sparse24_plan(16, 256, 2048, o, 132);
  EXPECT_EQ(p.config, o.config);
  EXPECT_GT(p.workspace_bytes, 0u);
  EXPECT_EQ(sparse24_linear_workspace_bytes(16, 256, 2048, o, 132), p.workspace_bytes);
  SparseCase c;
  c.opt = o;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "is stream-K and needs a workspace", "options.workspace");
  // Too small a workspace is found once the plan is known (it needs the device's SM count); the
  // selection names both sizes.
  LinearOptions lo;
  lo.workspace = addr(0x1000000);
  lo.workspace_bytes = 100;
  const auto plan = [&](bool) { return LinearPlan{11, 1, 4096}; };
  const auto name = [](int) { return std::string("128x128x256_c1x1_coop_streamk"); };
  expect_error([&] { detail::select_plan("sparse24_linear", lo, 16, 256, 2048, plan, name); }, Status::kInvalidArgument,
               "configuration 11 (128x128x256_c1x1_coop_streamk) needs 4096 bytes of workspace for M=16 N=256 K=2048; 100 given",
               "options.workspace_bytes");
  // With enough, the plan with a workspace runs; with too little for it, the plan without one.
  lo.workspace_bytes = 4096;
  EXPECT_EQ(detail::select_plan("f", lo, 16, 256, 2048, plan, name).workspace_bytes, 4096u);
  const auto two = [&](bool with) { return with ? LinearPlan{0, 4, 65536} : LinearPlan{0, 1, 0}; };
  EXPECT_EQ(detail::select_plan("f", lo, 16, 256, 2048, two, name).split_k, 1);
  lo.workspace = nullptr;  // workspace_bytes without a pointer counts as none
  lo.workspace_bytes = 1 << 20;
  EXPECT_EQ(detail::select_plan("f", lo, 16, 256, 2048, two, name).split_k, 1);
}

TEST(LinearContract, SmCountZeroWithoutAGpuIsAClearError) {
  if (!no_gpu() || device_info().present) GTEST_SKIP() << "a CUDA device is present";
  expect_error([] { sparse24_plan(16, 256, 2048, Sparse24Options{}); }, Status::kUnsupported,
               "sparse24_plan: sm_count=0 asks for the current device's SM count, but no CUDA device is available",
               "sm_count");
  expect_error([] { sparse24_linear_workspace_bytes(16, 256, 2048, Sparse24Options{}); }, Status::kUnsupported,
               "no CUDA device is available", "sm_count");
  expect_error([] { blockwise_plan(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, BlockwiseOptions{}); },
               Status::kUnsupported, "blockwise_plan: sm_count=0", "sm_count");
  expect_error([] { blockwise_linear_workspace_bytes(16, 256, 2048, G::kGroup1x128, G::kBlock128x128, BlockwiseOptions{}); },
               Status::kUnsupported, "pass the SM count", "sm_count");
}

TEST(LinearContract, BiasRulesAreTheSameInBothFamilies) {
  SparseCase s;
  BlockCase b;
  // Null data with size N: an error (size 0 is no bias).
  s.bias = b.bias = VectorView(nullptr, DType::kF32, 256);
  expect_error([&] { s.run(); }, Status::kInvalidArgument, "bias has size 256 but a null pointer", "bias");
  expect_error([&] { b.run(); }, Status::kInvalidArgument, "bias has size 256 but a null pointer", "bias");
  // 16-byte aligned base, whatever the dtype.
  for (uintptr_t a : {uintptr_t{0x700004}, uintptr_t{0x700008}, uintptr_t{0x700002}}) {
    s.bias = b.bias = VectorView(addr(a), DType::kF32, 256);
    expect_error([&] { s.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
    expect_error([&] { b.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
  }
  s.bias = b.bias = VectorView(addr(0x700002), DType::kBF16, 256);
  expect_error([&] { s.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
  expect_error([&] { b.run(); }, Status::kMisaligned, "must be 16-byte aligned", "bias");
  // Wrong size, wrong dtype: the same messages.
  s.bias = b.bias = VectorView(addr(0x700000), DType::kF32, 255);
  expect_error([&] { s.run(); }, Status::kInvalidArgument, "bias has 255 elements, expected N=256", "bias");
  expect_error([&] { b.run(); }, Status::kInvalidArgument, "bias has 255 elements, expected N=256", "bias");
  s.bias = b.bias = VectorView(addr(0x700000), DType::kF16, 256);
  expect_error([&] { s.run(); }, Status::kInvalidArgument, "must be fp32 or the output dtype bf16", "bias");
  expect_error([&] { b.run(); }, Status::kInvalidArgument, "must be fp32 or the output dtype bf16", "bias");
}

TEST(LinearContract, OutputMayNotOverlapInputsOrTheWorkspace) {
  // y (16 x 256 bf16 = 8 KiB) placed on each input in turn.
  const auto sparse_y_on = [](uintptr_t a, const char* name) {
    SparseCase c;
    c.y.data = addr(a);
    expect_error([&] { c.run(); }, Status::kInvalidArgument, std::string("overlaps ") + name, "y");
  };
  sparse_y_on(0x100000, "x");
  sparse_y_on(0x200000, "x_scale");
  sparse_y_on(0x300000, "w.values");
  sparse_y_on(0x400000, "w.meta");
  sparse_y_on(0x500000, "w.scales");
  const auto block_y_on = [](uintptr_t a, const char* name) {
    BlockCase c;
    c.y.data = addr(a);
    expect_error([&] { c.run(); }, Status::kInvalidArgument, std::string("overlaps ") + name, "y");
  };
  block_y_on(0x100000, "x");
  block_y_on(0x200000, "x_scale");
  block_y_on(0x300000, "w");
  block_y_on(0x500000, "w_scale");
  {
    SparseCase s;
    BlockCase b;
    s.bias = b.bias = VectorView(addr(0x601000), DType::kF32, 256);  // inside y
    expect_error([&] { s.run(); }, Status::kInvalidArgument, "overlaps bias", "y");
    expect_error([&] { b.run(); }, Status::kInvalidArgument, "overlaps bias", "y");
  }
  {
    SparseCase s;
    BlockCase b;
    s.opt.workspace = b.opt.workspace = addr(0x5ff000);  // its last bytes run into y
    s.opt.workspace_bytes = b.opt.workspace_bytes = 0x2000;
    expect_error([&] { s.run(); }, Status::kInvalidArgument, "overlaps options.workspace", "y");
    expect_error([&] { b.run(); }, Status::kInvalidArgument, "overlaps options.workspace", "y");
    s.opt.workspace = b.opt.workspace = addr(0x100000);  // on x
    expect_error([&] { s.run(); }, Status::kInvalidArgument, "options.workspace [", "options.workspace");
    expect_error([&] { b.run(); }, Status::kInvalidArgument, "overlaps x", "options.workspace");
  }
}

TEST(LinearContract, ShapeLimits) {
  const int64_t k2_30 = int64_t{1} << 30, k2_31 = int64_t{1} << 31;
  // sparse24: M, N, K <= 2^30.
  expect_error([&] { sparse24_plan(k2_30 + 1, 256, 2048, Sparse24Options{}, 132); }, Status::kInvalidArgument,
               "is outside [0, 2^30]", "M");
  EXPECT_NO_THROW(sparse24_plan(k2_30, 256, 2048, Sparse24Options{}, 132));
  expect_error([&] { sparse24_plan(16, k2_30 + 8, 2048, Sparse24Options{}, 132); }, Status::kInvalidArgument, "exceeds 2^30",
               "w");
  expect_error([&] { sparse24_linear_workspace_bytes(16, 256, k2_30 + 32, Sparse24Options{}, 132); },
               Status::kInvalidArgument, "exceeds 2^30", "w");
  // blockwise: M, N, K < 2^31.
  const auto bw = [](int64_t M, int64_t N, int64_t K) {
    return blockwise_plan(M, N, K, G::kGroup1x128, G::kBlock128x128, BlockwiseOptions{}, 132);
  };
  EXPECT_NO_THROW(bw(k2_31 - 1, 256, 2048));
  expect_error([&] { bw(k2_31, 256, 2048); }, Status::kInvalidArgument, "is not a problem", "M");
  expect_error([&] { bw(16, k2_31, 2048); }, Status::kInvalidArgument, "is not a problem", "M");
  expect_error([&] { bw(16, 256, k2_31); }, Status::kInvalidArgument, "is not a problem", "M");
  BlockCase c;
  c.x.rows = c.y.rows = k2_31;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "exceeds 2147483647 in one dimension", "x");
  SparseCase s;
  s.x.rows = s.y.rows = k2_30 + 1;
  expect_error([&] { s.run(); }, Status::kInvalidArgument, "M=1073741825 is outside [0, 2^30]", "M");
}

TEST(LinearContract, AlignmentOfScalesAndOutput) {
  {
    SparseCase c;
    c.sx.data = faddr(0x200002);
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "x_scale");
    c = SparseCase{};
    c.w.scales = static_cast<float*>(addr(0x500002));
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "w.scales");
    c = SparseCase{};
    c.y.data = addr(0x600008);
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "y");
    c = SparseCase{};
    c.y.ld = 260;  // 520 bytes
    expect_error([&] { c.run(); }, Status::kMisaligned, "ld=260 (520 bytes) must be a multiple of 16 bytes", "y");
  }
  {
    BlockCase c;
    c.sx.data = faddr(0x200002);
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "x_scale");
    c = BlockCase{};
    c.sw.data = faddr(0x500001);
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "w_scale");
    c = BlockCase{};
    c.y.data = addr(0x600008);
    expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "y");
    c = BlockCase{};
    c.y.ld = 260;
    expect_error([&] { c.run(); }, Status::kMisaligned, "ld=260 (520 bytes) must be a multiple of 16 bytes", "y");
  }
}

TEST(LinearContract, ValidInputWithoutAGpuStopsAtTheDevice) {
  if (!no_gpu()) GTEST_SKIP() << "an sm_90 GPU is present (fake pointers would be used)";
  SparseCase s;
  BlockCase b;
  expect_error([&] { s.run(); }, Status::kUnsupported, "sm_90a");
  expect_error([&] { b.run(); }, Status::kUnsupported, "sm_90a");
}

TEST(Version, OneString) {
  EXPECT_STREQ(version(), QSGEMM_VERSION);
  EXPECT_STREQ(QSGEMM_VERSION, "0.1.0");
}

}  // namespace
