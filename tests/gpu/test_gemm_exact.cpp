// Exact small-integer GEMM tests, as CUTLASS's testbed does: every configuration of both families,
// forced by index, on operands whose products and sums are exact in float32, so that every element
// of the output must equal the float64 reference bit for bit (EXPECT on every element, the first
// mismatches reported as (row, col); gpu_test_util.h, expect_elements_exact).
//
// Why the results are exact:
//  * x and w hold integers in [-2, 2] (exact e4m3 codes), the scales are powers of two in
//    [2^-2, 2^2] (per-token / per-channel / per-group / per-block, whichever the family takes), the
//    bias (fp32) multiples of 1/4 in [-4, 4]. Every product x·w is an integer of magnitude <= 4.
//  * Inside the tensor cores the FP8 partial sums keep only ~14 bits (the reason the kernels
//    promote to float32 every 128 / 256 of K), but a sum of integers stays exact while it stays
//    below 2^11 in magnitude (aligned to its largest exponent, ~13 bits of fraction are left):
//      - promoted kernels: a promotion interval holds at most 128 products (blockwise: 128 of K;
//        sparse: 256 of K, of which 128 are kept by the 2:4 pattern): |partial| <= 512;
//      - sparse fast accumulation (no promotion): K = 544, 272 kept products: |sum| <= 1088 < 2^11;
//      - the decode ("skinny") kernels sum fp16 products (exact: e4m3 integers) in float32.
//  * Scaled and summed in float32: each term is an integer times a power of two in [2^-4, 2^4],
//    at most 512·2^4·33 groups < 2^18.1 in magnitude on a grid of 2^-4 (22.1 bits), plus the bias
//    (grid 2^-2, |b| <= 4): below 2^24 units, so every float32 operation on the way (scale products,
//    FMAs, split-K and stream-K partial-tile sums, the bias add) is exact, in any order.
//  The float64 reference (qsgemm/reference.h) is then exact too, and the test checks that each
//  reference value is representable in float32 (its own premise).
//
// fp32 output for every configuration (with and without bias, padded output rows whose padding must
// stay untouched, per-token and per-tensor scales), split-K on every data-parallel configuration;
// bf16 output in a test of its own (the exact float32 value rounded once to nearest-even, as every
// epilogue does: CUTLASS's round_to_nearest, __float2bfloat16_rn in the decode and split-K kernels).
#include <gtest/gtest.h>

// cuda_runtime.h (not only _api.h): its typed cudaMalloc(T**, size_t) overload is what
// gpu_test_util.h's DeviceBuffer<T> calls when compiled by the host C++ compiler.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;
using G = ScaleGranularity;

constexpr uint8_t kE4M3NaN = 0x7F;
constexpr float kNaN = NAN;

// An integer in [-2, 2].
int small_int(std::mt19937& rng) { return static_cast<int>(rng() % 5) - 2; }
// A power of two in [2^-2, 2^2].
float pow2_scale(std::mt19937& rng) { return std::ldexp(1.0f, static_cast<int>(rng() % 5) - 2); }
// A multiple of 1/4 in [-4, 4].
float quarter(std::mt19937& rng) { return static_cast<float>(static_cast<int>(rng() % 33) - 16) / 4.0f; }

// e4m3 codes of integers in [-2, 2], [rows][ld] with NaN codes in the padding columns.
std::vector<uint8_t> int_codes(int64_t rows, int64_t cols, int64_t ld, std::mt19937& rng) {
  std::vector<uint8_t> q(static_cast<size_t>(rows * ld), kE4M3NaN);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) q[r * ld + c] = fp8_e4m3_encode(static_cast<float>(small_int(rng)));
  return q;
}

