// bench/bench_blockwise.cpp — `qsgemm bench blockwise`: FP8 GEMMs with groupwise / blockwise scales
// (qsgemm::blockwise_linear) against cuBLASLt, same shapes, same run.
//
// Families (x scale granularity x w scale granularity, include/qsgemm/blockwise.h):
//   blockwise_1d2d  x 1x128 (M-major), w 128x128   vs cublaslt_fp8_block128 and cublaslt_fp8_tensor
//   rowwise         x per token,       w per channel vs cublaslt_fp8_rowwise
//   with --all-combos also blockwise_1d1d, blockwise_2d1d, blockwise_2d2d (no vendor baseline).
// Operands are random e4m3 with random positive scales of the family's granularity; y is bf16, no bias.
// qsgemm is given a split-K workspace of blockwise_linear_workspace_bytes (the heuristic's split).
// qsgemm and the row's baselines are timed by one method, cuBLASLt at the best of its heuristic's
// algorithms, in two interleaved rounds, forward then reverse (PointTimer, harness.h). When
// blockwise_linear fails, the row keeps qsgemm_us null with the library's message in notes, and
// the baselines are still timed.
//
// rel_err: the float64 CPU reference (qsgemm::ref::gemm_fp8_blockwise) on the same quantized
// operands, over up to 8 sampled tokens x 256 sampled output channels (output poisoned with NaN first);
// each baseline's output against the float64 reference of its own operands and scales (baselines_rel_err).
// Also quant_fp8_group rows: quantize_fp8_per_token_group of M x K bf16 (1x128 groups, M-major scales).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "bench_util.h"
#include "cublaslt_baselines.h"
#include "harness.h"
#include "summary.h"
#include "sweep.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"
#include "qsgemm/tensor.h"

namespace qsgemm::bench {
namespace {

// Llama 3 8B / 70B (unsharded), the six DeepSeek-V3 GEMM shapes DeepGEMM publishes (N x K), and two
// layers whose K ends in a partial 128-group (issue #24): K = 4112 = 32 x 128 + 16 next to l3-8b.o
// (4096 x 4096), K = 14352 = 112 x 128 + 16 next to l3-8b.down (4096 x 14336), so that
// scripts/check_cliffs.py can compare each with the nearest K that is a multiple of 128.
const std::vector<Layer> kBlockwiseLayers = {
    {"l3-8b.qkv", 6144, 4096},       {"l3-8b.o", 4096, 4096},          {"l3-8b.gate_up", 28672, 4096},
    {"l3-8b.down", 4096, 14336},     {"l3-70b.qkv", 10240, 8192},      {"l3-70b.o", 8192, 8192},
    {"l3-70b.gate_up", 57344, 8192}, {"l3-70b.down", 8192, 28672},     {"ds3.2112x7168", 2112, 7168},
    {"ds3.24576x1536", 24576, 1536}, {"ds3.32768x512", 32768, 512},    {"ds3.7168x16384", 7168, 16384},
    {"ds3.4096x7168", 4096, 7168},   {"ds3.7168x2048", 7168, 2048},
    {"partialk.4096x4112", 4096, 4112}, {"partialk.4096x14352", 4096, 14352},
};
const std::vector<std::string> kQuickLayers = {"l3-8b.o", "ds3.7168x16384"};
// --sweep's default layers: an MLP up- and a down-projection, a small DeepSeek-V3 shape, and a
// partial-K layer with its multiple-of-128 neighbour.
const std::vector<std::string> kSweepLayers = {"l3-8b.o", "l3-8b.gate_up", "l3-70b.down", "ds3.2112x7168",
                                               "partialk.4096x4112"};
const std::vector<int64_t> kQuickMs = {16, 256, 4096};

// DeepGEMM's published H800 figures for its normal (dense) FP8 1x128 x 128x128 GEMM at M = 4096,
// TFLOP/s (DeepGEMM README). An H800 has the H100's SMs at a lower NVLink rate, so compute-bound
// shapes are comparable with an H200; memory-bound ones favour the H200 (4.8 vs 3.35 TB/s).
struct Published {
  const char* layer;
  double tflops;
};
const Published kDeepGemmH800[] = {{"ds3.2112x7168", 1058},  {"ds3.24576x1536", 990}, {"ds3.32768x512", 590},
                                   {"ds3.7168x16384", 1358}, {"ds3.4096x7168", 1304},  {"ds3.7168x2048", 1025}};

struct Combo {
  const char* family;
  ScaleGranularity gx, gw;
  std::vector<std::string> baselines;
};

const std::vector<Combo>& combos(bool all) {
  using G = ScaleGranularity;
  static const std::vector<Combo> main = {
      {"blockwise_1d2d", G::kGroup1x128, G::kBlock128x128, {"cublaslt_fp8_block128", "cublaslt_fp8_tensor"}},
      {"rowwise", G::kPerRow, G::kPerRow, {"cublaslt_fp8_rowwise"}},
  };
  static const std::vector<Combo> every = [] {
    std::vector<Combo> v = main;
    v.push_back({"blockwise_1d1d", G::kGroup1x128, G::kGroup1x128, {}});
    v.push_back({"blockwise_2d1d", G::kBlock128x128, G::kGroup1x128, {}});
    v.push_back({"blockwise_2d2d", G::kBlock128x128, G::kBlock128x128, {}});
    return v;
  }();
  return all ? every : main;
}

// What a run times: --sweep (without --sweep-full) keeps the 1x128.128x128 pair against cuBLASLt
// block-scaled only.
std::vector<Combo> run_combos(const BenchOptions& o) {
  if (o.sweep && !o.sweep_full) {
    Combo c = combos(false).front();
    c.baselines = {"cublaslt_fp8_block128"};
    return {c};
  }
  return combos(o.all_combos);
}

constexpr int64_t kCheckTokens = 8;
constexpr int64_t kCheckChannels = 256;
constexpr float kScaleLo = 0.5f / 448.0f, kScaleHi = 2.0f / 448.0f;

int64_t blocks(int64_t n) { return ceil_div(n, kScaleGroupK); }

// The scales of one layer, every granularity, sized for the largest M; device and host copies.
struct LayerScales {
  int64_t M = 0, N = 0, K = 0;
  DeviceBuffer x_group, x_block, x_row, w_block, w_group, w_row;
  std::vector<float> hx_group, hx_block, hx_row, hw_block, hw_group, hw_row;  // filled by download_all()

