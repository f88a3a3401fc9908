// Bad input to the 2:4 sparse and quantization APIs is rejected before any GPU work, with the
// documented status and a message that names the offending value. Runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/quant.h"
#include "qsgemm/sparse24.h"
#include "kernels/sm90/sparse24/sparse24_skinny.h"
#include "sparse24_heuristic.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;

using test::addr;
using test::expect_error;

struct LinearCase {
  int64_t M = 16, N = 256, K = 512;
  MatrixView x{addr(0x10000), DType::kE4M3, 16, 512};
  ScaleView sx{static_cast<const float*>(addr(0x20000)), ScaleGranularity::kPerRow, 0};
  SparseFp8Weight w{256, 512, static_cast<uint8_t*>(addr(0x30000)), static_cast<uint8_t*>(addr(0x40000)),
                    static_cast<float*>(addr(0x50000)), false};
  VectorView bias{};
  MatrixView y{addr(0x60000), DType::kBF16, 16, 256};
  Sparse24Options opt{};
  void run() const { sparse24_linear(x, sx, w, bias, y, opt, nullptr); }
};

TEST(Sparse24Validation, WeightShapeRules) {
  LinearCase c;
  c.w.K = 4100;
  c.x.cols = c.x.ld = 4100;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "K=4100 must be a multiple of 32");
  LinearCase d;
  d.w.N = 250;
  d.y.cols = d.y.ld = 250;
  expect_error([&] { d.run(); }, Status::kInvalidArgument, "N=250 must be a multiple of 8");
  expect_error([] { sparse24_weight_bytes(0, 128); }, Status::kInvalidArgument, "N=0");
}

TEST(Sparse24Validation, OperandDtypesShapesAndAlignment) {
  LinearCase c;
  c.x.dtype = DType::kBF16;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype bf16");
  c = LinearCase{};
  c.x.cols = 256;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 256 columns, expected 512");
  c = LinearCase{};
  c.x.ld = 520;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=520");
  c = LinearCase{};
  c.x.data = addr(0x10008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "16-byte aligned");
  c = LinearCase{};
  c.y.rows = 15;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "has 15 rows, expected 16");
  c = LinearCase{};
  c.y.dtype = DType::kE4M3;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "dtype e4m3");
  c = LinearCase{};
  c.y.ld = 200;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "ld=200 is smaller than cols=256");
  c = LinearCase{};
  c.w.meta = static_cast<uint8_t*>(addr(0x40004));
  expect_error([&] { c.run(); }, Status::kMisaligned, "w.meta");
}

TEST(Sparse24Validation, NullPointersScalesBiasAndConfig) {
  LinearCase c;
  c.w.values = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "w.values");
  c = LinearCase{};
  c.sx.data = nullptr;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "x_scale");
  c = LinearCase{};
  c.sx.granularity = ScaleGranularity::kGroup1x128;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "group_1x128");
  c = LinearCase{};
  c.bias = VectorView(addr(0x70000), DType::kF32, 255);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias has 255 elements, expected N=256");
  c = LinearCase{};
  c.bias = VectorView(addr(0x70000), DType::kF16, 256);
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "bias dtype fp16");
  c = LinearCase{};
  c.opt.config = 99;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "config 99");
  // The decode kernel serves M <= 32 only.
  c = LinearCase{};
  c.opt.config = 12;
  c.x.rows = c.y.rows = 33;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "(skinny_m32_splitk) serves M <= 32; got M=33");
  // The tuning band is CUTLASS's max swizzle (1, 2, 4, 8) or 0, the library's order.
  for (int bad : {-1, 3, 16}) {
    c = LinearCase{};
    c.opt.max_swizzle = bad;
    expect_error([&] { c.run(); }, Status::kInvalidArgument, "max_swizzle=" + std::to_string(bad));
    Sparse24Options o;
    o.max_swizzle = bad;
    expect_error([&] { sparse24_plan(4096, 4096, 4096, o, 132); }, Status::kInvalidArgument, "max_swizzle");
  }
  for (int ok : {0, 1, 2, 4, 8}) {
    Sparse24Options o;
    o.max_swizzle = ok;
    EXPECT_NO_THROW(sparse24_plan(4096, 4096, 4096, o, 132)) << ok;
  }
}

TEST(Sparse24Validation, AlignmentOfBiasCompressorInputAndSingleRows) {
  LinearCase c;
  c.bias = VectorView(addr(0x70004), DType::kF32, 256);
  expect_error([&] { c.run(); }, Status::kMisaligned, "bias");
  // One token still needs 16-byte rows: the TMA descriptor encodes the stride.
  c = LinearCase{};
  c.x.rows = c.y.rows = 1;
  c.x.ld = 520;
  expect_error([&] { c.run(); }, Status::kMisaligned, "ld=520");
  SparseFp8Weight out{256, 512, static_cast<uint8_t*>(addr(0x30000)), static_cast<uint8_t*>(addr(0x40000)),
                      static_cast<float*>(addr(0x50000)), false};
  expect_error([&] { sparse24_compress(MatrixView(addr(0x80008), DType::kBF16, 256, 512), out, {}, addr(0x90000), nullptr); },
               Status::kMisaligned, "16-byte aligned");
  expect_error([&] { sparse24_compress(MatrixView(addr(0x80000), DType::kBF16, 256, 512, 516), out, {}, addr(0x90000), nullptr); },
               Status::kMisaligned, "ld=516");
}

TEST(Sparse24Validation, EmptyBatchIsANoOp) {
  LinearCase c;
  c.x.rows = 0;
  c.y.rows = 0;
  c.sx.data = nullptr;  // not even read
  EXPECT_NO_THROW(c.run());
}