// Decodes a [M][ld] output of dtype `out` to float.
std::vector<float> decode_output(const std::vector<uint8_t>& raw, DType out, int64_t count) {
  std::vector<float> f(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    if (out == DType::kF32) {
      std::memcpy(&f[i], &raw[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[i * 2], 2);
      f[i] = out == DType::kBF16 ? bf16_decode(h) : fp16_decode(h);
    }
  }
  return f;
}

// The expected output: the exact reference, or for bf16 output that value rounded once (RNE).
void check_exact(std::vector<double> expect, const std::vector<float>& out, DType dtype, int64_t M, int64_t N,
                 int64_t ldy) {
  if (dtype == DType::kBF16) {
    // First the premise (the float32 value is exact), then round it as the epilogue does.
    for (double& e : expect) {
      const float f = static_cast<float>(e);
      EXPECT_EQ(static_cast<double>(f), e) << "reference not exact in float32: the test's data is wrong";
      e = bf16_decode(bf16_encode(f));
    }
  }
  expect_elements_exact(expect.data(), out.data(), M, N, ldy);
}

// ---- 2:4 sparse ---------------------------------------------------------------------------------

// A 2:4 weight of integers in [-2, 2] times power-of-two scales, compressed on the GPU with
// Sparse24Prune::kRequire and Sparse24Scale::kGiven (values = w / scale: the integers themselves),
// checked against the CPU compressor.
struct ExactWeight {
  int64_t N = 0, K = 0;
  bool per_tensor = false;
  DeviceBuffer<uint8_t> values, meta;
  DeviceBuffer<float> scales;
  ref::Sparse24Host host;
  SparseFp8Weight view() const { return SparseFp8Weight{N, K, values.get(), meta.get(), scales.get(), per_tensor}; }
};

void make_exact_weight(ExactWeight& w, int64_t N, int64_t K, bool per_tensor, std::mt19937& rng) {
  w.N = N;
  w.K = K;
  w.per_tensor = per_tensor;
  std::vector<float> given(per_tensor ? 1 : static_cast<size_t>(N));
  for (auto& s : given) s = pow2_scale(rng);
  std::vector<float> dense(static_cast<size_t>(N * K), 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    const float s = given[per_tensor ? 0 : n];
    for (int64_t g = 0; g < K / 4; ++g) {
      // Two positions of the group may be non-zero (either may still be 0).
      const int a = static_cast<int>(rng() % 4), b = (a + 1 + static_cast<int>(rng() % 3)) % 4;
      dense[n * K + g * 4 + a] = static_cast<float>(small_int(rng)) * s;
      dense[n * K + g * 4 + b] = static_cast<float>(small_int(rng)) * s;
    }
  }
  DeviceBuffer<float> src(dense.size());
  src.upload(dense);
  const Sparse24WeightBytes bytes = sparse24_weight_bytes(N, K, per_tensor);
  w.values.resize(bytes.values);
  w.meta.resize(bytes.meta);
  w.scales.resize(bytes.scales / 4);
  w.values.poison();
  w.meta.poison();
  w.scales.upload(given);
  DeviceBuffer<uint8_t> ws(sparse24_compress_workspace_bytes(N, K));
  Sparse24CompressOptions opt;
  opt.prune = Sparse24Prune::kRequire;
  opt.scale = Sparse24Scale::kGiven;
  ASSERT_NO_THROW(sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), w.view(), opt, ws.get(), nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(ref::sparse24_compress(dense.data(), N, K, K, ref::PruneMode::kRequire, ref::WeightScale::kGiven,
                                     given.data(), per_tensor, &w.host));
  ASSERT_EQ(w.values.download(), w.host.values);
  ASSERT_EQ(w.meta.download(), w.host.meta);
  ASSERT_EQ(w.scales.download(), w.host.scales);
  // The kept values are the integers themselves.
  for (uint8_t v : w.host.values) {
    const float f = fp8_e4m3_decode(v);
    ASSERT_TRUE(f == std::trunc(f) && std::fabs(f) <= 2.0f) << "e4m3 code 0x" << std::hex << int{v};
  }
}

struct SparseCase {
  int config = 0;
  int64_t M = 1;
  DType out = DType::kF32;
  bool x_scalar = false;
  bool bias = false;
  int split_k = 1;  // 1: no split (a forced stream-K configuration still gets its workspace)
};

void run_sparse_exact(const ExactWeight& w, const SparseCase& c, std::mt19937& rng) {
  const int64_t M = c.M, N = w.N, K = w.K, ldx = K + 32, ldy = N + 8;
  SCOPED_TRACE(testing::Message() << "sparse24 config " << c.config << " (" << sparse24_config(c.config).name()
                                  << ") M=" << M << " N=" << N << " K=" << K << " out=" << dtype_name(c.out)
                                  << " x_scalar=" << c.x_scalar << " w_per_tensor=" << w.per_tensor
                                  << " bias=" << c.bias << " split_k=" << c.split_k);
  const std::vector<uint8_t> xq = int_codes(M, K, ldx, rng);
  std::vector<float> sx(c.x_scalar ? 1 : static_cast<size_t>(M));
  for (auto& s : sx) s = pow2_scale(rng);
  std::vector<float> bias(static_cast<size_t>(N));
  for (auto& b : bias) b = quarter(rng);

  DeviceBuffer<uint8_t> x(xq.size());
  x.upload(xq);
  DeviceBuffer<float> sxd(sx.size()), biasd(bias.size());
  sxd.upload(sx);
  biasd.upload(bias);
  const int esize = dtype_size(c.out);
  DeviceBuffer<uint8_t> y(static_cast<size_t>(M * ldy * esize));
  y.poison();
  Sparse24Options opt;
  opt.config = c.config;
  opt.split_k = c.split_k;
  size_t bytes = 0;
  ASSERT_NO_THROW(bytes = sparse24_linear_workspace_bytes(M, N, K, opt));
  if (c.split_k > 1) {
    ASSERT_EQ(bytes, static_cast<size_t>(c.split_k * M * N * 4));
  }
  DeviceBuffer<uint8_t> ws;
  if (bytes > 0) {
    ws.resize(bytes);
    ws.poison();  // the call must set up everything the kernel reads
    opt.workspace = ws.get();
    opt.workspace_bytes = bytes;
  }
  const VectorView bias_view = c.bias ? VectorView(biasd.get(), DType::kF32, N) : VectorView{};
  try {
    sparse24_linear(MatrixView(x.get(), DType::kE4M3, M, K, ldx),
                    ScaleView{sxd.get(), c.x_scalar ? G::kPerTensor : G::kPerRow, 0}, w.view(), bias_view,
                    MatrixView(y.get(), c.out, M, N, ldy), opt, nullptr);
  } catch (const Error& e) {
    FAIL() << "sparse24_linear threw: " << e.what();
  }
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint8_t> raw = y.download();
  expect_padding_untouched(raw, M, N, ldy, esize);
  std::vector<double> expect(static_cast<size_t>(M * N));
  ref::gemm_sparse24_fp8(xq.data(), ldx, M, w.host, sx.data(), c.x_scalar, c.bias ? bias.data() : nullptr,
                         expect.data());
  check_exact(std::move(expect), decode_output(raw, c.out, M * ldy), c.out, M, N, ldy);
}

// K per configuration: 1056 (4 full 256-wide K tiles and a partial one) where partial sums are
// promoted; 544 with fast accumulation (2 tiles and a partial one; 4 and a partial for the 128-deep
// tile), which keeps the unpromoted sum of 272 kept products below 2^11.
constexpr int64_t kSparseN = 200;  // 3 x 64 + 8, 128 + 72: partial weight-row tiles of 64 and 128
constexpr int64_t kSparseKPromoted = 1056, kSparseKFast = 544;

struct SparseWeights {
  ExactWeight promoted_channel, promoted_tensor, fast_channel, fast_tensor;
};

void make_sparse_weights(SparseWeights& w, std::mt19937& rng) {
  make_exact_weight(w.promoted_channel, kSparseN, kSparseKPromoted, false, rng);
  make_exact_weight(w.promoted_tensor, kSparseN, kSparseKPromoted, true, rng);
  make_exact_weight(w.fast_channel, kSparseN, kSparseKFast, false, rng);
  make_exact_weight(w.fast_tensor, kSparseN, kSparseKFast, true, rng);
}

// Token counts around the configuration's token tile (tile_n): one token, one past a tile, a
// partial second tile; the decode kernel serves M <= 32 only (its documented limit).
std::vector<int64_t> sparse_token_counts(const Sparse24Config& cfg) {
  if (cfg.skinny) return {1, 17, 32};
  return {1, cfg.tile_n + 1, 2 * cfg.tile_n - 7};
}

TEST(GemmExact, Sparse24EveryConfigFp32) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2401);
  SparseWeights w;
  make_sparse_weights(w, rng);
  if (HasFatalFailure()) return;
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    int i = 0;
    for (int64_t M : sparse_token_counts(cfg)) {
      SparseCase sc;
      sc.config = c;
      sc.M = M;
      sc.x_scalar = i % 2 == 1;
      sc.bias = i % 3 != 1;
      const bool tensor = i % 2 == 0;
      const ExactWeight& wt = cfg.fast_accum ? (tensor ? w.fast_tensor : w.fast_channel)
                                             : (tensor ? w.promoted_tensor : w.promoted_channel);
      ++i;
      run_sparse_exact(wt, sc, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// Split-K (forced) on every data-parallel configuration: 2 and 4 slices of K = 1024, added in float32
// by the reduction kernel (exact here). Fast-accumulation configurations: a slice of 512 holds 256
// kept products, below 2^11.
TEST(GemmExact, Sparse24SplitKEveryDataParallelConfigFp32) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2402);
  ExactWeight wc, wt;
  make_exact_weight(wc, kSparseN, 1024, false, rng);
  make_exact_weight(wt, kSparseN, 1024, true, rng);
  if (HasFatalFailure()) return;
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    if (cfg.stream_k || cfg.skinny) continue;  // split_k applies to the data-parallel configurations only
    for (int split : {2, 4}) {
      SparseCase sc;
      sc.config = c;
      sc.M = split == 2 ? cfg.tile_n + 1 : 3;
      sc.split_k = split;
      sc.bias = split == 2;
      sc.x_scalar = split == 4;
      run_sparse_exact(split == 2 ? wc : wt, sc, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// bf16 output: the exact value rounded once to nearest-even, every configuration.
TEST(GemmExact, Sparse24EveryConfigBf16RoundsOnce) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2403);
  SparseWeights w;
  make_sparse_weights(w, rng);
  if (HasFatalFailure()) return;
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    SparseCase sc;
    sc.config = c;
    sc.M = cfg.skinny ? 19 : cfg.tile_n + 1;
    sc.out = DType::kBF16;
    run_sparse_exact(cfg.fast_accum ? w.fast_channel : w.promoted_channel, sc, rng);
    if (HasFatalFailure()) return;
  }
}

