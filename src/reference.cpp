// The CPU reference (include/qsgemm/reference.h). Plain loops, float64 accumulation.
#include "qsgemm/reference.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "qsgemm/formats.h"

namespace qsgemm::ref {

namespace {
float amax_of(const float* x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t ld) {
  float a = 0.0f;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) a = std::max(a, std::fabs(x[r * ld + c]));
  return a;
}
void quantize_box(const float* x, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t ldx, uint8_t* q,
                  int64_t ldq, float s) {
  const float inv = fp8_inv_scale(s);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) q[r * ldq + c] = fp8_quantize_inv(x[r * ldx + c], inv);
}
// Every e4m3 code decoded once by fp8_e4m3_decode: the GEMM references decode a code per
// multiply-add, and its ldexp made them most of a GPU test's time. (Filled at load time; the decode
// is a pure function.)
const std::array<double, 256> kE4m3 = [] {
  std::array<double, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = fp8_e4m3_decode(static_cast<uint8_t>(c));
  return t;
}();
double dq(uint8_t v) { return kE4m3[v]; }
}  // namespace

void quantize_fp8_per_row(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                          float* scales, bool pow2) {
  for (int64_t r = 0; r < rows; ++r) {
    scales[r] = fp8_scale_from_amax(amax_of(x, r, r + 1, 0, cols, ldx), pow2);
    quantize_box(x, r, r + 1, 0, cols, ldx, q, ldq, scales[r]);
  }
}

void quantize_fp8_static(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                         float scale) {
  if (fp8_scale_is_valid(scale)) {
    quantize_box(x, 0, rows, 0, cols, ldx, q, ldq, scale);
    return;
  }
  // Not a usable scale: zeros, as the GPU quantizer writes (include/qsgemm/quant.h).
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) q[r * ldq + c] = 0;
}

float quantize_fp8_per_tensor(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq) {
  const float s = fp8_scale_from_amax(amax_of(x, 0, rows, 0, cols, ldx));
  quantize_box(x, 0, rows, 0, cols, ldx, q, ldq, s);
  return s;
}

void quantize_fp8_1x128(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                        float* scales, int64_t ld_s, bool pow2) {
  const int64_t G = kScaleGroupK;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g * G < cols; ++g) {
      const int64_t c0 = g * G, c1 = std::min(cols, c0 + G);
      const float s = fp8_scale_from_amax(amax_of(x, r, r + 1, c0, c1, ldx), pow2);
      scales[g * ld_s + r] = s;
      quantize_box(x, r, r + 1, c0, c1, ldx, q, ldq, s);
    }
}

void quantize_fp8_128x128(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                          float* scales) {
  const int64_t G = kScaleGroupK, kb = ceil_div(cols, G);
  for (int64_t rb = 0; rb * G < rows; ++rb)
    for (int64_t cb = 0; cb < kb; ++cb) {
      const int64_t r0 = rb * G, r1 = std::min(rows, r0 + G), c0 = cb * G, c1 = std::min(cols, c0 + G);
      const float s = fp8_scale_from_amax(amax_of(x, r0, r1, c0, c1, ldx));
      scales[rb * kb + cb] = s;
      quantize_box(x, r0, r1, c0, c1, ldx, q, ldq, s);
    }
}

void quantize_fp8_row_groups(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                             float* scales) {
  const int64_t G = kScaleGroupK, kb = ceil_div(cols, G);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t cb = 0; cb < kb; ++cb) {
      const int64_t c0 = cb * G, c1 = std::min(cols, c0 + G);
      const float s = fp8_scale_from_amax(amax_of(x, r, r + 1, c0, c1, ldx));
      scales[r * kb + cb] = s;
      quantize_box(x, r, r + 1, c0, c1, ldx, q, ldq, s);
    }
}

void quantize_int4_groups(const float* x, int64_t rows, int64_t cols, int64_t ldx, int group, uint8_t* packed,
                          float* scales) {
  const int64_t ng = cols / group;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < ng; ++g) {
      const float s = int4_scale_from_amax(amax_of(x, r, r + 1, g * group, (g + 1) * group, ldx));
      scales[r * ng + g] = s;
      for (int64_t c = g * group; c < (g + 1) * group; c += 2)
        packed[r * (cols / 2) + c / 2] =
            int4_pack(int4_quantize(x[r * ldx + c], s), int4_quantize(x[r * ldx + c + 1], s));
    }
}

