// 2:4 sparse FP8 on the GPU: the compressor is bit-identical to the CPU reference, decompression
// inverts it exactly, and sparse24_linear matches the float64 reference on the same operands for
// every token count, tile edge, output dtype, scale kind, bias dtype and configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;

// Bounds: tests/tolerances.h (one header for both families).
using test::Family;

// A compressed weight on the device together with its CPU twin.
struct Weight {
  int64_t N, K;
  DeviceBuffer<uint8_t> values, meta;
  DeviceBuffer<float> scales;
  ref::Sparse24Host host;
  SparseFp8Weight view() const {
    return SparseFp8Weight{N, K, values.get(), meta.get(), scales.get(), host.scales.size() == 1};
  }
};

// Random dense weight -> GPU compress (bf16 source) -> checks against the CPU compressor.
void make_weight(Weight& w, int64_t N, int64_t K, std::mt19937& rng, bool per_tensor = false) {
  w.N = N;
  w.K = K;
  std::vector<float> dense = random_floats(static_cast<size_t>(N * K), rng, 1.0f);
  const std::vector<uint16_t> bits = to_bf16(dense);
  DeviceBuffer<uint16_t> src(bits.size());
  src.upload(bits);
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K, per_tensor);
  w.values.resize(b.values);
  w.meta.resize(b.meta);
  w.scales.resize(b.scales / 4);
  DeviceBuffer<uint8_t> ws(sparse24_compress_workspace_bytes(N, K));
  Sparse24CompressOptions opt;
  opt.scale = per_tensor ? Sparse24Scale::kPerTensor : Sparse24Scale::kPerChannel;
  SparseFp8Weight v{N, K, w.values.get(), w.meta.get(), w.scales.get(), per_tensor};
  sparse24_compress(MatrixView(src.get(), DType::kBF16, N, K), v, opt, ws.get(), nullptr);
  ASSERT_TRUE(ref::sparse24_compress(dense.data(), N, K, K, ref::PruneMode::kMagnitude,
                                     per_tensor ? ref::WeightScale::kPerTensor : ref::WeightScale::kPerChannel, nullptr,
                                     per_tensor, &w.host));
}

TEST(Sparse24Gpu, CompressIsBitIdenticalToCpuAndDecompressInvertsIt) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(1);
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32})
    // {8, 33024}: rows too long for the register-resident kernel (the two-pass fallback).
    for (auto [N, K] : {std::pair<int64_t, int64_t>{8, 32}, {72, 160}, {128, 256}, {200, 4128}, {1024, 1024}, {8, 33024}})
      for (int mode = 0; mode < 3; ++mode) {
        const bool per_tensor = mode == 1;
        SCOPED_TRACE(testing::Message() << dtype_name(t) << " N=" << N << " K=" << K << " scale mode " << mode);
        const int64_t ld = K + 32;  // compress from a sub-view with ld > K
        std::vector<float> dense = random_floats(static_cast<size_t>(N * ld), rng, 4.0f);
        for (int64_t i = 0; i < N * ld; i += 13) dense[i] = (i % 2) ? -0.0f : 0.0f;  // zeros and -0.0 in groups
        DeviceBuffer<uint8_t> src;
        if (t == DType::kF32) {
          src.resize(dense.size() * 4);
          QSGEMM_CUDA_OK(cudaMemcpy(src.get(), dense.data(), dense.size() * 4, cudaMemcpyHostToDevice));
        } else {
          const std::vector<uint16_t> bits = t == DType::kBF16 ? to_bf16(dense) : to_fp16(dense);
          src.resize(bits.size() * 2);
          QSGEMM_CUDA_OK(cudaMemcpy(src.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
        }
        const Sparse24WeightBytes b = sparse24_weight_bytes(N, K, per_tensor);
        DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
        DeviceBuffer<float> scales(b.scales / 4);
        std::vector<float> given(b.scales / 4);
        for (size_t i = 0; i < given.size(); ++i) given[i] = 0.01f + 0.001f * static_cast<float>(i % 17);
        values.poison();
        meta.poison();
        if (mode == 2) scales.upload(given); else scales.poison();
        Sparse24CompressOptions opt;
        opt.scale = mode == 0 ? Sparse24Scale::kPerChannel : mode == 1 ? Sparse24Scale::kPerTensor : Sparse24Scale::kGiven;
        SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), per_tensor};
        ASSERT_NO_THROW(sparse24_compress(MatrixView(src.get(), t, N, K, ld), v, opt, ws.get(), nullptr));
        ref::Sparse24Host host;
        ASSERT_TRUE(ref::sparse24_compress(dense.data(), N, K, ld, ref::PruneMode::kMagnitude,
                                           mode == 0 ? ref::WeightScale::kPerChannel
                                           : mode == 1 ? ref::WeightScale::kPerTensor : ref::WeightScale::kGiven,
                                           given.data(), per_tensor, &host));
        EXPECT_EQ(values.download(), host.values);
        EXPECT_EQ(meta.download(), host.meta);  // padding included
        EXPECT_EQ(scales.download(), host.scales);
        // decompress(compress(W)) == the CPU dequantized weight, exactly.
        const std::vector<float> expect = ref::sparse24_decompress(host);
        DeviceBuffer<float> out32(N * K);
        DeviceBuffer<uint16_t> out16(N * K);
        out32.poison();
        out16.poison();
        sparse24_decompress(v, MatrixView(out32.get(), DType::kF32, N, K), nullptr);
        sparse24_decompress(v, MatrixView(out16.get(), DType::kBF16, N, K), nullptr);
        QSGEMM_CUDA_OK(cudaDeviceSynchronize());
        EXPECT_EQ(out32.download(), expect);
        const std::vector<uint16_t> got16 = out16.download();
        for (int64_t i = 0; i < N * K; ++i) ASSERT_EQ(got16[i], bf16_encode(expect[i])) << i;
      }
}