// ---- blockwise ------------------------------------------------------------------------------------

const std::pair<G, G> kPairs[] = {{G::kGroup1x128, G::kBlock128x128},
                                  {G::kGroup1x128, G::kGroup1x128},
                                  {G::kBlock128x128, G::kBlock128x128},
                                  {G::kBlock128x128, G::kGroup1x128},
                                  {G::kPerRow, G::kPerRow}};

struct BlockCase {
  int config = 0;
  G gx = G::kGroup1x128, gw = G::kBlock128x128;
  int64_t M = 1, N = 200, K = 656;
  DType out = DType::kF32;
  bool bias = false;
  int split_k = 1;
};

// Scales of one operand in the layout of include/qsgemm/blockwise.h, every entry a power of two;
// x kGroup1x128 is M-major with ld_s = rows + 3 (padding NaN).
std::vector<float> pow2_scales(G g, bool is_x, int64_t rows, int64_t K, int64_t ld_s, std::mt19937& rng) {
  const int64_t kb = ceil_div(K, kScaleGroupK);
  std::vector<float> s;
  switch (g) {
    case G::kGroup1x128:
      s.assign(static_cast<size_t>(is_x ? kb * ld_s : rows * kb), kNaN);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < kb; ++b) s[is_x ? b * ld_s + r : r * kb + b] = pow2_scale(rng);
      break;
    case G::kBlock128x128:
      s.assign(static_cast<size_t>(ceil_div(rows, kScaleGroupK) * kb), 0.0f);
      for (auto& v : s) v = pow2_scale(rng);
      break;
    default:  // kPerRow
      s.assign(static_cast<size_t>(rows), 0.0f);
      for (auto& v : s) v = pow2_scale(rng);
      break;
  }
  return s;
}

