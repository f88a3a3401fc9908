// The W4A4 + low-rank family on the CPU: every rule of include/qsgemm/w4a4.h rejected before any GPU
// work with its status and a message naming the values; the config table and the pure heuristic; the
// INT4 format (docs/formats.md §5) round trip; and the kernel's nibble-widening arithmetic checked
// against the reference on every pair of nibbles. Runs without a GPU (fake, well-aligned addresses).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"
#include "qsgemm/w4a4.h"
#include "validation_test_util.h"
#include "w4a4_heuristic.h"

namespace {

using namespace qsgemm;
using test::addr;
using test::expect_error;
using test::faddr;

// A valid problem: L=16, D=256, D1=512, group 64, rank 32, bf16 output.
struct Case {
  MatrixView x1{addr(0x100000), DType::kI4x2, 16, 256};
  const float* sx = faddr(0x200000);
  int64_t ld_sx = 16;
  MatrixView w1{addr(0x300000), DType::kI4x2, 256, 256};
  const float* sw = faddr(0x400000);
  int group = 64;
  MatrixView x2{addr(0x500000), DType::kBF16, 16, 32};
  MatrixView w2{addr(0x600000), DType::kBF16, 256, 32};
  VectorView bias{};
  MatrixView y{addr(0x700000), DType::kBF16, 16, 256};
  W4A4Options opt{};
  void run() const { w4a4_linear(x1, sx, ld_sx, w1, sw, group, x2, w2, bias, y, opt, nullptr); }
};

TEST(W4A4Validation, Dtypes) {
  Case c;
  c.x1.dtype = DType::kBF16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype bf16 is not accepted", "x1");
  c = Case{};
  c.w1.dtype = DType::kU8;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype", "w1");
  c = Case{};
  c.y.dtype = DType::kE4M3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype e4m3 is not accepted", "y");
  c = Case{};
  c.x2.dtype = DType::kF32;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype fp32 is not accepted", "x2");
  c = Case{};
  c.w2.dtype = DType::kF16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype fp16 is not accepted", "w2");
}

TEST(W4A4Validation, GroupAndReductionDimension) {
  Case c;
  c.group = 32;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "group=32 must be 64 or 128", "group");
  c = Case{};
  c.group = 128;
  c.x1.cols = c.x1.ld = c.w1.cols = c.w1.ld = 160;  // D1 = 320: not whole groups of 128
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "D1=320 must be a positive multiple of group=128", "D1");
  c = Case{};
  c.w1.cols = c.w1.ld = 128;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 128 columns, expected 256", "w1");
}

TEST(W4A4Validation, OutputChannels) {
  Case c;
  c.w1.rows = 12;
  c.y.cols = 12;
  c.y.ld = 16;
  c.w2.rows = 12;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "D=12 (rows of w1) must be a positive multiple of 8", "D");
  c = Case{};
  c.y.cols = 128;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 128 columns, expected 256", "y");
  c = Case{};
  c.y.rows = 15;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 15 rows, expected 16", "y");
}

TEST(W4A4Validation, Rank) {
  for (int r : {8, 24, 144}) {
    Case c;
    c.x2.cols = c.x2.ld = r;
    c.w2.cols = c.w2.ld = r;
    expect_error([&] { c.run(); }, Status::kInvalidArgument, "rank r=" + std::to_string(r) + " must be a multiple of 16",
                 "x2");
  }
  Case c;
  c.w2.cols = c.w2.ld = 16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 16 columns, expected 32", "w2");
  c = Case{};
  c.x2.rows = 8;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 8 rows, expected 16", "x2");
  // r = 0 with x2 but not w2 empty.
  c = Case{};
  c.x2 = MatrixView(nullptr, DType::kBF16, 16, 0);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 32 columns, expected 0", "w2");
}

TEST(W4A4Validation, Alignment) {
  Case c;
  c.x1.data = addr(0x100008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "x1");
  c = Case{};
  c.x1.ld = 264;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=264 (264 bytes) must be a multiple of 16 bytes", "x1");
  c = Case{};
  c.w1.ld = 260;
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be a multiple of 16 bytes", "w1");
  c = Case{};
  c.x2.data = addr(0x500004);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "x2");
  c = Case{};
  c.w2.ld = 36;  // 72 bytes
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be a multiple of 16 bytes", "w2");
  c = Case{};
  c.y.ld = 260;  // 520 bytes of bf16
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be a multiple of 16 bytes", "y");
  c = Case{};
  c.sx = faddr(0x200002);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "x_scale");
  c = Case{};
  c.sw = faddr(0x400001);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 4-byte aligned", "w_scale");
  c = Case{};
  c.opt.workspace = addr(0x800008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "options.workspace");
}

TEST(W4A4Validation, ScalesBiasOptions) {
  Case c;
  c.ld_sx = 15;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "ld_x_scale=15 must be >= L=16", "x_scale");
  c = Case{};
  c.sw = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "null pointer", "w_scale");
  c = Case{};
  c.sx = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "null pointer", "x_scale");
  c = Case{};
  c.bias = VectorView(addr(0x900000), DType::kF32, 255);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias has 255 elements, expected N=256", "bias");
  c = Case{};
  c.bias = VectorView(addr(0x900000), DType::kF16, 256);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "must be fp32 or the output dtype", "bias");
  c = Case{};
  c.opt.split_k = 2;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "does not split K", "options.split_k");
  c = Case{};
  c.opt.config = w4a4_num_configs();
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "is outside [-1, " + std::to_string(w4a4_num_configs()) + ")", "options.config");
}

