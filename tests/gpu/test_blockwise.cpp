// Blockwise / groupwise FP8 GEMM (include/qsgemm/blockwise.h) against the float64 CPU reference
// ref::gemm_fp8_blockwise on the same quantized operands.
//
// Every case: fresh random bf16-valued inputs (no zeros) with per-row and per-group magnitudes
// spread over 2^±3 (so that the scales matter), quantized on the host by the ref:: quantizers,
// uploaded with NaN in every padding byte (X/W columns past K, scale entries past M), output
// poisoned with 0xFF (NaN) before the run. Checks (bounds in tests/tolerances.h): the reference of
// every row (float64, O(M·N·K), computed on several host threads), the relative Frobenius error
// against the bound of the output dtype, every element against the element-wise bound
// (gpu_test_util.h, expect_elements_close: a single wrong element fails), no NaN left in [M, N],
// padding columns of Y untouched.
#include <gtest/gtest.h>

// cuda_runtime.h (not only _api.h): its typed cudaMalloc(T**, size_t) overload is what
// gpu_test_util.h's DeviceBuffer<T> calls when compiled by the host C++ compiler.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"

namespace {

using namespace qsgemm;
using qsgemm::test::DeviceBuffer;
using G = ScaleGranularity;

// Bounds: tests/tolerances.h (one header for both families).
using test::Family;
// Worst error / tolerance seen by the current test, printed by the fixture (evidence for the docs).
struct Worst {
  double ratio = 0, err = 0, tol = 0;
  std::string what;
};
Worst g_worst;

enum class BiasKind { kNone, kF32, kOut };

struct Case {
  int64_t M = 1, N = 128, K = 128;
  G gx = G::kGroup1x128, gw = G::kBlock128x128;
  DType out = DType::kBF16;
  BiasKind bias = BiasKind::kNone;
  int config = -1;
  int skinny_cluster = 0;  // BlockwiseOptions::skinny_cluster (config 3 only)
  int split_k = 0;         // BlockwiseOptions::split_k
  bool workspace = false;  // pass a workspace (poisoned) of blockwise_linear_workspace_bytes
  int64_t pad_x = 0, pad_w = 0, pad_y = 0, pad_sx = 0;  // extra leading-dimension elements
  int64_t guard_rows = 0;  // poisoned rows of Y before row 0, which must stay untouched
  int same_bits_as = -1;   // a second configuration run on the same operands: Y equal bit for bit
  // x_scale block_128x128: a second run with those scales given as 1x128 groups (the layout the
  // expanded copy has), same options: Y equal bit for bit.
  bool same_bits_as_x_groups = false;
  bool same_bits_whole = false;  // a second run with BlockwiseOptions::whole_last_tile: Y equal bit for bit
  int band = 0;  // BlockwiseOptions::max_swizzle; nonzero: a second run in the library's order, Y equal bit for bit

  std::string str() const {
    return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) + " x_scale=" +
           granularity_name(gx) + " w_scale=" + granularity_name(gw) + " out=" + dtype_name(out) +
           " bias=" + (bias == BiasKind::kNone ? "none" : bias == BiasKind::kF32 ? "fp32" : "out") +
           " config=" + std::to_string(config) + " cluster=" + std::to_string(skinny_cluster) +
           " split_k=" + std::to_string(split_k) + (workspace ? " workspace" : "") +
           " pads=" + std::to_string(pad_x) + "/" + std::to_string(pad_w) + "/" + std::to_string(pad_y) + "/" +
           std::to_string(pad_sx) + " guard_rows=" + std::to_string(guard_rows) +
           " same_bits_as=" + std::to_string(same_bits_as) + (same_bits_as_x_groups ? " same_bits_as_x_groups" : "") +
           (same_bits_whole ? " same_bits_whole" : "") + (band ? " band=" + std::to_string(band) : "");
  }
};

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr uint8_t kE4M3NaN = 0x7F;

// bf16-valued random matrix [rows, cols] whose magnitude varies by row and by 128-column group.
std::vector<float> random_operand(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<float> v = test::random_floats(static_cast<size_t>(rows * cols), rng, 1.0f);
  std::uniform_real_distribution<float> e(-3.0f, 3.0f);
  std::vector<float> row_f(static_cast<size_t>(rows)), grp_f(static_cast<size_t>(ceil_div(cols, kScaleGroupK)));
  for (auto& f : row_f) f = std::exp2(e(rng));
  for (auto& f : grp_f) f = std::exp2(e(rng));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v[r * cols + c] *= row_f[r] * grp_f[c / kScaleGroupK];
  test::to_bf16(v);
  return v;
}

// Quantizes a [rows, cols] operand with granularity g; q has leading dimension ldq (padding = NaN),
// scales the layout of include/qsgemm/blockwise.h (x group_1x128: M-major with ld_s, padding NaN).
void quantize(G g, bool is_x, const std::vector<float>& v, int64_t rows, int64_t cols, int64_t ldq, int64_t ld_s,
              std::vector<uint8_t>& q, std::vector<float>& s) {
  const int64_t kb = ceil_div(cols, kScaleGroupK);
  q.assign(static_cast<size_t>(rows * ldq), kE4M3NaN);
  switch (g) {
    case G::kGroup1x128:
      if (is_x) {
        s.assign(static_cast<size_t>(kb * ld_s), kNaN);
        ref::quantize_fp8_1x128(v.data(), rows, cols, cols, q.data(), ldq, s.data(), ld_s);
      } else {
        s.assign(static_cast<size_t>(rows * kb), kNaN);
        ref::quantize_fp8_row_groups(v.data(), rows, cols, cols, q.data(), ldq, s.data());
      }
      break;
    case G::kBlock128x128:
      s.assign(static_cast<size_t>(ceil_div(rows, kScaleGroupK) * kb), kNaN);
      ref::quantize_fp8_128x128(v.data(), rows, cols, cols, q.data(), ldq, s.data());
      break;
    default:
      s.assign(static_cast<size_t>(rows), kNaN);
      ref::quantize_fp8_per_row(v.data(), rows, cols, cols, q.data(), ldq, s.data());
      break;
  }
}