void run_blockwise_exact(const BlockCase& c, std::mt19937& rng) {
  // ldy: padded output rows of 16 bytes (N + 4 fp32, N + 8 bf16).
  const int64_t M = c.M, N = c.N, K = c.K, ldx = K + 16, ldw = K + 32, ld_sx = M + 3;
  const int64_t ldy = N + (c.out == DType::kF32 ? 4 : 8);
  SCOPED_TRACE(testing::Message() << "blockwise config " << c.config << " (" << blockwise_config_name(c.config)
                                  << ") x_scale=" << granularity_name(c.gx) << " w_scale=" << granularity_name(c.gw)
                                  << " M=" << M << " N=" << N << " K=" << K << " out=" << dtype_name(c.out)
                                  << " bias=" << c.bias << " split_k=" << c.split_k);
  const std::vector<uint8_t> xq = int_codes(M, K, ldx, rng), wq = int_codes(N, K, ldw, rng);
  const std::vector<float> sx = pow2_scales(c.gx, true, M, K, ld_sx, rng);
  const std::vector<float> sw = pow2_scales(c.gw, false, N, K, 0, rng);
  std::vector<float> bias(static_cast<size_t>(N));
  for (auto& b : bias) b = quarter(rng);

  DeviceBuffer<uint8_t> x(xq.size()), w(wq.size());
  x.upload(xq);
  w.upload(wq);
  DeviceBuffer<float> sxd(sx.size()), swd(sw.size()), biasd(bias.size());
  sxd.upload(sx);
  swd.upload(sw);
  biasd.upload(bias);
  const int esize = dtype_size(c.out);
  DeviceBuffer<uint8_t> y(static_cast<size_t>(M * ldy * esize));
  y.poison();
  BlockwiseOptions opt;
  opt.config = c.config;
  opt.split_k = c.split_k;
  DeviceBuffer<uint8_t> ws;
  // Unsplit unless forced; x blocks beyond 128 tokens on a tile of 1x128 groups need the workspace
  // for their expanded copy (after a split's slices).
  if (opt.split_k == 0) opt.split_k = 1;
  size_t bytes = 0;
  ASSERT_NO_THROW(bytes = blockwise_linear_workspace_bytes(M, N, K, c.gx, c.gw, opt));
  ASSERT_GE(bytes, static_cast<size_t>(c.split_k > 1 ? c.split_k * M * N * 4 : 0));
  if (bytes > 0) {
    ws.resize(bytes);
    ws.poison();  // a slice element the GEMM did not write would reach Y as NaN
    opt.workspace = ws.get();
    opt.workspace_bytes = bytes;
  }
  const VectorView bias_view = c.bias ? VectorView(biasd.get(), DType::kF32, N) : VectorView{};
  try {
    blockwise_linear(MatrixView(x.get(), DType::kE4M3, M, K, ldx), ScaleView{sxd.get(), c.gx, ld_sx},
                     MatrixView(w.get(), DType::kE4M3, N, K, ldw), ScaleView{swd.get(), c.gw, 0}, bias_view,
                     MatrixView(y.get(), c.out, M, N, ldy), opt, nullptr);
  } catch (const Error& e) {
    FAIL() << "blockwise_linear threw: " << e.what();
  }
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint8_t> raw = y.download();
  expect_padding_untouched(raw, M, N, ldy, esize);
  std::vector<double> expect(static_cast<size_t>(M * N));
  ref::gemm_fp8_blockwise(xq.data(), ldx, wq.data(), ldw, M, N, K, c.gx, sx.data(), ld_sx, c.gw, sw.data(),
                          c.bias ? bias.data() : nullptr, expect.data());
  check_exact(std::move(expect), decode_output(raw, c.out, M * ldy), c.out, M, N, ldy);
}

