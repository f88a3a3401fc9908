// The SVDQuant offline recipe (include/qsgemm/svdquant.h), float64 on the CPU.
#include "qsgemm/svdquant.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "qsgemm/error.h"
#include "qsgemm/reference.h"
#include "validate.h"

namespace qsgemm::ref {
namespace {

// Modified Gram-Schmidt on the columns of a [rows][cols] row-major matrix (twice, for stability).
void orthonormalize_columns(std::vector<double>& a, int64_t rows, int64_t cols) {
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t r = 0; r < rows; ++r) dot += a[r * cols + i] * a[r * cols + j];
        for (int64_t r = 0; r < rows; ++r) a[r * cols + j] -= dot * a[r * cols + i];
      }
      double norm = 0;
      for (int64_t r = 0; r < rows; ++r) norm += a[r * cols + j] * a[r * cols + j];
      norm = std::sqrt(norm);
      for (int64_t r = 0; r < rows; ++r) a[r * cols + j] = norm > 0 ? a[r * cols + j] / norm : 0.0;
    }
}

}  // namespace

SvdQuantWeight svdquant_decompose(const float* w, int64_t N, int64_t K, const float* act_amax, float alpha, int rank,
                                  int group, int iters) {
  const char* fn = "svdquant_decompose";
  if (N <= 0 || K <= 0)
    detail::fail(fn, Status::kInvalidArgument, "w", detail::cat("shape [", N, ", ", K, "] must be positive"));
  if (w == nullptr) detail::fail(fn, Status::kInvalidArgument, "w", "null pointer");
  if (rank < 0 || rank > std::min(N, K))
    detail::fail(fn, Status::kInvalidArgument, "rank", detail::cat("rank=", rank, " must be in [0, min(N, K)]"));
  if (group <= 0 || group % 2 != 0 || K % group != 0)
    detail::fail(fn, Status::kInvalidArgument, "group", detail::cat("group=", group, " must be even and divide K=", K));
  if (!(alpha >= 0.0f && alpha <= 1.0f))
    detail::fail(fn, Status::kInvalidArgument, "alpha", detail::cat("alpha=", alpha, " must be in [0, 1]"));
  for (int64_t i = 0; i < N * K; ++i)
    if (!std::isfinite(w[i]))
      detail::fail(fn, Status::kInvalidValue, "w", detail::cat("w[", i / K, ", ", i % K, "] = ", w[i], " is not finite"));

  SvdQuantWeight out;
  out.N = N;
  out.K = K;
  out.rank = rank;
  out.group = group;
  // 1. smoothing
  out.smooth.assign(static_cast<size_t>(K), 1.0f);
  if (act_amax != nullptr)
    for (int64_t k = 0; k < K; ++k) {
      double wmax = 0;
      for (int64_t n = 0; n < N; ++n) wmax = std::max(wmax, std::fabs(static_cast<double>(w[n * K + k])));
      const double ax = act_amax[k];
      if (ax > 0 && wmax > 0 && std::isfinite(ax))
        out.smooth[k] = static_cast<float>(std::pow(ax, alpha) / std::pow(wmax, 1.0 - alpha));
    }
  std::vector<double> ws(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) ws[n * K + k] = static_cast<double>(w[n * K + k]) * out.smooth[k];

  // 2. rank-r approximation by subspace iteration: Q [K][r] -> Z = Ŵ·Q [N][r] -> Q = Ŵᵀ·Z.
  std::vector<double> q(static_cast<size_t>(K * rank)), z(static_cast<size_t>(N * rank));
  std::mt19937 rng(20241107);
  std::normal_distribution<double> nd;
  for (auto& v : q) v = nd(rng);
  orthonormalize_columns(q, K, rank);
  for (int it = 0; it < iters && rank > 0; ++it) {
    std::fill(z.begin(), z.end(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const double a = ws[n * K + k];
        for (int j = 0; j < rank; ++j) z[n * rank + j] += a * q[k * rank + j];
      }
    orthonormalize_columns(z, N, rank);
    std::fill(q.begin(), q.end(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const double a = ws[n * K + k];
        for (int j = 0; j < rank; ++j) q[k * rank + j] += a * z[n * rank + j];
      }
    orthonormalize_columns(q, K, rank);
  }
  // L2 = Ŵ·Q [N][r], L̂1 = Qᵀ [r][K]; the residual R = Ŵ − L2·L̂1 (the rounded-to-float factors, so
  // that R absorbs their rounding).
  out.l2.assign(static_cast<size_t>(N * rank), 0.0f);
  out.l1_smoothed.assign(static_cast<size_t>(rank * K), 0.0f);
  out.l1.assign(static_cast<size_t>(rank * K), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int j = 0; j < rank; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += ws[n * K + k] * q[k * rank + j];
      out.l2[n * rank + j] = static_cast<float>(acc);
    }
  for (int j = 0; j < rank; ++j)
    for (int64_t k = 0; k < K; ++k) {
      out.l1_smoothed[j * K + k] = static_cast<float>(q[k * rank + j]);
      out.l1[j * K + k] = static_cast<float>(q[k * rank + j] / out.smooth[k]);
    }
  std::vector<float> resid(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double lr = 0;
      for (int j = 0; j < rank; ++j) lr += static_cast<double>(out.l2[n * rank + j]) * out.l1_smoothed[j * K + k];
      resid[n * K + k] = static_cast<float>(ws[n * K + k] - lr);
    }
  // 3. INT4 residual
  out.w1.assign(static_cast<size_t>(N * K / 2), 0);
  out.w1_scales.assign(static_cast<size_t>(N * (K / group)), 0.0f);
  quantize_int4_groups(resid.data(), N, K, K, group, out.w1.data(), out.w1_scales.data());
  return out;
}

double sqnr_db(const double* ref, const double* y, int64_t count) {
  double s = 0, e = 0;
  for (int64_t i = 0; i < count; ++i) {
    s += ref[i] * ref[i];
    e += (y[i] - ref[i]) * (y[i] - ref[i]);
  }
  return 10.0 * std::log10(s / e);
}

}  // namespace qsgemm::ref
