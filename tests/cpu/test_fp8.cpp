// docs/formats.md §1: the host FP8/bf16/fp16 codecs are bit-identical to CUDA's host conversions
// (cuda_fp8.h, cuda_bf16.h, cuda_fp16.h), which are the oracle.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "qsgemm/formats.h"

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint8_t cuda_e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }

TEST(Fp8E4M3, DecodeAll256CodesMatchesCuda) {
  for (int c = 0; c < 256; ++c) {
    __nv_fp8_e4m3 v;
    v.__x = static_cast<__nv_fp8_storage_t>(c);
    const float expect = static_cast<float>(v);
    const float got = qsgemm::fp8_e4m3_decode(static_cast<uint8_t>(c));
    if (std::isnan(expect)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << c;
    } else {
      EXPECT_EQ(got, expect) << "code " << c;
    }
  }
}

TEST(Fp8E4M3, EncodeRoundTripsEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(qsgemm::fp8_e4m3_encode(qsgemm::fp8_e4m3_decode(static_cast<uint8_t>(c))), c) << "code " << c;
  }
}

TEST(Fp8E4M3, EncodeSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float cases[] = {0.0f, -0.0f, 448.0f, -448.0f, 464.0f, 464.1f, 480.0f, 1e30f, -1e30f, inf, -inf,
                         std::nanf(""), -std::nanf(""), 1.0f / 512, 1.0f / 1024, 1.0f / 1023, 3.0f / 2048,
                         1.0f / 64, 0.9999f / 64, 1e-40f, -1e-40f, std::numeric_limits<float>::denorm_min()};
  for (float x : cases) EXPECT_EQ(qsgemm::fp8_e4m3_encode(x), cuda_e4m3(x)) << "x=" << x;
  EXPECT_EQ(qsgemm::fp8_e4m3_encode(std::nanf("")), 0x7F);
  EXPECT_EQ(qsgemm::fp8_e4m3_encode(inf), 0x7E);
  EXPECT_EQ(qsgemm::fp8_e4m3_encode(-inf), 0xFE);
  EXPECT_EQ(qsgemm::fp8_e4m3_encode(-0.0f), 0x80);
}

// Every midpoint between adjacent codes (ties to even) and its two neighbours one float ulp away.
TEST(Fp8E4M3, EncodeMidpointsAndNeighbours) {
  for (int c = 0; c < 0x7E; ++c) {
    const float a = qsgemm::fp8_e4m3_decode(static_cast<uint8_t>(c));
    const float b = qsgemm::fp8_e4m3_decode(static_cast<uint8_t>(c + 1));
    const float mid = (a + b) / 2;  // exact in float
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      EXPECT_EQ(qsgemm::fp8_e4m3_encode(x), cuda_e4m3(x)) << "x=" << x;
      EXPECT_EQ(qsgemm::fp8_e4m3_encode(-x), cuda_e4m3(-x)) << "x=" << -x;
    }
  }
}

// A stride through all 2^32 bit patterns (every exponent, both signs, NaN payloads, subnormals)
// plus millions of random floats in the e4m3 range.
TEST(Fp8E4M3, EncodeMatchesCudaOnMillionsOfFloats) {
  int64_t mismatches = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 997) {
    const float x = from_bits(static_cast<uint32_t>(b));
    mismatches += qsgemm::fp8_e4m3_encode(x) != cuda_e4m3(x);
  }
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> d(-500.0f, 500.0f);
  std::uniform_int_distribution<int> e(-14, 9);
  for (int i = 0; i < 3000000; ++i) {
    const float x = std::ldexp(d(rng) / 500.0f, e(rng));
    mismatches += qsgemm::fp8_e4m3_encode(x) != cuda_e4m3(x);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Bf16Fp16, EncodeDecodeMatchCuda) {
  int64_t mismatches = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) {
    const float x = from_bits(static_cast<uint32_t>(b));
    if (std::isnan(x)) continue;
    const __nv_bfloat16 cb = __float2bfloat16_rn(x);
    const __half ch = __float2half_rn(x);
    uint16_t rb, rh;
    std::memcpy(&rb, &cb, 2);
    std::memcpy(&rh, &ch, 2);
    mismatches += qsgemm::bf16_encode(x) != rb;
    mismatches += qsgemm::fp16_encode(x) != rh;
  }
  EXPECT_EQ(mismatches, 0);
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t u = static_cast<uint16_t>(v);
    __nv_bfloat16 b;
    __half h;
    std::memcpy(&b, &u, 2);
    std::memcpy(&h, &u, 2);
    const float fb = __bfloat162float(b), fh = __half2float(h);
    if (!std::isnan(fb)) EXPECT_EQ(qsgemm::bf16_decode(u), fb) << v;
    if (!std::isnan(fh)) EXPECT_EQ(qsgemm::fp16_decode(u), fh) << v;
  }
}

