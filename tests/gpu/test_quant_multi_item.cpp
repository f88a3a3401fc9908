// The quantizers' multi-item workers, bit for bit against the CPU reference.
//
// The short-row per-token kernel (K <= 1024: quantize_rows_warp) and the static kernel
// (quantize_static) in src/kernels/sm90/quant/sm90_quantize_fp8.cu launch at most one wave of
// workers (a fixed number of blocks per SM) and every worker walks several items with the stride
// of the grid, loading its next item before it stores the current one (pipelined()). A worker takes
// more than one item only past these sizes (16-bit input: 4 blocks of 8 warps per SM for the
// per-token kernel, 3 blocks of 256 threads for the static one; fp32 input: 2 and 2):
//   per-token, kLanes lanes per row, kSets sets: a warp's item is kRows = 32 / kLanes * kSets rows
//     K <= 64: 16 rows, <= 128: 8, <= 256: 4, <= 512: 2, <= 1024: 1;
//     multi-item when ceil(M / kRows) > sm_count * 4 * 8 warps (fp32 weights: * 2 * 8),
//     e.g. M > 4224 at K = 1024 on 132 SMs;
//   static: an item is 256 threads x 4 chunks of 8 = 8192 elements;
//     multi-item when M * K / 8192 > sm_count * 3 (3.24M elements on 132 SMs).
// The other tests stay below those sizes; here each path gets 2-3 rounds per worker and a partial
// last round (rows past the end), with both 16-bit input types, pow2 scales, padded leading
// dimensions, and the static kernel's position stepping (d_r = 0: a step shorter than a row; many
// rows per step with 3 chunks a row). Sizes come from the device's SM count.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;

// Blocks per SM and warps per block of the one-wave grids (sm90_quantize_fp8.cu: kBlocks64,
// kBlocks85, kThreads).
constexpr int64_t kWarpsPerBlock = 8;
int64_t per_token_resident_warps(DType t) { return int64_t{device_sm_count()} * (t == DType::kF32 ? 2 : 4) * kWarpsPerBlock; }
int64_t static_resident_blocks(DType t) { return int64_t{device_sm_count()} * (t == DType::kF32 ? 2 : 3); }
int64_t rows_per_item(int64_t K) { return K <= 64 ? 16 : K <= 128 ? 8 : K <= 256 ? 4 : K <= 512 ? 2 : 1; }

