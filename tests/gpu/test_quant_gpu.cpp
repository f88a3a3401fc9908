// GPU FP8 quantizers (and the 2:4 compressor's quantization) are bit-identical (codes and scales)
// to the CPU reference, also for tiny groups; bad static / given scales are never a silent NaN.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/error.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;

struct Input {
  std::vector<float> host;      // the exact values the device sees
  std::vector<uint16_t> bits16; // bf16/fp16 device copy
  DeviceBuffer<uint8_t> dev;
};

void make_input(Input& in, DType t, int64_t rows, int64_t cols, int64_t ld, std::mt19937& rng) {
  in.host = random_floats(static_cast<size_t>(rows * ld), rng, 3.0f);
  // Vary the row magnitudes so that scales differ, and put an exact zero row in when possible.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c) in.host[r * ld + c] *= (r % 5 == 4) ? 0.0f : std::ldexp(1.0f, static_cast<int>(r % 7) - 3);
  if (t == DType::kF32) {
    in.dev.resize(in.host.size() * 4);
    EXPECT_EQ(cudaMemcpy(in.dev.get(), in.host.data(), in.host.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    return;
  }
  in.bits16 = t == DType::kBF16 ? to_bf16(in.host) : to_fp16(in.host);
  in.dev.resize(in.bits16.size() * 2);
  EXPECT_EQ(cudaMemcpy(in.dev.get(), in.bits16.data(), in.bits16.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

TEST(QuantGpu, PerTokenAndGroupsBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(42);
  for (DType t : {DType::kBF16, DType::kF16})
    for (int64_t M : {1, 3, 17, 129})
      for (int64_t K : {8, 120, 128, 136, 400, 4096, 33280})  // 33280: past the register-resident rows
        for (bool pow2 : {false, true}) {
          SCOPED_TRACE(testing::Message() << dtype_name(t) << " M=" << M << " K=" << K << " pow2=" << pow2);
          const int64_t ldx = K + 8, ldq = K + 16, lds = M + 3, G = (K + 127) / 128;
          Input in;
          make_input(in, t, M, K, ldx, rng);
          DeviceBuffer<uint8_t> q(M * ldq);
          DeviceBuffer<float> s(G * lds);
          // per token
          q.poison();
          s.poison();
          quantize_fp8_per_token(MatrixView(in.dev.get(), t, M, K, ldx), MatrixView(q.get(), DType::kE4M3, M, K, ldq),
                                 s.get(), pow2, nullptr);
          QSGEMM_CUDA_OK(cudaDeviceSynchronize());
          std::vector<uint8_t> q_ref(M * ldq, 0xFF);
          std::vector<float> s_ref(G * lds);
          ref::quantize_fp8_per_row(in.host.data(), M, K, ldx, q_ref.data(), ldq, s_ref.data(), pow2);
          std::vector<uint8_t> q_gpu = q.download();
          std::vector<float> s_gpu = s.download();
          for (int64_t m = 0; m < M; ++m) {
            ASSERT_EQ(s_gpu[m], s_ref[m]) << "row " << m;
            for (int64_t k = 0; k < K; ++k) ASSERT_EQ(q_gpu[m * ldq + k], q_ref[m * ldq + k]) << m << "," << k;
          }
          // 1x128 groups, M-major scales with ld > M
          q.poison();
          s.poison();
          quantize_fp8_per_token_group(MatrixView(in.dev.get(), t, M, K, ldx),
                                       MatrixView(q.get(), DType::kE4M3, M, K, ldq), s.get(), lds, pow2, nullptr);
          QSGEMM_CUDA_OK(cudaDeviceSynchronize());
          ref::quantize_fp8_1x128(in.host.data(), M, K, ldx, q_ref.data(), ldq, s_ref.data(), lds, pow2);
          q_gpu = q.download();
          s_gpu = s.download();
          for (int64_t g = 0; g < G; ++g)
            for (int64_t m = 0; m < M; ++m) ASSERT_EQ(s_gpu[g * lds + m], s_ref[g * lds + m]) << "g=" << g << " m=" << m;
          for (int64_t m = 0; m < M; ++m)
            for (int64_t k = 0; k < K; ++k) ASSERT_EQ(q_gpu[m * ldq + k], q_ref[m * ldq + k]) << m << "," << k;
        }
}

TEST(QuantGpu, WeightBlocksAndRowGroupsBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(43);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{1, 8}, {130, 264}, {256, 128}, {200, 1000}}) {
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " N=" << N << " K=" << K);
      const int64_t ld = K + 8, kb = (K + 127) / 128, nb = (N + 127) / 128;
      Input in;
      make_input(in, t, N, K, ld, rng);
      DeviceBuffer<uint8_t> q(N * K);
      DeviceBuffer<float> s(N * kb);
      for (ScaleGranularity g : {ScaleGranularity::kBlock128x128, ScaleGranularity::kGroup1x128}) {
        q.poison();
        s.poison();
        quantize_fp8_weight(MatrixView(in.dev.get(), t, N, K, ld), MatrixView(q.get(), DType::kE4M3, N, K), s.get(), g,
                            nullptr);
        QSGEMM_CUDA_OK(cudaDeviceSynchronize());
        std::vector<uint8_t> q_ref(N * K);
        std::vector<float> s_ref(N * kb);
        const bool blocks = g == ScaleGranularity::kBlock128x128;
        if (blocks)
          ref::quantize_fp8_128x128(in.host.data(), N, K, ld, q_ref.data(), K, s_ref.data());
        else
          ref::quantize_fp8_row_groups(in.host.data(), N, K, ld, q_ref.data(), K, s_ref.data());
        const std::vector<uint8_t> q_gpu = q.download();
        const std::vector<float> s_gpu = s.download();
        const int64_t n_scales = blocks ? nb * kb : N * kb;
        for (int64_t i = 0; i < n_scales; ++i) ASSERT_EQ(s_gpu[i], s_ref[i]) << granularity_name(g) << " scale " << i;
        for (int64_t i = 0; i < N * K; ++i) ASSERT_EQ(q_gpu[i], q_ref[i]) << granularity_name(g) << " code " << i;
      }
    }
}

// Every bf16 bit pattern (NaN, Inf, subnormals, both zeros) through the static quantizer with
// scale 1: the hardware conversion equals fp8_e4m3_encode.
TEST(QuantGpu, StaticEveryBf16PatternMatchesHostEncoder) {
  QSGEMM_REQUIRE_SM90();
  std::vector<uint16_t> bits(65536);
  for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
  DeviceBuffer<uint16_t> x(65536);
  x.upload(bits);
  DeviceBuffer<uint8_t> q(65536);
  q.poison(0x11);
  DeviceBuffer<float> s(1);
  s.upload({1.0f});
  quantize_fp8_static(MatrixView(x.get(), DType::kBF16, 256, 256), MatrixView(q.get(), DType::kE4M3, 256, 256), s.get(),
                      nullptr);
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint8_t> got = q.download();
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(got[i], fp8_e4m3_encode(bf16_decode(static_cast<uint16_t>(i)))) << "bf16 bits 0x" << std::hex << i;
}

TEST(QuantGpu, EmptyInputIsANoOp) {
  QSGEMM_REQUIRE_SM90();
  EXPECT_NO_THROW(quantize_fp8_per_token(MatrixView(nullptr, DType::kBF16, 0, 128),
                                         MatrixView(nullptr, DType::kE4M3, 0, 128), nullptr, false, nullptr));
}

// ---- bad static scales ----------------------------------------------------------------------

const std::vector<float>& bad_scales() {
  using L = std::numeric_limits<float>;
  static const std::vector<float> v = {0.0f, -0.0f, -0.5f, L::denorm_min(), FLT_MIN / 2, L::quiet_NaN(), L::infinity(),
                                       -L::infinity()};
  return v;
}

// Host scale: bit-identical to the reference for a good scale (and to the device-scale overload).
TEST(QuantGpu, StaticHostScaleBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(44);
  for (DType t : {DType::kBF16, DType::kF16})
    for (auto [M, K] : {std::pair<int64_t, int64_t>{1, 8}, {37, 264}, {300, 4096}}) {
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " M=" << M << " K=" << K);
      const float scale = 0.0371f;
      Input in;
      make_input(in, t, M, K, K, rng);
      DeviceBuffer<uint8_t> q(M * K), q_dev(M * K);
      DeviceBuffer<float> s(1);
      DeviceBuffer<int32_t> flag(1);
      s.upload({scale});
      flag.upload({0});
      q.poison();
      q_dev.poison();
      quantize_fp8_static(MatrixView(in.dev.get(), t, M, K), MatrixView(q.get(), DType::kE4M3, M, K), scale, nullptr);
      quantize_fp8_static(MatrixView(in.dev.get(), t, M, K), MatrixView(q_dev.get(), DType::kE4M3, M, K), s.get(),
                          nullptr, flag.get());
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());
      std::vector<uint8_t> q_ref(M * K);
      ref::quantize_fp8_static(in.host.data(), M, K, K, q_ref.data(), K, scale);
      EXPECT_EQ(q.download(), q_ref);
      EXPECT_EQ(q_dev.download(), q_ref);
      EXPECT_EQ(flag.download()[0], 0);  // a good scale leaves the flag alone
    }
}

