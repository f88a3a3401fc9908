// The W4A4 + low-rank family on the GPU (include/qsgemm/w4a4.h) against the CPU reference:
//  * the weight packer and the activation quantizer: codes and scales bit-identical to
//    ref::quantize_int4_groups, X2 = X·L1ᵀ within float32 accumulation rounding of the float64 sum;
//    NaN/Inf in a weight rejected naming its row and column;
//  * the fused GEMM: exact on small integers (fp32 out, unit scales) in every configuration; against
//    ref::gemm_w4a4_lowrank on the same quantized operands (relative Frobenius and every element) for
//    L = 1..33, 64, 65, 127, 128, 129, 1000, 4099, K not a multiple of the 128-wide K tile, every rank
//    of {0, 16, 32, 64, 128}, every output dtype, bias, padded leading dimensions, poisoned outputs;
//  * the whole layer: quantizer + packer + GEMM composed, with either X1 staging;
//  * the e4m3 X1 staging: the quantizer's e4m3 codes equal the unpacked packed codes (as e4m3) bit for
//    bit, and every configuration runs with the staging it reads (w4a4_x1_dtype);
//  * the wgmma kernel's band tiles (64-112 tokens) at their edges, with every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"
#include "qsgemm/w4a4.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;

// Random INT4 codes, every value of -8..7, packed [rows][cols/2] with row pitch ld bytes (>= cols/2).
std::vector<uint8_t> random_codes(int64_t rows, int64_t cols, int64_t ld, std::mt19937& rng, int lo = -8, int hi = 7) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> p(static_cast<size_t>(rows * ld), 0xEE);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 2) p[r * ld + c / 2] = int4_pack(d(rng), d(rng));
  return p;
}
// The e4m3 staging of a pitched packed matrix: byte c of row r = the signed nibble c as e4m3
// (docs/formats.md §5), row pitch ld8 bytes (>= cols; the padding poisoned with 0x5A, never read).
std::vector<uint8_t> e4m3_staging(const std::vector<uint8_t>& p, int64_t rows, int64_t cols, int64_t ld, int64_t ld8) {
  std::vector<uint8_t> q(static_cast<size_t>(rows * ld8), 0x5A);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      q[r * ld8 + c] = fp8_e4m3_encode(static_cast<float>(int4_unpack(p[r * ld + c / 2], static_cast<int>(c & 1))));
  return q;
}
// Dense copy [rows][cols/2] of a pitched packed matrix (the reference's layout).
std::vector<uint8_t> dense_codes(const std::vector<uint8_t>& p, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<uint8_t> d(static_cast<size_t>(rows * cols / 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols / 2; ++c) d[r * (cols / 2) + c] = p[r * ld + c];
  return d;
}
// Positive scales spread over five octaves, at most 1 (so that fp16 outputs stay far from 65504).
std::vector<float> random_scales(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-5.0f, 0.0f);
  std::vector<float> s(n);
  for (auto& v : s) v = std::exp2(d(rng));
  return s;
}
float decode_out(const uint8_t* p, DType t) {
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::kBF16 ? bf16_decode(h) : fp16_decode(h);
}
uint16_t encode16(float v, DType t) { return t == DType::kBF16 ? bf16_encode(v) : fp16_encode(v); }

// ---- one GEMM problem on the GPU vs the float64 reference ------------------------------------------
struct Problem {
  int64_t L, D, D1;
  int group, rank;
  DType out = DType::kBF16;
  bool bias = false;
  int config = -1;
  bool small_integers = false;  // exact check: unit scales, codes in [code_lo, code_hi], integer low rank
  int code_lo = -3, code_hi = 3;
  int64_t pad = 0;              // extra elements / bytes on every leading dimension
  int64_t guard_rows = 0;       // poisoned Y rows before and after the output, checked untouched
  // The X1 staging: kU8 = the one the configuration reads (config -1: the plan's, w4a4_x1_dtype),
  // else kI4x2 (packed) or kE4M3 (e4m3 codes).
  DType x1 = DType::kU8;
};