  LayerScales(int64_t Mmax, int64_t n, int64_t k, uint32_t seed, cudaStream_t s) : M(Mmax), N(n), K(k) {
    const int64_t G = blocks(K);
    x_group = make(G * M, seed + 10, s);
    x_block = make(blocks(M) * G, seed + 11, s);
    x_row = make(M, seed + 12, s);
    w_block = make(blocks(N) * G, seed + 13, s);
    w_group = make(N * G, seed + 14, s);
    w_row = make(N, seed + 15, s);
  }
  static DeviceBuffer make(int64_t n, uint32_t seed, cudaStream_t s) {
    DeviceBuffer b(static_cast<size_t>(4 * n));
    fill_f32(b.as<float>(), static_cast<size_t>(n), seed, kScaleLo, kScaleHi, s);
    return b;
  }
  void download_all(cudaStream_t s) {
    if (!hx_row.empty()) return;
    auto get = [&](const DeviceBuffer& d, std::vector<float>& h) {
      h.resize(d.bytes() / 4);
      download(h.data(), d.get(), d.bytes(), s);
    };
    get(x_group, hx_group), get(x_block, hx_block), get(x_row, hx_row);
    get(w_block, hw_block), get(w_group, hw_group), get(w_row, hw_row);
  }
  // The view qsgemm gets for `m` tokens.
  ScaleView x_view(ScaleGranularity g, int64_t m) const {
    switch (g) {
      case ScaleGranularity::kGroup1x128: return {x_group.as<float>(), g, m};  // [ceil(K/128)][ld = m]
      case ScaleGranularity::kBlock128x128: return {x_block.as<float>(), g, 0};
      default: return {x_row.as<float>(), g, 0};
    }
  }
  ScaleView w_view(ScaleGranularity g) const {
    switch (g) {
      case ScaleGranularity::kGroup1x128: return {w_group.as<float>(), g, 0};
      case ScaleGranularity::kBlock128x128: return {w_block.as<float>(), g, 0};
      default: return {w_row.as<float>(), g, 0};
    }
  }
  // Bytes of scales the kernel must read for `m` tokens.
  int64_t x_bytes(ScaleGranularity g, int64_t m) const { return 4 * blockwise_scale_floats(g, m, K); }
  int64_t w_bytes(ScaleGranularity g) const { return 4 * blockwise_scale_floats(g, N, K); }
  // Scale of (token m, k-group g) / (channel n, k-group g) as the kernel applies it.
  double x_at(ScaleGranularity g, int64_t m, int64_t m_count, int64_t kg) const {
    switch (g) {
      case ScaleGranularity::kGroup1x128: return hx_group[static_cast<size_t>(kg * m_count + m)];
      case ScaleGranularity::kBlock128x128: return hx_block[static_cast<size_t>((m / kScaleGroupK) * blocks(K) + kg)];
      default: return hx_row[static_cast<size_t>(m)];
    }
  }
  double w_at(ScaleGranularity g, int64_t n, int64_t kg) const {
    switch (g) {
      case ScaleGranularity::kGroup1x128: return hw_group[static_cast<size_t>(n * blocks(K) + kg)];
      case ScaleGranularity::kBlock128x128: return hw_block[static_cast<size_t>((n / kScaleGroupK) * blocks(K) + kg)];
      default: return hw_row[static_cast<size_t>(n)];
    }
  }
};

// ‖Y − ref‖/‖ref‖ over sampled tokens x sampled channels. The sub-problem keeps every scale the
// kernel applies to those outputs: block scales become per-row groups (kGroup1x128), which the
// reference reads element by element; per-row x per-row stays as it is.
double blockwise_rel_err(const Combo& c, LayerScales& sc, const std::vector<int64_t>& channels,
                         const std::vector<uint8_t>& w_rows, const uint8_t* x8, int64_t ld, const uint16_t* y,
                         int64_t M, cudaStream_t s) {
  const int64_t N = sc.N, K = sc.K, G = blocks(K);
  sc.download_all(s);
  const std::vector<int64_t> tokens = sample_indices(M, kCheckTokens);
  const auto T = static_cast<int64_t>(tokens.size()), C = static_cast<int64_t>(channels.size());
  const bool rowwise = c.gx == ScaleGranularity::kPerRow;
  std::vector<uint8_t> x(static_cast<size_t>(T * K));
  std::vector<float> out(static_cast<size_t>(T * C));
  std::vector<uint16_t> yrow(static_cast<size_t>(N));
  std::vector<float> sx(static_cast<size_t>(rowwise ? T : G * T)), sw(static_cast<size_t>(rowwise ? C : C * G));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t m = tokens[t];
    download(&x[static_cast<size_t>(t * K)], x8 + m * ld, static_cast<size_t>(K), s);
    download(yrow.data(), y + m * N, static_cast<size_t>(2 * N), s);
    for (int64_t j = 0; j < C; ++j) out[static_cast<size_t>(t * C + j)] = bf16_decode(yrow[static_cast<size_t>(channels[j])]);
    if (rowwise)
      sx[static_cast<size_t>(t)] = static_cast<float>(sc.x_at(c.gx, m, M, 0));
    else
      for (int64_t g = 0; g < G; ++g) sx[static_cast<size_t>(g * T + t)] = static_cast<float>(sc.x_at(c.gx, m, M, g));
  }
  for (int64_t j = 0; j < C; ++j) {
    if (rowwise)
      sw[static_cast<size_t>(j)] = static_cast<float>(sc.w_at(c.gw, channels[j], 0));
    else
      for (int64_t g = 0; g < G; ++g) sw[static_cast<size_t>(j * G + g)] = static_cast<float>(sc.w_at(c.gw, channels[j], g));
  }
  const ScaleGranularity gref = rowwise ? ScaleGranularity::kPerRow : ScaleGranularity::kGroup1x128;
  std::vector<double> expect(static_cast<size_t>(T * C));
  // One token per task; its scales are sx[t] (per row) or sx[g * T + t] (groups, ld T).
  parallel_for(T, [&](int64_t t) {
    ref::gemm_fp8_blockwise(&x[static_cast<size_t>(t * K)], K, w_rows.data(), K, 1, C, K, gref,
                            &sx[static_cast<size_t>(t)], T, gref, sw.data(), nullptr,
                            &expect[static_cast<size_t>(t * C)]);
  });
  return ref::rel_frobenius_error(expect.data(), out.data(), T, C, C);
}

void bench_layer(BenchEnv& env, const Layer& layer, const std::vector<int64_t>& ms, const std::vector<Combo>& run,
                 bool memcpy_floor, bool packed_rows, const ResultTable& table) {
  const int64_t N = layer.N, K = layer.K, Mmax = *std::max_element(ms.begin(), ms.end());
  const cudaStream_t s = env.stream;
  const uint32_t seed = seed_of(layer.name);
  // Rows of X and W as the library's quantizers write them (fp8_row_ld: K % 128 != 0 padded to 128
  // bytes), or packed with --packed-rows; every candidate of a point reads the same operands.
  const int64_t ld = packed_rows ? K : fp8_row_ld(K);

  DeviceBuffer w8(static_cast<size_t>(N * ld)), x8(static_cast<size_t>(Mmax * ld)), y(static_cast<size_t>(2 * Mmax * N));
  fill_e4m3(w8.get(), static_cast<size_t>(N * ld), seed, s);
  fill_e4m3(x8.get(), static_cast<size_t>(Mmax * ld), seed + 1, s);
  LayerScales scales(Mmax, N, K, seed, s);
  QSB_CHECK_CUDA(cudaStreamSynchronize(s));

  const std::vector<int64_t> channels = sample_indices(N, kCheckChannels);
  std::vector<uint8_t> w_rows;  // the sampled rows of w, downloaded on the first check

  for (const int64_t M : ms) {
    for (const Combo& c : run) {
      BenchRow row;
      row.family = c.family;
      row.layer = layer.name;
      row.M = M, row.N = N, row.K = K;
      row.bytes_moved = N * K + M * K + 2 * M * N + scales.x_bytes(c.gx, M) + scales.w_bytes(c.gw);
      if (ld != K) row.extra.emplace_back("ld", static_cast<double>(ld));  // row stride of X and W
      // qsgemm runs with a workspace (allocated here, outside the timing), so the heuristic may split K
      // (the config name then carries "_splitkS") or expand x blocks ("_xcopy").
      DeviceBuffer workspace;
      BlockwiseOptions options;
      guarded(row, "blockwise_choose_config", [&] {
        row.config = blockwise_config_name(blockwise_choose_config(M, N, K, c.gx, c.gw, env.report.sms, ld, ld));
        const LinearPlan plan = blockwise_plan(M, N, K, c.gx, c.gw, options, env.report.sms, ld, ld);
        options.workspace_bytes =
            blockwise_linear_workspace_bytes(M, N, K, c.gx, c.gw, options, env.report.sms, ld, ld);
        if (options.workspace_bytes > 0) {
          workspace = DeviceBuffer(options.workspace_bytes);
          options.workspace = workspace.get();
          // The plan's own: its split, and "_xcopy" where x blocks go through their expanded copy (the
          // workspace holds more than the split's slices).
          const size_t slices = plan.split_k > 1 ? size_t{4} * plan.split_k * M * N : 0;
          row.config = blockwise_config_name(plan.config) +
                       (plan.split_k > 1 ? "_splitk" + std::to_string(plan.split_k) : std::string()) +
                       (plan.workspace_bytes > slices ? "_xcopy" : "");
        }
      });

      PointTimer point;
      const MatrixView xv(x8.get(), DType::kE4M3, M, K, ld), wv(w8.get(), DType::kE4M3, N, K, ld);
      const MatrixView yv(y.get(), DType::kBF16, M, N);
      const ScaleView sx = scales.x_view(c.gx, M), sw = scales.w_view(c.gw);
      auto linear = [&](cudaStream_t st) {
        blockwise_linear(xv, sx, wv, sw, VectorView{}, yv, options, st);
      };
      if (!env.kernels_ok)
        row.add_note("qsgemm: its kernels need an sm_90 GPU");
      else
        point.add(row, "qsgemm", linear, [&](double us) { row.qsgemm_us = us; });
      const GemmOperands f8{M, N, K, x8.get(), w8.get(), y.get(), ld, ld};
      for (const std::string& b : c.baselines) {
        if (b == "cublaslt_fp8_block128")
          point.add_baseline(row, b, [&] { return make_cublaslt_fp8_block128(*env.lt, f8, s); });
        else if (b == "cublaslt_fp8_tensor")
          point.add_baseline(row, b, [&] { return make_cublaslt_fp8_tensor(*env.lt, f8, s); });
        else if (b == "cublaslt_fp8_rowwise")
          point.add_baseline(row, b, [&] { return make_cublaslt_fp8_rowwise(*env.lt, f8, s); });
      }
      // Decode sizes: the floor of a kernel that moves these bytes, measured the same way.
      if (memcpy_floor && M <= kDecodeMaxM) add_memcpy_baseline(point, env, row);
      point.run(env);
      point.check_baselines(env);

      if (row.qsgemm_us && env.check) {
        guarded(row, "rel_err", [&] {
          if (w_rows.empty()) {
            w_rows.resize(channels.size() * static_cast<size_t>(K));
            for (size_t j = 0; j < channels.size(); ++j)
              download(&w_rows[j * static_cast<size_t>(K)], w8.as<uint8_t>() + channels[j] * ld, static_cast<size_t>(K),
                       s);
          }
          QSB_CHECK_CUDA(cudaMemsetAsync(y.get(), 0xFF, static_cast<size_t>(2 * M * N), s));  // bf16 NaN
          linear(s);
          set_rel_err(row, blockwise_rel_err(c, scales, channels, w_rows, x8.as<uint8_t>(), ld, y.as<uint16_t>(), M, s));
        });
      }
      table.print_row(row);
      env.report.rows.push_back(std::move(row));
    }
  }
}

// Dynamic 1x128 FP8 quantization of an M x K bf16 activation, scales M-major (ld = M). rel_err
// compares the dequantized output with the CPU reference quantizer's on sampled rows.
void bench_quant_group(BenchEnv& env, int64_t M, int64_t K) {
  const int64_t G = blocks(K);
  BenchRow row;
  row.family = "quant_fp8_group";
  row.layer = strprintf("%lldx%lld", static_cast<long long>(M), static_cast<long long>(K));
  row.M = M, row.N = 0, row.K = K;
  row.out_dtype = "e4m3";
  row.config = "1x128";
  row.bytes_moved = 2 * M * K + M * K + 4 * M * G;
  DeviceBuffer x, q, scales;
  guarded(row, "alloc", [&] {
    x = DeviceBuffer(static_cast<size_t>(2 * M * K));
    q = DeviceBuffer(static_cast<size_t>(M * K));
    scales = DeviceBuffer(static_cast<size_t>(4 * M * G));
    fill_bf16(x.get(), static_cast<size_t>(M * K), seed_of(row.layer), 4.0f, env.stream);
  });
  const MatrixView xv(x.get(), DType::kBF16, M, K), qv(q.get(), DType::kE4M3, M, K);
  auto quantize = [&](cudaStream_t st) { quantize_fp8_per_token_group(xv, qv, scales.as<float>(), M, false, st); };
  const bool ran = x.get() && time_with_memcpy_floor(env, row, quantize);
  if (ran && env.check) {
    guarded(row, "rel_err", [&] {
      std::vector<float> all_scales(static_cast<size_t>(M * G));
      download(all_scales.data(), scales.get(), all_scales.size() * 4, env.stream);
      double num = 0, den = 0;
      std::vector<uint16_t> xb(static_cast<size_t>(K));
      std::vector<float> xf(static_cast<size_t>(K)), sr(static_cast<size_t>(G));
      std::vector<uint8_t> qg(static_cast<size_t>(K)), qr(static_cast<size_t>(K));
      for (const int64_t m : sample_indices(M, kCheckTokens)) {
        download(xb.data(), x.as<uint16_t>() + m * K, static_cast<size_t>(2 * K), env.stream);
        download(qg.data(), q.as<uint8_t>() + m * K, static_cast<size_t>(K), env.stream);
        for (int64_t k = 0; k < K; ++k) xf[static_cast<size_t>(k)] = bf16_decode(xb[static_cast<size_t>(k)]);
        ref::quantize_fp8_1x128(xf.data(), 1, K, K, qr.data(), K, sr.data(), 1, false);
        for (int64_t k = 0; k < K; ++k) {
          const int64_t g = k / kScaleGroupK;
          const double r = static_cast<double>(fp8_e4m3_decode(qr[static_cast<size_t>(k)])) * sr[static_cast<size_t>(g)];
          const double v = static_cast<double>(fp8_e4m3_decode(qg[static_cast<size_t>(k)])) *
                           all_scales[static_cast<size_t>(g * M + m)];
          num += (v - r) * (v - r);
          den += r * r;
        }
      }
      set_rel_err(row, den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    });
  }
  print_memory_row(row, env.report.copy_bandwidth_GBps);
  env.report.rows.push_back(std::move(row));
}

void print_summary(const BenchEnv& env, const std::vector<Combo>& run) {
  const std::vector<BenchRow>& rows = env.report.rows;
  std::printf("\n== summary (speedup = baseline time / qsgemm time, same run) ==\n");
  for (const Combo& c : run) {
    for (const std::string& b : c.baselines) print_speedup_summary(rows, c.family, b);
    // At decode sizes the weight (e4m3, plus its scales) is what the kernel must stream.
    const ScaleGranularity gw = c.gw;
    print_decode_bandwidth(
        rows, c.family, "the weight moves",
        [gw](const BenchRow& r) {
          const int64_t scales = gw == ScaleGranularity::kBlock128x128 ? blocks(r.N) * blocks(r.K)
                                 : gw == ScaleGranularity::kGroup1x128 ? r.N * blocks(r.K)
                                                                       : r.N;
          return static_cast<double>(r.N * r.K + 4 * scales);
        },
        env.report.copy_bandwidth_GBps);
  }

  std::printf("\nDeepSeek-V3 shapes at M=4096, TFLOP/s (qsgemm and cuBLASLt on this GPU; DeepGEMM as published for H800):\n");
  std::printf("  %-16s %12s %18s %16s\n", "layer", "qsgemm_1d2d", "cublaslt_block128", "DeepGEMM_H800");
  for (const Published& p : kDeepGemmH800) {
    const BenchRow* r = nullptr;
    for (const BenchRow& x : rows)
      if (x.family == "blockwise_1d2d" && x.layer == p.layer && x.M == 4096) r = &x;
    auto tflops = [&](std::optional<double> us) {
      return us && r ? strprintf("%.0f", 2.0 * r->M * r->N * r->K / (*us * 1e-6) / 1e12) : std::string("n/a");
    };
    std::printf("  %-16s %12s %18s %16.0f\n", p.layer, tflops(r ? r->qsgemm_us : std::nullopt).c_str(),
                tflops(r ? r->baseline("cublaslt_fp8_block128") : std::nullopt).c_str(), p.tflops);
  }
  print_algo_search_summary(rows);
  print_baseline_errors(rows);
}

}  // namespace

int bench_blockwise(const BenchOptions& options) {
  std::vector<Layer> layers;
  std::vector<int64_t> ms;
  try {
    layers = run_layers(options, kBlockwiseLayers, kQuickLayers, kSweepLayers);
    ms = run_token_counts(options, kQuickMs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qsgemm bench blockwise: %s\n", e.what());
    return 2;
  }
  const std::vector<Combo> run = run_combos(options);
  const bool memcpy_floor = !options.sweep || options.sweep_full;
  const double estimate = estimate_runtime_s(layers, ms, [&](int64_t M) {
    std::vector<PointShape> points;
    for (const Combo& c : run) {
      PointShape p;
      p.timed = 1 + (memcpy_floor && M <= kDecodeMaxM ? 1 : 0);
      p.searched = static_cast<int>(c.baselines.size());
      points.push_back(p);
    }
    return points;
  }, options);
  print_run_plan(options.sweep ? "blockwise sweep" : "blockwise", layers, ms, estimate);
  if (options.estimate_only) return 0;

  return run_bench("blockwise", options, options.sweep ? "blockwise_sweep.json" : "blockwise.json", [&](BenchEnv& env) {
    const ResultTable table({"cublaslt_fp8_block128", "cublaslt_fp8_tensor", "cublaslt_fp8_rowwise", "cuda_memcpy_same_bytes"},
                            {"cublaslt_fp8_block128", "cublaslt_fp8_tensor", "cublaslt_fp8_rowwise"});
    table.print_header();
    for_each_layer(env, layers, [&](const Layer& layer) {
      bench_layer(env, layer, ms, run, memcpy_floor, options.packed_rows, table);
    });
    std::printf("\n");
    if (!options.sweep) {
      bench_quant_group(env, 4096, 4096);
      if (!options.quick) bench_quant_group(env, 8192, 8192);
    }
    print_summary(env, run);
  });
}

}  // namespace qsgemm::bench