TEST(Sparse24Validation, CompressRules) {
  SparseFp8Weight out{256, 512, static_cast<uint8_t*>(addr(0x30000)), static_cast<uint8_t*>(addr(0x40000)),
                      static_cast<float*>(addr(0x50000)), false};
  const MatrixView w(addr(0x80000), DType::kBF16, 256, 512, 1024);  // a sub-view: ld > K is fine
  Sparse24CompressOptions opt;
  expect_error([&] { sparse24_compress(MatrixView(addr(0x80000), DType::kE4M3, 256, 512), out, opt, addr(0x90000), nullptr); },
               Status::kInvalidArgument, "dtype e4m3");
  SparseFp8Weight bad = out;
  bad.K = 256;
  expect_error([&] { sparse24_compress(w, bad, opt, addr(0x90000), nullptr); }, Status::kInvalidArgument,
               "out is [256, 256] but w is [256, 512]");
  opt.scale = Sparse24Scale::kPerTensor;
  expect_error([&] { sparse24_compress(w, out, opt, addr(0x90000), nullptr); }, Status::kInvalidArgument,
               "per_tensor_scale");
  opt = {};
  expect_error([&] { sparse24_compress(w, out, opt, nullptr, nullptr); }, Status::kInvalidArgument, "workspace");
  expect_error([&] { sparse24_compress(MatrixView(addr(0x80000), DType::kBF16, 256, 100, 128), out, opt, addr(0x90000), nullptr); },
               Status::kInvalidArgument, "K=100 must be a multiple of 32");
}

TEST(Sparse24Validation, WeightBytes) {
  const Sparse24WeightBytes b = sparse24_weight_bytes(8192, 28672);
  EXPECT_EQ(b.values, 8192ull * 28672 / 2);
  EXPECT_EQ(b.meta, 8192ull * 28672 / 8);
  EXPECT_EQ(b.scales, 8192ull * 4);
  EXPECT_EQ(sparse24_weight_bytes(72, 160, true).meta, 128ull * 256 / 8);
  EXPECT_EQ(sparse24_weight_bytes(72, 160, true).scales, 4u);
}

TEST(Sparse24Config, TableAndHeuristic) {
  ASSERT_GE(sparse24_num_configs(), 1);
  for (int i = 0; i < sparse24_num_configs(); ++i) {
    const Sparse24Config c = sparse24_config(i);
    EXPECT_GE(c.tile_k, 128) << "every config must keep tile_k >= 128 (docs/formats.md §4.3)";
    EXPECT_FALSE(c.name().empty());
  }
  expect_error([] { sparse24_config(-1); }, Status::kInvalidArgument, "config index -1");
  // Pure: same answer for the same input; valid index for every M; narrow token tiles at decode.
  for (int64_t m : {1, 2, 16, 31, 32, 33, 64, 65, 128, 129, 1000, 1024, 1025, 4096, 16384}) {
    const int c = sparse24_choose_config(m, 8192, 8192, 132);
    EXPECT_EQ(c, sparse24_choose_config(m, 8192, 8192, 132));
    ASSERT_GE(c, 0);
    ASSERT_LT(c, sparse24_num_configs());
  }
  EXPECT_LE(sparse24_config(sparse24_choose_config(1, 8192, 8192, 132)).tile_n, 32);
  EXPECT_GE(sparse24_config(sparse24_choose_config(8192, 8192, 8192, 132)).tile_n, 128);
  EXPECT_EQ(sparse24_config(0).name(), "64x32x256_c1x1_pingpong");
  // The default never picks a fast-accumulation config; the opt-in does from
  // kSparse24FastMinTokens tokens (below, the promoted plan measured as fast or faster).
  for (int64_t m : {1, 40, 100, 300, 767, 768, 5000}) {
    EXPECT_FALSE(sparse24_config(sparse24_choose_config(m, 4096, 4096, 132)).fast_accum) << m;
    const Sparse24Config f = sparse24_config(sparse24_choose_config(m, 4096, 4096, 132, true));
    EXPECT_EQ(f.fast_accum, m >= kernels::kSparse24FastMinTokens) << m;
  }
  EXPECT_TRUE(sparse24_config(sparse24_choose_config(1, 8192, 1024, 132, true)).skinny);
  EXPECT_NE(sparse24_config(4).name().find("_fastaccum"), std::string::npos);
  // The measured crossovers (docs/performance.md): ping-pong up to 128 tokens, then cooperative.
  EXPECT_FALSE(sparse24_config(sparse24_choose_config(128, 8192, 8192, 132)).cooperative);
  EXPECT_TRUE(sparse24_config(sparse24_choose_config(129, 8192, 8192, 132)).cooperative);
  EXPECT_EQ(sparse24_config(sparse24_choose_config(4096, 8192, 8192, 132, true)).tile_n, 256);
}