void run_problem(const Problem& p, std::mt19937& rng) {
  SCOPED_TRACE("L=" + std::to_string(p.L) + " D=" + std::to_string(p.D) + " D1=" + std::to_string(p.D1) +
               " group=" + std::to_string(p.group) + " r=" + std::to_string(p.rank) + " out=" + dtype_name(p.out) +
               " bias=" + std::to_string(p.bias) + " config=" + std::to_string(p.config));
  const int64_t L = p.L, D = p.D, D1 = p.D1, R = p.rank, ng = D1 / p.group;
  const int64_t ld_x1 = D1 / 2 + 16 * (p.pad > 0), ld_w1 = D1 / 2 + 32 * (p.pad > 0);
  const int64_t ld_sx = L + p.pad;
  const int64_t ld_x2 = R + 8 * (p.pad > 0), ld_w2 = R + 8 * (p.pad > 0);
  const int esize = dtype_size(p.out);
  const int64_t ld_y = D + (p.pad > 0 ? 16 / esize : 0);

  std::vector<uint8_t> x1 = p.small_integers ? random_codes(L, D1, ld_x1, rng, p.code_lo, p.code_hi)
                                             : random_codes(L, D1, ld_x1, rng);
  std::vector<uint8_t> w1 = p.small_integers ? random_codes(D, D1, ld_w1, rng, p.code_lo, p.code_hi)
                                             : random_codes(D, D1, ld_w1, rng);
  std::vector<float> sx_rm(static_cast<size_t>(L * ng), 1.0f), sw(static_cast<size_t>(D * ng), 1.0f);
  if (!p.small_integers) {
    sx_rm = random_scales(sx_rm.size(), rng);
    sw = random_scales(sw.size(), rng);
  }
  std::vector<float> sx_mm(static_cast<size_t>(ng * ld_sx), -1.0f);  // M-major, padding poisoned
  for (int64_t l = 0; l < L; ++l)
    for (int64_t g = 0; g < ng; ++g) sx_mm[g * ld_sx + l] = sx_rm[l * ng + g];
  std::vector<float> x2f(static_cast<size_t>(L * R)), w2f(static_cast<size_t>(D * R));
  std::uniform_int_distribution<int> small(-4, 4);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (auto& v : x2f) v = p.small_integers ? static_cast<float>(small(rng)) : bf16_decode(bf16_encode(4.0f * real(rng)));
  for (auto& v : w2f) v = p.small_integers ? static_cast<float>(small(rng)) : bf16_decode(bf16_encode(real(rng)));
  std::vector<uint16_t> x2h(static_cast<size_t>(L * ld_x2), 0x7FC0), w2h(static_cast<size_t>(D * ld_w2), 0x7FC0);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < R; ++r) x2h[l * ld_x2 + r] = bf16_encode(x2f[l * R + r]);
  for (int64_t d = 0; d < D; ++d)
    for (int64_t r = 0; r < R; ++r) w2h[d * ld_w2 + r] = bf16_encode(w2f[d * R + r]);
  std::vector<float> biasf(static_cast<size_t>(D), 0.0f);
  const bool bias_f32 = p.out == DType::kF32 || L % 2 == 0;  // both bias dtypes over the cases
  if (p.bias)
    for (auto& v : biasf) v = bias_f32 ? real(rng) : (p.out == DType::kBF16 ? bf16_decode(bf16_encode(real(rng)))
                                                                            : fp16_decode(fp16_encode(real(rng))));

  DeviceBuffer<uint8_t> d_x1(x1.size()), d_w1(w1.size());
  DeviceBuffer<float> d_sx(sx_mm.size()), d_sw(sw.size());
  DeviceBuffer<uint16_t> d_x2(std::max<size_t>(x2h.size(), 1)), d_w2(std::max<size_t>(w2h.size(), 1));
  DeviceBuffer<uint8_t> d_bias(static_cast<size_t>(D * 4));
  const int64_t g_rows = p.guard_rows;
  DeviceBuffer<uint8_t> d_y(static_cast<size_t>((L + 2 * g_rows) * ld_y * esize));
  uint8_t* const y_ptr = d_y.get() + g_rows * ld_y * esize;
  d_x1.upload(x1);
  d_w1.upload(w1);
  d_sx.upload(sx_mm);
  d_sw.upload(sw);
  if (R > 0) {
    d_x2.upload(x2h);
    d_w2.upload(w2h);
  }
  VectorView bias{};
  if (p.bias) {
    if (bias_f32) {
      std::vector<uint8_t> raw(static_cast<size_t>(D * 4));
      std::memcpy(raw.data(), biasf.data(), raw.size());
      d_bias.upload(raw);
      bias = VectorView(d_bias.get(), DType::kF32, D);
    } else {
      std::vector<uint8_t> raw(static_cast<size_t>(D * 2));
      for (int64_t d = 0; d < D; ++d) {
        const uint16_t h = encode16(biasf[d], p.out);
        std::memcpy(raw.data() + 2 * d, &h, 2);
      }
      d_bias.upload(raw);
      bias = VectorView(d_bias.get(), p.out, D);
    }
  }
  d_y.poison();

  W4A4Options opt;
  opt.config = p.config;
  // X1 in the staging the configuration reads (or the one asked for): packed as generated, or the
  // e4m3 codes of the same values.
  const DType x1_dtype = p.x1 != DType::kU8 ? p.x1
                         : p.config >= 0    ? w4a4_x1_dtype(p.config)
                                            : w4a4_x1_dtype(w4a4_plan(L, D, D1, static_cast<int>(R), opt));
  SCOPED_TRACE(std::string("x1 ") + dtype_name(x1_dtype));
  const int64_t ld_x1_b = D1 + 16 * (p.pad > 0);
  DeviceBuffer<uint8_t> d_x1_b(x1_dtype == DType::kE4M3 ? static_cast<size_t>(L * ld_x1_b) : 1);
  if (x1_dtype == DType::kE4M3) d_x1_b.upload(e4m3_staging(x1, L, D1, ld_x1, ld_x1_b));
  const MatrixView x1v = x1_dtype == DType::kE4M3 ? MatrixView(d_x1_b.get(), DType::kE4M3, L, D1, ld_x1_b)
                                                  : MatrixView(d_x1.get(), DType::kI4x2, L, D1 / 2, ld_x1);
  ASSERT_NO_THROW(w4a4_linear(x1v, d_sx.get(), ld_sx,
                              MatrixView(d_w1.get(), DType::kI4x2, D, D1 / 2, ld_w1), d_sw.get(), p.group,
                              MatrixView(R > 0 ? d_x2.get() : nullptr, DType::kBF16, L, R, ld_x2),
                              MatrixView(R > 0 ? d_w2.get() : nullptr, DType::kBF16, D, R, ld_w2), bias,
                              MatrixView(y_ptr, p.out, L, D, ld_y), opt, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> raw = d_y.download();
  if (g_rows > 0) {  // the guard rows keep the poison; then Y alone
    const size_t guard_bytes = static_cast<size_t>(g_rows * ld_y * esize);
    size_t touched = 0;
    for (size_t b = 0; b < guard_bytes; ++b) touched += (raw[b] != 0xFF) + (raw[raw.size() - 1 - b] != 0xFF);
    EXPECT_EQ(touched, 0u) << "bytes written in the guard rows around Y";
    raw = std::vector<uint8_t>(raw.begin() + guard_bytes, raw.end() - guard_bytes);
  }

  // Reference on the same operands.
  const std::vector<uint8_t> x1d = dense_codes(x1, L, D1, ld_x1), w1d = dense_codes(w1, D, D1, ld_w1);
  std::vector<double> ref(static_cast<size_t>(L * D));
  parallel_rows(L, 16, [&](int64_t m0, int64_t m1) {
    ref::gemm_w4a4_lowrank(x1d.data() + m0 * (D1 / 2), w1d.data(), sx_rm.data() + m0 * ng, sw.data(), m1 - m0, D, D1,
                           p.group, R > 0 ? x2f.data() + m0 * R : nullptr, w2f.data(), R,
                           p.bias ? biasf.data() : nullptr, ref.data() + m0 * D);
  });
  std::vector<float> out(static_cast<size_t>(L * ld_y));
  for (int64_t i = 0; i < L * ld_y; ++i) out[i] = decode_out(raw.data() + i * esize, p.out);
  if (p.pad > 0) expect_padding_untouched(raw, L, D, ld_y, esize);

  if (p.small_integers) {
    ASSERT_EQ(p.out, DType::kF32);
    expect_elements_exact(ref.data(), out.data(), L, D, ld_y);
    return;
  }
  // The exactly rounded reference's own error (bf16/fp16 rounding), for the Frobenius bound.
  double num = 0, den = 0, nr = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t d = 0; d < D; ++d) {
      const double r = ref[l * D + d];
      const double rr = p.out == DType::kF32 ? static_cast<float>(r)
                                             : (p.out == DType::kBF16 ? bf16_decode(bf16_encode(static_cast<float>(r)))
                                                                      : fp16_decode(fp16_encode(static_cast<float>(r))));
      nr += (rr - r) * (rr - r);
      den += r * r;
      const double o = out[l * ld_y + d];
      num += (o - r) * (o - r);
    }
  const double e_round = den > 0 ? std::sqrt(nr / den) : 0.0;
  const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  const double fixed = p.out == DType::kF32 ? 2e-4 : (p.out == DType::kBF16 ? 2e-3 : 1e-3);
  const double bound = p.out == DType::kF32 ? fixed : std::max(fixed, e_round + 2 * 2e-4);
  EXPECT_LE(rel, bound) << "relative Frobenius error";
  expect_elements_close(ref.data(), out.data(), L, D, ld_y, element_bound(p.out));
}

class W4A4Gpu : public ::testing::Test {
 protected:
  void SetUp() override { QSGEMM_REQUIRE_SM90(); }
};

// The integer part is exact: fp32 output, unit scales, small codes and integer low-rank factors give
// the reference bit for bit, in every configuration, both groups, with and without the low rank.
TEST_F(W4A4Gpu, ExactOnSmallIntegersEveryConfig) {
  std::mt19937 rng(2601);
  for (int config = 0; config < w4a4_num_configs(); ++config)
    for (int group : {64, 128})
      for (int rank : {0, 16, 48}) {
        Problem p{67, 136, group == 64 ? 320 : 384, group, rank, DType::kF32};
        p.config = config;
        p.small_integers = true;
        run_problem(p, rng);
        if (HasFailure()) return;
      }
}