// Device scale that is 0, negative, subnormal, NaN or Inf: q is all zeros (never NaN codes), the
// error flag is set, and it stays set through a later good call (the caller clears it).
TEST(QuantGpu, StaticBadDeviceScaleWritesZerosAndSetsTheFlag) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(45);
  const int64_t M = 70, K = 1032;
  Input in;
  make_input(in, DType::kBF16, M, K, K, rng);
  const MatrixView x(in.dev.get(), DType::kBF16, M, K);
  DeviceBuffer<uint8_t> q(M * K);
  DeviceBuffer<float> s(1);
  DeviceBuffer<int32_t> flag(1);
  for (float bad : bad_scales()) {
    SCOPED_TRACE(testing::Message() << "scale=" << bad);
    s.upload({bad});
    flag.upload({0});
    q.poison();
    quantize_fp8_static(x, MatrixView(q.get(), DType::kE4M3, M, K), s.get(), nullptr, flag.get());
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(flag.download()[0], 1);
    EXPECT_EQ(q.download(), std::vector<uint8_t>(M * K, 0));
    std::vector<uint8_t> q_ref(M * K, 0xFF);
    ref::quantize_fp8_static(in.host.data(), M, K, K, q_ref.data(), K, bad);
    EXPECT_EQ(q.download(), q_ref);  // the reference writes the same zeros
    // Sticky: a good scale afterwards quantizes normally and leaves the flag set.
    s.upload({1.0f});
    quantize_fp8_static(x, MatrixView(q.get(), DType::kE4M3, M, K), s.get(), nullptr, flag.get());
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(flag.download()[0], 1);
    // Without a flag: still zeros, never NaN.
    s.upload({bad});
    q.poison();
    quantize_fp8_static(x, MatrixView(q.get(), DType::kE4M3, M, K), s.get(), nullptr);
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(q.download(), std::vector<uint8_t>(M * K, 0));
  }
}

