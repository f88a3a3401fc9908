// The CPU reference on small hand-computed cases: the oracle must itself be right.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "qsgemm/formats.h"
#include "qsgemm/reference.h"

namespace {

using namespace qsgemm;

std::vector<uint8_t> e4m3(const std::vector<float>& v) {
  std::vector<uint8_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) q[i] = fp8_e4m3_encode(v[i]);
  return q;
}

TEST(Reference, QuantizePerRowScalesAndCodes) {
  const std::vector<float> x = {1, -2, 448, 0, /* row 1 */ 0, 0, 0, 0, /* row 2 */ 0.5f, -896, 3, 1};
  std::vector<uint8_t> q(12);
  std::vector<float> s(3);
  ref::quantize_fp8_per_row(x.data(), 3, 4, 4, q.data(), 4, s.data());
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 1.0f);  // all-zero row
  EXPECT_EQ(s[2], 2.0f);
  EXPECT_EQ(q[2], 0x7E);  // 448
  EXPECT_EQ(q[1], fp8_e4m3_encode(-2.0f));
  EXPECT_EQ(q[9], 0xFE);  // -896 / 2 = -448
  EXPECT_EQ(q[8], fp8_e4m3_encode(0.25f));
}

// A row whose amax is tiny but non-zero (1e-38, below 448 * FLT_MIN) quantizes to finite codes
// that dequantize close to the input: the scale is clamped to FLT_MIN, not a subnormal whose
// reciprocal overflows (which made 0 * Inf = NaN codes for the zeros of the row).
TEST(Reference, TinyAmaxRowQuantizesToFiniteCodes) {
  const std::vector<float> x = {1e-38f, -5e-39f, 0.0f, 2.5e-39f, 7e-39f, -1e-38f, 3e-40f, 0.0f};
  for (bool pow2 : {false, true}) {
    std::vector<uint8_t> q(8);
    float s = 0.0f;
    ref::quantize_fp8_per_row(x.data(), 1, 8, 8, q.data(), 8, &s, pow2);
    EXPECT_EQ(s, FLT_MIN);
    std::vector<float> s_groups(1);
    std::vector<uint8_t> q_groups(8);
    ref::quantize_fp8_1x128(x.data(), 1, 8, 8, q_groups.data(), 8, s_groups.data(), 1, pow2);
    EXPECT_EQ(s_groups[0], FLT_MIN);
    EXPECT_EQ(q_groups, q);
    for (int i = 0; i < 8; ++i) {
      const float d = fp8_e4m3_decode(q[i]);
      ASSERT_TRUE(std::isfinite(d)) << i;
      // e4m3 keeps 3 fraction bits (relative error <= 1/16) down to 2^-6 * s, then steps of 2^-9 * s.
      EXPECT_NEAR(d * s, x[i], std::fabs(x[i]) / 16 + std::ldexp(s, -10)) << i;
    }
    EXPECT_EQ(q[2], 0x00);
    EXPECT_EQ(q[7], 0x00);
  }
  // Blocks, row groups and the compressor take the same scale.
  std::vector<uint8_t> q(8);
  float s = 0.0f;
  ref::quantize_fp8_128x128(x.data(), 1, 8, 8, q.data(), 8, &s);
  EXPECT_EQ(s, FLT_MIN);
  ref::quantize_fp8_row_groups(x.data(), 1, 8, 8, q.data(), 8, &s);
  EXPECT_EQ(s, FLT_MIN);
  for (uint8_t c : q) EXPECT_TRUE(std::isfinite(fp8_e4m3_decode(c)));
}