// The largest group sums the format allows: every code -8 (each product 64, a group of 128 sums to
// 2^13; 2^21 in the mma.sync kernels' 16·v bytes), and codes drawn from -8..7. The mma.sync kernels
// convert these sums to float without I2F (small_int_to_float.cuh); the wgmma kernel sums e4m3
// products in the tensor core's FP8 accumulator, which must keep them exact. fp32 output, unit
// scales: bit for bit.
TEST_F(W4A4Gpu, ExtremeGroupSumsExactEveryConfig) {
  std::mt19937 rng(2604);
  for (int config = 0; config < w4a4_num_configs(); ++config)
    for (int group : {64, 128})
      for (int hi : {-8, 7}) {
        Problem p{67, 136, group == 64 ? 320 : 384, group, 16, DType::kF32};
        p.config = config;
        p.small_integers = true;
        p.code_lo = -8;
        p.code_hi = hi;
        run_problem(p, rng);
        if (HasFailure()) return;
      }
}

// Every token count of the issue, ranks, output dtypes, groups, K not a multiple of 128, bias.
TEST_F(W4A4Gpu, MatchesReferenceEveryL) {
  std::mt19937 rng(2602);
  std::vector<int64_t> Ls;
  for (int64_t l = 1; l <= 33; ++l) Ls.push_back(l);
  for (int64_t l : {64, 65, 127, 128, 129, 1000, 4099}) Ls.push_back(l);
  const int ranks[] = {0, 16, 32, 64, 128};
  const DType outs[] = {DType::kBF16, DType::kF32, DType::kF16};
  int i = 0;
  for (int64_t L : Ls) {
    const int group = i % 2 == 0 ? 64 : 128;
    const int64_t D1 = group == 64 ? 576 : 384;  // 576 = 4.5 K tiles
    Problem p{L, L >= 1000 ? 264 : 200, D1, group, ranks[i % 5], outs[i % 3]};
    p.bias = i % 4 == 1;
    p.pad = i % 3 == 2 ? 3 : 0;
    run_problem(p, rng);
    if (HasFailure()) return;
    ++i;
  }
}

// Every rank with every configuration forced, both groups, fp32 and bf16 output.
TEST_F(W4A4Gpu, EveryConfigEveryRank) {
  std::mt19937 rng(2603);
  for (int config = 0; config < w4a4_num_configs(); ++config)
    for (int rank : {0, 16, 32, 64, 128})
      for (DType out : {DType::kF32, DType::kBF16}) {
        const int group = rank % 32 == 0 ? 64 : 128;
        Problem p{150, 136, group == 64 ? 448 : 512, group, rank, out};
        p.config = config;
        p.bias = rank == 64;
        p.pad = rank == 32 ? 1 : 0;
        run_problem(p, rng);
        if (HasFailure()) return;
      }
}

// Every decode row at token counts around its n8 blocks (1-3, 7-9, 16, 17), both groups. Group 64's
// 8-token register path: 16-byte vectors of 4 weight scales where D1/group % 4 == 0 (D1 = 1024), else
// one by one (1088), 8-byte pairs of activation scales where ld_x_scale is even, else one by one
// (pad 0 / 1 over odd and even L); warp slices of whole 4-group vectors that leave half the warps
// nothing (1024: 16 groups); a last 64-byte chunk with only one group of 64 (1088). The TMA rings:
// weight scales as boxes (group 64, 128-byte stages, D1 = 1024) or by cp.async (1088, and every
// other stage / group), token scales as boxes where ld_x_scale % 4 == 0 (L = 8, 16 unpadded; L = 3
// padded to 4) else by cp.async, X1 boxes of L < tokens-per-CTA rows, a last weight box half past
// D (D = 72), a second, partial token block (17 tokens), warps with no stage.
TEST_F(W4A4Gpu, DecodeScaleVectorsAndPartialChunks) {
  std::mt19937 rng(2606);
  int i = 0;
  for (int config = 0; config < w4a4_num_configs(); ++config) {
    if (w4a4_config_name(config).rfind("decode_", 0) != 0) continue;
    for (int64_t L : {1, 2, 3, 7, 8, 9, 16, 17})
      for (const auto& [group, D1] : {std::pair<int, int64_t>{64, 1024}, {64, 1088}, {128, 512}, {128, 2048}}) {
        Problem p{L, 72, D1, group, i % 3 == 0 ? 16 : 0, i % 2 == 0 ? DType::kF32 : DType::kBF16};
        p.config = config;
        p.pad = i % 4 < 2 ? 0 : 1;  // ld_x_scale = L or L + 1: both parities
        run_problem(p, rng);
        if (HasFailure()) return;
        ++i;
      }
  }
}

// The 8- and 16-token ring rows keep a one-wave grid (two CTAs per SM) resident over blocks: more
// blocks than that (D = 8456: 529 blocks of 16 rows on a 132-SM H200), so CTAs compute two or three
// and each warp's ring runs on from one block into the next (the 32-token rows, one CTA per block,
// run the same cases); several token blocks (L = tokens + 1),
// whose last is partial; warps without stages (D1 = 256 at group 64: one stage for eight warps), whose
// tiles still join every block's sum; a partial last stage (D1 = 1088); the low-rank term per block;
// exact on small integers, then against the reference.
TEST_F(W4A4Gpu, DecodeRingsManyBlocksPerCta) {
  std::mt19937 rng(2611);
  int i = 0;
  for (int config = 0; config < w4a4_num_configs(); ++config) {
    const std::string name = w4a4_config_name(config);
    if (name.rfind("decode_", 0) != 0 || name == "decode_8x16_k8") continue;  // the register row has no ring
    const int64_t tokens = name.rfind("decode_8x", 0) == 0 ? 8 : name.rfind("decode_16x", 0) == 0 ? 16 : 32;
    Problem e{tokens + 1, 8456, 1088, 64, 16, DType::kF32};  // exact: unit scales, small integers
    e.config = config;
    e.small_integers = true;
    run_problem(e, rng);
    for (int64_t L : {int64_t{1}, tokens + 1})
      for (const auto& [group, D1] : {std::pair<int, int64_t>{64, 256}, {64, 1088}, {128, 1152}}) {
        Problem p{L, 8456, D1, group, i % 2 == 0 ? 16 : 0, i % 3 == 0 ? DType::kF32 : DType::kBF16};
        p.config = config;
        p.bias = i % 4 == 1;
        run_problem(p, rng);
        if (HasFailure()) return;
        ++i;
      }
  }
  EXPECT_GE(i, 24);  // four ring rows, two L, three shapes
}

// The heuristic follows the caller's X1 staging: packed X1 at prefill sizes runs the mma.sync tiles,
// e4m3 X1 the wgmma kernel also at decode sizes.
TEST_F(W4A4Gpu, HeuristicRunsEitherStaging) {
  std::mt19937 rng(2608);
  for (DType x1 : {DType::kI4x2, DType::kE4M3})
    for (int64_t L : {5, 300}) {
      Problem p{L, 392, 640, 64, 32, DType::kBF16};
      p.x1 = x1;
      p.bias = L == 300;
      run_problem(p, rng);
      if (HasFailure()) return;
    }
}

// The heuristic's own pick at 33..48 tokens, group 128, where its model keeps the decode row: three
// 16-token blocks (src/w4a4_heuristic.h), on the layer of its CPU test.
TEST_F(W4A4Gpu, HeuristicSixteenTokenRowAt33To48Group128) {
  int dev = 0, sms = 0;
  QSGEMM_CUDA_OK(cudaGetDevice(&dev));
  QSGEMM_CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  std::mt19937 rng(2612);
  for (int64_t L : {33, 44}) {
    ASSERT_EQ(w4a4_choose_config(L, 3584, 18944, 0, sms, 128), w4a4_config_index("decode_16x16_k8")) << L;
    Problem p{L, 3584, 18944, 128, 0, DType::kBF16};
    p.x1 = DType::kI4x2;
    run_problem(p, rng);
    if (HasFailure()) return;
  }
}