// Every group pattern over {0, -0.0, 1, -1, 2} (ties, zeros and signed zeros in every position):
// the GPU's selection equals the CPU's.
TEST(Sparse24Gpu, CompressSelectionOnEveryTiePattern) {
  QSGEMM_REQUIRE_SM90();
  const float vals[5] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f};
  const int64_t N = 8, K = 320;  // 640 groups >= 5^4
  std::vector<float> dense(N * K, 0.5f);
  for (int p = 0; p < 625; ++p)
    for (int i = 0, q = p; i < 4; ++i, q /= 5) dense[p * 4 + i] = vals[q % 5];
  DeviceBuffer<float> src(N * K);
  src.upload(dense);
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
  DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
  DeviceBuffer<float> scales(N);
  SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), false};
  ASSERT_NO_THROW(sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), v, {}, ws.get(), nullptr));
  ref::Sparse24Host host;
  ASSERT_TRUE(ref::sparse24_compress(dense.data(), N, K, K, ref::PruneMode::kMagnitude, ref::WeightScale::kPerChannel,
                                     nullptr, false, &host));
  EXPECT_EQ(meta.download(), host.meta);
  EXPECT_EQ(values.download(), host.values);
  EXPECT_EQ(scales.download(), host.scales);
}

TEST(Sparse24Gpu, CompressRejectsNonSparseAndNonFiniteWithLocation) {
  QSGEMM_REQUIRE_SM90();
  const int64_t N = 64, K = 128;
  std::vector<float> dense(N * K, 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < K / 4; ++g) dense[n * K + g * 4 + (n + g) % 4] = 1.0f + n;  // 1 non-zero per group
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
  DeviceBuffer<uint8_t> values(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
  DeviceBuffer<float> scales(N), src(N * K);
  SparseFp8Weight v{N, K, values.get(), meta.get(), scales.get(), false};
  Sparse24CompressOptions req;
  req.prune = Sparse24Prune::kRequire;
  src.upload(dense);
  EXPECT_NO_THROW(sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), v, req, ws.get(), nullptr));
  // Three non-zeros in row 37, group 5 (and a later offender): the first one is named.
  dense[37 * K + 20] = dense[37 * K + 21] = dense[37 * K + 22] = 2.0f;
  dense[50 * K + 0] = dense[50 * K + 1] = dense[50 * K + 2] = 2.0f;
  src.upload(dense);
  try {
    sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), v, req, ws.get(), nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::kInvalidValue);
    EXPECT_NE(std::string(e.what()).find("row 37, group 5"), std::string::npos) << e.what();
  }
  // Magnitude pruning accepts it; a NaN is rejected with its position.
  EXPECT_NO_THROW(sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), v, {}, ws.get(), nullptr));
  dense[12 * K + 99] = std::nanf("");
  src.upload(dense);
  try {
    sparse24_compress(MatrixView(src.get(), DType::kF32, N, K), v, {}, ws.get(), nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::kInvalidValue);
    EXPECT_NE(std::string(e.what()).find("row 12, column 99"), std::string::npos) << e.what();
  }
}

struct LinearSpec {
  int64_t M;
  DType out = DType::kBF16;
  DType bias = DType::kU8;  // kU8: no bias
  bool x_scalar = false;
  int config = -1;
  int64_t ldx_pad = 0, ldy_pad = 0;
  bool fast_accum = false;
  // Pass a workspace of sparse24_linear_workspace_bytes() (poisoned), as an engine would, so that the
  // heuristic may choose a stream-K configuration; a forced stream-K configuration needs it.
  bool workspace = true;
  int split_k = 0;  // Sparse24Options::split_k
};