// The static quantizer with an unusable scale writes zeros (as the GPU kernel does), never NaN.
TEST(Reference, StaticWithUnusableScaleWritesZeros) {
  const std::vector<float> x = {1, -2, 0, 448};
  for (float bad : {0.0f, -1.0f, 1e-40f, NAN, INFINITY}) {
    std::vector<uint8_t> q(4, 0x55);
    ref::quantize_fp8_static(x.data(), 1, 4, 4, q.data(), 4, bad);
    EXPECT_EQ(q, std::vector<uint8_t>(4, 0)) << bad;
  }
  std::vector<uint8_t> q(4);
  ref::quantize_fp8_static(x.data(), 1, 4, 4, q.data(), 4, 2.0f);
  EXPECT_EQ(q[3], fp8_e4m3_encode(224.0f));
}

TEST(Reference, Quantize1x128IsMMajorWithPartialGroup) {
  const int64_t M = 3, K = 200, ld_s = 5;  // groups: [0,128) and [128,200)
  std::vector<float> x(M * K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) x[m * K + k] = (k < 128 ? 1.0f : 2.0f) * (m + 1) * (k % 7 == 0 ? 4.48f : 1.0f);
  std::vector<uint8_t> q(M * K);
  std::vector<float> s(2 * ld_s, -1.0f);
  ref::quantize_fp8_1x128(x.data(), M, K, K, q.data(), K, s.data(), ld_s);
  for (int64_t m = 0; m < M; ++m) {
    EXPECT_EQ(s[0 * ld_s + m], fp8_scale_from_amax(4.48f * (m + 1)));
    EXPECT_EQ(s[1 * ld_s + m], fp8_scale_from_amax(8.96f * (m + 1)));
  }
  EXPECT_EQ(s[3], -1.0f);  // ld padding untouched
  EXPECT_EQ(q[0], 0x7E);   // the amax element maps to 448
}

TEST(Reference, Quantize128x128BlocksRowMajor) {
  const int64_t N = 130, K = 260;  // 2 x 3 blocks, partial in both
  std::vector<float> w(N * K, 1.0f);
  w[129 * K + 259] = 9.0f;  // in block (1, 2)
  std::vector<uint8_t> q(N * K);
  std::vector<float> s(6);
  ref::quantize_fp8_128x128(w.data(), N, K, K, q.data(), K, s.data());
  for (int b = 0; b < 5; ++b) EXPECT_EQ(s[b], 1.0f / 448.0f) << b;
  EXPECT_EQ(s[5], 9.0f / 448.0f);
}

TEST(Reference, RowwiseGemmHandComputed) {
  // x = [[1, 2], [3, -1]], w = [[1, 1], [2, 0.5], [-1, 4]]: x·wᵀ = [[3, 3, 7], [2, 5.5, -7]].
  const auto x = e4m3({1, 2, 3, -1});
  const auto w = e4m3({1, 1, 2, 0.5f, -1, 4});
  const float sx[2] = {2.0f, 0.5f}, sw[3] = {1.0f, 2.0f, 4.0f}, bias[3] = {0.0f, 1.0f, -1.0f};
  std::vector<double> y(6);
  ref::gemm_fp8_rowwise(x.data(), 2, w.data(), 2, 2, 3, 2, sx, false, sw, false, bias, y.data());
  const double expect[6] = {2 * 3 * 1 + 0, 2 * 3 * 2 + 1, 2 * 7 * 4 - 1, 0.5 * 2 * 1, 0.5 * 5.5 * 2 + 1, 0.5 * -7 * 4 - 1};
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(y[i], expect[i]) << i;
}

// The references decode e4m3 through a table of their own: every code, as a 1x1 product with the
// code 1.0 (x side and w side), equals fp8_e4m3_decode (NaN for the two NaN codes).
TEST(Reference, EveryE4m3CodeDecodesAsTheFormat) {
  const uint8_t one = fp8_e4m3_encode(1.0f);
  const float unit = 1.0f;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    double y = 0.0;
    ref::gemm_fp8_rowwise(&code, 1, &one, 1, 1, 1, 1, &unit, true, &unit, true, nullptr, &y);
    const double want = fp8_e4m3_decode(code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y)) << c;
    } else {
      EXPECT_EQ(y, want) << c;
    }
    ref::gemm_fp8_blockwise(&one, 1, &code, 1, 1, 1, 1, ScaleGranularity::kGroup1x128, &unit, 1,
                            ScaleGranularity::kGroup1x128, &unit, nullptr, &y);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(y)) << c;
    else EXPECT_EQ(y, want) << c;
  }
}

