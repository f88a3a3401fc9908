// Bad input to the FP8 quantizers (include/qsgemm/quant.h) is rejected before any GPU work, with the
// documented status and a message naming the operand and value: every alignment rule, the static
// quantizer's scale, and outputs overlapping inputs. Runs without a GPU (fake, aligned addresses).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "qsgemm/error.h"
#include "qsgemm/quant.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using test::addr;
using test::expect_error;

constexpr int64_t M = 4, K = 256;
float* fp(uintptr_t a) { return static_cast<float*>(addr(a)); }
int32_t* ip(uintptr_t a) { return static_cast<int32_t*>(addr(a)); }

// x bf16 [4, 256] at 0x10000 (2 KiB), q e4m3 [4, 256] at 0x20000 (1 KiB), scales at 0x30000.
const MatrixView kX(addr(0x10000), DType::kBF16, M, K);
const MatrixView kQ(addr(0x20000), DType::kE4M3, M, K);

TEST(QuantValidation, StaticDeviceScaleOperands) {
  const float* s = fp(0x30000);
  expect_error([&] { quantize_fp8_static(MatrixView(addr(0x10000), DType::kF32, M, K), kQ, s, nullptr); },
               Status::kInvalidArgument, "dtype fp32", "x");
  expect_error([&] { quantize_fp8_static(kX, MatrixView(addr(0x20000), DType::kBF16, M, K), s, nullptr); },
               Status::kInvalidArgument, "dtype bf16", "q");
  expect_error([&] { quantize_fp8_static(kX, MatrixView(addr(0x20000), DType::kE4M3, M, 128), s, nullptr); },
               Status::kInvalidArgument, "has 128 columns, expected 256", "q");
  expect_error([&] { quantize_fp8_static(kX, kQ, static_cast<const float*>(nullptr), nullptr); },
               Status::kInvalidArgument, "null pointer", "scale");
  expect_error([&] { quantize_fp8_static(kX, kQ, fp(0x30002), nullptr); }, Status::kMisaligned, "4-byte aligned",
               "scale");
  expect_error([&] { quantize_fp8_static(MatrixView(nullptr, DType::kBF16, M, K), kQ, s, nullptr); },
               Status::kInvalidArgument, "null pointer", "x");
  expect_error([&] { quantize_fp8_static(kX, MatrixView(nullptr, DType::kE4M3, M, K), s, nullptr); },
               Status::kInvalidArgument, "null pointer", "q");
  expect_error([&] { quantize_fp8_static(kX, kQ, s, nullptr, ip(0x40002)); }, Status::kMisaligned, "4-byte aligned",
               "error_flag");
  expect_error([&] { quantize_fp8_static(MatrixView(addr(0x10000), DType::kBF16, M, 252, 256),
                                         MatrixView(addr(0x20000), DType::kE4M3, M, 252, 256), s, nullptr); },
               Status::kInvalidArgument, "K=252 must be a multiple of 8");
  // q overlapping the scale or the flag overlapping q.
  expect_error([&] { quantize_fp8_static(kX, kQ, fp(0x20010), nullptr); }, Status::kInvalidArgument, "overlaps scale",
               "q");
  expect_error([&] { quantize_fp8_static(kX, kQ, s, nullptr, ip(0x20100)); }, Status::kInvalidArgument, "overlaps q",
               "error_flag");
  // M = 0: nothing to do, not even the scale pointer is needed.
  EXPECT_NO_THROW(quantize_fp8_static(MatrixView(nullptr, DType::kBF16, 0, K), MatrixView(nullptr, DType::kE4M3, 0, K),
                                      static_cast<const float*>(nullptr), nullptr));
}

TEST(QuantValidation, StaticHostScaleMustBePositiveNormalFinite) {
  using L = std::numeric_limits<float>;
  for (float bad : {0.0f, -0.0f, -2.0f, L::denorm_min(), FLT_MIN / 4, L::quiet_NaN(), L::infinity(), -L::infinity()}) {
    SCOPED_TRACE(testing::Message() << "scale=" << bad);
    expect_error([&] { quantize_fp8_static(kX, kQ, bad, nullptr); }, Status::kInvalidValue,
                 "must be a positive, normal, finite float", "scale");
    // Checked even when there is nothing to quantize.
    expect_error([&] { quantize_fp8_static(MatrixView(nullptr, DType::kBF16, 0, K),
                                           MatrixView(nullptr, DType::kE4M3, 0, K), bad, nullptr); },
                 Status::kInvalidValue, "scale=");
  }
  expect_error([&] { quantize_fp8_static(kX, kQ, -3.0f, nullptr); }, Status::kInvalidValue, "scale=-3");
  // Operand rules come first, as for the device-scale overload.
  expect_error([&] { quantize_fp8_static(MatrixView(addr(0x10008), DType::kBF16, M, K), kQ, 1.0f, nullptr); },
               Status::kMisaligned, "16-byte aligned", "x");
  EXPECT_NO_THROW(quantize_fp8_static(MatrixView(nullptr, DType::kBF16, 0, K), MatrixView(nullptr, DType::kE4M3, 0, K),
                                      1.0f, nullptr));
}

