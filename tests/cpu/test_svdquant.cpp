// The SVDQuant offline recipe (include/qsgemm/svdquant.h): on synthetic activations and weights with
// outlier channels it must beat naive W4A4 at the same bits by several dB of output SQNR (vs the
// float64 GEMM of the same bf16 inputs); rank 0 without smoothing is naive quantization; an exactly
// low-rank weight leaves a (near) zero residual; bad input is rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"
#include "qsgemm/svdquant.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;

float bf16_round(float v) { return bf16_decode(bf16_encode(v)); }

struct Synthetic {
  int64_t L = 128, N = 256, K = 512;
  std::vector<float> x, w;  // bf16-valued
};

// Gaussian X and W; 1 % of the input channels of X scaled by 50 (the activation outliers of LLMs and
// diffusion models), 1 % of other channels of W scaled by 10.
Synthetic make_synthetic(uint32_t seed) {
  Synthetic s;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  s.x.resize(static_cast<size_t>(s.L * s.K));
  s.w.resize(static_cast<size_t>(s.N * s.K));
  std::vector<float> xs(static_cast<size_t>(s.K), 1.0f), wsc(static_cast<size_t>(s.K), 1.0f);
  for (int64_t k : {7, 100, 222, 333, 480}) xs[k] = 50.0f;
  for (int64_t k : {40, 150, 260, 390, 500}) wsc[k] = 10.0f;
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t k = 0; k < s.K; ++k) s.x[l * s.K + k] = bf16_round(nd(rng) * xs[k]);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k) s.w[n * s.K + k] = bf16_round(0.05f * nd(rng) * wsc[k]);
  return s;
}

std::vector<double> exact_gemm(const Synthetic& s) {
  std::vector<double> y(static_cast<size_t>(s.L * s.N), 0.0);
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t n = 0; n < s.N; ++n) {
      double a = 0;
      for (int64_t k = 0; k < s.K; ++k) a += static_cast<double>(s.x[l * s.K + k]) * s.w[n * s.K + k];
      y[l * s.N + n] = a;
    }
  return y;
}

// Naive W4A4 (group 64 on X and W) and SVDQuant (alpha 0.5, rank r, group 64) output SQNR in dB.
void sqnrs(const Synthetic& s, int rank, double* naive_db, double* svd_db) {
  const int G = 64;
  const int64_t ng = s.K / G;
  const std::vector<double> ref = exact_gemm(s);
  std::vector<uint8_t> xq(static_cast<size_t>(s.L * s.K / 2)), wq(static_cast<size_t>(s.N * s.K / 2));
  std::vector<float> sx(static_cast<size_t>(s.L * ng)), sw(static_cast<size_t>(s.N * ng));
  ref::quantize_int4_groups(s.x.data(), s.L, s.K, s.K, G, xq.data(), sx.data());
  ref::quantize_int4_groups(s.w.data(), s.N, s.K, s.K, G, wq.data(), sw.data());
  std::vector<double> y(ref.size());
  ref::gemm_w4a4_lowrank(xq.data(), wq.data(), sx.data(), sw.data(), s.L, s.N, s.K, G, nullptr, nullptr, 0, nullptr,
                         y.data());
  *naive_db = ref::sqnr_db(ref.data(), y.data(), static_cast<int64_t>(ref.size()));

  std::vector<float> amax(static_cast<size_t>(s.K), 0.0f);
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t k = 0; k < s.K; ++k) amax[k] = std::max(amax[k], std::fabs(s.x[l * s.K + k]));
  const ref::SvdQuantWeight d = ref::svdquant_decompose(s.w.data(), s.N, s.K, amax.data(), 0.5f, rank, G);
  // The layer's input X̂ = X / s (bf16, as the previous layer would produce it), quantized to INT4;
  // X2 = X̂·L̂1ᵀ and W2 = L2 in bf16, as the GPU kernels take them.
  std::vector<float> xh(s.x.size());
  for (int64_t l = 0; l < s.L; ++l)
    for (int64_t k = 0; k < s.K; ++k) xh[l * s.K + k] = bf16_round(s.x[l * s.K + k] / d.smooth[k]);
  std::vector<float> x2(static_cast<size_t>(s.L * rank)), w2(d.l2.size());
  for (int64_t l = 0; l < s.L; ++l)
    for (int j = 0; j < rank; ++j) {
      double a = 0;
      for (int64_t k = 0; k < s.K; ++k) a += static_cast<double>(xh[l * s.K + k]) * d.l1_smoothed[j * s.K + k];
      x2[l * rank + j] = bf16_round(static_cast<float>(a));
    }
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = bf16_round(d.l2[i]);
  ref::quantize_int4_groups(xh.data(), s.L, s.K, s.K, G, xq.data(), sx.data());
  ref::gemm_w4a4_lowrank(xq.data(), d.w1.data(), sx.data(), d.w1_scales.data(), s.L, s.N, s.K, G, x2.data(), w2.data(),
                         rank, nullptr, y.data());
  *svd_db = ref::sqnr_db(ref.data(), y.data(), static_cast<int64_t>(ref.size()));
}