// Narrow layers (few weight rows) step down to a smaller tile until the grid has at least half as
// many tiles as SMs (src/sparse24_heuristic.h); the picks below are the measured winners on the H200
// (bench/results/h200/tuning/tune_sparse24.jsonl).
TEST(Sparse24Heuristic, NarrowLayersStepDownToFillTheGpu) {
  auto pick = [](int64_t m, int64_t n, int64_t k, bool fast = false) {
    const Sparse24Config c = sparse24_config(sparse24_choose_config(m, n, k, 132, fast));
    return std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n);
  };
  EXPECT_EQ(pick(256, 1280, 8192), "64x64");    // 128x128: 10 tiles; 64x64: 80
  EXPECT_EQ(pick(128, 1280, 8192), "64x32");
  EXPECT_EQ(pick(256, 4096, 4096), "64x128");
  EXPECT_EQ(pick(128, 4096, 14336), "64x64");
  EXPECT_EQ(pick(512, 4096, 4096, true), "128x128");  // not 128x256 (32 tiles)
  EXPECT_EQ(pick(256, 8192, 8192), "128x128");         // wide layers keep the token-count choice
  EXPECT_EQ(pick(4096, 57344, 8192, true), "128x256");
  EXPECT_EQ(pick(16384, 6144, 4096, true), "128x256");  // measured 1.14x the fast 128x128 tile there
  EXPECT_EQ(pick(16384, 1280, 8192, true), "128x256");
  // The property, over a grid: the chosen tile covers the problem in >= sms/2 tiles, or it is the
  // narrowest tile; fast accumulation is kept or not as asked.
  for (int sms : {66, 114, 132})
    for (int64_t m : {1, 33, 64, 100, 128, 200, 256, 512, 1024, 4096, 9000})
      for (int64_t n : {64, 1280, 4096, 8192, 57344})
        for (bool fast : {false, true}) {
          const Sparse24Config c = sparse24_config(sparse24_choose_config(m, n, 4096, sms, fast));
          if (c.skinny) {  // the decode kernel, where its own rule says (SkinnyDecodeWhereItWon)
            EXPECT_TRUE(kernels::sparse24_skinny_decode(m, n, 4096, sms)) << m << " " << n << " " << sms;
            continue;
          }
          const int64_t tiles = ((n + c.tile_m - 1) / c.tile_m) * ((m + c.tile_n - 1) / c.tile_n);
          EXPECT_TRUE(2 * tiles >= sms || (c.tile_m == 64 && c.tile_n <= 32)) << m << " " << n << " " << sms;
          // Fast accumulation from kSparse24FastMinTokens tokens on.
          EXPECT_EQ(c.fast_accum, fast && m >= kernels::kSparse24FastMinTokens) << m << " " << n;
        }
}

// CUTLASS's tile order: swizzled bands along the weight rows on weights of 2048 rows or more, from
// 4096 tokens (the 128x192 tile: kSparse24WideSwizzleMinTokens) on, CUTLASS's default otherwise
// (swizzling 256-1024 tokens measured up to 3x slower on 128x128, and the 1280-row shard 7-25 %).
TEST(Sparse24Heuristic, TileOrder) {
  using kernels::Sparse24Profile;
  const int wide = kernels::sparse24_detail::kWide.index;
  const int fast_wide = kernels::sparse24_detail::kFastWide.index;
  for (const Sparse24Profile profile : {Sparse24Profile::kH200, Sparse24Profile::kH100})
    for (const int config : {kernels::sparse24_row("128x128x256_c1x2_coop"),
                             kernels::sparse24_row("64x128x256_c1x1_pingpong"),
                             kernels::sparse24_row("128x256x128_c1x2_coop_fastaccum"), wide, fast_wide,
                             kernels::sparse24_row("128x192x256_c2x1_coop"),
                             kernels::sparse24_row("128x192x256_c2x1_coop_fastaccum")}) {
      // The 128x192 tiles (not their cluster rows) from kSparse24WideSwizzleMinTokens on the H100
      // profile only.
      const int64_t first = (config == wide || config == fast_wide) && profile == Sparse24Profile::kH100
                                ? kernels::kSparse24WideSwizzleMinTokens
                                : 4096;
      const auto order = [&](int64_t m, int64_t n) { return kernels::sparse24_tile_order(m, n, config, 132, profile); };
      for (int64_t n : {2048, 8192, 57344}) {
        for (int64_t m : {int64_t{1}, int64_t{256}, int64_t{1024}, first - 1}) {
          EXPECT_EQ(order(m, n).swizzle, 1) << m << "x" << n << " config " << config;
          EXPECT_EQ(order(m, n).raster, 0) << m << "x" << n << " config " << config;
        }
        for (int64_t m : {first, int64_t{16384}, int64_t{1} << 20}) {
          // Bands of 4 on the H200 profile; on the H100's the fitted band (Sparse24Heuristic.FittedBand).
          const int band = profile == Sparse24Profile::kH100 ? kernels::sparse24_fitted_band(config, m, n, 132) : 4;
          EXPECT_EQ(order(m, n).swizzle, band) << m << "x" << n << " config " << config;
          EXPECT_EQ(order(m, n).raster, 1) << m << "x" << n << " config " << config;
        }
      }
      for (int64_t n : {64, 1280, 2047}) EXPECT_EQ(order(16384, n).swizzle, 1) << n;
    }
  EXPECT_LT(kernels::kSparse24WideSwizzleMinTokens, 4096);
  // The default profile is the H200's.
  EXPECT_EQ(kernels::sparse24_tile_order(2048, 8192, wide, 132).swizzle, 1);
}