// Runs one sparse24_linear case and checks every element against the float64 reference.
void check_linear(const Weight& w, const LinearSpec& s, std::mt19937& rng) {
  const int64_t M = s.M, N = w.N, K = w.K, ldx = K + s.ldx_pad, ldy = N + s.ldy_pad;
  SCOPED_TRACE(testing::Message() << "M=" << M << " N=" << N << " K=" << K << " out=" << dtype_name(s.out)
                                  << " bias=" << (s.bias == DType::kU8 ? "none" : dtype_name(s.bias))
                                  << " x_scalar=" << s.x_scalar << " config=" << s.config
                                  << " fast_accum=" << s.fast_accum << " split_k=" << s.split_k);
  // Activations: random floats quantized per token on the host (fresh data per case).
  std::vector<float> xf = random_floats(static_cast<size_t>(M * ldx), rng, 3.0f);
  std::vector<uint8_t> xq(M * ldx, 0);
  std::vector<float> sx(M);
  if (s.x_scalar) {
    sx.assign(1, 0.0f);
    sx[0] = ref::quantize_fp8_per_tensor(xf.data(), M, K, ldx, xq.data(), ldx);
  } else {
    ref::quantize_fp8_per_row(xf.data(), M, K, ldx, xq.data(), ldx, sx.data());
  }
  std::vector<float> bias_f(N);
  for (auto& b : bias_f) b = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
  DeviceBuffer<uint8_t> bias_dev;
  VectorView bias;
  if (s.bias != DType::kU8) {
    if (s.bias == DType::kF32) {
      bias_dev.resize(N * 4);
      QSGEMM_CUDA_OK(cudaMemcpy(bias_dev.get(), bias_f.data(), N * 4, cudaMemcpyHostToDevice));
    } else {
      const std::vector<uint16_t> bits = s.bias == DType::kBF16 ? to_bf16(bias_f) : to_fp16(bias_f);
      bias_dev.resize(N * 2);
      QSGEMM_CUDA_OK(cudaMemcpy(bias_dev.get(), bits.data(), N * 2, cudaMemcpyHostToDevice));
    }
    bias = VectorView(bias_dev.get(), s.bias, N);
  }
  DeviceBuffer<uint8_t> x(M * ldx);
  x.upload(xq);
  DeviceBuffer<float> sxd(sx.size());
  sxd.upload(sx);
  const int esize = dtype_size(s.out);
  DeviceBuffer<uint8_t> y(M * ldy * esize);
  y.poison();
  Sparse24Options opt;
  opt.config = s.config;
  opt.fast_accum = s.fast_accum;
  opt.split_k = s.split_k;
  DeviceBuffer<uint8_t> workspace;
  if (s.workspace) {
    size_t bytes = 0;
    ASSERT_NO_THROW(bytes = sparse24_linear_workspace_bytes(M, N, K, opt));
    const LinearPlan plan = sparse24_plan(M, N, K, opt);
    if (s.split_k >= 2) EXPECT_EQ(plan.split_k, s.split_k);
    if (plan.split_k > 1) EXPECT_EQ(bytes, static_cast<size_t>(plan.split_k * M * N * 4));
    if (s.config >= 0) EXPECT_EQ(bytes > 0, (sparse24_config(s.config).stream_k || plan.split_k > 1) && M > 0);
    if (bytes > 0) {
      workspace.resize(bytes);
      workspace.poison();  // the call must set up what the kernel reads
      opt.workspace = workspace.get();
      opt.workspace_bytes = bytes;
    }
  }
  ASSERT_NO_THROW(sparse24_linear(MatrixView(x.get(), DType::kE4M3, M, K, ldx),
                                  ScaleView{sxd.get(), s.x_scalar ? ScaleGranularity::kPerTensor : ScaleGranularity::kPerRow, 0},
                                  w.view(), bias, MatrixView(y.get(), s.out, M, N, ldy), opt, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint8_t> raw = y.download();
  std::vector<float> out(M * ldy);
  for (int64_t i = 0; i < M * ldy; ++i) {
    if (s.out == DType::kF32) {
      std::memcpy(&out[i], &raw[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[i * 2], 2);
      out[i] = s.out == DType::kBF16 ? bf16_decode(h) : fp16_decode(h);
    }
  }
  std::vector<double> expect(M * N);
  ref::gemm_sparse24_fp8(xq.data(), ldx, M, w.host, sx.data(), s.x_scalar, s.bias == DType::kU8 ? nullptr : bias_f.data(),
                         expect.data());
  // Y's padding columns (ld > N) keep their poison: the kernels write only [M, N].
  test::expect_padding_untouched(raw, M, N, ldy, esize);
  const double err = ref::rel_frobenius_error(expect.data(), out.data(), M, N, ldy);
  double e_round = 0.0;
  if (!s.fast_accum && s.out != DType::kF32) {
    std::vector<float> rounded(expect.begin(), expect.end());
    if (s.out == DType::kBF16)
      to_bf16(rounded);
    else
      to_fp16(rounded);
    e_round = ref::rel_frobenius_error(expect.data(), rounded.data(), M, N, N);
  }
  const double tol = test::rel_frobenius(Family::kSparse24, s.out, e_round, s.fast_accum);
  EXPECT_LE(err, tol) << "relative Frobenius error (exactly rounded reference: " << e_round << ")";
  testing::Test::RecordProperty((testing::Message() << "rel_err_M" << M << "_K" << K << "_" << dtype_name(s.out)
                                                    << (s.fast_accum ? "_fast" : "")).GetString(),
                                (testing::Message() << err).GetString());
  if (s.fast_accum || K >= 8192) std::printf("    rel_err %.3e (M=%lld K=%lld %s%s)\n", err, static_cast<long long>(M),
                                             static_cast<long long>(K), dtype_name(s.out), s.fast_accum ? " fast_accum" : "");
  // Every element of every row (the bound and its derivation: gpu_test_util.h, tolerances.h).
  test::expect_elements_close(expect.data(), out.data(), M, N, ldy, test::element_bound(s.out, s.fast_accum));
}

TEST(Sparse24Gpu, LinearEveryTokenCount) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(2);
  Weight w;
  make_weight(w, 264, 512, rng);  // N past a 128/256 tile edge, K two 256-tiles
  for (int64_t M : {1, 2, 3, 7, 13, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 257, 1000, 2047, 4099})
    check_linear(w, LinearSpec{M}, rng);
}

// Plans with a tail launch (sparse24_partial_column): the main launch on whole token columns, then
// a narrower one on the last tokens, overlapping the main launch's last rows. Every element is
// checked, with bf16 and fp32 output, both scale kinds, bias, padded leading dimensions and with
// or without a workspace. On this weight the cost model picks a tail in the fast-accumulation mode
// just past 1024 tokens (128x256 columns, then the 64x32 tile; at K = 1024 one launch of the fast
// 128x192 tile models faster).
TEST(Sparse24Gpu, LinearWithTailLaunch) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(11);
  Weight w;
  make_weight(w, 4096, 2048, rng);
  int tails = 0;
  auto run = [&](LinearSpec s) {
    s.fast_accum = true;
    Sparse24Options o;
    o.fast_accum = true;
    const LinearPlan plan = sparse24_plan(s.M, w.N, w.K, o);
    EXPECT_GE(plan.tail_config, 0) << "M=" << s.M << ": this test wants a plan with a tail";
    tails += plan.tail_config >= 0;
    check_linear(w, s, rng);
  };
  // Two cases: the float64 reference of one 1031 x 4096 x 2048 case takes ~80 s of CPU.
  run(LinearSpec{1025, DType::kBF16, DType::kBF16, true});
  LinearSpec padded{1031, DType::kF32, DType::kF32, false, -1, 16, 8};
  padded.workspace = false;
  run(padded);
  EXPECT_EQ(tails, 2);
}

TEST(Sparse24Gpu, LinearShapesAroundAlignmentAndTileEdges) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(3);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{8, 32}, {64, 128}, {120, 160}, {136, 288}, {256, 4128},
                      {520, 1056}, {1024, 640}})
    for (int64_t M : {1, 17, 129}) {
      Weight w;
      make_weight(w, N, K, rng);
      check_linear(w, LinearSpec{M}, rng);
    }
}