// Shapes per configuration: M around its row tile (tile_m; the skinny kernel serves M <= 32, its
// documented limit), N = 200 (partial 128- and 192-wide tiles), K = 656 (5 groups of 128 and a
// partial one of 16) and K = 4112 (33 groups: from 32 K tiles the cooperative tiles run their
// interleaved K loop; the skinny kernel a cluster along K).
struct Shape {
  int64_t M, N, K;
};
std::vector<Shape> blockwise_shapes(int config) {
  const std::string name = blockwise_config_name(config);
  if (name.rfind("skinny", 0) == 0) return {{1, 200, 656}, {32, 200, 656}, {17, 136, 4112}};
  const int tile_m = std::stoi(name.substr(0, name.find('x')));
  return {{1, 200, 656}, {tile_m + 1, 200, 656}, {tile_m - 1, 136, 4112}};
}

TEST(GemmExact, BlockwiseEveryConfigEveryScalePairFp32) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2404);
  int runs = 0;
  for (int c = 0; c < blockwise_num_configs(); ++c)
    for (const auto& [gx, gw] : kPairs) {
      // The pairs a configuration is not instantiated for are rejected (EveryConfigForced, test_blockwise.cpp).
      if (!blockwise_config_supports(c, gx, gw)) continue;
      int i = 0;
      for (const Shape& s : blockwise_shapes(c)) {
        BlockCase bc;
        bc.config = c;
        bc.gx = gx;
        bc.gw = gw;
        bc.M = s.M;
        bc.N = s.N;
        bc.K = s.K;
        bc.bias = i++ % 2 == 1;
        run_blockwise_exact(bc, rng);
        if (HasFatalFailure()) return;
        ++runs;
      }
    }
  // Every configuration serves at least one pair.
  EXPECT_GE(runs, 3 * blockwise_num_configs());
}