TEST(QuantGpu, StaticBadHostScaleThrowsBeforeAnyWork) {
  QSGEMM_REQUIRE_SM90();
  DeviceBuffer<uint16_t> x(8 * 64);
  DeviceBuffer<uint8_t> q(8 * 64);
  q.poison(0x11);
  for (float bad : bad_scales()) {
    try {
      quantize_fp8_static(MatrixView(x.get(), DType::kBF16, 8, 64), MatrixView(q.get(), DType::kE4M3, 8, 64), bad,
                          nullptr);
      ADD_FAILURE() << "no error for scale " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::kInvalidValue) << e.what();
      EXPECT_EQ(e.operand(), "scale");
    }
  }
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(q.download(), std::vector<uint8_t>(8 * 64, 0x11));  // nothing was written
}

// ---- tiny groups ------------------------------------------------------------------------------

// Rows whose amax is tiny but non-zero (1e-38 and 1e-40: a subnormal amax / 448), mixed with
// ordinary rows and an all-zero row. Magnitudes are bf16-exact (bf16 has float's exponent range).
std::vector<float> tiny_rows(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<float> v = random_floats(static_cast<size_t>(rows * cols), rng, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float mag = r % 4 == 0 ? 1e-38f : r % 4 == 1 ? 1e-40f : r % 4 == 2 ? 3.0f : 0.0f;
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] = (c % 5 == 0) ? 0.0f : v[r * cols + c] * mag;
  }
  return v;
}