// sparse24_fitted_band: bands of 2 where bands of 4 pad the tiles (CUTLASS rounds both counts to a
// whole band times the cluster) into at least 5 % more waves, else 4. The H100's profile runs it,
// the H200's keeps bands of 4 (Sparse24CardTraits::fits_swizzle_band).
TEST(Sparse24Heuristic, FittedBand) {
  using kernels::Sparse24Profile;
  const int fast_c2 = kernels::sparse24_row("128x256x128_c2x1_coop_fastaccum");
  // 4445 tokens on 10240 rows: 18 columns of 256, 80 row tiles. Bands of 4 run 20 columns (1600
  // tiles, 13 waves of 132), bands of 2 run 18 (1440, 11 waves).
  EXPECT_EQ(kernels::sparse24_scheduled_tiles(fast_c2, 4445, 10240, 4), 80 * 20);
  EXPECT_EQ(kernels::sparse24_scheduled_tiles(fast_c2, 4445, 10240, 2), 80 * 18);
  EXPECT_EQ(kernels::sparse24_scheduled_tiles(fast_c2, 4445, 10240, 1), 80 * 18);
  EXPECT_EQ(kernels::sparse24_fitted_band(fast_c2, 4445, 10240, 132), 2);
  // 4890 tokens: 20 columns, whole bands of 4.
  EXPECT_EQ(kernels::sparse24_fitted_band(fast_c2, 4890, 10240, 132), 4);
  // Bands times the cluster: 2560 rows are 20 row tiles, run as 24 in bands of 4 clusters of 2, as
  // 20 in bands of 2. At 16 columns that is 384 or 320 tiles, 3 waves either way: bands of 4 stay.
  EXPECT_EQ(kernels::sparse24_scheduled_tiles(fast_c2, 4096, 2560, 4), 24 * 16);
  EXPECT_EQ(kernels::sparse24_scheduled_tiles(fast_c2, 4096, 2560, 2), 20 * 16);
  EXPECT_EQ(kernels::sparse24_fitted_band(fast_c2, 4096, 2560, 132), 4);
  // 11 columns of 192 on 80 row tiles: bands of 4 and of 2 both run 12 (8 waves); bands of 1 would
  // run 11 (7 waves), but they are not used.
  const int wide = kernels::sparse24_detail::kWide.index;
  EXPECT_EQ(kernels::sparse24_fitted_band(wide, 2048, 10240, 132), 4);
  // A saving under 5 %: 15641 tokens on 13312 rows, 51 waves against 49 (measured 1.08x slower).
  EXPECT_EQ(kernels::sparse24_fitted_band(fast_c2, 15641, 13312, 132), 4);
  int narrowed = 0;
  for (int64_t m = 2048; m <= 16384; m += 97)
    for (int64_t n : {2560, 5120, 10240, 14336, 57344})
      for (int config : {fast_c2, kernels::sparse24_row("128x128x256_c1x2_coop"), wide}) {
        const int band = kernels::sparse24_fitted_band(config, m, n, 132);
        const auto waves = [&](int b) { return (kernels::sparse24_scheduled_tiles(config, m, n, b) + 131) / 132; };
        ASSERT_TRUE(band == 4 || band == 2) << band;
        EXPECT_EQ(band == 2, 100 * waves(2) <= 95 * waves(4)) << m << "x" << n << " config " << config;
        narrowed += band == 2;
      }
  EXPECT_GT(narrowed, 0);
  EXPECT_TRUE(kernels::sparse24_card_traits(Sparse24Profile::kH100).fits_swizzle_band);
  EXPECT_FALSE(kernels::sparse24_card_traits(Sparse24Profile::kH200).fits_swizzle_band);
  EXPECT_EQ(kernels::sparse24_tile_order(4445, 10240, fast_c2, 132, Sparse24Profile::kH100).swizzle, 2);
  EXPECT_EQ(kernels::sparse24_tile_order(4445, 10240, fast_c2, 132, Sparse24Profile::kH200).swizzle, 4);
  // The stream-K rows keep bands of 4 (the fitted band was measured on data-parallel tiles).
  const int sk = kernels::sparse24_row("128x128x256_c1x1_coop_streamk");
  int sk_fitted = 0;
  for (int64_t m = 4096; m <= 16384; m += 61)
    if (kernels::sparse24_fitted_band(sk, m, 10240, 132) == 2) {
      ++sk_fitted;
      EXPECT_EQ(kernels::sparse24_tile_order(m, 10240, sk, 132, Sparse24Profile::kH100).swizzle, 4) << m;
    }
  EXPECT_GT(sk_fitted, 0);
}

// The card profile by peak DRAM bandwidth (GB/s): an H100 SXM (3352) follows the H100's
// measurements, an H200 (4915) and an unknown card (0: no device) the H200's.
TEST(Sparse24Heuristic, ProfileByDramBandwidth) {
  using kernels::Sparse24Profile;
  EXPECT_EQ(kernels::sparse24_profile(3352.3), Sparse24Profile::kH100);
  EXPECT_EQ(kernels::sparse24_profile(2039.0), Sparse24Profile::kH100);  // H100 PCIe
  EXPECT_EQ(kernels::sparse24_profile(4915.2), Sparse24Profile::kH200);
  EXPECT_EQ(kernels::sparse24_profile(kernels::kSparse24H200MinDramGBps), Sparse24Profile::kH200);
  EXPECT_EQ(kernels::sparse24_profile(0.0), Sparse24Profile::kH200);
}