TEST(Sparse24Gpu, LinearOutputDtypesBiasAndScaleKinds) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(4);
  Weight w, wt;
  make_weight(w, 136, 384, rng);
  make_weight(wt, 136, 384, rng, /*per_tensor=*/true);
  for (const Weight* wp : {&w, &wt})
    for (int64_t M : {5, 130}) {
      check_linear(*wp, LinearSpec{M, DType::kBF16, DType::kBF16}, rng);
      check_linear(*wp, LinearSpec{M, DType::kBF16, DType::kF32, true}, rng);
      check_linear(*wp, LinearSpec{M, DType::kF16, DType::kF16}, rng);
      check_linear(*wp, LinearSpec{M, DType::kF16, DType::kF32}, rng);
      check_linear(*wp, LinearSpec{M, DType::kF32, DType::kU8, true}, rng);
      check_linear(*wp, LinearSpec{M, DType::kF32, DType::kF32}, rng);
      check_linear(*wp, LinearSpec{M, DType::kBF16, DType::kU8, false, -1, 16, 8}, rng);  // padded ld
    }
}

TEST(Sparse24Gpu, LinearEveryConfiguration) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(5);
  Weight w;
  make_weight(w, 392, 768, rng);
  for (int c = 0; c < sparse24_num_configs(); ++c)
    for (int64_t M : {1, 19, 77, 300}) {
      if (sparse24_config(c).skinny && M > 32) continue;  // the decode kernel serves M <= 32
      check_linear(w, LinearSpec{M, DType::kBF16, DType::kBF16, false, c}, rng);
    }
}

