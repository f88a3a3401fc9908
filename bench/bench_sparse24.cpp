// bench/bench_sparse24.cpp — `qsgemm bench sparse24`: the 2:4-sparse FP8 linear against cuBLASLt FP8
// (per-token x per-channel, and per-tensor: the fastest dense FP8 a user can run), cuSPARSELt FP8 2:4
// and cuBLAS bf16, same shapes, same run.
//
// Per layer (weight N x K) the weight is random bf16, compressed once by qsgemm::sparse24_compress
// (magnitude pruning, per-channel scales); activations are random e4m3 with random positive
// per-token scales. qsgemm_us is sparse24_linear with bf16 output and no bias, the configuration the
// heuristic picks, given a workspace (so it may pick a stream-K configuration or split K). The baselines get
// dense random e4m3 / bf16 operands of the same shape (their times do not depend on the values;
// cuSPARSELt prunes its own copy). The default and the fast-accumulation qsgemm and the four
// baselines of a point are timed by one method, cuBLASLt at the best of its heuristic's algorithms,
// in two interleaved rounds, forward then reverse (PointTimer, harness.h).
//
// rel_err: the float64 CPU reference (qsgemm::ref::gemm_sparse24_fp8) on the same quantized
// operands, over up to 8 sampled tokens x 256 sampled output channels of every point (the output is
// poisoned with NaN first, so an unwritten element fails). Each baseline's output is checked against
// the float64 reference of its own operands (baselines_rel_err; cuSPARSELt: its own pruned weight,
// no scales, as it computes).
//
// Also: compress_sparse24 (sparse24_compress of a 28672 x 8192 bf16 weight, host wall time — the call
// synchronizes) and quant_fp8_per_token (quantize_fp8_per_token of M x K bf16) rows.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "bench_util.h"
#include "cublaslt_baselines.h"
#include "cusparselt_baseline.h"
#include "harness.h"
#include "summary.h"
#include "sweep.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"
#include "qsgemm/tensor.h"