// The seed layer's proportions at a reduced size, with the heuristic's pick (large K).
TEST_F(W4A4Gpu, LongK) {
  std::mt19937 rng(2604);
  for (int group : {64, 128}) {
    Problem p{256, 512, 4096, group, 64, DType::kF32};
    run_problem(p, rng);
    Problem q{2, 512, 4096, group, 64, DType::kBF16};
    run_problem(q, rng);
  }
}

// The wgmma kernel's persistent tile order (mma() replays the scheduler): more 128x128 tiles than
// SMs (12 x 21 = 252 and 9 x 17 = 153 against 132), so CTAs compute several; D and L not multiples
// of the tile; exact, then against the reference.
TEST_F(W4A4Gpu, WgmmaManyTilesPerCta) {
  std::mt19937 rng(2609);
  const int wg = w4a4_config_index("128x128x128_wgmma_coop");
  Problem e{1500, 2600, 640, 64, 16, DType::kF32};
  e.config = wg;
  e.small_integers = true;
  run_problem(e, rng);
  for (int group : {64, 128}) {
    Problem p{1100, 2056, group == 64 ? 1088 : 1152, group, 64, DType::kBF16};
    p.config = wg;
    p.bias = group == 128;
    run_problem(p, rng);
    if (HasFailure()) return;
  }
}