// Runs sparse24_linear twice on the same fresh random X (fp32 output, padded leading dimensions),
// with options a and then b, and expects the two outputs (padding included) equal bit for bit.
void expect_two_calls_same_bits(const Weight& w, int64_t M, const Sparse24Options& a, const Sparse24Options& b, std::mt19937& rng,
                                const std::string& what) {
  const int64_t ldx = w.K + 16, ldy = w.N + 8;
  std::vector<uint8_t> xq(static_cast<size_t>(M * ldx));
  for (auto& v : xq) v = static_cast<uint8_t>(rng() & 0x77);  // finite e4m3 (no NaN encodings)
  std::vector<float> sx(static_cast<size_t>(M));
  for (auto& v : sx) v = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
  DeviceBuffer<uint8_t> x(xq.size());
  x.upload(xq);
  DeviceBuffer<float> sxd(sx.size());
  sxd.upload(sx);
  DeviceBuffer<uint8_t> y0(static_cast<size_t>(M * ldy * 4)), y1(static_cast<size_t>(M * ldy * 4));
  y0.poison();
  y1.poison();
  const std::pair<DeviceBuffer<uint8_t>*, const Sparse24Options*> runs[] = {{&y0, &a}, {&y1, &b}};
  for (const auto& [y, opt] : runs)
    ASSERT_NO_THROW(sparse24_linear(MatrixView(x.get(), DType::kE4M3, M, w.K, ldx),
                                    ScaleView{sxd.get(), ScaleGranularity::kPerRow, 0}, w.view(), VectorView(),
                                    MatrixView(y->get(), DType::kF32, M, w.N, ldy), *opt, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(y0.download() == y1.download()) << what << " M=" << M << ": the two calls differ";
}

// Every data-parallel configuration clamps its last token column inside M
// (src/kernels/sm90/common/clamped_token_column.cuh): at M >= tile_n the tiles of the last column
// and of a cluster pair's padding compute tokens [M - tile_n, M) through shifted output and per-token
// scale pointers. M = tile_n + 5 (one clamped column), 2 * tile_n + 7 (a third column: for a cluster
// pair, also a padding column), and one token below tile_n (no shift, the padding clamped). fp32
// output with a bias and padded leading dimensions, so a wrong shift of X, Y or the scales shows.
// The rows written by two tiles must get the same bits: two calls give identical outputs.
TEST(Sparse24Gpu, LinearClampedLastColumn) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(13);
  Weight w;
  make_weight(w, 392, 768, rng);
  int clamped = 0;
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    if (cfg.skinny || cfg.stream_k) continue;
    for (int64_t M : {int64_t{cfg.tile_n} + 5, 2 * int64_t{cfg.tile_n} + 7, int64_t{cfg.tile_n} - 1}) {
      check_linear(w, LinearSpec{M, DType::kF32, DType::kF32, false, c, 16, 8}, rng);
      ++clamped;
      // Determinism: the same call twice, compared bit for bit.
      Sparse24Options opt;
      opt.config = c;
      expect_two_calls_same_bits(w, M, opt, opt, rng, cfg.name());
    }
  }
  EXPECT_GE(clamped, 3 * 8);
}

// A last token column partly past M loads only its rows of X (common/token_row_boxes.cuh; a
// cluster pair's padding column the same rows): every CUTLASS configuration (stream-K included) at M around
// 8-row boxes and the column's edges, against the float64 reference and bit for bit against the
// same call loading the whole box (Sparse24Options::whole_last_tile). The skipped rows of a stage
// hold an earlier tile's X: equal bits show they reach no stored row.
TEST(Sparse24Gpu, LastColumnRowsSameBitsAsWholeBox) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(17);
  Weight w;
  make_weight(w, 392, 768, rng);
  int cases = 0;
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    if (cfg.skinny) continue;
    const int64_t tn = cfg.tile_n;
    for (int64_t M : {int64_t{1}, int64_t{9}, tn - 1, tn + 8, 2 * tn + 3}) {
      if (M < 1) continue;
      check_linear(w, LinearSpec{M, DType::kF32, DType::kF32, false, c, 16, 8}, rng);
      Sparse24Options rows, whole;
      rows.config = whole.config = c;
      rows.split_k = whole.split_k = 1;  // unsplit; the workspace is for the stream-K configurations
      const size_t ws_bytes = sparse24_linear_workspace_bytes(M, w.N, w.K, rows);
      DeviceBuffer<uint8_t> ws(std::max<size_t>(ws_bytes, 16));
      rows.workspace = whole.workspace = ws.get();
      rows.workspace_bytes = whole.workspace_bytes = ws_bytes;
      whole.whole_last_tile = true;
      expect_two_calls_same_bits(w, M, rows, whole, rng, cfg.name() + " rows only / whole box");
      ++cases;
    }
  }
  EXPECT_GE(cases, 40);
}