void upload_as(DeviceBuffer<uint8_t>& dev, std::vector<float>& host, DType t) {
  if (t == DType::kF32) {
    dev.resize(host.size() * 4);
    EXPECT_EQ(cudaMemcpy(dev.get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    return;
  }
  const std::vector<uint16_t> bits = to_bf16(host);  // host becomes the bf16 values
  dev.resize(bits.size() * 2);
  EXPECT_EQ(cudaMemcpy(dev.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

void expect_finite_codes(const std::vector<uint8_t>& q) {
  for (size_t i = 0; i < q.size(); ++i) ASSERT_NE(q[i] & 0x7F, 0x7F) << "NaN code at " << i;
}

TEST(QuantGpu, TinyAmaxRowsEveryQuantizerBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(46);
  // Activations (bf16): per-token over the kernel paths (warp rows, resident rows, two passes) and
  // 1x128 groups.
  for (int64_t K : {128, 1032, 2048, 33280})
    for (bool pow2 : {false, true}) {
      const int64_t M = 12, G = (K + 127) / 128;
      SCOPED_TRACE(testing::Message() << "activations K=" << K << " pow2=" << pow2);
      std::vector<float> host = tiny_rows(M, K, rng);
      DeviceBuffer<uint8_t> x;
      upload_as(x, host, DType::kBF16);
      DeviceBuffer<uint8_t> q(M * K);
      DeviceBuffer<float> s(G * M);
      std::vector<uint8_t> q_ref(M * K);
      std::vector<float> s_ref(G * M);
      quantize_fp8_per_token(MatrixView(x.get(), DType::kBF16, M, K), MatrixView(q.get(), DType::kE4M3, M, K), s.get(),
                             pow2, nullptr);
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());
      ref::quantize_fp8_per_row(host.data(), M, K, K, q_ref.data(), K, s_ref.data(), pow2);
      EXPECT_EQ(s_ref[0], FLT_MIN);
      EXPECT_EQ(s_ref[1], FLT_MIN);
      std::vector<float> s_gpu = s.download();
      for (int64_t m = 0; m < M; ++m) ASSERT_EQ(s_gpu[m], s_ref[m]) << "row " << m;
      EXPECT_EQ(q.download(), q_ref);
      expect_finite_codes(q_ref);
      quantize_fp8_per_token_group(MatrixView(x.get(), DType::kBF16, M, K), MatrixView(q.get(), DType::kE4M3, M, K),
                                   s.get(), M, pow2, nullptr);
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());
      ref::quantize_fp8_1x128(host.data(), M, K, K, q_ref.data(), K, s_ref.data(), M, pow2);
      EXPECT_EQ(s.download(), s_ref);
      EXPECT_EQ(q.download(), q_ref);
      expect_finite_codes(q_ref);
    }
  // Weights (bf16 and fp32): 128x128 blocks and per-channel 1x128 groups. Rows 0-127 are made all
  // tiny (the ordinary rows scaled by 1e-39), so that the first block row has tiny blocks too.
  for (DType t : {DType::kBF16, DType::kF32}) {
    const int64_t N = 256, K = 384, kb = 3;
    SCOPED_TRACE(testing::Message() << "weights " << dtype_name(t));
    std::vector<float> host = tiny_rows(N, K, rng);
    for (int64_t i = 0; i < 128 * K; ++i) host[i] *= (i / K) % 4 == 2 ? 1e-39f : 1.0f;
    DeviceBuffer<uint8_t> w;
    upload_as(w, host, t);
    DeviceBuffer<uint8_t> q(N * K);
    DeviceBuffer<float> s(N * kb);
    for (ScaleGranularity g : {ScaleGranularity::kBlock128x128, ScaleGranularity::kGroup1x128}) {
      const bool blocks = g == ScaleGranularity::kBlock128x128;
      q.poison();
      s.poison();
      quantize_fp8_weight(MatrixView(w.get(), t, N, K), MatrixView(q.get(), DType::kE4M3, N, K), s.get(), g, nullptr);
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());
      std::vector<uint8_t> q_ref(N * K);
      std::vector<float> s_ref(N * kb);
      if (blocks)
        ref::quantize_fp8_128x128(host.data(), N, K, K, q_ref.data(), K, s_ref.data());
      else
        ref::quantize_fp8_row_groups(host.data(), N, K, K, q_ref.data(), K, s_ref.data());
      const int64_t n_scales = blocks ? 2 * kb : N * kb;
      const std::vector<float> s_gpu = s.download();
      EXPECT_EQ(s_ref[0], FLT_MIN) << granularity_name(g);
      for (int64_t i = 0; i < n_scales; ++i) ASSERT_EQ(s_gpu[i], s_ref[i]) << granularity_name(g) << " scale " << i;
      EXPECT_EQ(q.download(), q_ref) << granularity_name(g);
      expect_finite_codes(q_ref);
    }
  }
}

// The compressor's per-channel and per-tensor scales take the same floor (fast path and the
// two-pass fallback for long rows).
TEST(Sparse24CompressGpu, TinyAmaxRowsBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(47);
  for (DType t : {DType::kBF16, DType::kF32})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{64, 512}, {8, 33024}})
      for (bool per_tensor : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtype_name(t) << " N=" << N << " K=" << K << " per_tensor=" << per_tensor);
        std::vector<float> host = tiny_rows(N, K, rng);
        if (per_tensor)  // the whole tensor tiny (the ordinary rows too): the per-tensor scale is clamped
          for (auto& v : host)
            if (std::fabs(v) > 1e-30f) v *= 1e-38f;
        DeviceBuffer<uint8_t> w;
        upload_as(w, host, t);
        const Sparse24WeightBytes b = sparse24_weight_bytes(N, K, per_tensor);
        DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
        DeviceBuffer<float> scales(b.scales / 4);
        values.poison();
        Sparse24CompressOptions opt;
        opt.scale = per_tensor ? Sparse24Scale::kPerTensor : Sparse24Scale::kPerChannel;
        const SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), per_tensor};
        ASSERT_NO_THROW(sparse24_compress(MatrixView(w.get(), t, N, K), v, opt, ws.get(), nullptr));
        ref::Sparse24Host ref_w;
        ASSERT_TRUE(ref::sparse24_compress(host.data(), N, K, K, ref::PruneMode::kMagnitude,
                                           per_tensor ? ref::WeightScale::kPerTensor : ref::WeightScale::kPerChannel,
                                           nullptr, per_tensor, &ref_w));
        EXPECT_EQ(ref_w.scales[0], FLT_MIN);  // row 0 (per-channel) or the whole tensor is tiny
        EXPECT_EQ(scales.download(), ref_w.scales);
        EXPECT_EQ(values.download(), ref_w.values);
        EXPECT_EQ(meta.download(), ref_w.meta);
        expect_finite_codes(ref_w.values);
      }
}