bool sparse24_compress(const float* w, int64_t N, int64_t K, int64_t ldw, PruneMode mode, WeightScale scale,
                       const float* given, bool per_tensor, Sparse24Host* out, int64_t* bad_row,
                       int64_t* bad_group) {
  out->N = N;
  out->K = K;
  out->values.assign(static_cast<size_t>(N * K / 2), 0);
  out->meta.assign(static_cast<size_t>(sparse24_meta_bytes(N, K)), kSparse24PadNibble * 0x11);
  out->scales.assign(per_tensor ? 1 : static_cast<size_t>(N), 1.0f);
  // Pass 1: validate, select, and find the amax of the kept values.
  std::vector<uint8_t> nib(static_cast<size_t>(N * K / 4));
  std::vector<float> row_amax(static_cast<size_t>(N), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < K / 4; ++g) {
      const float* p = w + n * ldw + g * 4;
      for (int i = 0; i < 4; ++i)
        if (!std::isfinite(p[i])) {
          if (bad_row) *bad_row = n;
          if (bad_group) *bad_group = -1 - (g * 4 + i);
          return false;
        }
      if (mode == PruneMode::kRequire && sparse24_nonzeros(p) > 2) {
        if (bad_row) *bad_row = n;
        if (bad_group) *bad_group = g;
        return false;
      }
      const uint8_t s = sparse24_select(p);
      nib[n * (K / 4) + g] = s;
      row_amax[n] = std::max({row_amax[n], std::fabs(p[s & 3]), std::fabs(p[s >> 2])});
    }
  if (scale == WeightScale::kGiven) {
    for (size_t i = 0; i < out->scales.size(); ++i) out->scales[i] = given[i];
  } else if (per_tensor || scale == WeightScale::kPerTensor) {
    out->scales.assign(1, fp8_scale_from_amax(*std::max_element(row_amax.begin(), row_amax.end())));
  } else {
    for (int64_t n = 0; n < N; ++n) out->scales[n] = fp8_scale_from_amax(row_amax[n]);
  }
  // Pass 2: quantize the kept values and write the metadata nibbles.
  for (int64_t n = 0; n < N; ++n) {
    const float s = out->scales.size() == 1 ? out->scales[0] : out->scales[n];
    for (int64_t g = 0; g < K / 4; ++g) {
      const uint8_t sel = nib[n * (K / 4) + g];
      const float* p = w + n * ldw + g * 4;
      out->values[n * (K / 2) + 2 * g] = fp8_quantize(p[sel & 3], s);
      out->values[n * (K / 2) + 2 * g + 1] = fp8_quantize(p[sel >> 2], s);
      uint8_t& byte = out->meta[sparse24_meta_offset(N, n, g * 4)];
      const int sh = sparse24_meta_shift(g * 4);
      byte = static_cast<uint8_t>((byte & ~(0xF << sh)) | (sel << sh));
    }
  }
  return true;
}

std::vector<float> sparse24_decompress(const Sparse24Host& w) {
  std::vector<float> d(static_cast<size_t>(w.N * w.K), 0.0f);
  for (int64_t n = 0; n < w.N; ++n) {
    const float s = w.scales.size() == 1 ? w.scales[0] : w.scales[n];
    for (int64_t g = 0; g < w.K / 4; ++g) {
      const uint8_t byte = w.meta[sparse24_meta_offset(w.N, n, g * 4)];
      const uint8_t sel = (byte >> sparse24_meta_shift(g * 4)) & 0xF;
      d[n * w.K + g * 4 + (sel & 3)] = fp8_e4m3_decode(w.values[n * (w.K / 2) + 2 * g]) * s;
      d[n * w.K + g * 4 + (sel >> 2)] = fp8_e4m3_decode(w.values[n * (w.K / 2) + 2 * g + 1]) * s;
    }
  }
  return d;
}

void gemm_fp8_rowwise(const uint8_t* x, int64_t ldx, const uint8_t* w, int64_t ldw, int64_t M, int64_t N, int64_t K,
                      const float* sx, bool sx_scalar, const float* sw, bool sw_scalar, const float* bias,
                      double* y) {
  std::vector<double> xd(static_cast<size_t>(K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) xd[k] = dq(x[m * ldx + k]);
    const double a = sx[sx_scalar ? 0 : m];
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      const uint8_t* wr = w + n * ldw;
      for (int64_t k = 0; k < K; ++k) acc += xd[k] * dq(wr[k]);
      y[m * N + n] = a * static_cast<double>(sw[sw_scalar ? 0 : n]) * acc + (bias ? bias[n] : 0.0);
    }
  }
}