// The clamped wgmma row (128x128x128_wgmma_coop_clamped, clamped_token_column.cuh): from 128 tokens
// the last token tile computes tokens [L - 128, L), its X1 box, sx, X2 and Y store shifted back. L just
// past a tile (129, 257), just short of one (255, 383) and in between (300), on 2 and 21 tiles of
// weight rows (D = 200, 2600), every output dtype, a bias, padded leading dimensions and poisoned
// guard rows around Y (a store through a wrong shift lands there); exact on small integers; the rows
// two tiles write get the same bits: two calls give identical outputs.
TEST_F(W4A4Gpu, WgmmaClampedLastTokenTile) {
  std::mt19937 rng(2612);
  const int wg = w4a4_config_index("128x128x128_wgmma_coop_clamped");
  ASSERT_GE(wg, 0);
  Problem e{257, 264, 640, 64, 16, DType::kF32};
  e.config = wg;
  e.small_integers = true;
  e.guard_rows = 3;
  run_problem(e, rng);
  int i = 0;
  for (int64_t L : {129, 255, 257, 300, 383})
    for (int64_t D : {200, 2600}) {
      const int group = i % 2 == 0 ? 64 : 128;
      Problem p{L, D, group == 64 ? 576 : 384, group, i % 3 == 0 ? 0 : 16 * (1 + i % 4), i % 3 == 1 ? DType::kF32
                                                                                       : i % 3 == 2 ? DType::kF16
                                                                                                    : DType::kBF16};
      p.config = wg;
      p.bias = i % 2 == 1;
      p.pad = i % 4 == 3 ? 2 : 0;
      p.guard_rows = 2;
      run_problem(p, rng);
      if (HasFailure()) return;
      ++i;
    }
  // Determinism over the clamped rows: the same operands twice, compared bit for bit.
  const int64_t L = 300, D = 392, D1 = 512;
  const std::vector<uint8_t> w1 = random_codes(D, D1, D1 / 2, rng), x1 = random_codes(L, D1, D1 / 2, rng);
  DeviceBuffer<uint8_t> d_w1(w1.size()), d_x1(static_cast<size_t>(L * D1));
  d_w1.upload(w1);
  d_x1.upload(e4m3_staging(x1, L, D1, D1 / 2, D1));
  DeviceBuffer<float> d_sx(static_cast<size_t>(D1 / 64 * L)), d_sw(static_cast<size_t>(D * D1 / 64));
  d_sx.upload(random_scales(d_sx.size(), rng));
  d_sw.upload(random_scales(d_sw.size(), rng));
  DeviceBuffer<uint8_t> y0(static_cast<size_t>(L * D * 4)), y1(static_cast<size_t>(L * D * 4));
  y0.poison();
  y1.poison();
  W4A4Options opt;
  opt.config = wg;
  for (DeviceBuffer<uint8_t>* y : {&y0, &y1})
    ASSERT_NO_THROW(w4a4_linear(MatrixView(d_x1.get(), DType::kE4M3, L, D1, D1), d_sx.get(), L,
                                MatrixView(d_w1.get(), DType::kI4x2, D, D1 / 2, D1 / 2), d_sw.get(), 64,
                                MatrixView(nullptr, DType::kBF16, L, 0, 0), MatrixView(nullptr, DType::kBF16, D, 0, 0),
                                VectorView(), MatrixView(y->get(), DType::kF32, L, D, D), opt, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(y0.download() == y1.download()) << "two calls differ";
}

// The band rows (64, 80, 96, 112 tokens per tile: w4a4_wgmma_band_config): every band tile at L
// just inside it, on its edge and one past (a second token tile), exact on small integers and against
// the reference with every rank (X2's rows of the tile below kBlkN only), every output dtype, a bias,
// padded leading dimensions and poisoned guard rows around Y; and more work tiles than SMs (33 weight
// tiles x 5 token tiles = 165 on a 132-SM H200), so that CTAs replay the scheduler over several.
TEST_F(W4A4Gpu, WgmmaBandTiles) {
  std::mt19937 rng(2613);
  int i = 0;
  for (int64_t tile : {64, 80, 96, 112}) {
    const int config = w4a4_config_index(std::to_string(tile) + "x128x128_wgmma_coop");
    ASSERT_GE(config, 0) << tile;
    Problem e{tile - 1, 264, 640, 64, 48, DType::kF32};
    e.config = config;
    e.small_integers = true;
    e.guard_rows = 2;
    run_problem(e, rng);
    for (int64_t L : {int64_t{1}, tile - 15, tile, tile + 1}) {
      const int group = i % 2 == 0 ? 64 : 128;
      const DType out = i % 3 == 0 ? DType::kBF16 : i % 3 == 1 ? DType::kF32 : DType::kF16;
      Problem p{L, 200, group == 64 ? 576 : 384, group, 32 * (i % 5), out};  // ranks 0, 32, 64, 96, 128
      p.config = config;
      p.bias = i % 2 == 1;
      p.pad = i % 4 == 3 ? 2 : 0;
      p.guard_rows = 2;
      run_problem(p, rng);
      if (HasFailure()) return;
      ++i;
    }
    Problem m{5 * tile - 3, 4104, 640, 64, 64, DType::kBF16};
    m.config = config;
    m.bias = true;
    run_problem(m, rng);
    if (HasFailure()) return;
  }
  // The heuristic's own pick with e4m3 X1 at L = 70: the 80-token band row.
  Problem h{70, 392, 640, 64, 16, DType::kBF16};
  h.x1 = DType::kE4M3;
  run_problem(h, rng);
}

// The wgmma kernel's low-rank operands are copied into shared memory during the first K tile and
// published at the second: one K tile (D1 = 64, 128) takes the other path. Every multiple of 16 up
// to 128 (the K-steps are predicated), exact on small integers and against the reference, with
// several tiles per CTA (the buffer is reused tile after tile).
TEST_F(W4A4Gpu, WgmmaLowRankEveryKStepAndOneKTile) {
  std::mt19937 rng(2610);
  const int wg = w4a4_config_index("128x128x128_wgmma_coop");
  for (int64_t D1 : {64, 128, 256})
    for (int rank = 16; rank <= kW4A4MaxRank; rank += 16) {
      const int group = D1 == 64 || rank % 32 == 0 ? 64 : 128;
      const bool many_tiles = rank == 48 || rank == 128;  // 12 x 21 tiles against 132 SMs
      Problem p{many_tiles ? 1500 : 300, many_tiles ? 2600 : 264, D1, group, rank, DType::kF32};
      p.config = wg;
      p.small_integers = rank % 32 == 16;
      p.pad = rank == 112 ? 2 : 0;
      run_problem(p, rng);
      if (HasFailure()) return;
    }
}

// ---- packer and quantizer ------------------------------------------------------------------------
// Host float copy of an input matrix in dtype t (values rounded to t), and its device bytes.
struct Input {
  std::vector<float> f;      // [rows][cols] dense
  std::vector<uint8_t> raw;  // [rows][ld] in dtype t
};
Input make_input(int64_t rows, int64_t cols, int64_t ld, DType t, std::mt19937& rng, int group) {
  Input in;
  in.f = random_floats(static_cast<size_t>(rows * cols), rng, 3.0f);
  // Special groups: all zero (scale 1), tiny amax (scale clamped to FLT_MIN), an outlier, exact ties.
  if (rows > 2 && cols >= 2 * group) {
    for (int64_t k = 0; k < group; ++k) in.f[1 * cols + k] = 0.0f;
    for (int64_t k = group; k < 2 * group; ++k) in.f[1 * cols + k] = k % 2 ? 1e-39f : -0.0f;
    if (t != DType::kF32)
      for (int64_t k = group; k < 2 * group; ++k) in.f[1 * cols + k] = 0.0f;  // no subnormal 16-bit storage games
    in.f[2 * cols + 5] = 70.0f;
    in.f[2 * cols + 6] = 5.0f;  // 5 / 10 = 0.5: a tie
  }
  const int es = dtype_size(t);
  in.raw.assign(static_cast<size_t>(rows * ld * es), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float& v = in.f[r * cols + c];
      uint8_t* dst = in.raw.data() + (r * ld + c) * es;
      if (t == DType::kF32) {
        std::memcpy(dst, &v, 4);
      } else {
        const uint16_t h = encode16(v, t);
        v = t == DType::kBF16 ? bf16_decode(h) : fp16_decode(h);
        std::memcpy(dst, &h, 2);
      }
    }
  return in;
}

TEST_F(W4A4Gpu, PackerBitIdenticalToReference) {
  std::mt19937 rng(2605);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
    for (int group : {64, 128}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " group " + std::to_string(group));
      const int64_t D = 37, D1 = group == 64 ? 320 : 384, ld = D1 + 16 / dtype_size(t) * 2;
      Input in = make_input(D, D1, ld, t, rng, group);
      std::vector<uint8_t> q_ref(static_cast<size_t>(D * D1 / 2));
      std::vector<float> s_ref(static_cast<size_t>(D * D1 / group));
      ref::quantize_int4_groups(in.f.data(), D, D1, D1, group, q_ref.data(), s_ref.data());
      const int64_t ldq = D1 / 2 + 16;
      DeviceBuffer<uint8_t> d_w(in.raw.size()), d_q(static_cast<size_t>(D * ldq));
      DeviceBuffer<float> d_s(s_ref.size());
      d_w.upload(in.raw);
      d_q.poison(0xAB);
      d_s.poison();
      ASSERT_NO_THROW(w4a4_pack_weight(MatrixView(d_w.get(), t, D, D1, ld), group,
                                       MatrixView(d_q.get(), DType::kI4x2, D, D1 / 2, ldq), d_s.get(), nullptr));
      const auto q = d_q.download();
      const auto s = d_s.download();
      int bad = 0;
      for (int64_t r = 0; r < D; ++r) {
        for (int64_t c = 0; c < D1 / 2; ++c) bad += q[r * ldq + c] != q_ref[r * (D1 / 2) + c];
        for (int64_t c = D1 / 2; c < ldq; ++c) bad += q[r * ldq + c] != 0xAB;  // padding untouched
      }
      EXPECT_EQ(bad, 0) << "code bytes differ";
      for (size_t i = 0; i < s.size(); ++i)
        ASSERT_EQ(std::memcmp(&s[i], &s_ref[i], 4), 0) << "scale " << i << ": " << s[i] << " vs " << s_ref[i];
    }
}

TEST_F(W4A4Gpu, PackerRejectsNonFiniteNamingRowAndColumn) {
  const int64_t D = 24, D1 = 256;
  std::vector<float> w(static_cast<size_t>(D * D1), 0.25f);
  w[9 * D1 + 3] = INFINITY;
  w[5 * D1 + 77] = NAN;  // first in row-major order
  w[20 * D1 + 200] = -INFINITY;
  std::vector<uint8_t> raw(w.size() * 4);
  std::memcpy(raw.data(), w.data(), raw.size());
  DeviceBuffer<uint8_t> d_w(raw.size()), d_q(static_cast<size_t>(D * D1 / 2));
  DeviceBuffer<float> d_s(static_cast<size_t>(D * D1 / 64));
  d_w.upload(raw);
  try {
    w4a4_pack_weight(MatrixView(d_w.get(), DType::kF32, D, D1), 64, MatrixView(d_q.get(), DType::kI4x2, D, D1 / 2),
                     d_s.get(), nullptr);
    ADD_FAILURE() << "no error for NaN / Inf in the weight";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::kInvalidValue) << e.what();
    EXPECT_EQ(e.operand(), "w");
    EXPECT_NE(std::string(e.what()).find("w[5, 77] = nan"), std::string::npos) << e.what();
  }
  // bf16 +Inf alone.
  std::vector<uint16_t> h(static_cast<size_t>(D * D1), bf16_encode(1.0f));
  h[17 * D1 + 130] = 0x7F80;
  std::vector<uint8_t> raw16(h.size() * 2);
  std::memcpy(raw16.data(), h.data(), raw16.size());
  DeviceBuffer<uint8_t> d_h(raw16.size());
  d_h.upload(raw16);
  try {
    w4a4_pack_weight(MatrixView(d_h.get(), DType::kBF16, D, D1), 128, MatrixView(d_q.get(), DType::kI4x2, D, D1 / 2),
                     d_s.get(), nullptr);
    ADD_FAILURE() << "no error for +Inf in a bf16 weight";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::kInvalidValue) << e.what();
    EXPECT_NE(std::string(e.what()).find("w[17, 130] = inf"), std::string::npos) << e.what();
  }
  QSGEMM_CUDA_OK(cudaGetLastError());
}

// The quantizer's packed codes (rows of ldq bytes) and M-major scales (ng rows of ld_s floats)
// against the CPU reference of the same input: the code bytes and scales that differ, and the
// padding bytes of each code row (poisoned 0xAB) that were written.
struct QuantizerDiff {
  int64_t codes = 0, scales = 0, padding = 0;
};
QuantizerDiff diff_quantizer(const Input& in, int64_t L, int64_t D1, int group, const std::vector<uint8_t>& q, int64_t ldq,
                             const std::vector<float>& s, int64_t ld_s) {
  const int64_t ng = D1 / group;
  std::vector<uint8_t> q_ref(static_cast<size_t>(L * D1 / 2));
  std::vector<float> s_ref(static_cast<size_t>(L * ng));
  ref::quantize_int4_groups(in.f.data(), L, D1, D1, group, q_ref.data(), s_ref.data());
  QuantizerDiff d;
  for (int64_t r = 0; r < L; ++r) {
    for (int64_t c = 0; c < D1 / 2; ++c) d.codes += q[r * ldq + c] != q_ref[r * (D1 / 2) + c];
    for (int64_t c = D1 / 2; c < ldq; ++c) d.padding += q[r * ldq + c] != 0xAB;
    for (int64_t g = 0; g < ng; ++g) d.scales += std::memcmp(&s[g * ld_s + r], &s_ref[r * ng + g], 4) != 0;
  }
  return d;
}