// ---- bad given scales in the compressor -------------------------------------------------------

// A given scale of 0, negative, subnormal, NaN or Inf is rejected with the channel named (the first
// bad one), after the device wrote zeros (not NaN) for the rows it scales.
TEST(Sparse24CompressGpu, BadGivenScaleIsRejectedWithTheChannel) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(48);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{64, 512}, {16, 65536}})  // fast path, two-pass fallback (bf16)
    for (bool per_tensor : {false, true})
      for (float bad : bad_scales()) {
        SCOPED_TRACE(testing::Message() << "N=" << N << " K=" << K << " per_tensor=" << per_tensor << " bad=" << bad);
        std::vector<float> host = random_floats(static_cast<size_t>(N * K), rng, 2.0f);
        DeviceBuffer<uint8_t> w;
        upload_as(w, host, DType::kBF16);
        const Sparse24WeightBytes b = sparse24_weight_bytes(N, K, per_tensor);
        DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
        DeviceBuffer<float> scales(b.scales / 4);
        std::vector<float> given(b.scales / 4, 0.01f);
        const int64_t first_bad = per_tensor ? 0 : 5;
        given[first_bad] = bad;
        if (!per_tensor) given[9] = -1.0f;  // a second bad channel: the first is reported
        scales.upload(given);
        values.poison();
        Sparse24CompressOptions opt;
        opt.scale = Sparse24Scale::kGiven;
        const SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), per_tensor};
        try {
          sparse24_compress(MatrixView(w.get(), DType::kBF16, N, K), v, opt, ws.get(), nullptr);
          ADD_FAILURE() << "no error";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), Status::kInvalidValue) << e.what();
          EXPECT_EQ(e.operand(), "out.scales") << e.what();
          const std::string needle = "given scale of channel " + std::to_string(first_bad) + " (out.scales[" +
                                     std::to_string(first_bad) + "]";
          EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
        // The rows of the bad scale hold zero codes, never NaN; the others are untouched by it.
        const std::vector<uint8_t> got = values.download();
        const int64_t row_bytes = K / 2;
        for (int64_t n = 0; n < N; ++n) {
          const bool bad_row = per_tensor || n == first_bad || n == 9;
          for (int64_t i = 0; i < row_bytes; ++i) {
            const uint8_t c = got[n * row_bytes + i];
            ASSERT_NE(c & 0x7F, 0x7F) << "NaN code at row " << n;
            if (bad_row) ASSERT_EQ(c & 0x7F, 0) << "row " << n << " byte " << i;
          }
        }
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      }
}

// Good given scales (any positive normal value, FLT_MIN and FLT_MAX included) are accepted.
TEST(Sparse24CompressGpu, ExtremeButValidGivenScalesAreAccepted) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(49);
  const int64_t N = 16, K = 256;
  std::vector<float> host = random_floats(static_cast<size_t>(N * K), rng, 2.0f);
  DeviceBuffer<uint8_t> w;
  upload_as(w, host, DType::kBF16);
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
  DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
  DeviceBuffer<float> scales(N);
  std::vector<float> given(N, 0.02f);
  given[0] = FLT_MIN;
  given[1] = FLT_MAX;
  scales.upload(given);
  Sparse24CompressOptions opt;
  opt.scale = Sparse24Scale::kGiven;
  const SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), false};
  ASSERT_NO_THROW(sparse24_compress(MatrixView(w.get(), DType::kBF16, N, K), v, opt, ws.get(), nullptr));
  ref::Sparse24Host ref_w;
  ASSERT_TRUE(ref::sparse24_compress(host.data(), N, K, K, ref::PruneMode::kMagnitude, ref::WeightScale::kGiven,
                                     given.data(), false, &ref_w));
  EXPECT_EQ(values.download(), ref_w.values);
}

}  // namespace