// The fast scale layout (m_major_scale_ld, which blockwise_linear's expanded copy of x blocks uses
// too): ld >= L, a multiple of 4 floats (16-byte rows), the smallest such.
TEST(W4A4Validation, XScaleLdPadsToSixteenBytes) {
  for (int64_t L = 0; L <= 300; ++L) {
    const int64_t ld = m_major_scale_ld(L);
    EXPECT_EQ(w4a4_x_scale_ld(L), ld) << "L=" << L;
    EXPECT_GE(ld, std::max<int64_t>(L, 1)) << "L=" << L;
    EXPECT_EQ(ld % 4, 0) << "L=" << L;
    EXPECT_LT(ld - L, 4 + (L == 0)) << "L=" << L;
  }
  EXPECT_EQ(w4a4_x_scale_ld(33), 36);
  EXPECT_EQ(w4a4_x_scale_ld(1), 4);
  EXPECT_EQ(w4a4_x_scale_ld(64), 64);
}

// X1 in either staging: packed INT4 [L, D1/2] or e4m3 codes [L, D1]; an explicit configuration must
// read the staging it is given (the heuristic only picks such rows).
TEST(W4A4Validation, X1Staging) {
  const int wg = w4a4_config_index("128x128x128_wgmma_coop"), sq = w4a4_config_index("128x128x128_w2x4");
  Case c;
  c.x1 = MatrixView(addr(0x100000), DType::kE4M3, 16, 512);
  c.x1.rows = c.y.rows = c.x2.rows = 0;  // L = 0: validated, then a no-op (no GPU on this machine)
  EXPECT_NO_THROW(c.run());
  c.opt.config = wg;
  EXPECT_NO_THROW(c.run());
  c.opt.config = sq;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "config 128x128x128_w2x4 reads X1 as packed INT4 (DType::kI4x2 [L, D1/2]) but x1 is e4m3", "x1");
  c = Case{};
  c.x1.rows = c.y.rows = c.x2.rows = 0;
  c.opt.config = wg;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "config 128x128x128_wgmma_coop reads X1 as e4m3 codes (DType::kE4M3 [L, D1]) but x1 is int4x2", "x1");
  // e4m3 X1: D1 = its columns; w1 must then have D1/2 bytes per row.
  c = Case{};
  c.x1 = MatrixView(addr(0x100000), DType::kE4M3, 16, 256);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 256 columns, expected 128", "w1");
  // 16-byte rows (TMA): ld in bytes.
  c = Case{};
  c.x1 = MatrixView(addr(0x100000), DType::kE4M3, 16, 512, 520);
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=520 (520 bytes) must be a multiple of 16 bytes", "x1");
  c = Case{};
  c.x1 = MatrixView(addr(0x100004), DType::kE4M3, 16, 512);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "x1");
  // Which staging each configuration reads.
  for (int i = 0; i < w4a4_num_configs(); ++i)
    EXPECT_EQ(w4a4_x1_dtype(i), kernels::kW4A4Configs[i].kernel == kernels::W4A4Kernel::kWgmma ? DType::kE4M3
                                                                                               : DType::kI4x2);
  EXPECT_EQ(w4a4_x1_dtype(wg), DType::kE4M3);
  EXPECT_EQ(w4a4_x1_dtype(sq), DType::kI4x2);
  expect_error([] { w4a4_x1_dtype(-1); }, Status::kInvalidArgument, "outside", "config");
  expect_error([] { w4a4_x1_dtype(w4a4_num_configs()); }, Status::kInvalidArgument, "outside", "config");
  W4A4Options o;
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(2048, 4096, 4096, 64, o, 132)), DType::kE4M3);  // the wgmma kernel
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(16, 4096, 4096, 64, o, 132)), DType::kI4x2);
  o.config = wg;
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(2048, 4096, 4096, 64, o, 132)), DType::kE4M3);
  // The int8 staging is gone (the wgmma kernel reads e4m3 codes): an int8 X1 is an error.
  c = Case{};
  c.x1 = MatrixView(addr(0x100000), DType::kI8, 16, 512);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "int8", "x1");
}

TEST(W4A4Validation, OverlappingOutput) {
  Case c;
  c.y.data = c.x1.data;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "overlaps x1", "y");
  c = Case{};
  c.y.data = addr(0x600000 - 16);  // runs into w2
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "overlaps w2", "y");
  c = Case{};
  c.bias = VectorView(addr(0x700000 + 64), DType::kF32, 256);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "overlaps bias", "y");
  // r = 0: x2/w2 are not read, so they may be anything (null, and not checked for overlap).
  c = Case{};
  c.x2 = MatrixView(nullptr, DType::kBF16, 0, 0);
  c.w2 = MatrixView(nullptr, DType::kBF16, 0, 0);
  c.x1.rows = c.y.rows = 0;  // L = 0: a no-op after validation, no GPU touched
  EXPECT_NO_THROW(c.run());
}

TEST(W4A4Validation, Extents) {
  Case c;
  c.w1.rows = c.y.cols = c.y.ld = c.w2.rows = int64_t{65535} * 64 + 8;  // more CTA columns than gridDim.y holds
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "exceeds 4194240", "D");
  c = Case{};
  c.x1.rows = c.y.rows = c.x2.rows = int64_t{1} << 31;
  c.ld_sx = c.x1.rows;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "exceeds 2147483647 in one dimension", "L");
  c = Case{};
  c.ld_sx = int64_t{1} << 30;  // x 8 groups > 2^31 scales
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "groups exceeds 2147483647 scales", "x_scale");
  W4A4Options o;
  expect_error([&] { w4a4_plan(-1, 4096, 4096, 0, o, 132); }, Status::kInvalidArgument, "is not a problem", "L");
  expect_error([&] { w4a4_plan(16, 0, 4096, 0, o, 132); }, Status::kInvalidArgument, "is not a problem", "L");
  expect_error([&] { w4a4_plan(16, 4096, 4096, 0, o, -1); }, Status::kInvalidArgument, "sm_count=-1", "sm_count");
  expect_error([&] { w4a4_plan(16, 4096, 4096, 0, o, 132, 32); }, Status::kInvalidArgument, "group=32", "group");
  expect_error([&] { w4a4_plan(16, 4096, 4160, 0, o, 132, 128); }, Status::kInvalidArgument, "multiple of group=128",
               "D1");
  EXPECT_EQ(w4a4_plan(1, 57344, 8192, 0, o, 132, 128).config, w4a4_config_index("decode_8x16_k8_ring"));
  EXPECT_EQ(w4a4_plan(1, 57344, 8192, 0, o, 132).config, w4a4_config_index("decode_8x16_k8_ring"));
  EXPECT_EQ(w4a4_plan(1, 4096, 4096, 0, o, 132, 128).config, w4a4_config_index("decode_8x16_k8"));
}

