// GPU FP8 quantizers are bit-identical (codes and scales) to the CPU reference.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"

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

}  // namespace
