// Bad input to sparse24_compress / sparse24_decompress (include/qsgemm/sparse24.h) is rejected
// before any GPU work with the documented status and a message naming the operand and value.
// Runs without a GPU (fake, aligned addresses). The given-scale checks need the device (the scales
// live there): tests/gpu/test_quant_gpu.cpp, Sparse24CompressGpu.*.
#include <gtest/gtest.h>

#include <cstdint>

#include "qsgemm/error.h"
#include "qsgemm/sparse24.h"
#include "validation_test_util.h"

namespace {

using namespace qsgemm;
using test::addr;
using test::expect_error;

constexpr int64_t N = 256, K = 512;
SparseFp8Weight weight(bool per_tensor = false) {
  return SparseFp8Weight{N, K, static_cast<uint8_t*>(addr(0x30000)), static_cast<uint8_t*>(addr(0x40000)),
                         static_cast<float*>(addr(0x50000)), per_tensor};
}
const MatrixView kW(addr(0x80000), DType::kBF16, N, K);

TEST(Sparse24CompressValidation, ScaleModeMustMatchPerTensorScale) {
  Sparse24CompressOptions opt;
  opt.scale = Sparse24Scale::kPerChannel;
  expect_error([&] { sparse24_compress(kW, weight(true), opt, addr(0x90000), nullptr); }, Status::kInvalidArgument,
               "must be false with Sparse24Scale::kPerChannel", "out.per_tensor_scale");
  opt.scale = Sparse24Scale::kPerTensor;
  expect_error([&] { sparse24_compress(kW, weight(false), opt, addr(0x90000), nullptr); }, Status::kInvalidArgument,
               "must be true with Sparse24Scale::kPerTensor", "out.per_tensor_scale");
}

TEST(Sparse24CompressValidation, OperandRules) {
  const Sparse24CompressOptions opt;
  const auto run = [&](const MatrixView& w, const SparseFp8Weight& out, void* ws) {
    return [=] { sparse24_compress(w, out, opt, ws, nullptr); };
  };
  expect_error(run(MatrixView(addr(0x80000), DType::kF16, N, K, K + 4), weight(), addr(0x90000)), Status::kMisaligned,
               "ld=516", "w");
  expect_error(run(MatrixView(nullptr, DType::kBF16, N, K), weight(), addr(0x90000)), Status::kInvalidArgument,
               "null pointer", "w");
  expect_error(run(MatrixView(addr(0x80000), DType::kBF16, 250, K), weight(), addr(0x90000)), Status::kInvalidArgument,
               "N=250 must be a multiple of 8");
  SparseFp8Weight out = weight();
  out.values = nullptr;
  expect_error(run(kW, out, addr(0x90000)), Status::kInvalidArgument, "null pointer", "w.values");
  out = weight();
  out.meta = static_cast<uint8_t*>(addr(0x40008));
  expect_error(run(kW, out, addr(0x90000)), Status::kMisaligned, "16-byte aligned", "w.meta");
  out = weight();
  out.scales = static_cast<float*>(addr(0x50002));
  expect_error(run(kW, out, addr(0x90000)), Status::kMisaligned, "4-byte aligned", "w.scales");
  expect_error(run(kW, weight(), addr(0x90004)), Status::kMisaligned, "8-byte aligned", "workspace");
  EXPECT_EQ(sparse24_compress_workspace_bytes(N, K), 32u);  // the status words, first bad scale included
}

TEST(Sparse24DecompressValidation, Rules) {
  const MatrixView out(addr(0xA0000), DType::kBF16, N, K);
  const auto run = [](const SparseFp8Weight& w, const MatrixView& o) { return [=] { sparse24_decompress(w, o, nullptr); }; };
  // dtype: bf16 or fp32 only.
  expect_error(run(weight(), MatrixView(addr(0xA0000), DType::kF16, N, K)), Status::kInvalidArgument, "dtype fp16", "out");
  expect_error(run(weight(), MatrixView(addr(0xA0000), DType::kE4M3, N, K)), Status::kInvalidArgument, "dtype e4m3", "out");
  // shape: out must be [N, K].
  expect_error(run(weight(), MatrixView(addr(0xA0000), DType::kBF16, N - 8, K)), Status::kInvalidArgument,
               "has 248 rows, expected 256", "out");
  expect_error(run(weight(), MatrixView(addr(0xA0000), DType::kBF16, N, K - 32)), Status::kInvalidArgument,
               "has 480 columns, expected 512", "out");
  // ld >= K.
  expect_error(run(weight(), MatrixView(addr(0xA0000), DType::kBF16, N, K, K - 8)), Status::kInvalidArgument, "ld", "out");
  // out alignment: the element size (bf16: 2, fp32: 4).
  expect_error(run(weight(), MatrixView(addr(0xA0001), DType::kBF16, N, K)), Status::kMisaligned, "2-byte aligned", "out");
  expect_error(run(weight(), MatrixView(addr(0xA0002), DType::kF32, N, K)), Status::kMisaligned, "4-byte aligned", "out");
  // The weight's shape rules and buffers.
  SparseFp8Weight w = weight();
  w.K = 100;
  expect_error(run(w, MatrixView(addr(0xA0000), DType::kBF16, N, 100)), Status::kInvalidArgument,
               "K=100 must be a multiple of 32");
  w = weight();
  w.N = 0;
  expect_error(run(w, MatrixView(addr(0xA0000), DType::kBF16, 0, K)), Status::kInvalidArgument, "must be positive");
  w = weight();
  w.values = nullptr;
  expect_error(run(w, out), Status::kInvalidArgument, "null pointer", "w.values");
  w = weight();
  w.meta = nullptr;
  expect_error(run(w, out), Status::kInvalidArgument, "null pointer", "w.meta");
  w = weight();
  w.scales = nullptr;
  expect_error(run(w, out), Status::kInvalidArgument, "null pointer", "w.scales");
  w = weight();
  w.values = static_cast<uint8_t*>(addr(0x30008));
  expect_error(run(w, out), Status::kMisaligned, "16-byte aligned", "w.values");
  expect_error(run(weight(), MatrixView(nullptr, DType::kBF16, N, K)), Status::kInvalidArgument, "null pointer", "out");
}

}  // namespace