TEST(W4A4Validation, QuantizerRules) {
  const MatrixView x(addr(0x100000), DType::kBF16, 16, 512);
  const MatrixView l1(addr(0x200000), DType::kBF16, 32, 512);
  const MatrixView x1(addr(0x300000), DType::kI4x2, 16, 256);
  float* sx = reinterpret_cast<float*>(0x400000);
  const MatrixView x2(addr(0x500000), DType::kF32, 16, 32);
  auto run = [&](const MatrixView& x_, int g, const MatrixView& l1_, const MatrixView& x1_, float* s, int64_t ld,
                 const MatrixView& x2_) { w4a4_quantize_activations(x_, g, l1_, x1_, s, ld, x2_, nullptr); };
  expect_error([&] { run(MatrixView(addr(0x100000), DType::kE4M3, 16, 512), 64, l1, x1, sx, 16, x2); },
               Status::kInvalidArgument, "dtype e4m3 is not accepted", "x");
  expect_error([&] { run(x, 96, l1, x1, sx, 16, x2); }, Status::kInvalidArgument, "group=96 must be 64 or 128", "group");
  expect_error([&] { run(MatrixView(addr(0x100000), DType::kBF16, 16, 96, 512), 64, l1, x1, sx, 16, x2); },
               Status::kInvalidArgument, "D1=96 must be a positive multiple of group=64", "D1");
  expect_error([&] { run(x, 64, l1, MatrixView(addr(0x300000), DType::kI4x2, 16, 512), sx, 16, x2); },
               Status::kInvalidArgument, "has 512 columns, expected 256", "x1");
  expect_error([&] { run(x, 64, MatrixView(addr(0x200000), DType::kBF16, 24, 512), x1, sx, 16, x2); },
               Status::kInvalidArgument, "rank r=24 must be a multiple of 16", "lora_down");
  expect_error([&] { run(x, 64, MatrixView(addr(0x200000), DType::kF32, 32, 512), x1, sx, 16, x2); },
               Status::kInvalidArgument, "dtype fp32 is not accepted", "lora_down");
  expect_error([&] { run(x, 64, l1, x1, sx, 16, MatrixView(addr(0x500000), DType::kF32, 16, 16)); },
               Status::kInvalidArgument, "has 16 columns, expected 32", "x2");
  expect_error([&] { run(x, 64, l1, x1, sx, 8, x2); }, Status::kInvalidArgument, "ld_x_scale=8 must be >= L=16",
               "x_scale");
  expect_error([&] { run(x, 64, l1, x1, nullptr, 16, x2); }, Status::kInvalidArgument, "null pointer", "x_scale");
  expect_error([&] { run(MatrixView(addr(0x100008), DType::kBF16, 16, 512), 64, l1, x1, sx, 16, x2); },
               Status::kMisaligned, "must be 16-byte aligned", "x");
  expect_error([&] { run(x, 64, l1, MatrixView(addr(0x100000), DType::kI4x2, 16, 256), sx, 16, x2); },
               Status::kInvalidArgument, "overlaps x", "x1");
  expect_error([&] { run(x, 64, l1, x1, sx, 16, MatrixView(addr(0x300000 + 256), DType::kF32, 16, 32)); },
               Status::kInvalidArgument, "overlaps x1", "x2");
  expect_error([&] { run(x, 64, l1, x1, reinterpret_cast<float*>(0x200000 + 64), 16, x2); },
               Status::kInvalidArgument, "overlaps lora_down", "x_scale");
  // The e4m3 staging: [L, D1], one code per byte, 16-byte rows.
  expect_error([&] { run(x, 64, l1, MatrixView(addr(0x300000), DType::kE4M3, 16, 256), sx, 16, x2); },
               Status::kInvalidArgument, "has 256 columns, expected 512", "x1");
  expect_error([&] { run(x, 64, l1, MatrixView(addr(0x300000), DType::kE4M3, 16, 512, 520), sx, 16, x2); },
               Status::kMisaligned, "must be a multiple of 16 bytes", "x1");
  expect_error([&] { run(x, 64, l1, MatrixView(addr(0x300000), DType::kU8, 16, 512), sx, 16, x2); },
               Status::kInvalidArgument, "dtype u8 is not accepted", "x1");
  EXPECT_NO_THROW(w4a4_quantize_activations(MatrixView(addr(0x100000), DType::kBF16, 0, 512), 64,
                                            MatrixView(addr(0x300000), DType::kE4M3, 0, 512), sx, 0, nullptr));
  // The entry point without the down-projection applies the same rules.
  expect_error([&] { w4a4_quantize_activations(x, 64, x1, sx, 15, nullptr); }, Status::kInvalidArgument,
               "ld_x_scale=15 must be >= L=16", "x_scale");
  EXPECT_NO_THROW(w4a4_quantize_activations(MatrixView(addr(0x100000), DType::kBF16, 0, 512), 64,
                                            MatrixView(addr(0x300000), DType::kI4x2, 0, 256), sx, 0, nullptr));
}