TEST(Reference, BlockwiseGemmAppliesOneScalePairPerGroup) {
  // K = 256: two groups. x all ones, w all ones: group sums are 128 each.
  const int64_t M = 2, N = 2, K = 256;
  const std::vector<uint8_t> x(M * K, fp8_e4m3_encode(1.0f)), w(N * K, fp8_e4m3_encode(1.0f));
  const float sx[2 * 2] = {1, 2, /* g1 */ 3, 4};  // M-major: [g][m]
  const float sw_blk[1 * 2] = {10, 100};          // one 128-row block, two K blocks
  std::vector<double> y(M * N);
  ref::gemm_fp8_blockwise(x.data(), K, w.data(), K, M, N, K, ScaleGranularity::kGroup1x128, sx, 2,
                          ScaleGranularity::kBlock128x128, sw_blk, nullptr, y.data());
  EXPECT_DOUBLE_EQ(y[0], 128 * (1 * 10 + 3 * 100));
  EXPECT_DOUBLE_EQ(y[1], 128 * (1 * 10 + 3 * 100));
  EXPECT_DOUBLE_EQ(y[2], 128 * (2 * 10 + 4 * 100));
  // Per-channel groups on the weight: [N][2].
  const float sw_grp[2 * 2] = {1, 2, 3, 4};
  ref::gemm_fp8_blockwise(x.data(), K, w.data(), K, M, N, K, ScaleGranularity::kGroup1x128, sx, 2,
                          ScaleGranularity::kGroup1x128, sw_grp, nullptr, y.data());
  EXPECT_DOUBLE_EQ(y[1], 128 * (1 * 3 + 3 * 4));
  // 128x128 activation blocks: [ceil(M/128)][2].
  const float sx_blk[2] = {5, 6};
  ref::gemm_fp8_blockwise(x.data(), K, w.data(), K, M, N, K, ScaleGranularity::kBlock128x128, sx_blk, 0,
                          ScaleGranularity::kBlock128x128, sw_blk, nullptr, y.data());
  EXPECT_DOUBLE_EQ(y[3], 128 * (5 * 10 + 6 * 100));
}

TEST(Reference, Sparse24CompressDecompressAndGemm) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  const int64_t N = 72, K = 160, M = 5;  // N, K off the 64 / 128 metadata atoms
  std::vector<float> w(N * K);
  for (auto& v : w) v = d(rng);
  ref::Sparse24Host c;
  ASSERT_TRUE(ref::sparse24_compress(w.data(), N, K, K, ref::PruneMode::kMagnitude, ref::WeightScale::kPerChannel,
                                     nullptr, false, &c));
  const std::vector<float> dense = ref::sparse24_decompress(c);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < K / 4; ++g) {
      const float* src = &w[n * K + g * 4];
      const uint8_t s = sparse24_select(src);
      for (int i = 0; i < 4; ++i) {
        const float got = dense[n * K + g * 4 + i];
        if (i == (s & 3) || i == (s >> 2))
          EXPECT_EQ(got, fp8_e4m3_decode(fp8_quantize(src[i], c.scales[n])) * c.scales[n]);
        else
          EXPECT_EQ(got, 0.0f);
      }
    }
  // The sparse GEMM equals the dense row-wise GEMM on the pruned, quantized weight.
  std::vector<uint8_t> x(M * K);
  for (auto& v : x) v = fp8_e4m3_encode(d(rng));
  std::vector<float> sx(M);
  for (auto& v : sx) v = 0.5f + std::fabs(d(rng));
  std::vector<double> ys(M * N), yd(M * N);
  ref::gemm_sparse24_fp8(x.data(), K, M, c, sx.data(), false, nullptr, ys.data());
  std::vector<uint8_t> wq(N * K);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wq[n * K + k] = fp8_e4m3_encode(dense[n * K + k] / c.scales[n]);
  ref::gemm_fp8_rowwise(x.data(), K, wq.data(), K, M, N, K, sx.data(), false, c.scales.data(), false, nullptr,
                        yd.data());
  for (int64_t i = 0; i < M * N; ++i) EXPECT_NEAR(ys[i], yd[i], 1e-9 * (1 + std::fabs(yd[i]))) << i;
}