// The tuning option's bands of tiles (Sparse24Options::max_swizzle, what `qsgemm tune sparse24
// --swizzles` times): the order of the tiles changes, not their sums. Data-parallel rows whose
// bands pad both tile counts (17 row tiles of 128, 22 token columns of 192 / 17 of 256), each band
// bit for bit against the library's order (which LinearEveryConfiguration checks against float64).
TEST(Sparse24Gpu, TileBandsSameBits) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(23);
  Weight w;
  make_weight(w, 2056, 512, rng);
  const int64_t M = 4100;
  int cases = 0;
  for (const char* name : {"128x192x256_c1x1_coop", "128x192x256_c2x1_coop", "128x256x128_c2x1_coop_fastaccum",
                           "128x128x256_c1x2_coop"}) {
    const int c = sparse24_config_index(name);
    Sparse24Options lib;
    lib.config = c;
    lib.fast_accum = sparse24_config(c).fast_accum;
    for (int band : {1, 2, 4, 8}) {
      Sparse24Options banded = lib;
      banded.max_swizzle = band;
      expect_two_calls_same_bits(w, M, lib, banded, rng, std::string(name) + " bands of " + std::to_string(band));
      ++cases;
    }
  }
  EXPECT_EQ(cases, 16);
}

// The split-K decode kernel (configuration 12), forced: every token count it serves (n8 token tiles
// of 1, 2 and 4), weights off its 16-row and 128-column edges (8 rows and K = 32: one partial panel;
// 72 x 160: a partial second panel; 200 x 4128: 33 panels, a cluster of 2; 1288 x 96: one warp per
// CTA), every output dtype with either bias dtype, per-tensor scales and padded leading dimensions;
// then through the heuristic on the 1280-row shard (80 row CTAs, a cluster of 2), in both
// accumulation modes (with a workspace the library splits the 64x32 tile there instead:
// LinearSplitKByHeuristic).
TEST(Sparse24Gpu, LinearSkinnyDecode) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(10);
  constexpr int kSkinny = 12;
  ASSERT_TRUE(sparse24_config(kSkinny).skinny);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{8, 32}, {72, 160}, {200, 4128}, {1288, 96}}) {
    Weight w;
    make_weight(w, N, K, rng);
    for (int64_t M : {1, 2, 3, 7, 8, 9, 13, 16, 17, 31, 32})
      check_linear(w, LinearSpec{M, DType::kBF16, DType::kU8, false, kSkinny}, rng);
    check_linear(w, LinearSpec{5, DType::kF16, DType::kF16, true, kSkinny}, rng);
    check_linear(w, LinearSpec{20, DType::kF32, DType::kF32, false, kSkinny, 16, 8}, rng);
    check_linear(w, LinearSpec{3, DType::kBF16, DType::kF32, false, kSkinny}, rng);
    check_linear(w, LinearSpec{12, DType::kBF16, DType::kBF16, false, kSkinny}, rng);
  }
  Weight wt;
  make_weight(wt, 136, 384, rng, /*per_tensor=*/true);
  check_linear(wt, LinearSpec{4, DType::kF32, DType::kF32, true, kSkinny}, rng);
  check_linear(wt, LinearSpec{30, DType::kBF16, DType::kU8, false, kSkinny}, rng);
  Weight shard;
  make_weight(shard, 1280, 8192, rng);
  for (int64_t M : {1, 8}) {
    for (bool sk : {false, true})
      for (bool fast : {false, true}) ASSERT_EQ(sparse24_choose_config(M, 1280, 8192, test::device_sm_count(), fast, sk), kSkinny);
    LinearSpec f32{M, DType::kF32};
    f32.workspace = false;
    check_linear(shard, f32, rng);
    LinearSpec plain{M, DType::kBF16, DType::kBF16};
    plain.workspace = false;
    check_linear(shard, plain, rng);
    LinearSpec fast{M, DType::kF32};
    fast.fast_accum = true;
    fast.workspace = false;
    check_linear(shard, fast, rng);
  }
}