// Runs the bf16 quantizer without the down-projection on `in` (codes into poisoned rows of ldq bytes,
// scales M-major with ld_s) and compares it with the CPU reference.
QuantizerDiff quantize_bf16_and_diff(const Input& in, int64_t L, int64_t D1, int group, int64_t ldq, int64_t ld_s) {
  DeviceBuffer<uint8_t> d_x(in.raw.size()), d_q(static_cast<size_t>(L * ldq));
  DeviceBuffer<float> d_s(static_cast<size_t>(D1 / group * ld_s));
  d_x.upload(in.raw);
  d_q.poison(0xAB);
  d_s.poison();
  EXPECT_NO_THROW(w4a4_quantize_activations(MatrixView(d_x.get(), DType::kBF16, L, D1), group,
                                            MatrixView(d_q.get(), DType::kI4x2, L, D1 / 2, ldq), d_s.get(), ld_s,
                                            nullptr));
  const cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  return diff_quantizer(in, L, D1, group, d_q.download(), ldq, d_s.download(), ld_s);
}

// The activation quantizer: codes bit-identical (row by row), scales M-major and bit-identical, X2
// within float32 accumulation rounding: |x2 - ref| <= D1·2^-24·Σ|x·l1| (+ the bf16 rounding of a
// bf16 x2), for every input dtype, both groups, ranks 0..128, fp32 and bf16 x2, and the entry point
// without the down-projection.
TEST_F(W4A4Gpu, QuantizerBitIdenticalWithFusedDownProjection) {
  std::mt19937 rng(2606);
  int i = 0;
  for (int64_t L : {1, 17, 33, 130})
    for (DType t : {DType::kBF16, DType::kF32, DType::kF16}) {
      const int group = i % 2 ? 128 : 64;
      const int R = (i % 5) * 32 == 0 ? 0 : std::min(128, (i % 5) * 32 - 16);  // 0, 16, 48, 80, 112
      const bool x2_f32 = i % 3 != 1;
      const bool fused = R > 0 || i % 4 == 0;  // the plain entry point when R == 0, now and then
      ++i;
      SCOPED_TRACE("L=" + std::to_string(L) + " " + dtype_name(t) + " group " + std::to_string(group) + " r " +
                   std::to_string(R) + (x2_f32 ? " x2 fp32" : " x2 bf16"));
      const int64_t D1 = group == 64 ? 448 : 384, ld = D1 + 8 * (16 / dtype_size(t)) / 2;
      Input in = make_input(L, D1, ld, t, rng, group);
      std::vector<float> l1f = random_floats(static_cast<size_t>(R * D1), rng, 0.5f);
      std::vector<uint16_t> l1h = to_bf16(l1f);
      const int64_t ng = D1 / group, ld_s = L + 5, ldq = D1 / 2 + 32;
      const int64_t ld_x2_el = x2_f32 ? R + 4 : R + 8;  // padded 16-byte rows
      DeviceBuffer<uint8_t> d_x(in.raw.size()), d_q(static_cast<size_t>(L * ldq));
      DeviceBuffer<float> d_s(static_cast<size_t>(ng * ld_s));
      DeviceBuffer<uint16_t> d_l1(std::max<size_t>(l1h.size(), 1));
      DeviceBuffer<uint8_t> d_x2(static_cast<size_t>(std::max<int64_t>(L * ld_x2_el * (x2_f32 ? 4 : 2), 1)));
      d_x.upload(in.raw);
      if (R > 0) d_l1.upload(l1h);
      d_q.poison(0xAB);
      d_s.poison();
      d_x2.poison();
      const MatrixView xv(d_x.get(), t, L, D1, ld), qv(d_q.get(), DType::kI4x2, L, D1 / 2, ldq);
      if (fused)
        ASSERT_NO_THROW(w4a4_quantize_activations(xv, group, MatrixView(d_l1.get(), DType::kBF16, R, D1), qv, d_s.get(),
                                                  ld_s,
                                                  MatrixView(d_x2.get(), x2_f32 ? DType::kF32 : DType::kBF16, L, R,
                                                             ld_x2_el),
                                                  nullptr));
      else
        ASSERT_NO_THROW(w4a4_quantize_activations(xv, group, qv, d_s.get(), ld_s, nullptr));
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());

      const QuantizerDiff d = diff_quantizer(in, L, D1, group, d_q.download(), ldq, d_s.download(), ld_s);
      EXPECT_EQ(d.codes, 0) << "code bytes differ";
      EXPECT_EQ(d.scales, 0) << "scales differ";
      EXPECT_EQ(d.padding, 0) << "padding bytes written";
      if (R == 0) continue;
      const auto x2raw = d_x2.download();
      int64_t x2bad = 0;
      for (int64_t r = 0; r < L; ++r)
        for (int64_t j = 0; j < R; ++j) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < D1; ++k) {
            ref += static_cast<double>(in.f[r * D1 + k]) * l1f[j * D1 + k];
            mag += std::fabs(static_cast<double>(in.f[r * D1 + k]) * l1f[j * D1 + k]);
          }
          const float got = x2_f32 ? decode_out(x2raw.data() + (r * ld_x2_el + j) * 4, DType::kF32)
                                   : decode_out(x2raw.data() + (r * ld_x2_el + j) * 2, DType::kBF16);
          const double bound = D1 * 0x1p-24 * mag + (x2_f32 ? 0.0 : 0x1p-8 * (std::fabs(ref) + D1 * 0x1p-24 * mag));
          if (!(std::fabs(got - ref) <= bound)) {
            if (x2bad++ < 3) ADD_FAILURE() << "x2(" << r << ", " << j << "): " << got << " vs " << ref;
          }
        }
      EXPECT_EQ(x2bad, 0);
    }
}

// Without the down-projection the bf16 quantizer splits a row's chunks over as many independent
// CTAs as it takes (one per chunk at decode sizes; with it, a cluster of 8): many slices, a last
// chunk of one group of 64, both groups, still bit-identical to the CPU.
TEST_F(W4A4Gpu, QuantizerManySlicesBitIdentical) {
  std::mt19937 rng(2609);
  for (int64_t L : {1, 16, 300})
    for (int group : {64, 128}) {
      const int64_t D1 = group == 64 ? 4160 : 4224;  // 32.5 and 33 chunks of 128
      SCOPED_TRACE("L=" + std::to_string(L) + " group " + std::to_string(group));
      Input in = make_input(L, D1, D1, DType::kBF16, rng, group);
      const QuantizerDiff d = quantize_bf16_and_diff(in, L, D1, group, D1 / 2 + 16, L + 3);
      EXPECT_EQ(d.codes, 0) << "code bytes differ";
      EXPECT_EQ(d.scales, 0) << "scales differ";
      EXPECT_EQ(d.padding, 0) << "padding bytes written";
    }
}