// x: 16-byte aligned base, ld * 2 bytes a multiple of 16 (ld % 8 == 0); q: 8-byte aligned base,
// ld a multiple of 8; scales 4-byte aligned; every quantizer.
TEST(QuantValidation, AlignmentRulesOfEveryQuantizer) {
  float* s = fp(0x30000);
  const MatrixView x_base(addr(0x10008), DType::kBF16, M, K);            // 8, not 16-byte aligned
  const MatrixView x_ld(addr(0x10000), DType::kBF16, M, K, K + 4);       // 520-byte rows
  const MatrixView q_base(addr(0x20004), DType::kE4M3, M, K);            // 4, not 8-byte aligned
  const MatrixView q_ld(addr(0x20000), DType::kE4M3, M, K, K + 4);       // 260-byte rows
  const auto each = [&](const MatrixView& x, const MatrixView& q, float* sc) -> std::vector<std::function<void()>> {
    return {[=] { quantize_fp8_per_token(x, q, sc, false, nullptr); },
            [=] { quantize_fp8_per_token_group(x, q, sc, M, false, nullptr); },
            [=] { quantize_fp8_weight(x, q, sc, ScaleGranularity::kBlock128x128, nullptr); },
            [=] { quantize_fp8_weight(x, q, sc, ScaleGranularity::kGroup1x128, nullptr); },
            [=] { quantize_fp8_static(x, q, static_cast<const float*>(sc), nullptr); }};
  };
  for (const auto& f : each(x_base, kQ, s)) expect_error(f, Status::kMisaligned, "must be 16-byte aligned");
  for (const auto& f : each(x_ld, kQ, s)) expect_error(f, Status::kMisaligned, "ld=260 (520 bytes) must be a multiple of 16");
  for (const auto& f : each(kX, q_base, s)) expect_error(f, Status::kMisaligned, "must be 8-byte aligned", "q");
  for (const auto& f : each(kX, q_ld, s)) expect_error(f, Status::kMisaligned, "ld=260 (260 bytes) must be a multiple of 8", "q");
  for (const auto& f : each(kX, kQ, fp(0x30001))) expect_error(f, Status::kMisaligned, "4-byte aligned");
  for (const auto& f : each(kX, kQ, nullptr)) expect_error(f, Status::kInvalidArgument, "null pointer");
  // An fp32 weight needs 16-byte rows too: ld % 4 == 0.
  expect_error([&] { quantize_fp8_weight(MatrixView(addr(0x10000), DType::kF32, M, K, K + 2), kQ, s,
                                         ScaleGranularity::kBlock128x128, nullptr); },
               Status::kMisaligned, "ld=258 (1032 bytes) must be a multiple of 16", "w");
}

TEST(QuantValidation, LdScalesAtLeastM) {
  float* s = fp(0x30000);
  expect_error([&] { quantize_fp8_per_token_group(kX, kQ, s, M - 1, false, nullptr); }, Status::kInvalidArgument,
               "ld_scales=3 must be >= M=4", "ld_scales");
  expect_error([&] { quantize_fp8_per_token_group(kX, kQ, s, -1, false, nullptr); }, Status::kInvalidArgument,
               "ld_scales=-1 must be >= M=4", "ld_scales");
}

// q overlapping x, and scales overlapping x or q, for every quantizer.
TEST(QuantValidation, OutputsMayNotOverlapTheInput) {
  float* s = fp(0x30000);
  // q starts inside x's 2 KiB.
  const MatrixView q_in_x(addr(0x10400), DType::kE4M3, M, K);
  expect_error([&] { quantize_fp8_per_token(kX, q_in_x, s, false, nullptr); }, Status::kInvalidArgument,
               "overlaps x", "q");
  expect_error([&] { quantize_fp8_per_token_group(kX, q_in_x, s, M, false, nullptr); }, Status::kInvalidArgument,
               "overlaps x", "q");
  expect_error([&] { quantize_fp8_weight(kX, q_in_x, s, ScaleGranularity::kGroup1x128, nullptr); },
               Status::kInvalidArgument, "overlaps w", "q");
  expect_error([&] { quantize_fp8_static(kX, q_in_x, static_cast<const float*>(s), nullptr); },
               Status::kInvalidArgument, "overlaps x", "q");
  expect_error([&] { quantize_fp8_static(kX, q_in_x, 1.0f, nullptr); }, Status::kInvalidArgument, "overlaps x", "q");
  // In place (q == x) is an overlap too.
  expect_error([&] { quantize_fp8_per_token(kX, MatrixView(addr(0x10000), DType::kE4M3, M, K), s, false, nullptr); },
               Status::kInvalidArgument, "overlaps x", "q");
  // Scales inside x, or inside q.
  expect_error([&] { quantize_fp8_per_token(kX, kQ, fp(0x107F0), false, nullptr); }, Status::kInvalidArgument,
               "overlaps x", "scales");
  expect_error([&] { quantize_fp8_per_token(kX, kQ, fp(0x20000), false, nullptr); }, Status::kInvalidArgument,
               "overlaps q", "scales");
  // 1x128 scales span (groups - 1) * ld_scales + M floats: with ld_scales = 64 the second group's
  // scales start 256 bytes in, which reach q at 0x20000 from 0x1FF00.
  expect_error([&] { quantize_fp8_per_token_group(kX, kQ, fp(0x1FF00), 64, false, nullptr); },
               Status::kInvalidArgument, "overlaps q", "scales");
  expect_error([&] { quantize_fp8_weight(kX, kQ, fp(0x20300), ScaleGranularity::kBlock128x128, nullptr); },
               Status::kInvalidArgument, "overlaps q", "scales");
  expect_error([&] { quantize_fp8_weight(kX, kQ, fp(0x10000), ScaleGranularity::kGroup1x128, nullptr); },
               Status::kInvalidArgument, "overlaps w", "scales");
}

}  // namespace