TEST(Fp8Scale, DynamicAndPowerOfTwo) {
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(448.0f), 1.0f);
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(0.0f), 1.0f);
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(896.0f), 2.0f);
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(100.0f), 100.0f / 448.0f);
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(100.0f, true), 0.25f);  // 0.223 -> 0.25
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(448.0f, true), 1.0f);   // exact powers stay
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(449.0f, true), 2.0f);
  // The largest value of a group never saturates: amax / scale <= 448.
  for (float a : {1e-3f, 0.7f, 3.3f, 1000.0f, 12345.6f})
    for (bool p2 : {false, true}) EXPECT_LE(std::fabs(a / qsgemm::fp8_scale_from_amax(a, p2)), 448.0f);
}

// A tiny non-zero amax (< 448 * FLT_MIN) would give a subnormal (or zero) scale whose reciprocal is
// Inf: the scale is clamped to FLT_MIN, whose reciprocal 2^126 is finite (docs/formats.md §2).
TEST(Fp8Scale, TinyAmaxClampsToSmallestNormal) {
  const float tiny_amaxes[] = {1e-38f, 5e-36f, FLT_MIN, 1e-40f, std::numeric_limits<float>::denorm_min()};
  for (float a : tiny_amaxes)
    for (bool p2 : {false, true}) {
      SCOPED_TRACE(testing::Message() << "amax=" << a << " pow2=" << p2);
      const float s = qsgemm::fp8_scale_from_amax(a, p2);
      EXPECT_EQ(s, FLT_MIN);
      EXPECT_TRUE(std::isfinite(qsgemm::fp8_inv_scale(s)));
      EXPECT_EQ(qsgemm::fp8_inv_scale(s), std::ldexp(1.0f, 126));
      EXPECT_LE(a * qsgemm::fp8_inv_scale(s), 448.0f);
      EXPECT_EQ(qsgemm::fp8_quantize(0.0f, s), 0x00);  // not 0 * Inf = NaN
    }
  // Just above the clamp the plain rule applies: the scale is normal and exact.
  const float a = 448.0f * FLT_MIN * 2.0f;
  EXPECT_EQ(qsgemm::fp8_scale_from_amax(a), 2.0f * FLT_MIN);
  // INT4 scales get the same floor.
  EXPECT_EQ(qsgemm::int4_scale_from_amax(std::numeric_limits<float>::denorm_min()), FLT_MIN);
  EXPECT_EQ(qsgemm::int4_quantize(0.0f, qsgemm::int4_scale_from_amax(1e-44f)), 0);
}

TEST(Fp8Scale, ValidScalesArePositiveNormalFinite) {
  using L = std::numeric_limits<float>;
  for (float s : {FLT_MIN, 1e-20f, 1.0f, 448.0f, FLT_MAX}) EXPECT_TRUE(qsgemm::fp8_scale_is_valid(s)) << s;
  for (float s : {0.0f, -0.0f, -1.0f, -FLT_MIN, L::denorm_min(), FLT_MIN / 2, L::quiet_NaN(), L::infinity(),
                  -L::infinity()})
    EXPECT_FALSE(qsgemm::fp8_scale_is_valid(s)) << s;
}

}  // namespace