// The bf16 quantizer divides as q' = fma(fma(-s, x·y, x), y, x·y) with y = RN(1/s) (Markstein), which
// must equal the IEEE quotient the CPU rounds wherever rounding matters: near the ties k + 1/2. Every
// group here has a random amax (scale s = amax/7, 2^-113 to 2^98) and its other values are the bf16
// neighbours (-2..+2 ulps) of (k + 1/2)·s for random k, both signs: codes and scales bit for bit.
TEST_F(W4A4Gpu, QuantizerDivisionExactNearTies) {
  std::mt19937 rng(2611);
  for (int group : {64, 128}) {
    SCOPED_TRACE("group " + std::to_string(group));
    const int64_t L = 192, D1 = 2048, ng = D1 / group;
    Input in;
    in.f.resize(static_cast<size_t>(L * D1));
    std::uniform_real_distribution<float> expo(-110.0f, 100.0f), unit(1.0f, 2.0f);  // s below 2^-100: __fdiv_rn
    std::uniform_int_distribution<int> half(-8, 7), nb(-2, 2), coin(0, 1);
    for (int64_t r = 0; r < L; ++r)
      for (int64_t g = 0; g < ng; ++g) {
        const float amax = bf16_decode(bf16_encode(std::ldexp(unit(rng), static_cast<int>(expo(rng)))));
        const float sc = int4_scale_from_amax(amax);
        float* v = &in.f[r * D1 + g * group];
        v[0] = coin(rng) ? amax : -amax;
        for (int k = 1; k < group; ++k) {
          uint16_t h = bf16_encode((static_cast<float>(half(rng)) + 0.5f) * sc);
          h = static_cast<uint16_t>(h + nb(rng));
          float x = bf16_decode(h);
          if (!(std::fabs(x) <= amax)) x = 0.0f;  // keep amax the group's maximum
          v[k] = x;
        }
        std::swap(v[0], v[1 + static_cast<int>(rng() % (group - 1))]);
      }
    in.raw.resize(static_cast<size_t>(L * D1 * 2));
    for (size_t i = 0; i < in.f.size(); ++i) {
      const uint16_t h = bf16_encode(in.f[i]);
      std::memcpy(in.raw.data() + 2 * i, &h, 2);
    }
    const QuantizerDiff d = quantize_bf16_and_diff(in, L, D1, group, D1 / 2, L);
    EXPECT_EQ(d.codes, 0) << "code bytes differ";
    EXPECT_EQ(d.scales, 0) << "scales differ";
  }
}

// The fused down-projection at many rows: the rank is not split there (one part of up to 128 ranks,
// the two-stage ring), and each slice walks several chunks. Codes bit for bit, X2 within float32
// accumulation rounding.
TEST_F(W4A4Gpu, QuantizerFusedManyRowsWholeRank) {
  std::mt19937 rng(2612);
  struct Case {
    int64_t L, D1;
    int group, R;
  };
  for (const Case c : {Case{2200, 1024, 64, 128}, Case{1100, 2048, 128, 96}, Case{700, 1536, 64, 64}}) {
    SCOPED_TRACE("L=" + std::to_string(c.L) + " D1=" + std::to_string(c.D1) + " r " + std::to_string(c.R));
    Input in = make_input(c.L, c.D1, c.D1, DType::kBF16, rng, c.group);
    std::vector<float> l1f = random_floats(static_cast<size_t>(c.R * c.D1), rng, 0.5f);
    std::vector<uint16_t> l1h = to_bf16(l1f);
    for (size_t i = 0; i < l1f.size(); ++i) l1f[i] = bf16_decode(l1h[i]);
    const int64_t ng = c.D1 / c.group, ld_s = c.L, ldq = c.D1 / 2;
    DeviceBuffer<uint8_t> d_x(in.raw.size()), d_q(static_cast<size_t>(c.L * ldq));
    DeviceBuffer<float> d_s(static_cast<size_t>(ng * ld_s)), d_x2(static_cast<size_t>(c.L * c.R));
    DeviceBuffer<uint16_t> d_l1(l1h.size());
    d_x.upload(in.raw);
    d_l1.upload(l1h);
    d_q.poison(0xAB);
    d_s.poison();
    d_x2.poison();
    ASSERT_NO_THROW(w4a4_quantize_activations(MatrixView(d_x.get(), DType::kBF16, c.L, c.D1), c.group,
                                              MatrixView(d_l1.get(), DType::kBF16, c.R, c.D1),
                                              MatrixView(d_q.get(), DType::kI4x2, c.L, c.D1 / 2, ldq), d_s.get(), ld_s,
                                              MatrixView(d_x2.get(), DType::kF32, c.L, c.R), nullptr));
    QSGEMM_CUDA_OK(cudaDeviceSynchronize());
    const QuantizerDiff d = diff_quantizer(in, c.L, c.D1, c.group, d_q.download(), ldq, d_s.download(), ld_s);
    EXPECT_EQ(d.codes, 0) << "code bytes differ";
    EXPECT_EQ(d.scales, 0) << "scales differ";
    const auto x2 = d_x2.download();
    int64_t x2bad = 0;
    for (int64_t r = 0; r < c.L; ++r)
      for (int64_t j = 0; j < c.R; ++j) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < c.D1; ++k) {
          const double p = static_cast<double>(in.f[r * c.D1 + k]) * l1f[j * c.D1 + k];
          ref += p;
          mag += std::fabs(p);
        }
        const double got = x2[r * c.R + j];
        if (!(std::fabs(got - ref) <= c.D1 * 0x1p-24 * mag) && x2bad++ < 3)
          ADD_FAILURE() << "x2(" << r << ", " << j << "): " << got << " vs " << ref;
      }
    EXPECT_EQ(x2bad, 0);
  }
}