// The stream-K configurations (10, 11) and the rule that picks them when the caller has a workspace
// (src/sparse24_heuristic.h; measured: bench/results/h200/tuning/tune_sparse24.jsonl,
// tune_sparse24_narrow.jsonl).
TEST(Sparse24Heuristic, StreamKWhereItWon) {
  for (int i = 0; i < sparse24_num_configs(); ++i) {
    const Sparse24Config c = sparse24_config(i);
    EXPECT_EQ(c.stream_k, i == 10 || i == 11) << i;
    EXPECT_EQ(c.name().find("_streamk") != std::string::npos, c.stream_k) << c.name();
    if (c.stream_k) {
      EXPECT_TRUE(c.cooperative) << "CUTLASS's stream-K scheduler runs on the cooperative kernel only";
      EXPECT_FALSE(c.fast_accum);
    }
  }
  EXPECT_EQ(sparse24_config(10).name(), "128x32x256_c1x1_coop_streamk");
  EXPECT_EQ(sparse24_config(11).name(), "128x128x256_c1x1_coop_streamk");
  // The 32-token stream-K tile at every m <= 32 (its last column loads only its rows).
  constexpr int sk32 = 10;
  auto pick = [](int64_t m, int64_t n, int64_t k, bool fast = false) { return sparse24_choose_config(m, n, k, 132, fast, true); };
  auto plain = [](int64_t m, int64_t n, int64_t k, bool fast = false) { return sparse24_choose_config(m, n, k, 132, fast, false); };
  for (bool fast : {false, true}) {
    for (int64_t m : {1, 8, 16, 32}) {
      EXPECT_EQ(pick(m, 10240, 8192, fast), sk32) << m;  // 160 64-row tiles: a 28-tile last wave
      EXPECT_EQ(pick(m, 28672, 4096, fast), sk32) << m;  // 448: 52
      for (auto [n, k] : {std::pair<int64_t, int64_t>{1280, 8192}, {4096, 4096}, {4096, 14336}, {6144, 4096},
                          {7168, 8192}, {8192, 1024}, {8192, 3584}, {8192, 8192}, {8192, 28672}})
        EXPECT_EQ(pick(m, n, k, fast), plain(m, n, k, fast)) << m << "x" << n << ": one wave or less";
    }
    // 896 tiles whose last wave is 79 % full: the 64x32 tile, as from 9 tokens (the 32-token
    // stream-K tile took 1.02-1.06x its time at 1-8 tokens, log §44).
    EXPECT_EQ(pick(1, 57344, 8192, fast), plain(1, 57344, 8192, fast));
    EXPECT_EQ(pick(8, 57344, 8192, fast), plain(8, 57344, 8192, fast));
    EXPECT_EQ(pick(8, 57344, 8192, fast), 0);
    EXPECT_EQ(pick(16, 57344, 8192, fast), plain(16, 57344, 8192, fast));
    EXPECT_EQ(pick(64, 10240, 8192, fast), plain(64, 10240, 8192, fast));
    for (int64_t n : {10240, 28672, 57344}) EXPECT_EQ(pick(128, n, 8192, fast), 11) << n;
    EXPECT_EQ(pick(128, 8192, 8192, fast), plain(128, 8192, 8192, fast));
    EXPECT_EQ(pick(256, 10240, 8192, fast), 11);
    EXPECT_EQ(pick(256, 28672, 4096, fast), plain(256, 28672, 4096, fast));
    // The 1280-row shard from 2048 tokens: stream-K with fast accumulation, the 128x192 tile without
    // (sparse24_narrow_wide_tile, with or without a workspace).
    EXPECT_EQ(pick(2048, 1280, 8192, fast), fast ? 11 : 9);
    EXPECT_EQ(pick(4096, 1280, 8192, fast), fast ? 11 : 9);
    EXPECT_EQ(pick(2048, 4096, 4096, fast), plain(2048, 4096, 4096, fast));
    for (int64_t m : {512, 1024, 8192, 16384})
      for (int64_t n : {1280, 4096, 8192, 10240, 28672, 57344})
        EXPECT_EQ(pick(m, n, 4096, fast), plain(m, n, 4096, fast)) << m << "x" << n;
  }
  // Without a workspace the heuristic never picks a stream-K configuration.
  for (int sms : {66, 132})
    for (int64_t m : {1, 8, 32, 100, 128, 200, 2048, 4096})
      for (int64_t n : {1280, 10240, 28672, 57344})
        for (bool fast : {false, true}) EXPECT_FALSE(sparse24_config(sparse24_choose_config(m, n, 8192, sms, fast)).stream_k);
}

// The 128x192 tile (configuration 9) from 8192 tokens where its token tiles waste at most 1.5 %
// of M; fast accumulation keeps its own tiles (measured: bench/results/h200/tuning/tune_sparse24_192.txt).
TEST(Sparse24Heuristic, WideTokenTileFrom8192) {
  EXPECT_EQ(sparse24_config(9).name(), "128x192x256_c1x1_coop");
  EXPECT_FALSE(sparse24_config(9).fast_accum);
  EXPECT_FALSE(sparse24_config(9).stream_k);
  for (int64_t n : {1280, 4096, 8192, 28672, 57344})
    for (bool sk : {false, true}) {
      for (int64_t m : {8192, 12288, 16384, 65536}) {
        EXPECT_EQ(sparse24_choose_config(m, n, 8192, 132, false, sk), 9) << m << "x" << n;
        EXPECT_NE(sparse24_choose_config(m, n, 8192, 132, true, sk), 9) << m << "x" << n << " fast";
      }
      // Below 8192 tokens it lost (0.84-0.92x at 4096); 8257 tokens waste 191 of 8448 columns (2.3 %).
      // Narrow weights (1280 rows) take it from 2048 tokens (NarrowWeightsWideTileFrom2048).
      for (int64_t m : {256, 2048, 4096, 6144, 8191, 8257})
        EXPECT_EQ(sparse24_choose_config(m, n, 8192, 132, false, sk) == 9, n < 2048 && m >= 2048) << m << "x" << n;
    }
  // Not where it would leave fewer tiles than half the SMs (a 64-row weight: 47 tiles of 192 tokens).
  EXPECT_NE(sparse24_choose_config(9000, 64, 4096, 132), 9);
  EXPECT_EQ(sparse24_num_configs(), 25);
  EXPECT_TRUE(kernels::sparse24_wide_token_tile(8192));
  EXPECT_TRUE(kernels::sparse24_wide_token_tile(8200));   // 43 tiles: 56 of 8256 columns wasted (0.7 %)
  EXPECT_TRUE(kernels::sparse24_wide_token_tile(8256));   // 43 whole tiles
  EXPECT_FALSE(kernels::sparse24_wide_token_tile(8257));  // 44 tiles: 2.3 % wasted
}

