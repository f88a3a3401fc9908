// Host codecs of docs/formats.md. See include/qsgemm/formats.h for the contracts.
#include "qsgemm/formats.h"

#include <cfloat>
#include <cmath>
#include <cstring>

namespace qsgemm {
namespace {
uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float bits_float(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
}  // namespace

uint8_t fp8_e4m3_encode(float x) {
  const uint32_t b = float_bits(x);
  const uint8_t sign = static_cast<uint8_t>((b >> 24) & 0x80u);
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F;                 // NaN -> the canonical positive NaN code
  if (a > 0x43E80000u) return sign | 0x7E;          // > 464 (448 + half ulp), Inf too: saturate
  if (a <= 0x3A800000u) return sign;                // <= 2^-10 (half the smallest subnormal): zero
  const int exp = static_cast<int>(a >> 23) - 127 + 7;  // e4m3 biased exponent
  uint32_t mant = (a >> 20) & 7u;                   // top 3 fraction bits
  const uint32_t half = 1u << 19;                   // half an e4m3 ulp, in float fraction bits
  if (a >= 0x3C800000u) {                           // >= 2^-6: normal
    uint32_t r = static_cast<uint32_t>(exp << 3) | mant;
    const uint32_t rest = a & ((half << 1) - 1);
    if (rest > half || (rest == half && (mant & 1u))) ++r;  // may carry into the exponent: fine
    return sign | static_cast<uint8_t>(r);
  }
  // Subnormal: value = m * 2^-9, m in 1..7 (8 rounds up to the smallest normal 0x08).
  const int shift = 1 - exp;                        // 1..4
  mant |= 8u;                                       // implicit leading one
  uint32_t r = mant >> shift;
  const uint32_t rest = (a | 0x800000u) & ((half << (shift + 1)) - 1);
  const uint32_t mid = half << shift;
  if (rest > mid || (rest == mid && (r & 1u))) ++r;
  return sign | static_cast<uint8_t>(r);
}

float fp8_e4m3_decode(uint8_t v) {
  const int e = (v >> 3) & 0xF, m = v & 7;
  const float s = (v & 0x80) ? -1.0f : 1.0f;
  if (e == 15 && m == 7) return std::nanf("");
  if (e == 0) return s * std::ldexp(static_cast<float>(m), -9);
  return s * std::ldexp(1.0f + m / 8.0f, e - 7);
}

uint16_t bf16_encode(float x) {
  uint32_t b = float_bits(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((b >> 16) | 0x40);  // quiet NaN
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}
float bf16_decode(uint16_t v) { return bits_float(static_cast<uint32_t>(v) << 16); }

uint16_t fp16_encode(float x) {
  const uint32_t b = float_bits(x);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00;                   // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00;                  // >= 65520: rounds to Inf
  if (a < 0x33000001u) return sign;                            // <= 2^-25: zero
  const int exp = static_cast<int>(a >> 23) - 127 + 15;
  if (exp >= 1) {                                              // normal
    uint32_t r = (static_cast<uint32_t>(exp) << 10) | ((a >> 13) & 0x3FFu);
    const uint32_t rest = a & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  const int shift = 14 - exp;                                  // 14..24 bits dropped past 10
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t r = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t mid = 1u << (shift - 1);
  if (rest > mid || (rest == mid && (r & 1u))) ++r;
  return sign | static_cast<uint16_t>(r);
}
float fp16_decode(uint16_t v) {
  const int e = (v >> 10) & 0x1F, m = v & 0x3FF;
  const float s = (v & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m ? std::nanf("") : s * INFINITY;
  if (e == 0) return s * std::ldexp(static_cast<float>(m), -24);
  return s * std::ldexp(1.0f + m / 1024.0f, e - 15);
}

float fp8_scale_from_amax(float amax, bool pow2) {
  if (!(amax > 0.0f)) return 1.0f;  // all-zero group (and NaN amax, which cannot be scaled)
  // Tiny groups: clamp to the smallest normal float, whose reciprocal (2^126) is finite. FLT_MIN is
  // a power of two, so the pow2 rounding below leaves it unchanged.
  const float s = std::fmax(amax / kE4M3Max, FLT_MIN);
  if (!pow2) return s;
  // Smallest power of two >= s, exactly: bump the exponent unless the fraction is zero.
  const uint32_t b = float_bits(s);
  if ((b & 0x7FFFFFu) == 0) return s;
  return bits_float(((b >> 23) + 1) << 23);
}

uint8_t sparse24_select(const float g[4]) {
  // Rank by magnitude, ties to the lower index: keep i where fewer than two others beat it.
  int kept[2], n = 0;
  for (int i = 0; i < 4 && n < 2; ++i) {
    int beaten_by = 0;
    for (int j = 0; j < 4; ++j) {
      const float ai = std::fabs(g[i]), aj = std::fabs(g[j]);
      if (aj > ai || (aj == ai && j < i)) ++beaten_by;
    }
    if (beaten_by < 2) kept[n++] = i;
  }
  return static_cast<uint8_t>(kept[0] | (kept[1] << 2));
}

int sparse24_nonzeros(const float g[4]) {
  int n = 0;
  for (int i = 0; i < 4; ++i) n += (g[i] != 0.0f);  // -0.0f == 0.0f
  return n;
}

float int4_scale_from_amax(float amax) { return amax > 0.0f ? std::fmax(amax / 7.0f, FLT_MIN) : 1.0f; }
int int4_quantize(float x, float s) {
  const float r = std::nearbyint(x / s);  // default rounding mode: to nearest even
  return r > 7.0f ? 7 : (r < -8.0f ? -8 : static_cast<int>(r));
}

}  // namespace qsgemm