TEST(SvdQuant, BeatsNaiveW4A4OnOutlierChannels) {
  const Synthetic s = make_synthetic(26);
  for (int rank : {0, 16, 32}) {  // rank 0: smoothing alone, for comparison
    double naive = 0, svd = 0;
    sqnrs(s, rank, &naive, &svd);
    std::cout << "[ SQNR    ] rank " << rank << ": naive W4A4 " << naive << " dB, SVDQuant " << svd << " dB (+"
              << svd - naive << " dB)\n";
    RecordProperty("naive_w4a4_sqnr_db_r" + std::to_string(rank), std::to_string(naive));
    RecordProperty("svdquant_sqnr_db_r" + std::to_string(rank), std::to_string(svd));
    if (rank > 0) EXPECT_GT(svd, naive + 3.0) << "SVDQuant must beat naive W4A4 by several dB";
  }
}

TEST(SvdQuant, RankZeroWithoutSmoothingIsNaiveQuantization) {
  const Synthetic s = make_synthetic(27);
  const ref::SvdQuantWeight d = ref::svdquant_decompose(s.w.data(), s.N, s.K, nullptr, 0.5f, 0, 64);
  std::vector<uint8_t> wq(static_cast<size_t>(s.N * s.K / 2));
  std::vector<float> sw(static_cast<size_t>(s.N * s.K / 64));
  ref::quantize_int4_groups(s.w.data(), s.N, s.K, s.K, 64, wq.data(), sw.data());
  EXPECT_EQ(d.w1, wq);
  EXPECT_EQ(d.w1_scales, sw);
  for (float v : d.smooth) ASSERT_EQ(v, 1.0f);
}

TEST(SvdQuant, ExactlyLowRankWeightLeavesTinyResidual) {
  // W = A·B with A [64][3], B [3][128]: rank 3 absorbs it; the residual scales are ~0 next to W's.
  const int64_t N = 64, K = 128;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> a(N * 3), b(3 * K), w(N * K);
  for (auto& v : a) v = nd(rng);
  for (auto& v : b) v = nd(rng);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w[n * K + k] = a[n * 3] * b[k] + a[n * 3 + 1] * b[K + k] + a[n * 3 + 2] * b[2 * K + k];
  const ref::SvdQuantWeight d = ref::svdquant_decompose(w.data(), N, K, nullptr, 0.5f, 3, 64);
  float wmax = 0, smax = 0;
  for (float v : w) wmax = std::max(wmax, std::fabs(v));
  for (float v : d.w1_scales) smax = std::max(smax, v);
  EXPECT_LT(smax * 7, 1e-5f * wmax) << "residual amax " << smax * 7 << " vs weight amax " << wmax;
  // L2·L̂1 reproduces W.
  double err = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double r = 0;
      for (int j = 0; j < 3; ++j) r += static_cast<double>(d.l2[n * 3 + j]) * d.l1_smoothed[j * K + k];
      err = std::max(err, std::fabs(r - w[n * K + k]));
    }
  EXPECT_LT(err, 1e-4 * wmax);
}

TEST(SvdQuant, RejectsBadInput) {
  std::vector<float> w(64 * 128, 1.0f);
  test::expect_error([&] { ref::svdquant_decompose(w.data(), 64, 128, nullptr, 0.5f, 65, 64); },
                     Status::kInvalidArgument, "rank=65", "rank");
  test::expect_error([&] { ref::svdquant_decompose(w.data(), 64, 128, nullptr, 0.5f, 8, 48); },
                     Status::kInvalidArgument, "group=48", "group");
  test::expect_error([&] { ref::svdquant_decompose(w.data(), 64, 128, nullptr, 1.5f, 8, 64); },
                     Status::kInvalidArgument, "alpha=1.5", "alpha");
  w[3 * 128 + 9] = NAN;
  test::expect_error([&] { ref::svdquant_decompose(w.data(), 64, 128, nullptr, 0.5f, 8, 64); }, Status::kInvalidValue,
                     "w[3, 9] = nan", "w");
}

}  // namespace