TEST(W4A4Validation, PackerRulesBeforeDevice) {
  const MatrixView w(addr(0x100000), DType::kF32, 64, 256);
  float* s = reinterpret_cast<float*>(0x400000);
  expect_error([&] { w4a4_pack_weight(MatrixView(addr(0x100000), DType::kE4M3, 64, 256), 64,
                                      MatrixView(addr(0x300000), DType::kI4x2, 64, 128), s, nullptr); },
               Status::kInvalidArgument, "dtype e4m3 is not accepted", "w");
  expect_error([&] { w4a4_pack_weight(w, 32, MatrixView(addr(0x300000), DType::kI4x2, 64, 128), s, nullptr); },
               Status::kInvalidArgument, "group=32 must be 64 or 128", "group");
  expect_error([&] { w4a4_pack_weight(w, 64, MatrixView(addr(0x300000), DType::kI4x2, 64, 256), s, nullptr); },
               Status::kInvalidArgument, "has 256 columns, expected 128", "w_packed");
  expect_error([&] { w4a4_pack_weight(w, 64, MatrixView(addr(0x300000), DType::kI4x2, 63, 128), s, nullptr); },
               Status::kInvalidArgument, "has 63 rows, expected 64", "w_packed");
  expect_error([&] { w4a4_pack_weight(w, 64, MatrixView(addr(0x100000 + 1024), DType::kI4x2, 64, 128), s, nullptr); },
               Status::kInvalidArgument, "overlaps w", "w_packed");
  expect_error([&] { w4a4_pack_weight(w, 64, MatrixView(addr(0x300000), DType::kI4x2, 64, 128),
                                      reinterpret_cast<float*>(0x300000 + 64), nullptr); },
               Status::kInvalidArgument, "overlaps w_packed", "w_scale");
  expect_error([&] { w4a4_pack_weight(w, 64, MatrixView(addr(0x300000), DType::kI4x2, 64, 128), nullptr, nullptr); },
               Status::kInvalidArgument, "null pointer", "w_scale");
  expect_error([&] { w4a4_pack_weight(MatrixView(addr(0x100000), DType::kF32, 64, 256, 258), 64,
                                      MatrixView(addr(0x300000), DType::kI4x2, 64, 128), s, nullptr); },
               Status::kMisaligned, "must be a multiple of 16 bytes", "w");
}

// ---- configurations and heuristic ----------------------------------------------------------------
TEST(W4A4Configs, TableAndNames) {
  ASSERT_EQ(w4a4_num_configs(), kernels::kW4A4NumConfigs);
  std::set<std::string> names;
  int wgmma_rows = 0, decode_rows = 0;
  for (int i = 0; i < w4a4_num_configs(); ++i) {
    const auto& c = kernels::kW4A4Configs[i];
    const std::string n = w4a4_config_name(i);
    EXPECT_TRUE(names.insert(n).second) << n;
    EXPECT_EQ(w4a4_config_index(n), i);
    if (c.kernel == kernels::W4A4Kernel::kDecode) {  // 16/32 weight rows x 8/16/32 tokens, 8 warps split K
      ++decode_rows;
      // 8 tokens through registers or a ring ("_ring"); 16 and 32 tokens always through a ring.
      EXPECT_EQ(n, "decode_" + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "_k" +
                       std::to_string(c.k_slices) + (c.tile_m == 8 && c.ring_sw > 0 ? "_ring" : ""));
      EXPECT_TRUE(c.ring_sw == 64 || c.ring_sw == 128 || (c.tile_m == 8 && c.tile_n == 16 && c.ring_sw == 0)) << n;
      EXPECT_EQ(c.x1_dtype(), DType::kI4x2) << n;
      EXPECT_TRUE(c.tile_m == 8 || c.tile_m == 16 || c.tile_m == 32) << n << ": 1, 2 or 4 n8 token blocks";
      EXPECT_TRUE(c.tile_n == 16 || c.tile_n == 32) << n << ": one or two m16 tiles of weight rows";
      EXPECT_TRUE(c.tile_m != 32 || c.tile_n == 32) << n << ": 32 tokens on two m16 tiles";
      EXPECT_EQ(c.k_slices, 8) << n;
      EXPECT_EQ(c.threads(), 256) << n;
      continue;
    }
    EXPECT_TRUE(!c.clamped || c.kernel == kernels::W4A4Kernel::kWgmma) << n << ": only the wgmma kernel clamps";
    if (c.kernel == kernels::W4A4Kernel::kWgmma) {  // CUTLASS's cooperative tile: 2 consumer warp groups
      ++wgmma_rows;
      EXPECT_EQ(n, std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x128_wgmma_coop" +
                       (c.clamped ? "_clamped" : ""));
      EXPECT_EQ(c.x1_dtype(), DType::kE4M3) << n;
      // the 128-token tile (sm90_w4a4_wgmma_<dtype>.cu) or a band tile, never clamped
      // (sm90_w4a4_wgmma_band_<dtype>.cu)
      EXPECT_TRUE(c.tile_m == 128 || (kernels::w4a4_is_band_tile(c.tile_m) && !c.clamped)) << n;
      EXPECT_EQ(c.tile_n, 128) << n;
      continue;
    }
    EXPECT_EQ(c.x1_dtype(), DType::kI4x2) << n;
    EXPECT_EQ(n, std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x128_w" + std::to_string(c.warps_m) +
                     "x" + std::to_string(c.warps_n) + (c.k_slices == 1 ? "" : "_k" + std::to_string(c.k_slices)) +
                     (c.stages == 3 ? "" : "_s" + std::to_string(c.stages)));
    EXPECT_TRUE(c.k_slices == 1 || c.k_slices == 2 || c.k_slices == 4) << n;
    EXPECT_EQ((c.tile_m + c.tile_n) * 4 % c.threads(), 0) << n << ": whole 16-byte chunks per thread";
    EXPECT_EQ(c.tile_m % (16 * c.warps_m), 0) << n;
    EXPECT_EQ(c.tile_n % (8 * c.warps_n), 0) << n;
    EXPECT_LE(c.stages * (c.tile_m + c.tile_n) * 64, 48 * 1024) << n << ": the stages in static shared memory";
  }
  EXPECT_EQ(wgmma_rows, 6);  // the last token tile plain and clamped, four band tiles
  EXPECT_EQ(decode_rows, 5);
  expect_error([] { w4a4_config_name(-1); }, Status::kInvalidArgument, "outside", "index");
  expect_error([] { w4a4_config_index("nope"); }, Status::kInvalidArgument, "128x128x128_w2x4", "name");
}