namespace qsgemm::bench {
namespace {

// Llama 3 8B / 70B linear layers (weight N x K), and 70B sharded 8 ways (tensor parallel).
const std::vector<Layer> kSparseLayers = {
    {"l3-8b.qkv", 6144, 4096},        {"l3-8b.o", 4096, 4096},
    {"l3-8b.gate_up", 28672, 4096},   {"l3-8b.down", 4096, 14336},
    {"l3-70b.qkv", 10240, 8192},      {"l3-70b.o", 8192, 8192},
    {"l3-70b.gate_up", 57344, 8192},  {"l3-70b.down", 8192, 28672},
    {"l3-70b-tp8.qkv", 1280, 8192},   {"l3-70b-tp8.o", 8192, 1024},
    {"l3-70b-tp8.gate_up", 7168, 8192}, {"l3-70b-tp8.down", 8192, 3584},
};
const std::vector<std::string> kQuickLayers = {"l3-8b.o", "l3-70b.down"};
// --sweep's default layers: the two largest MLP up-projections, a QKV, and a tensor-parallel shard.
const std::vector<std::string> kSweepLayers = {"l3-8b.gate_up", "l3-70b.gate_up", "l3-70b.qkv", "l3-70b-tp8.qkv"};
const std::vector<int64_t> kQuickMs = {16, 256, 4096};

constexpr int64_t kCheckTokens = 8;      // rows of Y checked against the reference per point
constexpr int64_t kCheckChannels = 256;  // columns of Y checked per point
// What a point times. The normal benchmark: both accumulation modes, every baseline, the memcpy
// floor at decode sizes. --sweep: both accumulation modes (issue #24 sets a sweep rule for each)
// against cuBLASLt FP8 row-wise and cuSPARSELt.
struct Candidates {
  bool fast_accum = true;
  std::vector<std::string> baselines = {"cublaslt_fp8_rowwise", "cublaslt_fp8_tensor", "cusparselt_fp8", "cublas_bf16"};
  bool memcpy_floor = true;
};
Candidates candidates_of(const BenchOptions& o) {
  Candidates c;
  if (o.sweep && !o.sweep_full) {
    c.baselines = {"cublaslt_fp8_rowwise", "cusparselt_fp8"};
    c.memcpy_floor = false;
  }
  return c;
}

constexpr float kActScaleLo = 0.5f / 448.0f, kActScaleHi = 2.0f / 448.0f;

// The sampled output channels of a compressed weight, as a smaller weight on the host: the chosen
// rows' values and scales, and their metadata nibbles re-laid for the smaller row count
// (docs/formats.md §4.3: the metadata interleaves 64 rows, so rows cannot be sliced in place).
ref::Sparse24Host download_channels(const SparseFp8Weight& w, const std::vector<int64_t>& channels, cudaStream_t s) {
  const int64_t N = w.N, K = w.K, C = static_cast<int64_t>(channels.size());
  ref::Sparse24Host h;
  h.N = C;
  h.K = K;
  h.values.resize(static_cast<size_t>(C * K / 2));
  for (int64_t j = 0; j < C; ++j)
    download(&h.values[static_cast<size_t>(j * K / 2)], w.values + channels[j] * (K / 2), static_cast<size_t>(K / 2), s);
  std::vector<uint8_t> meta(static_cast<size_t>(sparse24_meta_bytes(N, K)));
  download(meta.data(), w.meta, meta.size(), s);
  h.meta.assign(static_cast<size_t>(sparse24_meta_bytes(C, K)), static_cast<uint8_t>(kSparse24PadNibble * 0x11));
  for (int64_t j = 0; j < C; ++j)
    for (int64_t k = 0; k < K; k += 4) {
      const int shift = sparse24_meta_shift(k);
      const uint8_t nibble = (meta[static_cast<size_t>(sparse24_meta_offset(N, channels[j], k))] >> shift) & 0xF;
      uint8_t& b = h.meta[static_cast<size_t>(sparse24_meta_offset(C, j, k))];
      b = static_cast<uint8_t>((b & ~(0xF << shift)) | (nibble << shift));
    }
  const size_t scale_count = w.per_tensor_scale ? 1 : static_cast<size_t>(N);
  std::vector<float> scales(scale_count);
  download(scales.data(), w.scales, 4 * scale_count, s);
  if (w.per_tensor_scale) {
    h.scales = scales;
  } else {
    for (int64_t n : channels) h.scales.push_back(scales[static_cast<size_t>(n)]);
  }
  return h;
}

// ‖Y − ref‖/‖ref‖ over sampled tokens x the channels of `wref`.
double sparse_rel_err(const ref::Sparse24Host& wref, const std::vector<int64_t>& channels, const uint8_t* x8,
                      const float* x_scale, const uint16_t* y, int64_t M, int64_t N, int64_t K, cudaStream_t s) {
  const std::vector<int64_t> tokens = sample_indices(M, kCheckTokens);
  const auto T = static_cast<int64_t>(tokens.size()), C = static_cast<int64_t>(channels.size());
  std::vector<uint8_t> x(static_cast<size_t>(T * K));
  std::vector<float> sx(static_cast<size_t>(T)), out(static_cast<size_t>(T * C));
  std::vector<uint16_t> yrow(static_cast<size_t>(N));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t m = tokens[t];
    download(&x[static_cast<size_t>(t * K)], x8 + m * K, static_cast<size_t>(K), s);
    download(&sx[static_cast<size_t>(t)], x_scale + m, 4, s);
    download(yrow.data(), y + m * N, static_cast<size_t>(2 * N), s);
    for (int64_t j = 0; j < C; ++j) out[static_cast<size_t>(t * C + j)] = bf16_decode(yrow[static_cast<size_t>(channels[j])]);
  }
  std::vector<double> expect(static_cast<size_t>(T * C));
  parallel_for(T, [&](int64_t t) {
    ref::gemm_sparse24_fp8(&x[static_cast<size_t>(t * K)], K, 1, wref, &sx[static_cast<size_t>(t)], false, nullptr,
                           &expect[static_cast<size_t>(t * C)]);
  });
  return ref::rel_frobenius_error(expect.data(), out.data(), T, C, C);
}

void bench_layer(BenchEnv& env, const Layer& layer, const std::vector<int64_t>& ms, const Candidates& cand,
                 const ResultTable& table) {
  const int64_t N = layer.N, K = layer.K, Mmax = *std::max_element(ms.begin(), ms.end());
  const cudaStream_t s = env.stream;
  const uint32_t seed = seed_of(layer.name);

  // The dense bf16 weight: compressed by qsgemm, and the cuBLAS bf16 baseline's W.
  DeviceBuffer w16(static_cast<size_t>(2 * N * K));
  fill_bf16(w16.get(), static_cast<size_t>(N * K), seed, 1.0f, s);

  BenchRow failure;  // collects a compression failure, copied into every row of the layer
  std::optional<SparseFp8Weight> w;
  DeviceBuffer values, meta, w_scales, workspace;
  guarded(failure, "qsgemm sparse24_compress", [&] {
    const Sparse24WeightBytes wb = sparse24_weight_bytes(N, K, false);
    values = DeviceBuffer(wb.values);
    meta = DeviceBuffer(wb.meta);
    w_scales = DeviceBuffer(wb.scales);
    workspace = DeviceBuffer(sparse24_compress_workspace_bytes(N, K));
    SparseFp8Weight sw;
    sw.N = N;
    sw.K = K;
    sw.values = values.as<uint8_t>();
    sw.meta = meta.as<uint8_t>();
    sw.scales = w_scales.as<float>();
    sparse24_compress(MatrixView(w16.get(), DType::kBF16, N, K), sw, Sparse24CompressOptions{}, workspace.get(), s);
    w = sw;
  });
  workspace = DeviceBuffer();
  const int64_t weight_bytes = N * K / 2 + sparse24_meta_bytes(N, K) + 4 * N;  // what the kernel must read

  // Baseline weight (dense e4m3) and activations, sized for the largest M.
  DeviceBuffer w8(static_cast<size_t>(N * K));
  fill_e4m3(w8.get(), static_cast<size_t>(N * K), seed + 1, s);
  DeviceBuffer x8(static_cast<size_t>(Mmax * K)), x_scale(static_cast<size_t>(4 * Mmax));
  DeviceBuffer x16(static_cast<size_t>(2 * Mmax * K)), y(static_cast<size_t>(2 * Mmax * N));
  fill_e4m3(x8.get(), static_cast<size_t>(Mmax * K), seed + 2, s);
  fill_f32(x_scale.as<float>(), static_cast<size_t>(Mmax), seed + 3, kActScaleLo, kActScaleHi, s);
  fill_bf16(x16.get(), static_cast<size_t>(Mmax * K), seed + 4, 1.0f, s);
  QSB_CHECK_CUDA(cudaStreamSynchronize(s));

  const std::vector<int64_t> channels = sample_indices(N, kCheckChannels);
  std::optional<ref::Sparse24Host> wref;  // downloaded on the first check

  for (const int64_t M : ms) {
    BenchRow row;
    row.family = "sparse24";
    row.layer = layer.name;
    row.M = M, row.N = N, row.K = K;
    row.bytes_moved = weight_bytes + M * K + 2 * M * N + 4 * M;
    // qsgemm runs with a workspace (allocated here, outside the timing), so the heuristic may choose
    // its stream-K configurations.
    // The configuration is what sparse24_plan says it runs given a workspace; a split-K run's name
    // ends in "_splitkS".
    auto plan_name = [&](bool fast_accum) {
      Sparse24Options o;
      o.fast_accum = fast_accum;
      const LinearPlan plan = sparse24_plan(M, N, K, o, env.report.sms);
      return sparse24_config(plan.config).name() +
             (plan.split_k > 1 ? "_splitk" + std::to_string(plan.split_k) : std::string()) +
             (plan.tail_config >= 0
                  ? "+" + sparse24_config(plan.tail_config).name() + "@" + std::to_string(plan.tail_rows)
                  : std::string());
    };
    guarded(row, "sparse24_plan", [&] { row.config = plan_name(false); });
    DeviceBuffer workspace;
    size_t workspace_bytes = 0;
    guarded(row, "sparse24_linear_workspace_bytes", [&] {
      for (bool fast : {false, true}) {
        Sparse24Options o;
        o.fast_accum = fast;
        workspace_bytes = std::max(workspace_bytes, sparse24_linear_workspace_bytes(M, N, K, o, env.report.sms));
      }
      workspace = DeviceBuffer(workspace_bytes);
    });

    // The same point with FP8 fast accumulation (opt-in mode), against the same baseline times.
    BenchRow fast = row;
    fast.family = "sparse24_fastaccum";
    fast.notes.clear();
    guarded(fast, "sparse24_plan", [&] { fast.config = plan_name(true); });

    // qsgemm (default: promoted accumulation; or FP8 fast accumulation) for row r, or null with a
    // note when it cannot run.
    const MatrixView xv(x8.get(), DType::kE4M3, M, K), yv(y.get(), DType::kBF16, M, N);
    const ScaleView sv{x_scale.as<float>(), ScaleGranularity::kPerRow, 0};
    auto linear_for = [&](BenchRow& r, bool fast_accum) -> std::function<void(cudaStream_t)> {
      if (!w) {
        r.add_note(failure.notes);
        return {};
      }
      if (!env.kernels_ok) {
        r.add_note("qsgemm: its kernels need an sm_90 GPU");
        return {};
      }
      Sparse24Options opt;
      opt.fast_accum = fast_accum;
      opt.workspace = workspace.get();
      opt.workspace_bytes = workspace_bytes;
      const SparseFp8Weight weight = *w;
      return [=](cudaStream_t st) { sparse24_linear(xv, sv, weight, VectorView{}, yv, opt, st); };
    };
    const auto linear = linear_for(row, false);
    const auto linear_fast = cand.fast_accum ? linear_for(fast, true) : std::function<void(cudaStream_t)>{};

    const GemmOperands f8{M, N, K, x8.get(), w8.get(), y.get()};
    const GemmOperands b16{M, N, K, x16.get(), w16.get(), y.get()};
    PointTimer point;
    if (linear) point.add(row, "qsgemm", linear, [&](double us) { row.qsgemm_us = us; });
    if (linear_fast) point.add(fast, "qsgemm", linear_fast, [&](double us) { fast.qsgemm_us = us; });
    for (const std::string& b : cand.baselines) {
      if (b == "cublaslt_fp8_rowwise")
        point.add_baseline(row, b, [&] { return make_cublaslt_fp8_rowwise(*env.lt, f8, s); });
      else if (b == "cublaslt_fp8_tensor")
        point.add_baseline(row, b, [&] { return make_cublaslt_fp8_tensor(*env.lt, f8, s); });
      else if (b == "cusparselt_fp8")
        point.add_baseline(row, b, [&] { return make_cusparselt_fp8(f8, s); });
      else if (b == "cublas_bf16")
        point.add_baseline(row, b, [&] { return make_cublas_bf16(*env.lt, b16, s); });
    }
    // Decode sizes: the floor of a kernel that moves these bytes, measured the same way.
    if (cand.memcpy_floor && M <= kDecodeMaxM) add_memcpy_baseline(point, env, row);
    point.run(env);
    point.check_baselines(env);
    fast.baselines_us = row.baselines_us;
    fast.baselines_rel_err = row.baselines_rel_err;
    fast.baselines_algo = row.baselines_algo;

    // Relative error of each mode on sampled channels, from an output poisoned before the run.
    auto check = [&](BenchRow& r, const std::function<void(cudaStream_t)>& fn) {
      if (!fn || !r.qsgemm_us || !env.check) return;
      guarded(r, "rel_err", [&] {
        if (!wref) wref = download_channels(*w, channels, s);
        QSB_CHECK_CUDA(cudaMemsetAsync(y.get(), 0xFF, static_cast<size_t>(2 * M * N), s));  // bf16 NaN
        fn(s);
        set_rel_err(r, sparse_rel_err(*wref, channels, x8.as<uint8_t>(), x_scale.as<float>(), y.as<uint16_t>(), M, N,
                                      K, s));
      });
    };
    check(row, linear);
    check(fast, linear_fast);
    table.print_row(row);
    env.report.rows.push_back(std::move(row));
    if (cand.fast_accum) {
      table.print_row(fast);
      env.report.rows.push_back(std::move(fast));
    }
  }
}

// sparse24_compress is a load-time operation that synchronizes once to report data errors: time it
// on the host clock, after one warm-up call.
void bench_compress(BenchEnv& env, int64_t N, int64_t K) {
  BenchRow row;
  row.family = "compress_sparse24";
  row.layer = strprintf("%lldx%lld", static_cast<long long>(N), static_cast<long long>(K));
  row.M = 0, row.N = N, row.K = K;
  row.out_dtype = "e4m3";
  row.config = "magnitude_per_channel";
  row.bytes_moved = 2 * N * K + N * K / 2 + sparse24_meta_bytes(N, K) + 4 * N;
  guarded(row, "qsgemm", [&] {
    DeviceBuffer w16(static_cast<size_t>(2 * N * K));
    fill_bf16(w16.get(), static_cast<size_t>(N * K), seed_of(row.layer), 1.0f, env.stream);
    const Sparse24WeightBytes wb = sparse24_weight_bytes(N, K, false);
    DeviceBuffer values(wb.values), meta(wb.meta), scales(wb.scales), ws(sparse24_compress_workspace_bytes(N, K));
    SparseFp8Weight w;
    w.N = N;
    w.K = K;
    w.values = values.as<uint8_t>();
    w.meta = meta.as<uint8_t>();
    w.scales = scales.as<float>();
    const MatrixView wv(w16.get(), DType::kBF16, N, K);
    QSB_CHECK_CUDA(cudaStreamSynchronize(env.stream));
    row.qsgemm_us = host_time_us(
        [&] { sparse24_compress(wv, w, Sparse24CompressOptions{}, ws.get(), env.stream); }, 1, 5);
  });
  row.add_note("host wall time of the call, including its one stream synchronization");
  print_memory_row(row, env.report.copy_bandwidth_GBps);
  env.report.rows.push_back(std::move(row));
}

// Dynamic per-token FP8 quantization of an M x K bf16 activation. rel_err compares the dequantized
// output with the CPU reference quantizer's on sampled rows (0 when bit-identical, as it should be).
void bench_quant_per_token(BenchEnv& env, int64_t M, int64_t K) {
  BenchRow row;
  row.family = "quant_fp8_per_token";
  row.layer = strprintf("%lldx%lld", static_cast<long long>(M), static_cast<long long>(K));
  row.M = M, row.N = 0, row.K = K;
  row.out_dtype = "e4m3";
  row.bytes_moved = 2 * M * K + M * K + 4 * M;
  DeviceBuffer x, q, scales;
  guarded(row, "alloc", [&] {
    x = DeviceBuffer(static_cast<size_t>(2 * M * K));
    q = DeviceBuffer(static_cast<size_t>(M * K));
    scales = DeviceBuffer(static_cast<size_t>(4 * M));
    fill_bf16(x.get(), static_cast<size_t>(M * K), seed_of(row.layer), 4.0f, env.stream);
  });
  const MatrixView xv(x.get(), DType::kBF16, M, K), qv(q.get(), DType::kE4M3, M, K);
  auto quantize = [&](cudaStream_t st) { quantize_fp8_per_token(xv, qv, scales.as<float>(), false, st); };
  const bool ran = x.get() && time_with_memcpy_floor(env, row, quantize);
  if (ran && env.check) {
    guarded(row, "rel_err", [&] {
      double num = 0, den = 0;
      std::vector<uint16_t> xb(static_cast<size_t>(K));
      std::vector<float> xf(static_cast<size_t>(K));
      std::vector<uint8_t> qg(static_cast<size_t>(K)), qr(static_cast<size_t>(K));
      for (const int64_t m : sample_indices(M, kCheckTokens)) {
        float sg = 0, sr = 0;
        download(xb.data(), x.as<uint16_t>() + m * K, static_cast<size_t>(2 * K), env.stream);
        download(qg.data(), q.as<uint8_t>() + m * K, static_cast<size_t>(K), env.stream);
        download(&sg, scales.as<float>() + m, 4, env.stream);
        for (int64_t k = 0; k < K; ++k) xf[static_cast<size_t>(k)] = bf16_decode(xb[static_cast<size_t>(k)]);
        ref::quantize_fp8_per_row(xf.data(), 1, K, K, qr.data(), K, &sr, false);
        for (int64_t k = 0; k < K; ++k) {
          const double r = static_cast<double>(fp8_e4m3_decode(qr[static_cast<size_t>(k)])) * sr;
          const double g = static_cast<double>(fp8_e4m3_decode(qg[static_cast<size_t>(k)])) * sg;
          num += (g - r) * (g - r);
          den += r * r;
        }
      }
      set_rel_err(row, den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    });
  }
  print_memory_row(row, env.report.copy_bandwidth_GBps);
  env.report.rows.push_back(std::move(row));
}

void print_summary(const BenchEnv& env) {
  const std::vector<BenchRow>& rows = env.report.rows;
  std::printf("\n== summary (speedup = baseline time / qsgemm time, same run) ==\n");
  for (const char* family : {"sparse24", "sparse24_fastaccum"}) {
  print_speedup_summary(rows, family, "cublaslt_fp8_rowwise");
  print_speedup_summary(rows, family, "cublaslt_fp8_tensor");

  const auto big = speedups(rows, family, "cusparselt_fp8", 129, INT64_MAX);  // every M of any grid: > 128 or <= 128
  const auto small = speedups(rows, family, "cusparselt_fp8", 0, 128);
  std::printf("%s vs cusparselt_fp8:", family);
  if (big.empty())
    std::printf("  M > 128: n/a");
  else
    std::printf("  M > 128: min %.2fx, geomean %.2fx (%zu points)", *std::min_element(big.begin(), big.end()),
                geomean(big), big.size());
  if (small.empty())
    std::printf("  M <= 128: n/a\n");
  else
    std::printf("  M <= 128: geomean %.2fx (%zu points)\n", geomean(small), small.size());

  // At decode sizes the kernel should be bound by reading the compressed weight. Against the copy
  // bandwidth of a 1 GiB copy, and against a memcpy of the point's own bytes timed in the same
  // rounds (on 5-15 MB weights a copy of that size is far from the 1 GiB figure too).
  print_decode_bandwidth(
      rows, family, "the compressed weight moves",
      [](const BenchRow& r) { return static_cast<double>(r.N * r.K / 2 + sparse24_meta_bytes(r.N, r.K) + 4 * r.N); },
      env.report.copy_bandwidth_GBps);
  }
  print_algo_search_summary(rows);
  print_baseline_errors(rows);
}

}  // namespace

int bench_sparse24(const BenchOptions& options) {
  std::vector<Layer> layers;
  std::vector<int64_t> ms;
  try {
    layers = run_layers(options, kSparseLayers, kQuickLayers, kSweepLayers);
    ms = run_token_counts(options, kQuickMs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qsgemm bench sparse24: %s\n", e.what());
    return 2;
  }
  const Candidates cand = candidates_of(options);
  const double estimate = estimate_runtime_s(layers, ms, [&](int64_t M) {
    PointShape p;
    p.timed = 1 + (cand.fast_accum ? 1 : 0) + (cand.memcpy_floor && M <= kDecodeMaxM ? 1 : 0);
    p.flop_scale = 0.5;
    for (const std::string& b : cand.baselines) {
      if (b == "cusparselt_fp8")
        p.cusparselt = true;  // every M (M rounded up to a multiple of 16: cusparselt_baseline.cpp)
      else
        ++p.searched;
    }
    return std::vector<PointShape>{p};
  }, options);
  print_run_plan(options.sweep ? "sparse24 sweep" : "sparse24", layers, ms, estimate);
  if (options.estimate_only) return 0;

  return run_bench("sparse24", options, options.sweep ? "sparse24_sweep.json" : "sparse24.json", [&](BenchEnv& env) {
    std::printf("cuSPARSELt: %s\n", cusparselt_status().c_str());
    const ResultTable table(
        {"cublaslt_fp8_rowwise", "cublaslt_fp8_tensor", "cusparselt_fp8", "cublas_bf16", "cuda_memcpy_same_bytes"},
        {"cublaslt_fp8_rowwise", "cublaslt_fp8_tensor", "cusparselt_fp8"});
    table.print_header();
    for_each_layer(env, layers, [&](const Layer& layer) { bench_layer(env, layer, ms, cand, table); });
    std::printf("\n");
    if (!options.sweep) {
      bench_compress(env, 28672, 8192);
      bench_quant_per_token(env, 4096, 4096);
      if (!options.quick) bench_quant_per_token(env, 8192, 8192);
    }
    print_summary(env);
  });
}

}  // namespace qsgemm::bench