// Random input [rows][ld] (padding columns included) with row magnitudes over 2^-3..2^3 and an
// all-zero row every 97 rows; `host` holds exactly the values the device sees.
struct Input {
  std::vector<float> host;
  DeviceBuffer<uint8_t> dev;
};
void make_input(Input& in, DType t, int64_t rows, int64_t ld, std::mt19937& rng) {
  in.host = random_floats(static_cast<size_t>(rows * ld), rng, 3.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float f = r % 97 == 50 ? 0.0f : std::ldexp(1.0f, static_cast<int>(r % 7) - 3);
    for (int64_t c = 0; c < ld; ++c) in.host[r * ld + c] *= f;
  }
  if (t == DType::kF32) {
    in.dev.resize(in.host.size() * 4);
    EXPECT_EQ(cudaMemcpy(in.dev.get(), in.host.data(), in.host.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    return;
  }
  const std::vector<uint16_t> bits = t == DType::kBF16 ? to_bf16(in.host) : to_fp16(in.host);
  in.dev.resize(bits.size() * 2);
  EXPECT_EQ(cudaMemcpy(in.dev.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

// Codes [rows][ldq]: the first K of each row equal, the padding keeps the poison byte 0x11.
void expect_codes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, int64_t rows, int64_t K,
                  int64_t ldq) {
  int64_t bad = 0, pad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < K; ++k)
      if (got[r * ldq + k] != want[r * ldq + k] && bad++ < 3)
        ADD_FAILURE() << "code (" << r << ", " << k << "): got 0x" << std::hex << int{got[r * ldq + k]} << ", want 0x"
                      << int{want[r * ldq + k]};
    for (int64_t k = K; k < ldq; ++k) pad += got[r * ldq + k] != 0x11;
  }
  EXPECT_EQ(bad, 0) << "codes differ from the CPU reference";
  EXPECT_EQ(pad, 0) << "bytes of q's padding columns were written";
}

// Scales: every one equal to the CPU's (the first mismatches reported).
void expect_scales(const std::vector<float>& got, const std::vector<float>& want, int64_t count, int64_t stride = 1) {
  int64_t bad = 0;
  for (int64_t i = 0; i < count; ++i)
    if (!(got[i * stride] == want[i * stride]) && bad++ < 3)
      ADD_FAILURE() << "scale of row " << i << ": got " << got[i * stride] << ", want " << want[i * stride];
  EXPECT_EQ(bad, 0) << "scales differ from the CPU reference";
}

// Per-token (and 1x128 groups at K <= 128, which takes the same kernel), every row-per-item class.
TEST(QuantMultiItem, PerTokenShortRowsBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(4201);
  int i = 0;
  for (int64_t K : {64, 128, 256, 512, 1024}) {
    const DType t = i % 2 ? DType::kF16 : DType::kBF16;
    const bool pow2 = i % 3 == 1;
    ++i;
    // 2.3 rounds of items per resident warp, and a partial item at the end.
    const int64_t rows = rows_per_item(K) * (per_token_resident_warps(t) * 23 / 10) + rows_per_item(K) / 2 + 1;
    const int64_t ldx = K + 8, ldq = K + 16;
    SCOPED_TRACE(testing::Message() << dtype_name(t) << " M=" << rows << " K=" << K << " pow2=" << pow2);
    EXPECT_GT((rows + rows_per_item(K) - 1) / rows_per_item(K), 2 * per_token_resident_warps(t))
        << "the shape no longer takes several items per warp";
    Input in;
    make_input(in, t, rows, ldx, rng);
    DeviceBuffer<uint8_t> q(static_cast<size_t>(rows * ldq));
    DeviceBuffer<float> s(static_cast<size_t>(rows));
    q.poison(0x11);
    s.poison();
    ASSERT_NO_THROW(quantize_fp8_per_token(MatrixView(in.dev.get(), t, rows, K, ldx),
                                           MatrixView(q.get(), DType::kE4M3, rows, K, ldq), s.get(), pow2, nullptr));
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> q_ref(static_cast<size_t>(rows * ldq), 0x11);
    std::vector<float> s_ref(static_cast<size_t>(rows));
    ref::quantize_fp8_per_row(in.host.data(), rows, K, ldx, q_ref.data(), ldq, s_ref.data(), pow2);
    expect_scales(s.download(), s_ref, rows);
    expect_codes(q.download(), q_ref, rows, K, ldq);
    if (HasFailure()) return;
    if (K > 128) continue;
    // 1x128 groups with one group per row: the same kernel, M-major scales with ld > M.
    const int64_t lds = rows + 5;
    DeviceBuffer<float> sg(static_cast<size_t>(lds));
    q.poison(0x11);
    sg.poison();
    ASSERT_NO_THROW(quantize_fp8_per_token_group(MatrixView(in.dev.get(), t, rows, K, ldx),
                                                 MatrixView(q.get(), DType::kE4M3, rows, K, ldq), sg.get(), lds, pow2,
                                                 nullptr));
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    std::vector<float> sg_ref(static_cast<size_t>(lds), 0.0f);
    ref::quantize_fp8_1x128(in.host.data(), rows, K, ldx, q_ref.data(), ldq, sg_ref.data(), lds, pow2);
    expect_scales(sg.download(), sg_ref, rows);
    expect_codes(q.download(), q_ref, rows, K, ldq);
    if (HasFailure()) return;
  }
}

// fp32 weights with per-channel groups at K <= 128: the per-token kernel with float chunks (2 blocks
// per SM), scales row-major [N][1].
TEST(QuantMultiItem, WeightRowGroupsFp32BitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(4202);
  for (int64_t K : {64, 128}) {
    const int64_t rows = rows_per_item(K) * (per_token_resident_warps(DType::kF32) * 23 / 10) + 3;
    SCOPED_TRACE(testing::Message() << "fp32 N=" << rows << " K=" << K);
    EXPECT_GT((rows + rows_per_item(K) - 1) / rows_per_item(K), 2 * per_token_resident_warps(DType::kF32));
    Input in;
    make_input(in, DType::kF32, rows, K, rng);
    DeviceBuffer<uint8_t> q(static_cast<size_t>(rows * K));
    DeviceBuffer<float> s(static_cast<size_t>(rows));
    q.poison(0x11);
    s.poison();
    ASSERT_NO_THROW(quantize_fp8_weight(MatrixView(in.dev.get(), DType::kF32, rows, K),
                                        MatrixView(q.get(), DType::kE4M3, rows, K), s.get(), ScaleGranularity::kGroup1x128,
                                        nullptr));
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> q_ref(static_cast<size_t>(rows * K));
    std::vector<float> s_ref(static_cast<size_t>(rows));
    ref::quantize_fp8_row_groups(in.host.data(), rows, K, K, q_ref.data(), K, s_ref.data());
    expect_scales(s.download(), s_ref, rows);
    expect_codes(q.download(), q_ref, rows, K, K);
    if (HasFailure()) return;
  }
}

// Static scale: several rounds per thread, with rows of 3 chunks (many rows per step), 125 chunks
// (padded leading dimensions) and 131073 chunks (a step shorter than a row: d_r = 0).
TEST(QuantMultiItem, StaticBitIdentical) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(4203);
  struct Shape {
    DType t;
    int64_t rows, cols, pad_x, pad_q;
  };
  const int64_t elems = 8192 * static_resident_blocks(DType::kBF16);  // one round of the whole grid
  for (const Shape& sh : {Shape{DType::kBF16, elems * 23 / 10 / 24 + 1, 24, 0, 0},
                          Shape{DType::kF16, elems * 3 / 1000 + 7, 1000, 8, 16},
                          Shape{DType::kBF16, 8, 1048584, 0, 8}}) {
    const int64_t ldx = sh.cols + sh.pad_x, ldq = sh.cols + sh.pad_q;
    SCOPED_TRACE(testing::Message() << dtype_name(sh.t) << " M=" << sh.rows << " K=" << sh.cols);
    EXPECT_GT(sh.rows * sh.cols, 2 * 8192 * static_resident_blocks(sh.t)) << "the shape no longer takes several rounds";
    Input in;
    make_input(in, sh.t, sh.rows, ldx, rng);
    const float scale = 0.0371f;  // not a power of two: the reciprocal's rounding is exercised too
    DeviceBuffer<float> sd(1);
    sd.upload({scale});
    DeviceBuffer<uint8_t> q(static_cast<size_t>(sh.rows * ldq));
    q.poison(0x11);
    ASSERT_NO_THROW(quantize_fp8_static(MatrixView(in.dev.get(), sh.t, sh.rows, sh.cols, ldx),
                                        MatrixView(q.get(), DType::kE4M3, sh.rows, sh.cols, ldq), sd.get(), nullptr));
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> q_ref(static_cast<size_t>(sh.rows * ldq), 0x11);
    ref::quantize_fp8_static(in.host.data(), sh.rows, sh.cols, ldx, q_ref.data(), ldq, scale);
    expect_codes(q.download(), q_ref, sh.rows, sh.cols, ldq);
    if (HasFailure()) return;
  }
}

}  // namespace