// The whole table: L <= 16 the decode row with the fewest n8 token blocks that hold L (8 tokens
// through the TMA ring from 90 KiB of packed weight per SM), 33..48 the 16-token row where the model
// keeps the decode row; from 17 tokens the cost model's choice between the 32-token decode row
// (packed X1) and the wgmma kernel (e4m3 X1; src/w4a4_heuristic.h); an e4m3 X1 the wgmma row at every L.
TEST(W4A4Heuristic, DecodeThenSmallTile) {
  const int d8 = w4a4_config_index("decode_8x16_k8"), d16 = w4a4_config_index("decode_16x16_k8"),
            d32 = w4a4_config_index("decode_32x32_k8"), small = w4a4_config_index("32x64x128_w1x4"),
            wg = w4a4_config_index("128x128x128_wgmma_coop"), d8r = w4a4_config_index("decode_8x16_k8_ring"),
            wgc = w4a4_config_index("128x128x128_wgmma_coop_clamped"),
            band80 = w4a4_config_index("80x128x128_wgmma_coop"), band64 = w4a4_config_index("64x128x128_wgmma_coop");
  for (int64_t L : {0, 1, 7, 8}) EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 64, 132), d8) << L;
  for (int64_t L : {9, 16}) EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 64, 132), d16) << L;
  // 1..8 tokens: the ring from D·D1/2 >= 90 KiB per SM, at either group.
  for (int64_t L : {1, 5, 8})
    for (int group : {64, 128}) {
      EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 0, 132, group), d8r) << L << " group " << group;
      EXPECT_EQ(w4a4_choose_config(L, 4096, 5952, 0, 132, group), d8r) << L << ": 90.2 KiB per SM";
      EXPECT_EQ(w4a4_choose_config(L, 4096, 5888, 0, 132, group), d8) << L << ": 89.2 KiB per SM";
      EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 0, 132, group), d8) << L << ": 62.1 KiB per SM";
      EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 0, 78, group), d8r) << L << ": fewer SMs, the same weight";
    }
  EXPECT_EQ(w4a4_choose_config(9, 57344, 8192, 0, 132), d16);
  // 9..16 tokens: the 16-token ring on 16 weight rows at every shape and group.
  for (int64_t L : {9, 12, 16})
    for (int group : {64, 128}) {
      EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 0, 132, group), d16) << L;
      EXPECT_EQ(w4a4_choose_config(L, 16896, 4096, 0, 132, group), d16) << L;
    }
  expect_error([] { w4a4_choose_config(1, 4096, 4096, 0, 132, 96); }, Status::kInvalidArgument, "group=96", "group");
  // 17..32 tokens at group 64: one 32-token block at every shape; 33..48 three 16-token blocks. At
  // group 128 the 32x64 tile where the model prefers it (wide layers), else the 32-token block.
  for (int64_t L : {17, 31, 32}) {
    EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 0, 132), d32) << L;
    EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 0, 132, 128), small) << L;
    EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 0, 132, 128), d32) << L;
  }
  // Where the model keeps packed X1 at 33..48 tokens (a narrow layer), group 64: the 16-token row.
  for (int64_t L : {33, 40, 48}) {
    EXPECT_EQ(w4a4_choose_config(L, 4096, 4096, 0, 132), d16) << L;
    EXPECT_EQ(kernels::w4a4_choose_for_x1(L, 57344, 8192, 0, 132, DType::kI4x2), d16) << L;
  }
  EXPECT_EQ(w4a4_choose_config(49, 4096, 4096, 0, 132), d32);
  // The cost model (fit points of tuning/tune_w4a4_band_model.txt, group 64, and the band tiles' share):
  // on 57344x8192 (3.5 waves of 128-row tiles) the wgmma kernel from 33 tokens (its 64-token band
  // tile up to 64, the 80-token one above); on 3584x18944 (28 tiles) never below 176.
  for (int64_t L : {32}) EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 64, 132), d32) << L;
  for (int64_t L : {33, 40, 48, 64}) EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 64, 132), band64) << L;
  EXPECT_EQ(w4a4_choose_config(80, 57344, 8192, 64, 132), band80);
  for (int64_t L : {128, 2048}) EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 64, 132), wg) << L;
  for (int64_t L : {129, 175, 176}) EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 64, 132), wgc) << L << ": clamped";
  for (int64_t L : {64, 128, 160, 175}) EXPECT_EQ(w4a4_choose_config(L, 3584, 18944, 64, 132), d32) << L;
  // At group 128 the wgmma kernel's promotion costs half: on 57344x8192 from 33 tokens (band tiles),
  // the 32x64 tile before; a narrow layer keeps the decode row to 128 tokens.
  EXPECT_EQ(w4a4_choose_config(32, 57344, 8192, 0, 132, 128), small);
  for (int64_t L : {33, 64}) EXPECT_EQ(w4a4_choose_config(L, 57344, 8192, 0, 132, 128), band64) << L;
  EXPECT_EQ(w4a4_choose_config(80, 57344, 8192, 0, 132, 128), band80);
  EXPECT_EQ(w4a4_choose_config(128, 57344, 8192, 0, 132, 128), wg);
  EXPECT_EQ(w4a4_choose_config(176, 57344, 8192, 0, 132, 128), wgc);
  EXPECT_EQ(w4a4_choose_config(128, 3584, 18944, 0, 132, 128), d32);
  // 33..48 tokens where the model keeps the decode row, at group 128 too: three 16-token blocks.
  for (int64_t L : {33, 48}) EXPECT_EQ(w4a4_choose_config(L, 3584, 18944, 0, 132, 128), d16) << L;
  EXPECT_EQ(w4a4_choose_config(49, 3584, 18944, 0, 132, 128), d32);
  EXPECT_EQ(w4a4_choose_config(40, 18944, 3584, 0, 132, 128), small);
  // Every shape takes the wgmma kernel from a few hundred tokens, and never below 17.
  for (int group : {64, 128})
    for (auto [D, D1] : {std::pair<int64_t, int64_t>{4096, 4096}, {28672, 4096}, {4096, 14336}, {10240, 8192},
                         {57344, 8192}, {8192, 28672}, {3584, 18944}, {256, 4096}}) {
      for (int64_t L : {384, 512, 2048, 8192})
        EXPECT_EQ(w4a4_choose_config(L, D, D1, 64, 132, group), wg) << D << "x" << D1 << " L=" << L;
      for (int64_t L = 0; L <= 32; ++L) {  // packed X1: the decode kernel, at group 128 maybe the 32x64 tile
        const kernels::W4A4Kernel k = kernels::kW4A4Configs[w4a4_choose_config(L, D, D1, 64, 132, group)].kernel;
        EXPECT_TRUE(k == kernels::W4A4Kernel::kDecode || (group == 128 && L > 16 && k == kernels::W4A4Kernel::kMmaSync))
            << D << "x" << D1 << " L=" << L;
        if (group == 64) EXPECT_EQ(k, kernels::W4A4Kernel::kDecode) << D << "x" << D1 << " L=" << L;
      }
    }
  // Up to 32 tokens a decode row holds all of L in one token block (one weight pass); its tokens
  // per CTA never shrink as L grows.
  int prev_tokens = 0;
  for (int64_t L = 1; L <= 32; ++L) {
    const auto& c = kernels::kW4A4Configs[w4a4_choose_config(L, 4096, 4096, 0, 132)];
    EXPECT_GE(c.tile_m, L) << L;
    EXPECT_GE(c.tile_m, prev_tokens) << L;
    prev_tokens = c.tile_m;
  }
  expect_error([] { w4a4_choose_config(1, 4096, 4096, 0, 0); }, Status::kInvalidArgument, "sm_count=0", "sm_count");
  W4A4Options o;
  EXPECT_EQ(w4a4_plan(2048, 4096, 4096, 64, o, 132).config, wg);
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(2048, 4096, 4096, 64, o, 132)), DType::kE4M3);
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(150, 4096, 4096, 64, o, 132)), DType::kI4x2);
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(150, 57344, 8192, 64, o, 132)), DType::kE4M3);
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(300, 4096, 4096, 64, o, 132)), DType::kE4M3);
  EXPECT_EQ(w4a4_plan(32, 4096, 4096, 64, o, 132).config, d32);
  EXPECT_EQ(w4a4_x1_dtype(w4a4_plan(1, 4096, 4096, 64, o, 132)), DType::kI4x2);
  EXPECT_EQ(w4a4_plan(2048, 4096, 4096, 64, o, 132).split_k, 1);
  EXPECT_EQ(w4a4_plan(2048, 4096, 4096, 64, o, 132).workspace_bytes, 0u);
  // Packed X1 (w4a4_linear with a kI4x2 x1): up to 256 tokens the model's packed pick (at group 64 the
  // decode rows), else the 32x64 tile; e4m3 X1 a wgmma row at every L.
  for (int64_t L : {1, 32, 49, 128, 175, 176, 256, 257, 2048}) {
    EXPECT_EQ(kernels::w4a4_choose_for_x1(L, 57344, 8192, 64, 132, DType::kI4x2),
              L <= 8 ? d8r : L <= 256 ? d32 : small) << L;
    // the wgmma row: a band tile up to 112 tokens (64 tokens here to 49), from 128 the 128-token
    // tile, with its last token tile clamped where that pays (L = 175, 176, 257)
    EXPECT_EQ(kernels::w4a4_choose_for_x1(L, 57344, 8192, 64, 132, DType::kE4M3),
              L <= 64 ? band64 : L == 175 || L == 176 || L == 257 ? wgc : wg) << L;
  }
  EXPECT_EQ(kernels::w4a4_choose_for_x1(200, 4096, 14336, 64, 132, DType::kI4x2), d32) << "the model keeps packed";
  EXPECT_EQ(w4a4_choose_config(200, 4096, 14336, 64, 132), d32);
  o.config = d8;
  EXPECT_EQ(w4a4_plan(2048, 4096, 4096, 64, o, 132).config, d8);
  expect_error([&] { w4a4_plan(16, 4096, 4096, 40, o, 132); }, Status::kInvalidArgument, "rank r=40", "rank");
  o.split_k = 4;
  expect_error([&] { w4a4_plan(16, 4096, 4096, 64, o, 132); }, Status::kInvalidArgument, "does not split K",
               "options.split_k");
}