// The stream-K configurations split K over SMs: on 2-10 weight-row tiles the scheduler gives every
// SM a piece of K, so every partial tile goes through the workspace and the deterministic reduction.
// Every output dtype, both bias dtypes, per-tensor and per-token scales, partial tiles in both
// dimensions, a K of one tile and a long K; then the heuristic's own stream-K choices.
TEST(Sparse24Gpu, LinearStreamK) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(8);
  for (auto [N, K] : {std::pair<int64_t, int64_t>{256, 8192}, {1288, 2048}, {136, 256}}) {
    Weight w;
    make_weight(w, N, K, rng);
    for (int c : {10, 11, 15, 16}) {  // the stream-K rows
      for (int64_t M : {1, 17, 130}) check_linear(w, LinearSpec{M, DType::kBF16, DType::kU8, false, c}, rng);
      check_linear(w, LinearSpec{33, DType::kF16, DType::kF16, true, c}, rng);
      check_linear(w, LinearSpec{40, DType::kF32, DType::kF32, false, c}, rng);
      check_linear(w, LinearSpec{5, DType::kBF16, DType::kF32, false, c, 16, 8}, rng);
    }
  }
  // Decode on a weight of 10240 rows: the heuristic takes the 32-token stream-K tile (its last
  // column loading only its 8 rows) when given a workspace.
  Weight big;
  make_weight(big, 10240, 1024, rng);
  ASSERT_EQ(sparse24_choose_config(4, 10240, 1024, test::device_sm_count(), false, true),
            sparse24_config_index("128x32x256_c1x1_coop_streamk"));
  check_linear(big, LinearSpec{4, DType::kBF16}, rng);
  // The same call without a workspace falls back to a configuration that needs none.
  LinearSpec none{4, DType::kBF16};
  none.workspace = false;
  check_linear(big, none, rng);
  // Whole 192-token columns of the 128x192 tile on a weight under 2048 rows: the cost model takes
  // the 128-token stream-K tile there given a workspace (Sparse24CostModel.StreamKOnNarrowWholeColumns),
  // the 128x192 tile without one. 2880 tokens (15 columns) on 1288 rows (off the 128-row edge).
  Weight narrow;
  make_weight(narrow, 1288, 1024, rng);
  ASSERT_EQ(sparse24_plan(2880, 1288, 1024, Sparse24Options{}).config,
            sparse24_config_index("128x128x256_c1x1_coop_streamk"));
  check_linear(narrow, LinearSpec{2880, DType::kBF16, DType::kBF16}, rng);
  LinearSpec narrow_none{2880, DType::kF32};
  narrow_none.workspace = false;
  check_linear(narrow, narrow_none, rng);
}

// From 8192 tokens the heuristic takes the 128x192 tile (configuration 9): a partial last token
// tile (8192 = 42 x 192 + 128) and a partial weight-row tile (1288 = 10 x 128 + 8), through
// sparse24_linear's own choice, with and without a workspace, bf16 and fp32 out.
TEST(Sparse24Gpu, LinearWideTokenTileByHeuristic) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(9);
  Weight w;
  make_weight(w, 1288, 256, rng);
  for (bool sk : {false, true}) ASSERT_EQ(sparse24_choose_config(8192, 1288, 256, test::device_sm_count(), false, sk), 9);
  LinearSpec bf{8192, DType::kBF16, DType::kBF16};
  check_linear(w, bf, rng);
  LinearSpec f32{8192, DType::kF32, DType::kF32};
  f32.workspace = false;
  check_linear(w, f32, rng);
  // The same tile on 2048 rows or more runs the swizzled tile order (sparse24_tile_order) from 4096
  // tokens on every card (from 2048 on the H100 profile): 2056 rows and 4100 tokens, both off the
  // tile edges.
  Weight w2;
  make_weight(w2, 2056, 256, rng);
  LinearSpec swizzled{4100, DType::kBF16, DType::kF32, false, 9};
  check_linear(w2, swizzled, rng);
  // Its fast-accumulation twin follows the same card rule: 2500 tokens, swizzled on an H100.
  LinearSpec fast_swizzled{2500, DType::kBF16, DType::kF32, false,
                           sparse24_config_index("128x192x256_c1x1_coop_fastaccum")};
  fast_swizzled.fast_accum = true;
  check_linear(w2, fast_swizzled, rng);
  // The card profile (Sparse24Profile in src/sparse24_heuristic.h), read from the device's DRAM
  // bandwidth: on whole 256-token columns of the 128x128 pair at 2304 tokens an H100 takes the
  // swizzled 128x192 tile, an H200 the pair.
  const std::string card = device_info().name;
  const int plan_2304 = sparse24_plan(2304, 4096, 1024, Sparse24Options{}).config;
  if (card.find("H100") != std::string::npos) EXPECT_EQ(plan_2304, 9) << card;
  if (card.find("H200") != std::string::npos) EXPECT_EQ(plan_2304, sparse24_config_index("128x128x256_c1x2_coop")) << card;
  std::printf("    %s: the 2304-token plan on 4096 x 1024 is %s\n", card.c_str(), sparse24_config(plan_2304).name().c_str());
  // The heuristic's pick on whole 256-token columns (2304 tokens = 12 columns of 192: the 128x192
  // tile on the H100 profile, the pair on the H200's; the CPU test
  // Sparse24CostModel.WideTileOnWholeColumnsByCard checks both), without a workspace.
  Weight w3;
  make_weight(w3, 2176, 1024, rng);
  LinearSpec whole{2304, DType::kBF16, DType::kBF16};
  whole.workspace = false;
  check_linear(w3, whole, rng);
}