TEST(Reference, Sparse24RequireModeAndNonFinite) {
  std::vector<float> w = {1, 0, 0, 2, /**/ 0, -0.0f, 3, 0, /* row 1 */ 1, 1, 0, 0, /**/ 1, 2, 3, 0};
  ref::Sparse24Host c;
  int64_t row = -1, group = -1;
  EXPECT_FALSE(ref::sparse24_compress(w.data(), 2, 8, 8, ref::PruneMode::kRequire, ref::WeightScale::kPerChannel,
                                      nullptr, false, &c, &row, &group));
  EXPECT_EQ(row, 1);
  EXPECT_EQ(group, 1);
  w[12 + 2] = 0.0f;  // now 2:4 everywhere
  EXPECT_TRUE(ref::sparse24_compress(w.data(), 2, 8, 8, ref::PruneMode::kRequire, ref::WeightScale::kPerChannel,
                                     nullptr, false, &c));
  w[5] = std::nanf("");
  EXPECT_FALSE(ref::sparse24_compress(w.data(), 2, 8, 8, ref::PruneMode::kMagnitude, ref::WeightScale::kPerChannel,
                                      nullptr, false, &c, &row, &group));
  EXPECT_EQ(row, 0);
  EXPECT_EQ(group, -1 - 5);
}

TEST(Reference, W4A4LowRankHandComputed) {
  // K = 4, group 2: x1 = [1, -2, 3, 7], w1 = [2, 2, -8, 1]; group sums -2 and -17.
  const uint8_t x1[2] = {int4_pack(1, -2), int4_pack(3, 7)};
  const uint8_t w1[2] = {int4_pack(2, 2), int4_pack(-8, 1)};
  const float sx[2] = {0.5f, 2.0f}, sw[2] = {3.0f, 0.25f};
  const float x2[2] = {1.5f, -1.0f}, w2[2] = {2.0f, 4.0f}, bias[1] = {0.125f};
  double y = 0;
  ref::gemm_w4a4_lowrank(x1, w1, sx, sw, 1, 1, 4, 2, x2, w2, 2, bias, &y);
  EXPECT_DOUBLE_EQ(y, 0.5 * 3 * -2 + 2 * 0.25 * -17 + (1.5 * 2 - 4) + 0.125);
}

TEST(Reference, Int4GroupQuantizeRoundTrip) {
  const std::vector<float> x = {7, -3.5f, 0.5f, 1, /**/ -14, 2, 4, 0};
  std::vector<uint8_t> p(4);
  std::vector<float> s(2);
  ref::quantize_int4_groups(x.data(), 1, 8, 8, 4, p.data(), s.data());
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 2.0f);
  EXPECT_EQ(int4_unpack(p[0], 0), 7);
  EXPECT_EQ(int4_unpack(p[0], 1), -4);  // -3.5 -> -4 (ties to even)
  EXPECT_EQ(int4_unpack(p[2], 0), -7);
  EXPECT_EQ(int4_unpack(p[3], 0), 2);
}

TEST(Reference, RelFrobeniusError) {
  const double ref_v[2] = {3, 4};
  const float out[2] = {3, 4.5f};
  EXPECT_DOUBLE_EQ(ref::rel_frobenius_error(ref_v, out, 1, 2, 2), 0.1);
  const float bad[2] = {3, std::nanf("")};
  EXPECT_TRUE(std::isinf(ref::rel_frobenius_error(ref_v, bad, 1, 2, 2)));
}

}  // namespace