// The 128x192 tile on weights of fewer than 2048 rows from 2048 tokens, with or without a
// workspace, promoted accumulation only (src/sparse24_heuristic.h; measured on the 1280-row shard:
// bench/results/h200/tuning/tune_sparse24_interleaved.jsonl).
TEST(Sparse24Heuristic, NarrowWeightsWideTileFrom2048) {
  for (bool sk : {false, true}) {
    for (int64_t m : {2048, 3000, 4096, 8192, 8257, 16384}) {
      for (int64_t n : {1280, 1536, 2016}) EXPECT_EQ(sparse24_choose_config(m, n, 8192, 132, false, sk), 9) << m << "x" << n;
      EXPECT_NE(sparse24_choose_config(m, 1280, 8192, 132, true, sk), 9) << m << " fast";
      for (int64_t n : {2048, 4096, 6144}) if (m < 8192) EXPECT_NE(sparse24_choose_config(m, n, 8192, 132, false, sk), 9) << m << "x" << n;
    }
    for (int64_t m : {1, 64, 512, 1024, 2047}) EXPECT_NE(sparse24_choose_config(m, 1280, 8192, 132, false, sk), 9) << m;
  }
  EXPECT_TRUE(kernels::sparse24_narrow_wide_tile(2048, 1280, 132));    // 10 x 11 tiles
  EXPECT_FALSE(kernels::sparse24_narrow_wide_tile(2048, 256, 132));    // 2 x 11 tiles: fewer than 66
  EXPECT_FALSE(kernels::sparse24_narrow_wide_tile(2048, 2048, 132));
}

// The split-K decode kernel (configuration 12, not CUTLASS) at M <= 8 on small weights whose 64-row
// tiles leave SMs idle (src/sparse24_heuristic.h; measured: docs/performance.md), in both
// accumulation modes, with or without a workspace; and how it covers a problem.
TEST(Sparse24Heuristic, SkinnyDecodeWhereItWon) {
  const Sparse24Config c = sparse24_config(kernels::kSparse24SkinnyConfig);
  EXPECT_EQ(kernels::kSparse24SkinnyConfig, 12);
  EXPECT_TRUE(c.skinny);
  EXPECT_EQ(c.name(), "skinny_m32_splitk");
  EXPECT_EQ(c.tile_n, kernels::kSparse24SkinnyMaxM);
  EXPECT_FALSE(c.stream_k);
  EXPECT_FALSE(c.fast_accum);
  for (int i = 0; i < kernels::kSparse24SkinnyConfig; ++i) EXPECT_FALSE(sparse24_config(i).skinny) << i;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1280, 8192}, {8192, 1024}, {72, 160}, {1288, 96}, {8384, 1024}})
    for (int64_t m : {1, 2, 5, 8})
      for (bool fast : {false, true})
        for (bool sk : {false, true}) EXPECT_EQ(sparse24_choose_config(m, n, k, 132, fast, sk), 12) << m << "x" << n << "x" << k;
  for (int64_t m : {9, 16, 32, 64}) EXPECT_NE(sparse24_choose_config(m, 1280, 8192, 132), 12) << m;
  // 2^24 weight elements: the 64x8 tile measured 9 % faster than the decode kernel
  // (tune_sparse24_narrow.jsonl); the 64x32 tile that replaced it on `l3-8b.o` (4096x4096) kept
  // 0.99-1.02x its speedup over cuBLASLt at 1-8 tokens (H100 grids of 077cc00 and 1aeddae).
  for (int64_t m : {1, 4, 8})
    EXPECT_EQ(sparse24_choose_config(m, 4096, 4096, 132), sparse24_config_index("64x32x256_c1x1_pingpong")) << m;
  EXPECT_NE(sparse24_choose_config(1, 6144, 4096, 132), 12);        // 25.2M weight elements: lost
  EXPECT_NE(sparse24_choose_config(1, 4096, 14336, 132), 12);       // 58.7M: lost
  EXPECT_NE(sparse24_choose_config(1, 8448, 1024, 132), 12);        // 132 tiles of 64 rows: no idle SM
  EXPECT_EQ(sparse24_choose_config(1, 10240, 1024, 132, false, true),
            sparse24_config_index("128x32x256_c1x1_coop_streamk"));  // stream-K keeps its layers
  EXPECT_NE(sparse24_choose_config(1, 8192, 1024, 66), 12);         // 128 tiles on 66 SMs
  // 16 rows per warp; a cluster only to give every SM a CTA, while each warp keeps 4 panels.
  kernels::Sparse24SkinnyShape s = kernels::sparse24_skinny_shape(1, 1280, 8192, 132);
  EXPECT_EQ(s.T, 1);
  EXPECT_EQ(s.MT, 1);
  EXPECT_EQ(s.KW, 4);
  EXPECT_EQ(s.row_ctas, 80);
  EXPECT_EQ(s.C, 2);  // 160 CTAs
  s = kernels::sparse24_skinny_shape(8, 4096, 4096, 132);
  EXPECT_EQ(s.row_ctas, 256);
  EXPECT_EQ(s.C, 1);
  s = kernels::sparse24_skinny_shape(32, 72, 160, 132);  // 2 panels: 2 warps, no cluster
  EXPECT_EQ(s.T, 4);
  EXPECT_EQ(s.KW, 2);
  EXPECT_EQ(s.row_ctas, 5);
  EXPECT_EQ(s.C, 1);
  s = kernels::sparse24_skinny_shape(16, 200, 4128, 132);  // 33 panels: a cluster of 2 (4 of 4 would starve warps)
  EXPECT_EQ(s.T, 2);
  EXPECT_EQ(s.row_ctas, 13);
  EXPECT_EQ(s.C, 2);
}