// e4m3 X1 up to 112 tokens: the narrowest band tile that holds L (w4a4_wgmma_band_config), so the one
// token tile reads at most 15 rows past L from 49 tokens; never narrower as L grows; from 113 tokens
// the 128-token rows.
TEST(W4A4Heuristic, BandTilesHoldL) {
  int prev = 0;
  for (int64_t L = 0; L <= 300; ++L) {
    const int c = kernels::w4a4_choose_for_x1(L, 57344, 8192, 64, 132, DType::kE4M3);
    const auto& row = kernels::kW4A4Configs[c];
    ASSERT_EQ(row.kernel, kernels::W4A4Kernel::kWgmma) << L;
    EXPECT_EQ(row.tile_n, 128) << L;
    if (L <= kernels::kW4A4BandMaxL) {
      EXPECT_EQ(c, kernels::w4a4_wgmma_band_config(L)) << L;
      EXPECT_GE(row.tile_m, L) << L;
      EXPECT_LT(row.tile_m, 128) << L;
      if (L > 48) EXPECT_LT(row.tile_m - L, 16) << L;
      EXPECT_FALSE(row.clamped) << L;
    } else {
      EXPECT_EQ(row.tile_m, 128) << L;
      EXPECT_EQ(kernels::w4a4_wgmma_band_config(L), -1) << L;
    }
    EXPECT_GE(row.tile_m, prev) << L;
    prev = L <= 128 ? row.tile_m : 0;  // above 128 tokens the 128-token tile repeats
  }
  EXPECT_EQ(w4a4_config_name(kernels::w4a4_wgmma_band_config(1)), "64x128x128_wgmma_coop");
  EXPECT_EQ(w4a4_config_name(kernels::w4a4_wgmma_band_config(65)), "80x128x128_wgmma_coop");
  EXPECT_EQ(w4a4_config_name(kernels::w4a4_wgmma_band_config(96)), "96x128x128_wgmma_coop");
  EXPECT_EQ(w4a4_config_name(kernels::w4a4_wgmma_band_config(112)), "112x128x128_wgmma_coop");
  // Each band row reads X1 as e4m3 codes, as the 128-token rows.
  for (int64_t L : {1, 70, 100, 112}) EXPECT_EQ(w4a4_x1_dtype(kernels::w4a4_wgmma_band_config(L)), DType::kE4M3) << L;
}