// The e4m3 staging of the quantizer: byte k of a row = the signed code k of the packed output as e4m3
// (the same codes, bit for bit, and the same scales, X2), for every input dtype, both groups, with and
// without the fused down-projection; padding bytes untouched.
TEST_F(W4A4Gpu, QuantizerE4m3StagingEqualsUnpackedCodes) {
  std::mt19937 rng(2610);
  int i = 0;
  for (int64_t L : {1, 33, 130})
    for (DType t : {DType::kBF16, DType::kF32, DType::kF16}) {
      const int group = i % 2 ? 128 : 64;
      const int R = i % 3 == 0 ? 0 : 32;
      ++i;
      SCOPED_TRACE("L=" + std::to_string(L) + " " + dtype_name(t) + " group " + std::to_string(group) + " r " +
                   std::to_string(R));
      const int64_t D1 = group == 64 ? 448 : 384, ld = D1 + 8;
      Input in = make_input(L, D1, ld, t, rng, group);
      std::vector<float> l1f = random_floats(static_cast<size_t>(R * D1), rng, 0.5f);
      std::vector<uint16_t> l1h = to_bf16(l1f);
      const int64_t ng = D1 / group, ld_s = L + 3, ldq = D1 / 2 + 16, ld8 = D1 + 32;
      DeviceBuffer<uint8_t> d_x(in.raw.size()), d_q(static_cast<size_t>(L * ldq)), d_q8(static_cast<size_t>(L * ld8));
      DeviceBuffer<float> d_s(static_cast<size_t>(ng * ld_s)), d_s8(static_cast<size_t>(ng * ld_s));
      DeviceBuffer<uint16_t> d_l1(std::max<size_t>(l1h.size(), 1));
      DeviceBuffer<float> d_x2(static_cast<size_t>(std::max<int64_t>(L * R, 1))), d_x28(static_cast<size_t>(std::max<int64_t>(L * R, 1)));
      d_x.upload(in.raw);
      if (R > 0) d_l1.upload(l1h);
      d_q.poison(0xAB);
      d_q8.poison(0xAB);
      d_s.poison();
      d_s8.poison();
      const MatrixView xv(d_x.get(), t, L, D1, ld);
      const MatrixView l1v(d_l1.get(), DType::kBF16, R, D1);
      ASSERT_NO_THROW(w4a4_quantize_activations(xv, group, l1v, MatrixView(d_q.get(), DType::kI4x2, L, D1 / 2, ldq),
                                                d_s.get(), ld_s, MatrixView(d_x2.get(), DType::kF32, L, R), nullptr));
      ASSERT_NO_THROW(w4a4_quantize_activations(xv, group, l1v, MatrixView(d_q8.get(), DType::kE4M3, L, D1, ld8),
                                                d_s8.get(), ld_s, MatrixView(d_x28.get(), DType::kF32, L, R), nullptr));
      QSGEMM_CUDA_OK(cudaDeviceSynchronize());
      const auto q = d_q.download(), q8 = d_q8.download();
      int bad = 0, pad_bad = 0;
      for (int64_t r = 0; r < L; ++r) {
        for (int64_t c = 0; c < D1; ++c)
          bad += q8[r * ld8 + c] != fp8_e4m3_encode(static_cast<float>(int4_unpack(q[r * ldq + c / 2], static_cast<int>(c & 1))));
        for (int64_t c = D1; c < ld8; ++c) pad_bad += q8[r * ld8 + c] != 0xAB;
      }
      EXPECT_EQ(bad, 0) << "e4m3 codes differ from the unpacked packed codes";
      EXPECT_EQ(pad_bad, 0) << "padding written";
      // And against the reference directly (the packed form is checked bit for bit elsewhere).
      std::vector<uint8_t> q_ref(static_cast<size_t>(L * D1 / 2));
      std::vector<float> s_ref(static_cast<size_t>(L * ng));
      ref::quantize_int4_groups(in.f.data(), L, D1, D1, group, q_ref.data(), s_ref.data());
      int ref_bad = 0;
      for (int64_t r = 0; r < L; ++r)
        for (int64_t c = 0; c < D1; ++c)
          ref_bad += fp8_e4m3_decode(q8[r * ld8 + c]) != int4_unpack(q_ref[r * (D1 / 2) + c / 2], static_cast<int>(c & 1));
      EXPECT_EQ(ref_bad, 0) << "e4m3 codes differ from ref::quantize_int4_groups";
      // Bytes, padding (poisoned NaN) included: the same scales and X2 written, the same left alone.
      const auto s_a = d_s.download(), s_b = d_s8.download();
      EXPECT_EQ(std::memcmp(s_a.data(), s_b.data(), s_a.size() * 4), 0) << "scales differ between the stagings";
      if (R > 0) {
        const auto x_a = d_x2.download(), x_b = d_x28.download();
        EXPECT_EQ(std::memcmp(x_a.data(), x_b.data(), x_a.size() * 4), 0) << "X2 differs between the stagings";
      }
    }
}

// The whole layer: GPU packer + fused quantizer + GEMM, against the reference on the CPU-quantized
// operands (same codes and scales, bit-identical) and the GPU's X2. The scales in the layout of
// w4a4_x_scale_ld (33 tokens: ld 36, the TMA boxes of the decode rows past an odd L).
TEST_F(W4A4Gpu, WholeLayerComposes) {
  for (DType staging : {DType::kI4x2, DType::kE4M3})
  for (int64_t L : {int64_t{100}, int64_t{33}}) {
  SCOPED_TRACE(std::string("x1 ") + dtype_name(staging) + " L=" + std::to_string(L));
  std::mt19937 rng(2607);
  const int64_t D = 256, D1 = 512, R = 32, ld_sx = w4a4_x_scale_ld(L);
  const int group = 64, ng = D1 / group;
  std::vector<float> xf = random_floats(static_cast<size_t>(L * D1), rng, 2.0f);
  std::vector<uint16_t> xh = to_bf16(xf);
  std::vector<float> wf = random_floats(static_cast<size_t>(D * D1), rng, 0.1f);
  std::vector<uint16_t> wh = to_bf16(wf);
  std::vector<float> l1f = random_floats(static_cast<size_t>(R * D1), rng, 0.05f), l2f = random_floats(D * R, rng, 0.05f);
  std::vector<uint16_t> l1h = to_bf16(l1f), l2h = to_bf16(l2f);
  DeviceBuffer<uint16_t> d_x(xh.size()), d_w(wh.size()), d_l1(l1h.size()), d_l2(l2h.size()), d_x2(L * R);
  const int64_t x1_cols = staging == DType::kE4M3 ? D1 : D1 / 2;
  DeviceBuffer<uint8_t> d_x1(L * x1_cols), d_w1(D * D1 / 2);
  DeviceBuffer<float> d_sx(ng * ld_sx), d_sw(D * ng), d_y(L * D);
  d_x.upload(xh);
  d_w.upload(wh);
  d_l1.upload(l1h);
  d_l2.upload(l2h);
  d_y.poison();
  ASSERT_NO_THROW(w4a4_pack_weight(MatrixView(d_w.get(), DType::kBF16, D, D1), group,
                                   MatrixView(d_w1.get(), DType::kI4x2, D, D1 / 2), d_sw.get(), nullptr));
  ASSERT_NO_THROW(w4a4_quantize_activations(MatrixView(d_x.get(), DType::kBF16, L, D1), group,
                                            MatrixView(d_l1.get(), DType::kBF16, R, D1),
                                            MatrixView(d_x1.get(), staging, L, x1_cols), d_sx.get(), ld_sx,
                                            MatrixView(d_x2.get(), DType::kBF16, L, R), nullptr));
  ASSERT_NO_THROW(w4a4_linear(MatrixView(d_x1.get(), staging, L, x1_cols), d_sx.get(), ld_sx,
                              MatrixView(d_w1.get(), DType::kI4x2, D, D1 / 2), d_sw.get(), group,
                              MatrixView(d_x2.get(), DType::kBF16, L, R), MatrixView(d_l2.get(), DType::kBF16, D, R), {},
                              MatrixView(d_y.get(), DType::kF32, L, D), W4A4Options{}, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> x1(L * D1 / 2), w1(D * D1 / 2);
  std::vector<float> sx(L * ng), sw(D * ng);
  ref::quantize_int4_groups(xf.data(), L, D1, D1, group, x1.data(), sx.data());
  ref::quantize_int4_groups(wf.data(), D, D1, D1, group, w1.data(), sw.data());
  const auto x2h = d_x2.download();
  std::vector<float> x2f(x2h.size());
  for (size_t i = 0; i < x2h.size(); ++i) x2f[i] = bf16_decode(x2h[i]);
  std::vector<double> ref(L * D);
  ref::gemm_w4a4_lowrank(x1.data(), w1.data(), sx.data(), sw.data(), L, D, D1, group, x2f.data(), l2f.data(), R,
                         nullptr, ref.data());
  const auto y = d_y.download();
  EXPECT_LE(ref::rel_frobenius_error(ref.data(), y.data(), L, D, D), 2e-4);
  expect_elements_close(ref.data(), y.data(), L, D, D, element_bound(DType::kF32));
  }
}

}  // namespace