// Split-K (Sparse24Options::split_k), forced: every data-parallel configuration with 2, 3 and
// 6 slices of a 6-tile K on a weight off the 64- and 128-row tile edges (392 rows), token counts off
// the token tiles, into a NaN-poisoned workspace; then every output dtype with both bias dtypes,
// per-tensor scales (activations and weight) and padded leading dimensions.
TEST(Sparse24Gpu, LinearSplitKEveryConfiguration) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(11);
  Weight w;
  make_weight(w, 392, 1536, rng);
  for (int c = 0; c < sparse24_num_configs(); ++c) {
    const Sparse24Config cfg = sparse24_config(c);
    if (cfg.stream_k || cfg.skinny) continue;
    for (int split : {2, 3, 6})
      for (int64_t M : {1, 19, 130}) {
        LinearSpec sp{M, DType::kBF16, DType::kBF16, false, c};
        sp.split_k = split;
        check_linear(w, sp, rng);
      }
  }
  Weight wt;
  make_weight(wt, 136, 2048, rng, /*per_tensor=*/true);
  for (const Weight* wp : {&w, &wt})
    for (int c : {0, 3}) {
      auto spec = [&](int64_t M, DType out, DType bias, bool x_scalar, int64_t ldx_pad = 0, int64_t ldy_pad = 0) {
        LinearSpec sp{M, out, bias, x_scalar, c, ldx_pad, ldy_pad};
        sp.split_k = 2;
        return sp;
      };
      check_linear(*wp, spec(33, DType::kF16, DType::kF16, true), rng);
      check_linear(*wp, spec(40, DType::kF32, DType::kF32, false), rng);
      check_linear(*wp, spec(7, DType::kBF16, DType::kF32, false, 16, 8), rng);
      check_linear(*wp, spec(200, DType::kF32, DType::kU8, true), rng);
    }
}

// Split-K by the library's own rule: the 1280-row tensor-parallel shard at small M (20 or 40 tiles
// of 64 rows on the H200's 132 SMs) splits when given a workspace (at M = 1 in place of the decode kernel), and
// runs unsplit without one.
TEST(Sparse24Gpu, LinearSplitKByHeuristic) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(12);
  Weight w;
  make_weight(w, 1280, 8192, rng);
  for (int64_t M : {1, 16, 64}) {
    const LinearPlan plan = sparse24_plan(M, 1280, 8192, Sparse24Options{});
    ASSERT_GT(plan.split_k, 1) << "M=" << M;
    check_linear(w, LinearSpec{M, DType::kBF16, DType::kBF16}, rng);
    check_linear(w, LinearSpec{M, DType::kF32, DType::kF32}, rng);
    LinearSpec none{M, DType::kBF16};
    none.workspace = false;
    check_linear(w, none, rng);
  }
}

// K = 28672 on a 64-row weight: with a workspace the library splits K 4 ways (one row tile), without
// one it runs the unsplit kernel (M = 1: the decode kernel); both accumulation modes.
TEST(Sparse24Gpu, LinearLargeK) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(6);
  Weight w;
  make_weight(w, 64, 28672, rng);
  for (int64_t M : {1, 16, 200}) {
    ASSERT_EQ(sparse24_plan(M, 64, 28672, Sparse24Options{}).split_k, 4) << "M=" << M;
    for (bool ws : {true, false}) {
      LinearSpec spec{M, DType::kBF16};
      spec.workspace = ws;
      check_linear(w, spec, rng);
      spec.out = DType::kF32;
      check_linear(w, spec, rng);
      spec.fast_accum = true;
      check_linear(w, spec, rng);
      spec.out = DType::kBF16;
      check_linear(w, spec, rng);
    }
  }
}

}  // namespace