namespace {
double x_scale_at(ScaleGranularity g, const float* s, int64_t ld, int64_t M, int64_t K, int64_t m, int64_t kg) {
  switch (g) {
    case ScaleGranularity::kPerTensor: return s[0];
    case ScaleGranularity::kPerRow: return s[m];
    case ScaleGranularity::kGroup1x128: return s[kg * ld + m];
    case ScaleGranularity::kBlock128x128: return s[(m / kScaleGroupK) * ceil_div(K, kScaleGroupK) + kg];
  }
  (void)M;
  return 0.0;
}
double w_scale_at(ScaleGranularity g, const float* s, int64_t K, int64_t n, int64_t kg) {
  const int64_t kb = ceil_div(K, kScaleGroupK);
  switch (g) {
    case ScaleGranularity::kPerTensor: return s[0];
    case ScaleGranularity::kPerRow: return s[n];
    case ScaleGranularity::kGroup1x128: return s[n * kb + kg];
    case ScaleGranularity::kBlock128x128: return s[(n / kScaleGroupK) * kb + kg];
  }
  return 0.0;
}
}  // namespace

void gemm_fp8_blockwise(const uint8_t* x, int64_t ldx, const uint8_t* w, int64_t ldw, int64_t M, int64_t N, int64_t K,
                        ScaleGranularity gx, const float* sx, int64_t ld_sx, ScaleGranularity gw, const float* sw,
                        const float* bias, double* y) {
  const int64_t G = kScaleGroupK, kb = ceil_div(K, G);
  std::vector<double> xd(static_cast<size_t>(K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) xd[k] = dq(x[m * ldx + k]);
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t g = 0; g < kb; ++g) {
        double part = 0.0;
        for (int64_t k = g * G; k < std::min(K, (g + 1) * G); ++k) part += xd[k] * dq(w[n * ldw + k]);
        acc += x_scale_at(gx, sx, ld_sx, M, K, m, g) * w_scale_at(gw, sw, K, n, g) * part;
      }
      y[m * N + n] = acc + (bias ? bias[n] : 0.0);
    }
  }
}

void gemm_sparse24_fp8(const uint8_t* x, int64_t ldx, int64_t M, const Sparse24Host& w, const float* sx,
                       bool sx_scalar, const float* bias, double* y) {
  // The kernel applies the scales after the product, y = sx * sw * Σ x * e4m3(w): do the same,
  // reading the kept codes through the metadata (this also checks the metadata layout).
  const int64_t N = w.N, K = w.K;
  std::vector<double> xd(static_cast<size_t>(K));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) xd[k] = dq(x[m * ldx + k]);
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t g = 0; g < K / 4; ++g) {
        const uint8_t sel = (w.meta[sparse24_meta_offset(N, n, g * 4)] >> sparse24_meta_shift(g * 4)) & 0xF;
        acc += xd[g * 4 + (sel & 3)] * dq(w.values[n * (K / 2) + 2 * g]) +
               xd[g * 4 + (sel >> 2)] * dq(w.values[n * (K / 2) + 2 * g + 1]);
      }
      const double s = w.scales.size() == 1 ? w.scales[0] : w.scales[n];
      y[m * N + n] = static_cast<double>(sx[sx_scalar ? 0 : m]) * s * acc + (bias ? bias[n] : 0.0);
    }
  }
}

void gemm_w4a4_lowrank(const uint8_t* x1, const uint8_t* w1, const float* sx, const float* sw, int64_t M, int64_t N,
                       int64_t K, int group, const float* x2, const float* w2, int64_t R, const float* bias,
                       double* y) {
  const int64_t ng = K / group;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int64_t g = 0; g < ng; ++g) {
        double part = 0.0;
        for (int64_t k = g * group; k < (g + 1) * group; ++k)
          part += static_cast<double>(int4_unpack(x1[m * (K / 2) + k / 2], k & 1)) *
                  int4_unpack(w1[n * (K / 2) + k / 2], k & 1);
        acc += static_cast<double>(sx[m * ng + g]) * sw[n * ng + g] * part;
      }
      for (int64_t r = 0; r < R; ++r) acc += static_cast<double>(x2[m * R + r]) * w2[n * R + r];
      y[m * N + n] = acc + (bias ? bias[n] : 0.0);
    }
}

double rel_frobenius_error(const double* ref, const float* out, int64_t M, int64_t N, int64_t ld_out) {
  double num = 0.0, den = 0.0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double o = out[m * ld_out + n];
      if (!std::isfinite(o)) return INFINITY;
      const double d = o - ref[m * N + n];
      num += d * d;
      den += ref[m * N + n] * ref[m * N + n];
    }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace qsgemm::ref