// Runs one case; failures are reported with the case in the trace.
void run_case(const Case& c, std::mt19937& rng, cudaStream_t stream) {
  SCOPED_TRACE(c.str());
  const int64_t M = c.M, N = c.N, K = c.K;
  const int64_t ldx = K + c.pad_x, ldw = K + c.pad_w, ldy = N + c.pad_y, ld_sx = M + c.pad_sx;
  const int y_size = dtype_size(c.out);

  const std::vector<float> xf = random_operand(M, K, rng);
  const std::vector<float> wf = random_operand(N, K, rng);
  std::vector<uint8_t> qx, qw;
  std::vector<float> sx, sw;
  quantize(c.gx, true, xf, M, K, ldx, ld_sx, qx, sx);
  quantize(c.gw, false, wf, N, K, ldw, 0, qw, sw);

  // Bias: values representable in its dtype; the reference takes them as float.
  std::vector<float> bias_f;
  std::vector<uint8_t> bias_bytes;
  DType bias_dtype = DType::kF32;
  if (c.bias != BiasKind::kNone) {
    bias_f = test::random_floats(static_cast<size_t>(N), rng, 4.0f);
    bias_dtype = c.bias == BiasKind::kF32 ? DType::kF32 : c.out;
    if (bias_dtype == DType::kF32) {
      bias_bytes.resize(bias_f.size() * 4);
      std::memcpy(bias_bytes.data(), bias_f.data(), bias_bytes.size());
    } else {
      const std::vector<uint16_t> b = bias_dtype == DType::kBF16 ? test::to_bf16(bias_f) : test::to_fp16(bias_f);
      bias_bytes.resize(b.size() * 2);
      std::memcpy(bias_bytes.data(), b.data(), bias_bytes.size());
    }
  }

  DeviceBuffer<uint8_t> d_x(qx.size()), d_w(qw.size()), d_bias(std::max<size_t>(bias_bytes.size(), 1));
  DeviceBuffer<float> d_sx(sx.size()), d_sw(sw.size());
  const size_t guard_bytes = static_cast<size_t>(c.guard_rows * ldy * y_size);
  DeviceBuffer<uint8_t> d_y(guard_bytes + static_cast<size_t>(M * ldy * y_size));
  d_x.upload(qx);
  d_w.upload(qw);
  d_sx.upload(sx);
  d_sw.upload(sw);
  if (!bias_bytes.empty()) d_bias.upload(bias_bytes);
  d_y.poison(0xFF);

  const MatrixView x(d_x.get(), DType::kE4M3, M, K, ldx);
  const MatrixView w(d_w.get(), DType::kE4M3, N, K, ldw);
  const MatrixView y(d_y.get() + guard_bytes, c.out, M, N, ldy);
  const ScaleView x_scale{d_sx.get(), c.gx, ld_sx};
  const ScaleView w_scale{d_sw.get(), c.gw, 0};
  const VectorView bias = c.bias == BiasKind::kNone ? VectorView{} : VectorView(d_bias.get(), bias_dtype, N);
  BlockwiseOptions opt;
  opt.config = c.config;
  opt.skinny_cluster = c.skinny_cluster;
  opt.max_swizzle = c.band;
  opt.split_k = c.split_k;
  // The workspace is poisoned with NaN: a slice element the GEMM did not write would reach Y.
  DeviceBuffer<uint8_t> d_ws(1);
  if (c.workspace) {
    opt.workspace_bytes = blockwise_linear_workspace_bytes(M, N, K, c.gx, c.gw, opt);
    d_ws.resize(std::max<size_t>(opt.workspace_bytes, 16));
    d_ws.poison(0xFF);
    opt.workspace = d_ws.get();
  }
  try {
    blockwise_linear(x, x_scale, w, w_scale, bias, y, opt, stream);
  } catch (const Error& e) {
    FAIL() << "blockwise_linear threw: " << e.what();
  }
  QSGEMM_CUDA_OK(cudaStreamSynchronize(stream));
  QSGEMM_CUDA_OK(cudaGetLastError());

  // Output as float; NaN anywhere in [M, N] means an element was not written.
  const std::vector<uint8_t> with_guard = d_y.download();
  ASSERT_TRUE(std::all_of(with_guard.begin(), with_guard.begin() + guard_bytes, [](uint8_t b) { return b == 0xFF; }))
      << "rows before Y were written";
  const std::vector<uint8_t> raw(with_guard.begin() + guard_bytes, with_guard.end());
  if (c.same_bits_as >= 0 || c.same_bits_whole || c.band) {
    DeviceBuffer<uint8_t> d_y2(raw.size());
    d_y2.poison(0xFF);
    BlockwiseOptions opt2 = opt;
    if (c.same_bits_as >= 0) opt2.config = c.same_bits_as;
    opt2.whole_last_tile = c.same_bits_whole;
    opt2.max_swizzle = 0;
    try {
      blockwise_linear(x, x_scale, w, w_scale, bias, MatrixView(d_y2.get(), c.out, M, N, ldy), opt2, stream);
    } catch (const Error& e) {
      FAIL() << "blockwise_linear threw on config " << c.same_bits_as << ": " << e.what();
    }
    QSGEMM_CUDA_OK(cudaStreamSynchronize(stream));
    ASSERT_TRUE(d_y2.download() == raw) << "configs " << c.config << " and " << opt2.config << " (whole last tile "
                                        << opt2.whole_last_tile << ", bands of " << c.band << ") differ";
  }
  if (c.same_bits_as_x_groups) {
    ASSERT_EQ(c.gx, G::kBlock128x128);
    const int64_t kb = ceil_div(K, kScaleGroupK);
    std::vector<float> groups(static_cast<size_t>(kb * M));  // [kb][M], M-major
    for (int64_t g = 0; g < kb; ++g)
      for (int64_t m = 0; m < M; ++m) groups[g * M + m] = sx[(m / kScaleGroupK) * kb + g];
    DeviceBuffer<float> d_sg(groups.size());
    d_sg.upload(groups);
    DeviceBuffer<uint8_t> d_y2(raw.size());
    d_y2.poison(0xFF);
    try {
      blockwise_linear(x, ScaleView{d_sg.get(), G::kGroup1x128, M}, w, w_scale, bias,
                       MatrixView(d_y2.get(), c.out, M, N, ldy), opt, stream);
    } catch (const Error& e) {
      FAIL() << "blockwise_linear threw with the x scales as 1x128 groups: " << e.what();
    }
    QSGEMM_CUDA_OK(cudaStreamSynchronize(stream));
    ASSERT_TRUE(d_y2.download() == raw) << "x blocks and the same scales as 1x128 groups differ";
  }
  std::vector<float> out(static_cast<size_t>(M * ldy));
  for (int64_t i = 0; i < M * ldy; ++i) {
    if (c.out == DType::kF32) {
      std::memcpy(&out[i], &raw[i * 4], 4);
    } else {
      uint16_t b;
      std::memcpy(&b, &raw[i * 2], 2);
      out[i] = c.out == DType::kBF16 ? bf16_decode(b) : fp16_decode(b);
    }
  }
  int64_t nan_count = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) nan_count += std::isnan(out[m * ldy + n]) ? 1 : 0;
  ASSERT_EQ(nan_count, 0) << "elements of Y left unwritten (or NaN)";
  ASSERT_EQ(test::expect_padding_untouched(raw, M, N, ldy, y_size), 0);

  // Reference of every row, on several threads (chunks of 16 rows; of whole 128-row x-scale
  // blocks where there are several).
  std::vector<double> expect(static_cast<size_t>(M * N));
  const int64_t kb = ceil_div(K, kScaleGroupK);
  test::parallel_rows(M, c.gx == G::kBlock128x128 && M > kScaleGroupK ? kScaleGroupK : 16, [&](int64_t m0, int64_t m1) {
    const float* sx_band = c.gx == G::kBlock128x128 ? sx.data() + (m0 / kScaleGroupK) * kb : sx.data() + m0;
    ref::gemm_fp8_blockwise(qx.data() + m0 * ldx, ldx, qw.data(), ldw, m1 - m0, N, K, c.gx, sx_band, ld_sx, c.gw,
                            sw.data(), bias_f.empty() ? nullptr : bias_f.data(), expect.data() + m0 * N);
  });
  const double err = ref::rel_frobenius_error(expect.data(), out.data(), M, N, ldy);
  double e_round = 0.0;
  if (c.out != DType::kF32) {
    std::vector<float> rounded(expect.size());
    for (size_t i = 0; i < rounded.size(); ++i) {
      const float v = static_cast<float>(expect[i]);
      rounded[i] = c.out == DType::kBF16 ? bf16_decode(bf16_encode(v)) : fp16_decode(fp16_encode(v));
    }
    e_round = ref::rel_frobenius_error(expect.data(), rounded.data(), M, N, N);
  }
  const double tol = test::rel_frobenius(Family::kBlockwise, c.out, e_round);
  EXPECT_LE(err, tol) << "relative Frobenius error (exactly rounded reference: " << e_round << ")";
  test::expect_elements_close(expect.data(), out.data(), M, N, ldy, test::element_bound(c.out));
  if (err / tol > g_worst.ratio) g_worst = {err / tol, err, tol, c.str()};
}

class BlockwiseGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    QSGEMM_REQUIRE_SM90();
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (g_worst.ratio > 0)
      std::printf("[ worst    ] rel_err %.3g (%.0f%% of its bound %.3g) at %s\n", g_worst.err, 100 * g_worst.ratio,
                  g_worst.tol, g_worst.what.c_str());
    g_worst = {};
  }
  cudaStream_t stream_ = nullptr;
};

const std::vector<int64_t> kAllM = {1, 2, 3, 7, 13, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 257, 1000, 2047, 4099};
const std::vector<int64_t> kSomeM = {1, 13, 64, 65, 129, 1000, 4099};
const std::vector<int64_t> kKs = {128, 256, 400, 7168};  // 400 = 3 full groups + a 16-wide partial one
const std::vector<int64_t> kNs = {8, 120, 136, 256, 264};

// Every M with two (K, N) pairs cycling through the lists (so every K and N meets several M), with
// the bias kind cycling too.
void sweep(G gx, G gw, DType out, const std::vector<int64_t>& Ms, uint32_t seed, cudaStream_t stream) {
  std::mt19937 rng(seed);
  size_t i = 0;
  for (int64_t M : Ms) {
    for (int pass = 0; pass < 2; ++pass, ++i) {
      Case c;
      c.M = M;
      c.K = kKs[(i + pass) % kKs.size()];
      c.N = kNs[(3 * i + pass) % kNs.size()];
      c.gx = gx;
      c.gw = gw;
      c.out = out;
      c.bias = static_cast<BiasKind>(i % 3);
      run_case(c, rng, stream);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_F(BlockwiseGpu, Group1x128xBlock128Bf16) { sweep(G::kGroup1x128, G::kBlock128x128, DType::kBF16, kAllM, 101, stream_); }
TEST_F(BlockwiseGpu, Group1x128xGroup1x128Bf16) { sweep(G::kGroup1x128, G::kGroup1x128, DType::kBF16, kAllM, 102, stream_); }
TEST_F(BlockwiseGpu, Block128xBlock128Bf16) { sweep(G::kBlock128x128, G::kBlock128x128, DType::kBF16, kAllM, 103, stream_); }
TEST_F(BlockwiseGpu, Block128xGroup1x128Bf16) { sweep(G::kBlock128x128, G::kGroup1x128, DType::kBF16, kAllM, 104, stream_); }
TEST_F(BlockwiseGpu, PerRowxPerRowBf16) { sweep(G::kPerRow, G::kPerRow, DType::kBF16, kAllM, 105, stream_); }

const std::vector<std::pair<G, G>> kPairs = {{G::kGroup1x128, G::kBlock128x128},
                                              {G::kGroup1x128, G::kGroup1x128},
                                              {G::kBlock128x128, G::kBlock128x128},
                                              {G::kBlock128x128, G::kGroup1x128},
                                              {G::kPerRow, G::kPerRow}};

TEST_F(BlockwiseGpu, AllPairsFp32Out) {
  uint32_t seed = 201;
  for (const auto& [gx, gw] : kPairs) {
    sweep(gx, gw, DType::kF32, kSomeM, seed++, stream_);
    if (HasFatalFailure()) return;
  }
}

TEST_F(BlockwiseGpu, AllPairsFp16Out) {
  uint32_t seed = 301;
  for (const auto& [gx, gw] : kPairs) {
    sweep(gx, gw, DType::kF16, kSomeM, seed++, stream_);
    if (HasFatalFailure()) return;
  }
}

// Every bias kind with every output dtype.
TEST_F(BlockwiseGpu, BiasDtypes) {
  std::mt19937 rng(401);
  for (DType out : {DType::kBF16, DType::kF16, DType::kF32})
    for (BiasKind b : {BiasKind::kNone, BiasKind::kF32, BiasKind::kOut})
      for (const auto& [gx, gw] : kPairs) {
        Case c;
        c.M = 77;
        c.N = 264;
        c.K = 400;
        c.gx = gx;
        c.gw = gw;
        c.out = out;
        c.bias = b;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
}

// K = 28672 (224 groups): promotion every 128 keeps the error at the output rounding.
TEST_F(BlockwiseGpu, LargeKSmallM) {
  std::mt19937 rng(501);
  for (DType out : {DType::kF32, DType::kBF16})
    for (const auto& [gx, gw] : kPairs)
      for (int64_t M : {1, 7, 33}) {
        Case c;
        c.M = M;
        c.N = 264;
        c.K = 28672;
        c.gx = gx;
        c.gw = gw;
        c.out = out;
        c.bias = BiasKind::kF32;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
}

// options.config forces each configuration of the table (where it supports the scale pair), with
// and without a bias (separate kernels: the bias kind cycles over the shapes).
TEST_F(BlockwiseGpu, EveryConfigForced) {
  std::mt19937 rng(601);
  for (int config = 0; config < blockwise_num_configs(); ++config)
    for (const auto& [gx, gw] : kPairs) {
      int shape = 0;
      for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 136, 256},
                                    std::tuple<int64_t, int64_t, int64_t>{129, 264, 400},
                                    std::tuple<int64_t, int64_t, int64_t>{1000, 520, 1024},
                                    std::tuple<int64_t, int64_t, int64_t>{32, 1032, 3200},
                                    // From 32 K tiles the cooperative tiles run the interleaved K
                                    // loop: 33 tiles, the last a 16-wide partial group, and 34.
                                    std::tuple<int64_t, int64_t, int64_t>{257, 264, 4112},
                                    std::tuple<int64_t, int64_t, int64_t>{130, 136, 4352}}) {
        if (config == 3 && M > 32) continue;  // the skinny kernel serves M <= 32 (validation test)
        Case c;
        c.M = M;
        c.N = N;
        c.K = K;
        c.gx = gx;
        c.gw = gw;
        c.config = config;
        c.bias = static_cast<BiasKind>(shape++ % 3);  // none, fp32, output dtype, none, fp32, output dtype
        if (blockwise_config_supports(config, gx, gw, M)) {
          // x blocks beyond 128 tokens on a tile of 1x128 groups: the expanded copy's workspace
          // (unsplit here; XBlocksThroughTheExpandedCopy splits it).
          BlockwiseOptions o;
          o.config = config;
          o.split_k = 1;
          if (blockwise_linear_workspace_bytes(M, N, K, gx, gw, o) > 0) {
            c.split_k = 1;
            c.workspace = true;
          }
        } else {
          // The 128x192 tile serves per-row scales only: rejected, not mis-computed.
          MatrixView x(reinterpret_cast<void*>(0x1000), DType::kE4M3, M, K);
          try {
            blockwise_linear(x, ScaleView{reinterpret_cast<const float*>(0x2000), gx, 0},
                             MatrixView(reinterpret_cast<void*>(0x3000), DType::kE4M3, N, K),
                             ScaleView{reinterpret_cast<const float*>(0x4000), gw, 0}, VectorView{},
                             MatrixView(reinterpret_cast<void*>(0x5000), DType::kBF16, M, N), [&] { BlockwiseOptions o; o.config = config; return o; }(),
                             stream_);
            ADD_FAILURE() << "config " << config << " accepted x_scale " << granularity_name(gx) << " with w_scale "
                          << granularity_name(gw);
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), Status::kInvalidArgument) << e.what();
          }
          continue;
        }
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
    }
}

// The clamped rows (sm90_blockwise_clamped_rows.cuh): from the last token tile on, tiles compute
// the tokens [M - tile_m, M). Against the float64 reference and bit for bit against the same tile
// without the clamp (same operands, tile shape and K order), at M around every tile edge, with a
// partial last K group, the interleaved K loop (K >= 4096), a padded x-scale layout, every output
// dtype and bias kind, and guard rows before Y (the shifted store must not reach them).
TEST_F(BlockwiseGpu, ClampedRowsSameBitsAsPlainTile) {
  std::mt19937 rng(701);
  size_t i = 0;
  for (const char* name : {"128x128x128_c1x1_coop_clamped", "64x128x128_c1x1_pingpong_clamped"}) {
    const int config = blockwise_config_index(name);
    const std::string plain_name = std::string(name).substr(0, std::string(name).size() - std::string("_clamped").size());
    const int plain = blockwise_config_index(plain_name);
    const int64_t tm = std::stoll(name);  // the tile's rows: the name's first number
    for (const auto& [gx, gw] : kPairs) {
      // x blocks: the clamped tiles read them as 1x128 groups (one row of blocks, or the expanded
      // copy), the plain 128-row tile as blocks, another kernel; XBlocksThroughTheExpandedCopy and
      // OneRowOfXBlocksOnTheGroupTiles check them.
      if (gx == G::kBlock128x128) continue;
      ASSERT_TRUE(blockwise_config_supports(config, gx, gw)) << name;
      for (int64_t M : {tm - 1, tm, tm + 1, 2 * tm - 1, 2 * tm + 3, int64_t{1000}}) {
        Case c;
        c.M = M;
        c.N = i % 2 ? 264 : 392;
        c.K = i % 3 == 0 ? 400 : i % 3 == 1 ? 1024 : 4112;
        c.gx = gx;
        c.gw = gw;
        c.config = config;
        c.same_bits_as = plain;
        c.out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
        c.bias = static_cast<BiasKind>(i / 3 % 3);
        c.pad_sx = i % 2 ? 5 : 0;
        c.guard_rows = 3;
        ++i;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The tuning option's bands of tiles (BlockwiseOptions::max_swizzle, what `qsgemm tune blockwise
// --swizzles` times): the order of the tiles changes, not their sums. The 128x128 tiles and their
// 1x2 cluster on 1100 tokens x 776 rows (9 token tiles, 7 weight tiles, 8 in clusters: every band
// pads one side or both), each band against the float64 reference and bit for bit against the
// library's order.
TEST_F(BlockwiseGpu, TileBandsSameBits) {
  std::mt19937 rng(734);
  int cases = 0;
  for (const char* name : {"128x128x128_c1x1_coop", "128x128x128_c1x2_coop"})
    for (int band : {1, 2, 4, 8}) {
      Case c;
      c.M = 1100;
      c.N = 776;
      c.K = 512;
      c.config = blockwise_config_index(name);
      c.band = band;
      c.out = band % 2 ? DType::kBF16 : DType::kF32;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
      ++cases;
    }
  EXPECT_EQ(cases, 8);
}

// The last token tile loads only its rows of X (sm90_blockwise_last_tile_rows.cuh): every CUTLASS
// configuration and scale pair it serves, M around 8-row boxes and tile edges, bit for bit against
// the same call loading the whole box (BlockwiseOptions::whole_last_tile) and against the float64
// reference; a split over K with a partial last group, a padded x-scale layout, every output dtype
// and bias kind. The rows of the stage the tile skips hold an earlier tile's X: equal bits show
// that they reach no stored row.
TEST_F(BlockwiseGpu, LastTileRowsSameBitsAsWholeBox) {
  std::mt19937 rng(733);
  size_t i = 0;
  for (int config = 0; config < blockwise_num_configs(); ++config) {
    const std::string name = blockwise_config_name(config);
    if (name.rfind("skinny", 0) == 0) continue;  // no token tiles
    const int64_t tm = std::stoll(name);
    for (const auto& [gx, gw] : kPairs)
      for (int64_t M : {int64_t{1}, int64_t{9}, tm - 1, tm + 8, 2 * tm + 3, 5 * tm - 17}) {
        if (!blockwise_config_supports(config, gx, gw, M)) continue;
        Case c;
        c.M = M;
        c.N = i % 2 ? 264 : 392;
        c.K = i % 3 == 0 ? 400 : i % 3 == 1 ? 1024 : 4112;
        c.gx = gx;
        c.gw = gw;
        c.config = config;
        c.same_bits_whole = true;
        c.out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
        c.bias = static_cast<BiasKind>(i / 3 % 3);
        c.pad_sx = i % 2 ? 5 : 0;
        c.guard_rows = 3;
        c.workspace = true;                             // for the split (and x blocks beyond 128 tokens)
        c.split_k = i % 4 == 3 && c.K >= 1024 ? 2 : 1;  // 2 K slices over the whole groups, or none
        ++i;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
  }
  EXPECT_GT(i, 60u);
}

// Up to 128 tokens x_scale block_128x128 is one row of blocks, which the tiles of 1x128 activation
// groups read with a row stride of 0 (blockwise_tile_gx): the 64-row and clamped tiles forced, with
// and without a split over K (a partial last group included), the clamped 64-row tile bit for bit
// against the plain one, and the heuristic's own plans given a workspace.
TEST_F(BlockwiseGpu, OneRowOfXBlocksOnTheGroupTiles) {
  std::mt19937 rng(811);
  size_t i = 0;
  for (G gw : {G::kBlock128x128, G::kGroup1x128})
    for (const char* name : {"64x128x128_c1x1_pingpong", "64x128x128_c1x1_pingpong_clamped", "128x128x128_c1x1_coop_clamped"})
      for (int64_t M : {int64_t{17}, int64_t{63}, int64_t{65}, int64_t{100}, int64_t{127}, int64_t{128}}) {
        const int config = blockwise_config_index(name);
        ASSERT_TRUE(blockwise_config_supports(config, G::kBlock128x128, gw, M)) << name << " M=" << M;
        Case c;
        c.M = M;
        c.N = i % 2 ? 264 : 392;
        c.K = i % 3 == 0 ? 400 : i % 3 == 1 ? 1024 : 4112;
        c.gx = G::kBlock128x128;
        c.gw = gw;
        c.config = config;
        // The clamped 64-row tile against the plain one, both reading the row of x blocks as 1x128
        // groups (the plain 128-row tile runs the kernel of x blocks: other bits).
        if (std::string(name) == "64x128x128_c1x1_pingpong_clamped") c.same_bits_as = blockwise_config_index("64x128x128_c1x1_pingpong");
        if (i % 4 == 3 && c.K >= 1024) {
          c.split_k = 2;
          c.workspace = true;
        }
        c.out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
        c.bias = static_cast<BiasKind>(i / 3 % 3);
        c.guard_rows = 2;
        ++i;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
  // The heuristic's plans (split 64-row tiles, the clamped 64-row pair, the 128-row tile).
  for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{24, 4096, 14336},
                                std::tuple<int64_t, int64_t, int64_t>{40, 2112, 7168},
                                std::tuple<int64_t, int64_t, int64_t>{96, 4096, 14352},
                                std::tuple<int64_t, int64_t, int64_t>{100, 24576, 1536},
                                std::tuple<int64_t, int64_t, int64_t>{128, 7168, 2048}})
    for (G gw : {G::kBlock128x128, G::kGroup1x128}) {
      Case c;
      c.M = M;
      c.N = N;
      c.K = K;
      c.gx = G::kBlock128x128;
      c.gw = gw;
      c.workspace = true;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// Beyond 128 tokens the tiles of 1x128 activation groups read x_scale block_128x128 through an
// expanded copy in the workspace (poisoned, after the split-K slices where there are any): the
// 64-row and clamped tiles forced at 129-700 tokens, with and without a split (a partial last
// group included), each bit for bit against the same call with the scales given as 1x128 groups;
// and the heuristic's plans where the copy pays.
TEST_F(BlockwiseGpu, XBlocksThroughTheExpandedCopy) {
  std::mt19937 rng(977);
  size_t i = 0;
  for (G gw : {G::kBlock128x128, G::kGroup1x128})
    for (const char* name : {"64x128x128_c1x1_pingpong", "64x128x128_c1x1_pingpong_clamped", "128x128x128_c1x1_coop_clamped"})
      for (int64_t M : {int64_t{129}, int64_t{160}, int64_t{200}, int64_t{255}, int64_t{383}, int64_t{700}}) {
        Case c;
        c.M = M;
        c.N = i % 2 ? 264 : 392;
        c.K = i % 3 == 0 ? 400 : i % 3 == 1 ? 1024 : 4112;
        c.gx = G::kBlock128x128;
        c.gw = gw;
        c.config = blockwise_config_index(name);
        ASSERT_TRUE(blockwise_config_supports(c.config, G::kBlock128x128, gw, M)) << name << " M=" << M;
        if (i % 4 == 3 && c.K >= 1024) c.split_k = 2;
        c.workspace = true;
        c.same_bits_as_x_groups = true;
        c.out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
        c.bias = static_cast<BiasKind>(i / 3 % 3);
        c.guard_rows = 2;
        ++i;
        BlockwiseOptions o;
        o.config = c.config;
        o.split_k = c.split_k;
        const size_t split = c.split_k > 1 ? size_t{4} * c.split_k * M * c.N : 0;
        ASSERT_GT(blockwise_linear_workspace_bytes(M, c.N, c.K, c.gx, gw, o), split) << name << ": the copy";
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
  // The heuristic's plans where the copy pays (blockwise_expand_pays): large weights at 129-383
  // tokens with at least 32 rows of the blocks' last 128-row tile past M, where the 1x128 plan is
  // another tile than the blocks' 128x128 (not its clamped twin).
  const int sms = test::device_sm_count();
  for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{160, 28672, 4096},
                                std::tuple<int64_t, int64_t, int64_t>{200, 4096, 14352},
                                std::tuple<int64_t, int64_t, int64_t>{288, 6144, 4096}}) {
    const LinearPlan p = blockwise_plan(M, N, K, G::kBlock128x128, G::kBlock128x128, BlockwiseOptions{}, sms);
    const size_t split = p.split_k > 1 ? size_t{4} * p.split_k * M * N : 0;
    ASSERT_GT(p.workspace_bytes, split) << M << "x" << N << "x" << K << ": the plan takes the copy";
    Case c;
    c.M = M;
    c.N = N;
    c.K = K;
    c.gx = G::kBlock128x128;
    c.gw = G::kBlock128x128;
    c.workspace = true;
    c.same_bits_as_x_groups = true;  // the library's plan for 1x128 groups: the same tile and split
    run_case(c, rng, stream_);
    if (HasFatalFailure()) return;
  }
}

// Per-row scales on shapes where the heuristic takes the 128x192 tile (configuration 4): partial
// tiles along M and a partial last K group, through blockwise_linear's own choice.
TEST_F(BlockwiseGpu, PerRowWideTileByHeuristic) {
  std::mt19937 rng(651);
  for (const auto& [M, N, K, out] : {std::tuple<int64_t, int64_t, int64_t, DType>{1000, 2112, 656, DType::kBF16},
                                     std::tuple<int64_t, int64_t, int64_t, DType>{4099, 2112, 640, DType::kF32}}) {
    ASSERT_EQ(blockwise_choose_config(M, N, K, G::kPerRow, G::kPerRow, test::device_sm_count()), 4) << M << "x" << N << "x" << K;
    Case c;
    c.M = M;
    c.N = N;
    c.K = K;
    c.gx = c.gw = G::kPerRow;
    c.out = out;
    c.bias = out == DType::kF32 ? BiasKind::kNone : BiasKind::kOut;
    run_case(c, rng, stream_);
    if (HasFatalFailure()) return;
  }
}

// Leading dimensions larger than the rows (X, W, Y, and the M-major x scales), with NaN padding.
TEST_F(BlockwiseGpu, LeadingDimensions) {
  std::mt19937 rng(701);
  for (const auto& [gx, gw] : kPairs)
    for (DType out : {DType::kBF16, DType::kF32}) {
      Case c;
      c.M = 130;
      c.N = 136;
      c.K = 400;
      c.gx = gx;
      c.gw = gw;
      c.out = out;
      c.bias = BiasKind::kF32;
      c.pad_x = 48;
      c.pad_w = 16;
      c.pad_y = out == DType::kF32 ? 4 : 8;
      c.pad_sx = 3;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// A partial last K group with rows padded to 128 bytes (fp8_row_ld, the Python quantizers' layout):
// blockwise_linear's own choice, which for these rows is the wave model's tile (clamped where the
// last token tile is mostly past M) rather than the 1x2 cluster that packed rows take.
TEST_F(BlockwiseGpu, PaddedPartialKRowsByHeuristic) {
  std::mt19937 rng(851);
  const int c1x2 = blockwise_config_index("128x128x128_c1x2_coop");
  const int sms = test::device_sm_count();
  size_t i = 0;
  for (const auto& [gx, gw] : kPairs)
    for (int64_t M : {int64_t{300}, int64_t{1000}}) {
      Case c;
      c.M = M;
      c.N = i % 2 ? 264 : 1032;
      c.K = 4112;
      c.gx = gx;
      c.gw = gw;
      c.out = i % 2 ? DType::kBF16 : DType::kF32;
      c.bias = BiasKind::kF32;
      c.pad_x = c.pad_w = fp8_row_ld(c.K) - c.K;
      const int64_t ld = c.K + c.pad_x;
      EXPECT_EQ(blockwise_choose_config(M, c.N, c.K, gx, gw, sms), c1x2);
      EXPECT_NE(blockwise_choose_config(M, c.N, c.K, gx, gw, sms, ld, ld), c1x2);
      ++i;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// K below one group (a single partial K tile: TMA zero-fills the rest of the 128-wide tile).
TEST_F(BlockwiseGpu, KBelowOneGroup) {
  std::mt19937 rng(801);
  for (const auto& [gx, gw] : kPairs)
    for (int64_t K : {16, 48, 112}) {
      Case c;
      c.M = 67;
      c.N = 136;
      c.K = K;
      c.gx = gx;
      c.gw = gw;
      c.bias = BiasKind::kF32;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// M = 0 enqueues nothing: Y keeps its poison.
TEST_F(BlockwiseGpu, MZeroIsNoOp) {
  DeviceBuffer<uint8_t> y(64);
  y.poison(0xFF);
  const int64_t N = 16, K = 128;
  blockwise_linear(MatrixView(y.get(), DType::kE4M3, 0, K), ScaleView{nullptr, G::kGroup1x128, 0},
                   MatrixView(y.get(), DType::kE4M3, N, K), ScaleView{nullptr, G::kBlock128x128, 0}, VectorView{},
                   MatrixView(y.get(), DType::kBF16, 0, N), BlockwiseOptions{}, stream_);
  QSGEMM_CUDA_OK(cudaStreamSynchronize(stream_));
  for (uint8_t b : y.download()) ASSERT_EQ(b, 0xFF);
}

}  // namespace

namespace {

// The skinny (split-K, M <= 32) kernel: every M it serves, N on and off its 16-row warp tiles and
// 16·R-row CTAs, K from below one group to 28672 (chosen cluster sizes 1, 2 and 8), every scale pair
// and dtype.
TEST_F(BlockwiseGpu, SkinnyEveryM) {
  std::mt19937 rng(901);
  const int64_t Ns[] = {8, 16, 24, 72, 136, 1032};
  const int64_t Ks[] = {16, 128, 400, 2048, 7168, 28672};
  const DType outs[] = {DType::kBF16, DType::kF32, DType::kF16};
  size_t i = 0;
  for (int64_t M = 1; M <= 32; ++M)
    for (const auto& [gx, gw] : kPairs) {
      Case c;
      c.M = M;
      c.N = Ns[i % 6];
      c.K = Ks[(i / 6 + i) % 6];
      c.gx = gx;
      c.gw = gw;
      c.out = outs[i % 3];
      c.bias = static_cast<BiasKind>((i / 3) % 3);
      c.config = 3;
      c.pad_x = (i % 4 == 1) ? 32 : 0;
      c.pad_sx = (i % 5 == 2) ? 3 : 0;
      c.pad_y = (i % 7 == 3) ? 8 : 0;
      ++i;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// Every cluster size the skinny kernel can be forced to (BlockwiseOptions::skinny_cluster), with a
// K long enough for each (224 groups), each token tile (T = 1, 2, 4) and a partial last CTA of rows.
TEST_F(BlockwiseGpu, SkinnyEveryClusterSize) {
  std::mt19937 rng(1001);
  size_t i = 0;
  for (int cluster : {1, 2, 4, 8})
    for (int64_t M : {1, 13, 32}) {
      const auto& [gx, gw] = kPairs[i % kPairs.size()];
      Case c;
      c.M = M;
      c.N = i % 2 ? 1032 : 136;
      c.K = 28672 - 16 * static_cast<int64_t>(i % 3);  // a partial last group on two of three
      c.gx = gx;
      c.gw = gw;
      c.out = i % 2 ? DType::kF32 : DType::kBF16;
      c.bias = BiasKind::kF32;
      c.config = 3;
      c.skinny_cluster = cluster;
      ++i;
      run_case(c, rng, stream_);
      if (HasFatalFailure()) return;
    }
}

// A case of shape M x N x K with the scale pair (gx, gw); the rest default.
Case shape_case(int64_t M, int64_t N, int64_t K, G gx, G gw) {
  Case c;
  c.M = M;
  c.N = N;
  c.K = K;
  c.gx = gx;
  c.gw = gw;
  return c;
}

// Split-K forced (BlockwiseOptions::split_k) on every CUTLASS configuration and scale pair it
// serves: partial tiles in M and N, 2 to 8 K slices, a partial last K group (16 or 112 columns,
// which the reduction kernel adds), every output dtype, each bias kind (the reduction adds it too),
// a padded Y (the reduction honours ld and leaves the padding alone).
TEST_F(BlockwiseGpu, SplitKEveryConfig) {
  std::mt19937 rng(1101);
  size_t i = 0;
  for (int config = 0; config < blockwise_num_configs(); ++config) {
    if (config == 3) continue;  // the skinny kernel: split_k is rejected (validation test)
    for (const auto& [gx, gw] : kPairs) {
      if (!blockwise_config_supports(config, gx, gw)) continue;
      for (const auto& [M, N, K, S] : {std::tuple<int64_t, int64_t, int64_t, int>{1, 136, 512, 2},
                                       std::tuple<int64_t, int64_t, int64_t, int>{65, 264, 1552, 3},
                                       std::tuple<int64_t, int64_t, int64_t, int>{130, 392, 4096, 8},
                                       std::tuple<int64_t, int64_t, int64_t, int>{257, 136, 2160, 4}}) {
        Case c = shape_case(M, N, K, gx, gw);
        c.config = config;
        c.split_k = S;
        c.workspace = true;
        c.out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
        c.bias = static_cast<BiasKind>(i % 3 == 2 ? (i / 3) % 3 : i % 3);
        c.pad_y = i % 2 ? 8 : 0;
        ++i;
        run_case(c, rng, stream_);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Split-K chosen by the library: a workspace of blockwise_linear_workspace_bytes on narrow weights
// at small M (few tiles), where the heuristic splits; every scale pair, both output kinds.
TEST_F(BlockwiseGpu, SplitKByHeuristic) {
  std::mt19937 rng(1151);
  size_t i = 0;
  // One case through the library's own choice, given a workspace; the plan must split it.
  const auto run_split = [&](int64_t M, int64_t N, int64_t K, G gx, G gw) {
    EXPECT_GT(blockwise_plan(M, N, K, gx, gw, BlockwiseOptions{}, test::device_sm_count()).split_k, 1)
        << M << "x" << N << "x" << K << ": the heuristic does not split this shape any more";
    Case c = shape_case(M, N, K, gx, gw);
    c.workspace = true;
    c.out = i % 2 ? DType::kF32 : DType::kBF16;
    c.bias = static_cast<BiasKind>(i % 3);
    ++i;
    run_case(c, rng, stream_);
  };
  for (const auto& [gx, gw] : kPairs)
    for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{33, 1032, 8304},  // 64 groups + 112
                                  std::tuple<int64_t, int64_t, int64_t>{100, 520, 4096},
                                  // 9..32 tokens: the 64x128 tile split instead of the skinny kernel
                                  // (for x 128x128 blocks, which that tile cannot serve, the 128x128 tile).
                                  std::tuple<int64_t, int64_t, int64_t>{20, 392, 8192},
                                  std::tuple<int64_t, int64_t, int64_t>{200, 264, 6144}}) {
      run_split(M, N, K, gx, gw);
      if (HasFatalFailure()) return;
    }
  // 2 x 19 tiles split 3 ways (114 CTAs): the split 64-row tile takes its clamped row (61 rows past
  // M). One pair: its float64 reference is the costliest case here (all four pairs passed once).
  ASSERT_EQ(blockwise_plan(67, 2312, 6144, G::kGroup1x128, G::kBlock128x128, BlockwiseOptions{}, test::device_sm_count()).config,
            blockwise_config_index("64x128x128_c1x1_pingpong_clamped"));
  run_split(67, 2312, 6144, G::kGroup1x128, G::kBlock128x128);
  if (HasFatalFailure()) return;
  // Per-channel weight scales (CUTLASS's mainloop) split on wider weights too: 6144 rows at 32 and
  // 48 tokens, where 1x128.128x128 does not split (K = 4096: too few groups for the split of a
  // mostly empty token tile).
  for (G gx : {G::kGroup1x128, G::kBlock128x128})
    for (int64_t M : {32, 48}) {
      if (gx == G::kGroup1x128)
        EXPECT_EQ(blockwise_plan(M, 6144, 4096, gx, G::kBlock128x128, BlockwiseOptions{}, test::device_sm_count()).split_k, 1) << M;
      run_split(M, 6144, 4096, gx, G::kGroup1x128);
      if (HasFatalFailure()) return;
    }
}

// The split rules: the 64-row tile at 20 tokens on 43 weight tiles within the reach of 1x128 weight
// scales; beyond the reach one 128-row token tile at least 40 % past M splits in two (forced, at
// 50 tokens on 57 tiles with x in 128x128 blocks, which up to 128 tokens otherwise take the 1x128
// activations' 64-row tile), and a partial last group with 1x128 weight scales splits from 32
// whole groups at 17-128 tokens.
TEST_F(BlockwiseGpu, SplitKBeyondTheReach) {
  std::mt19937 rng(1152);
  const std::tuple<int64_t, int64_t, int64_t, G, G, DType, const char*> cases[] = {
      {20, 5504, 8192, G::kGroup1x128, G::kGroup1x128, DType::kBF16, nullptr},
      {50, 7296, 8192, G::kBlock128x128, G::kBlock128x128, DType::kF32, "128x128x128_c1x1_coop"},
      {40, 4096, 4112, G::kGroup1x128, G::kGroup1x128, DType::kBF16, nullptr}};
  for (const auto& [M, N, K, gx, gw, out, forced] : cases) {
    BlockwiseOptions o;  // the library's split, of its own tile or of the forced one
    if (forced) o.config = blockwise_config_index(forced);
    ASSERT_GT(blockwise_plan(M, N, K, gx, gw, o, test::device_sm_count()).split_k, 1) << M << "x" << N << "x" << K;
    Case c = shape_case(M, N, K, gx, gw);
    c.config = o.config;
    c.workspace = true;
    c.out = out;
    run_case(c, rng, stream_);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