// The workspace query: host arithmetic (no GPU here), > 0 exactly where the choice is stream-K.
TEST(Sparse24Heuristic, SplitK) {
  using kernels::sparse24_split_k;
  // The 1280-row shard: 20 tiles of 64x32 (4 slices), 40 at M = 64 (2), 80 at M = 128 (none).
  EXPECT_EQ(sparse24_split_k(16, 1280, 8192, 64, 32, 132), 4);
  EXPECT_EQ(sparse24_split_k(64, 1280, 8192, 64, 32, 132), 2);
  EXPECT_EQ(sparse24_split_k(128, 1280, 8192, 64, 32, 132), 1);
  EXPECT_EQ(sparse24_split_k(16, 4096, 4096, 64, 32, 132), 1) << "64 tiles: measured slower split";
  EXPECT_EQ(sparse24_split_k(16, 1280, 8320, 64, 32, 132), 1) << "K off the 256-wide tiles";
  EXPECT_EQ(sparse24_split_k(16, 1280, 2048, 64, 32, 132), 1) << "slices under 2048 of K";
  EXPECT_EQ(sparse24_split_k(16, 1280, 3584, 64, 32, 132), 1) << "14 K tiles: 2 slices of 1792";
  EXPECT_EQ(sparse24_split_k(16, 1280, 4096, 64, 32, 132), 2);
  // Over a grid: a split is 2 or 4 whole-tile slices of >= 2048, within one wave, on <= a third of the SMs.
  for (int sms : {66, 114, 132})
    for (int64_t M : {1, 8, 16, 33, 64, 128, 300})
      for (int64_t N : {64, 256, 1280, 1288, 2048, 4096, 8192})
        for (int64_t K : {256, 2048, 4096, 7168, 8192, 14336, 28672})
          for (auto [tm, tn] : {std::pair<int, int>{64, 32}, {64, 64}, {64, 128}, {128, 128}}) {
            const int s = sparse24_split_k(M, N, K, tm, tn, sms);
            const int64_t tiles = ((N + tm - 1) / tm) * ((M + tn - 1) / tn);
            ASSERT_TRUE(s == 1 || s == 2 || s == 4);
            if (s > 1) {
              EXPECT_EQ(K % (256 * s), 0);
              EXPECT_GE(K / s, 2048);
              EXPECT_LE(tiles * s, sms);
              EXPECT_LE(3 * tiles, sms);
            }
          }
  // The plan: the split promoted 64x32 tile in place of the decode kernel on the shard, either mode.
  Sparse24Options o;
  const int pp32 = sparse24_config_index("64x32x256_c1x1_pingpong");
  for (int64_t M : {1, 8, 16}) {
    const LinearPlan p = sparse24_plan(M, 1280, 8192, o, 132);
    EXPECT_EQ(p.config, pp32);
    EXPECT_EQ(p.split_k, 4);
    EXPECT_EQ(sparse24_linear_workspace_bytes(M, 1280, 8192, o, 132), 4u * M * 1280 * 4);
  }
  o.fast_accum = true;
  EXPECT_EQ(sparse24_plan(8, 1280, 8192, o, 132).config, pp32);
  EXPECT_EQ(sparse24_plan(8, 1280, 8192, o, 132).split_k, 4);
  o.split_k = 1;  // 17..32 tokens: the promoted 64x32 tile, as without fast_accum
  EXPECT_EQ(sparse24_plan(24, 1280, 8192, o, 132).config, sparse24_config_index("64x32x256_c1x1_pingpong"));
  o.split_k = 0;
  o.fast_accum = false;
  EXPECT_EQ(sparse24_plan(1, 8192, 1024, o, 132).config, 12) << "the decode kernel where the rule does not split";
  EXPECT_EQ(sparse24_plan(1, 8192, 1024, o, 132).split_k, 1);
  o.config = 12;  // a forced decode kernel stays itself
  EXPECT_EQ(sparse24_plan(1, 1280, 8192, o, 132).config, 12);
  EXPECT_EQ(sparse24_plan(1, 1280, 8192, o, 132).split_k, 1);
  o.config = 1;  // a forced data-parallel configuration gets the rule's split
  EXPECT_EQ(sparse24_plan(16, 1280, 8192, o, 132).split_k, 4);
}

TEST(Sparse24Validation, WorkspaceBytesAndStreamKNeedsAWorkspace) {
  Sparse24Options o;
  EXPECT_GT(sparse24_linear_workspace_bytes(1, 10240, 8192, o, 132), 0u);
  EXPECT_GT(sparse24_linear_workspace_bytes(128, 57344, 8192, o, 132), 0u);
  EXPECT_EQ(sparse24_linear_workspace_bytes(1, 4096, 4096, o, 132), 0u);
  EXPECT_EQ(sparse24_linear_workspace_bytes(0, 10240, 8192, o, 132), 0u);
  o.config = 10;
  EXPECT_GT(sparse24_linear_workspace_bytes(16, 256, 8192, o, 132), 0u) << "two tiles: K split over the SMs";
  o.config = 0;
  EXPECT_EQ(sparse24_linear_workspace_bytes(1, 10240, 8192, o, 132), 0u);
  o.config = 12;  // the decode kernel needs none
  EXPECT_EQ(sparse24_linear_workspace_bytes(1, 256, 512, o, 132), 0u);
  o.config = sparse24_num_configs();
  expect_error([&] { sparse24_linear_workspace_bytes(1, 256, 512, o, 132); }, Status::kInvalidArgument,
               "config " + std::to_string(sparse24_num_configs()));
  o.config = -1;
  expect_error([&] { sparse24_linear_workspace_bytes(1, 250, 512, o, 132); }, Status::kInvalidArgument, "N=250");
  expect_error([&] { sparse24_linear_workspace_bytes(-1, 256, 512, o, 132); }, Status::kInvalidArgument, "M=-1");
  expect_error([&] { sparse24_linear_workspace_bytes(1, 256, 512, o, -4); }, Status::kInvalidArgument, "sm_count=-4");

  LinearCase c;
  c.opt.config = 11;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "is stream-K and needs a workspace");
  c.opt.workspace = addr(0x70008);
  c.opt.workspace_bytes = 1 << 20;
  expect_error([&] { c.run(); }, Status::kMisaligned, "options.workspace");
}