// The band's cost model (src/w4a4_heuristic.h): close to what it was fitted on, and monotone where
// the kernels are.
TEST(W4A4Heuristic, CostModel) {
  using kernels::w4a4_decode32_cost_us;
  using kernels::w4a4_wgmma_cost_us;
  // Measured on the H200 (rank 64; tuning/tune_w4a4_band_model.txt, and tune_w4a4_clamp.txt where the
  // wgmma kernel clamps its last token tile): within 15 %.
  struct Point {
    int64_t L, D, D1;
    int group;
    double decode_us, wgmma_us;
  };
  for (const Point& p : {Point{128, 59136, 8192, 64, 525.2, 304.4}, Point{24, 59136, 8192, 64, 151.4, 370.0},
                         Point{176, 28672, 4096, 64, 231.7, 162.5}, Point{64, 3584, 18944, 64, 47.1, 181.8},
                         Point{128, 14336, 4096, 128, 80.6, 34.1}, Point{176, 57344, 8192, 128, 662.7, 374.8},
                         Point{208, 4096, 14336, 64, 114.7, 134.0}}) {
    const double decode = w4a4_decode32_cost_us(p.L, p.D, p.D1, 132, p.group);
    const double wgmma = w4a4_wgmma_cost_us(p.L, p.D, p.D1, 132, p.group, 128);  // timed on the 128-token tile
    EXPECT_NEAR(decode / p.decode_us, 1.0, 0.15) << p.D << "x" << p.D1 << " L=" << p.L;
    EXPECT_NEAR(wgmma / p.wgmma_us, 1.0, 0.15) << p.D << "x" << p.D1 << " L=" << p.L;
    if (p.L > kernels::kW4A4BandMaxL) EXPECT_EQ(w4a4_wgmma_cost_us(p.L, p.D, p.D1, 132, p.group), wgmma);
  }
  // The band tiles against the 128-token tile, each on its own width of tokens (an H100,
  // bench/results/h100/tuning/tune_w4a4_band_tiles.jsonl; the ratio, not the µs): within 5 %.
  struct Band {
    int64_t b, D, D1;
    int group;
    double ratio;  // time(band tile at b tokens) / time(128-token tile at 128 tokens)
  };
  for (const Band& p : {Band{64, 59136, 8192, 64, 243.4 / 303.1}, Band{80, 59136, 8192, 64, 257.2 / 303.1},
                        Band{96, 27648, 5120, 64, 91.2 / 98.9}, Band{64, 27648, 5120, 128, 65.0 / 77.7},
                        Band{112, 14336, 4096, 128, 34.9 / 35.0}}) {
    const double r =
        w4a4_wgmma_cost_us(p.b, p.D, p.D1, 132, p.group) / w4a4_wgmma_cost_us(128, p.D, p.D1, 132, p.group);
    EXPECT_NEAR(r / p.ratio, 1.0, 0.05) << p.D << "x" << p.D1 << " band " << p.b << " group " << p.group;
    EXPECT_LT(w4a4_wgmma_cost_us(p.b, p.D, p.D1, 132, p.group), w4a4_wgmma_cost_us(p.b, p.D, p.D1, 132, p.group, 128));
  }
  // The 32x64 tile, a candidate at group 128 only.
  for (const auto& [L, D, D1, us] : {std::tuple<int64_t, int64_t, int64_t, double>{64, 59136, 8192, 205.2},
                                     {24, 14336, 4096, 23.6}, {48, 18944, 3584, 41.0}, {160, 27648, 5120, 157.3}})
    EXPECT_NEAR(kernels::w4a4_small_cost_us(L, D, D1, 132, 128) / us, 1.0, 0.15) << D << "x" << D1 << " L=" << L;
  EXPECT_TRUE(std::isinf(kernels::w4a4_small_cost_us(64, 59136, 8192, 132, 64)));
  // The clamped wgmma row: where L > 128 leaves a partial last tile with a large enough part past L.
  for (int64_t L : {129, 200, 248, 257, 372, 993})
    EXPECT_TRUE(kernels::w4a4_wgmma_clamp_pays(L)) << L;
  for (int64_t L : {1, 100, 128, 249, 256, 373, 1000, 2048, 3000, 4099})
    EXPECT_FALSE(kernels::w4a4_wgmma_clamp_pays(L)) << L;
  for (int group : {64, 128})
    for (auto [D, D1] : {std::pair<int64_t, int64_t>{4096, 4096}, {57344, 8192}, {3584, 18944}}) {
      double prev_decode = 0.0, prev_wgmma = 0.0;
      for (int64_t L = 1; L <= 4096; ++L) {
        // The decode row: every 32-token block streams the weight once more.
        const double dec = w4a4_decode32_cost_us(L, D, D1, 132, group);
        EXPECT_GE(dec, prev_decode) << L;
        prev_decode = dec;
        if (L > 1 && group == 128)  // the 32x64 tile: more token blocks never cost less
          EXPECT_GE(kernels::w4a4_small_cost_us(L, D, D1, 132, group),
                    kernels::w4a4_small_cost_us(L - 1, D, D1, 132, group)) << L;
        // The wgmma kernel: more whole token tiles never cost less; fewer SMs never cost less; where
        // its last token tile is clamped, no token more costs less.
        if (L % 128 == 0 || kernels::w4a4_wgmma_clamp_pays(L)) {
          const double w = w4a4_wgmma_cost_us(L, D, D1, 132, group);
          EXPECT_GE(w, prev_wgmma) << L;
          EXPECT_GE(w4a4_wgmma_cost_us(L, D, D1, 78, group), w) << L;
          prev_wgmma = w;
        }
        if (L <= 16) EXPECT_FALSE(kernels::w4a4_prefers_e4m3(L, D, D1, 132, group)) << L;
      }
    }
}