// Split-K (forced) on every CUTLASS configuration and pair it serves: 2 and 4 slices of K = 1024,
// and of K's 8 whole groups with a partial last group of 16 or 112 columns (added by the reduction).
TEST(GemmExact, BlockwiseSplitKEveryConfigFp32) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2405);
  for (int c = 0; c < blockwise_num_configs(); ++c) {
    if (blockwise_config_name(c).rfind("skinny", 0) == 0) continue;  // split_k is rejected there (documented)
    for (const auto& [gx, gw] : kPairs) {
      if (!blockwise_config_supports(c, gx, gw)) continue;
      for (int split : {2, 4})
        for (int tail : {0, split == 2 ? 16 : 112}) {
          BlockCase bc;
          bc.config = c;
          bc.gx = gx;
          bc.gw = gw;
          bc.M = split == 2 ? 65 : 3;
          bc.N = 136;
          bc.K = 1024 + tail;
          bc.split_k = split;
          bc.bias = split == 2;
          run_blockwise_exact(bc, rng);
          if (HasFatalFailure()) return;
        }
    }
  }
}

// bf16 output: the exact value rounded once to nearest-even, every configuration and pair.
TEST(GemmExact, BlockwiseEveryConfigBf16RoundsOnce) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2406);
  for (int c = 0; c < blockwise_num_configs(); ++c)
    for (const auto& [gx, gw] : kPairs) {
      if (!blockwise_config_supports(c, gx, gw)) continue;
      BlockCase bc;
      bc.config = c;
      bc.gx = gx;
      bc.gw = gw;
      bc.M = blockwise_shapes(c)[1].M;
      bc.out = DType::kBF16;
      run_blockwise_exact(bc, rng);
      if (HasFatalFailure()) return;
    }
}

}  // namespace