TEST(Sparse24Validation, SplitK) {
  LinearCase c;  // M = 16, N = 256, K = 512
  c.opt.split_k = -1;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=-1 must be 0 (chosen by the library), 1 (no split) or 2..16", "options.split_k");
  c.opt.split_k = 17;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "split_k=17 must be", "options.split_k");
  c.opt.split_k = 3;  // 512 = 2 K tiles of 256
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=3 needs K to be a multiple of 256 x 3 = 768; got K=512", "options.split_k");
  c.opt.split_k = 2;
  c.opt.config = 12;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=2 applies to the data-parallel configurations, not config 12 (skinny_m32_splitk)",
               "options.split_k");
  c.opt.config = 10;  // stream-K: its own workspace rule first, then the split's
  c.opt.workspace = addr(0x600000);
  c.opt.workspace_bytes = 1 << 20;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=2 applies to the data-parallel configurations, not config 10 (128x32x256_c1x1_coop_streamk)",
               "options.split_k");
  c.opt.config = 0;
  c.opt.workspace = nullptr;
  c.opt.workspace_bytes = 0;
  expect_error([&] { c.run(); }, Status::kInvalidArgument,
               "split_k=2 needs a workspace of 32768 bytes (2 x M=16 x N=256 x 4); got none", "options.workspace");
  c.opt.workspace = addr(0x600000);
  c.opt.workspace_bytes = 32767;
  expect_error([&] { c.run(); }, Status::kInvalidArgument, "got workspace_bytes=32767", "options.workspace");
  c.opt.workspace_bytes = 32768;
  c.opt.workspace = addr(0x600008);
  expect_error([&] { c.run(); }, Status::kMisaligned, "must be 16-byte aligned", "options.workspace");
  c.opt.workspace = addr(0x600000);
  if (!device_info().supports_kernels()) expect_error([&] { c.run(); }, Status::kUnsupported, "sm_90a");
  // The workspace size and the plan apply the same rules.
  Sparse24Options o;
  o.config = 0;
  o.split_k = 2;
  EXPECT_EQ(sparse24_linear_workspace_bytes(16, 256, 512, o, 132), 2u * 16 * 256 * 4);
  const LinearPlan p = sparse24_plan(16, 256, 512, o, 132);
  EXPECT_EQ(p.config, 0);
  EXPECT_EQ(p.split_k, 2);
  o.split_k = 3;
  expect_error([&] { sparse24_linear_workspace_bytes(16, 256, 512, o, 132); }, Status::kInvalidArgument,
               "split_k=3 needs K to be a multiple of 256 x 3", "options.split_k");
  expect_error([&] { sparse24_plan(16, 256, 512, o, 132); }, Status::kInvalidArgument,
               "sparse24_plan: split_k=3 needs K", "options.split_k");
  o.split_k = 17;
  expect_error([&] { sparse24_plan(16, 256, 512, o, 132); }, Status::kInvalidArgument, "split_k=17 must be",
               "options.split_k");
  o = Sparse24Options{};
  expect_error([&] { sparse24_plan(-1, 256, 512, o, 132); }, Status::kInvalidArgument, "sparse24_plan: M=-1", "M");
  expect_error([&] { sparse24_plan(1, 250, 512, o, 132); }, Status::kInvalidArgument, "N=250", "N");
  // A forced split with the heuristic's choice: among the data-parallel configurations only (at
  // M = 1 on this shape it would otherwise be the decode kernel).
  o.split_k = 2;
  EXPECT_FALSE(sparse24_config(sparse24_plan(1, 256, 512, o, 132).config).skinny);
  EXPECT_FALSE(sparse24_config(sparse24_plan(1, 10240, 8192, o, 132).config).stream_k);
  EXPECT_EQ(sparse24_plan(1, 10240, 8192, o, 132).split_k, 2);
  // split_k = 1: never split; the default splits only where the rule does.
  o.split_k = 1;
  EXPECT_EQ(sparse24_plan(16, 1280, 8192, o, 132).split_k, 1);
  EXPECT_EQ(sparse24_linear_workspace_bytes(16, 1280, 8192, o, 132), 0u);
}

TEST(QuantValidation, Rules) {
  const MatrixView x(addr(0x10000), DType::kBF16, 4, 256);
  const MatrixView q(addr(0x20000), DType::kE4M3, 4, 256);
  float* s = static_cast<float*>(addr(0x30000));
  expect_error([&] { quantize_fp8_per_token(MatrixView(addr(0x10000), DType::kF32, 4, 256), q, s, false, nullptr); },
               Status::kInvalidArgument, "dtype fp32");
  expect_error([&] { quantize_fp8_per_token(MatrixView(addr(0x10000), DType::kBF16, 4, 252, 256), MatrixView(addr(0x20000), DType::kE4M3, 4, 252, 256), s, false, nullptr); },
               Status::kInvalidArgument, "K=252 must be a multiple of 8");
  expect_error([&] { quantize_fp8_per_token(x, MatrixView(addr(0x20000), DType::kE4M3, 3, 256), s, false, nullptr); },
               Status::kInvalidArgument, "has 3 rows, expected 4");
  expect_error([&] { quantize_fp8_per_token(x, q, nullptr, false, nullptr); }, Status::kInvalidArgument, "scales");
  expect_error([&] { quantize_fp8_per_token_group(x, q, s, 3, false, nullptr); }, Status::kInvalidArgument,
               "ld_scales=3 must be >= M=4");
  expect_error([&] { quantize_fp8_weight(x, q, s, ScaleGranularity::kPerRow, nullptr); }, Status::kInvalidArgument,
               "per_row");
  expect_error([&] { quantize_fp8_per_token(MatrixView(addr(0x10002), DType::kBF16, 4, 256), q, s, false, nullptr); },
               Status::kMisaligned, "16-byte aligned");
}

}  // namespace