// ---- the format ------------------------------------------------------------------------------------
// ref::quantize_int4_groups with both group sizes: codes within [-7, 7], the group's amax element at
// ±7, every value within half a step of its dequantized code, scales row-major [rows][K/group].
TEST(W4A4Format, GroupQuantizeRoundTrip) {
  std::mt19937 rng(26);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  for (int group : {64, 128}) {
    const int64_t rows = 5, K = 384;
    std::vector<float> x(rows * K);
    for (auto& v : x) v = d(rng);
    x[2 * K + 70] = 40.0f;  // an outlier in row 2's second group of 64
    std::vector<uint8_t> q(rows * K / 2);
    std::vector<float> s(rows * K / group);
    ref::quantize_int4_groups(x.data(), rows, K, K, group, q.data(), s.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < K / group; ++g) {
        float amax = 0.0f;
        for (int64_t k = g * group; k < (g + 1) * group; ++k) amax = std::max(amax, std::fabs(x[r * K + k]));
        const float sc = s[r * (K / group) + g];
        EXPECT_EQ(sc, int4_scale_from_amax(amax));
        for (int64_t k = g * group; k < (g + 1) * group; ++k) {
          const int c = int4_unpack(q[r * (K / 2) + k / 2], k & 1);
          EXPECT_GE(c, -7);
          EXPECT_LE(c, 7);
          EXPECT_LE(std::fabs(c * sc - x[r * K + k]), 0.5f * sc * (1 + 1e-6f)) << r << "," << k;
          if (std::fabs(x[r * K + k]) == amax) EXPECT_EQ(std::abs(c), 7);
        }
      }
    // Re-quantizing the dequantized codes with the same scales gives the same codes (a fixed point).
    std::vector<float> deq(rows * K);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k)
        deq[r * K + k] = int4_unpack(q[r * (K / 2) + k / 2], k & 1) * s[r * (K / group) + k / group];
    std::vector<uint8_t> q2(q.size());
    std::vector<float> s2(s.size());
    ref::quantize_int4_groups(deq.data(), rows, K, K, group, q2.data(), s2.data());
    EXPECT_EQ(q2, q) << "group " << group;
  }
}

// The kernel widens a 32-bit word of 8 nibbles into two s8 words holding 16·v (even nibbles:
// (w << 4) & 0xF0F0F0F0, odd: w & 0xF0F0F0F0) and pairs thread t's bytes of A and B. Emulate one
// m16n8k32-sized dot product that way for every pair of nibble values and compare with the reference.
TEST(W4A4Format, NibbleWideningDotProductIsExact) {
  auto byte_s8 = [](uint32_t w, int i) { return static_cast<int>(static_cast<int8_t>((w >> (8 * i)) & 0xFF)); };
  for (int a = -8; a < 8; ++a)
    for (int b = -8; b < 8; ++b) {
      // 8 values per word: x = [a, a+1, ...] wrapped into -8..7, w = [b, ...].
      uint32_t wx = 0, ww = 0;
      int ref_sum = 0;
      for (int k = 0; k < 8; ++k) {
        const int xv = ((a + k + 8) & 15) - 8, wv = ((b - 3 * k + 8) & 15) - 8;
        wx |= static_cast<uint32_t>(xv & 0xF) << (4 * k);
        ww |= static_cast<uint32_t>(wv & 0xF) << (4 * k);
        ref_sum += xv * wv;
      }
      const uint32_t xe = (wx << 4) & 0xF0F0F0F0u, xo = wx & 0xF0F0F0F0u;
      const uint32_t we = (ww << 4) & 0xF0F0F0F0u, wo = ww & 0xF0F0F0F0u;
      int s = 0;
      for (int i = 0; i < 4; ++i) s += byte_s8(xe, i) * byte_s8(we, i) + byte_s8(xo, i) * byte_s8(wo, i);
      ASSERT_EQ(s % 256, 0);
      ASSERT_EQ(s >> 8, ref_sum) << a << " " << b;
      // Packed bytes as the format stores them: byte j = k 2j (low nibble), 2j+1 (high).
      for (int j = 0; j < 4; ++j) {
        const uint8_t byte = static_cast<uint8_t>(wx >> (8 * j));
        ASSERT_EQ(byte_s8(xe, j), 16 * int4_unpack(byte, 0));
        ASSERT_EQ(byte_s8(xo, j), 16 * int4_unpack(byte, 1));
      }
    }
}

}  // namespace
