// `qsgemm tune sparse24 --m M --n N --k K`: times every configuration of the sparse24 table on one
// shape (L2 flushed, median of many runs, the bench's timer) and prints the winner next to the
// heuristic's choice, so a new config or a heuristic change is one measured decision.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli_common.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/formats.h"
#include "qsgemm/sparse24.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::cli {
namespace {

// The options every tune family shares: --configs LIST (comma-separated names or indices: only
// those) and
// --interleave (time them in two rounds, forward then reverse order, and take the mean of the two
// medians, as the benchmark's PointTimer does: on the H200 a kernel timed right after a long one
// ran up to ~15 % slower at the largest sizes, so one pass in a fixed order favours the first).
struct SweepOptions {
  std::vector<int> only;  // empty: every configuration
  bool interleave = false;
  std::string json_extra;  // ,"key":value pairs every JSON line carries (what else keys the point)
};

// name_to_index: the table's lookup by name (empty for --skinny-clusters, whose items are indices).
bool parse_sweep_options(int argc, char** argv, int count, const std::function<int(const std::string&)>& name_to_index,
                         SweepOptions* o) {
  std::string v;
  if (arg_value(argc, argv, "--configs", &v) && !parse_config_list(v, count, name_to_index, "--configs", &o->only))
    return false;
  o->interleave = has_flag(argc, argv, "--interleave");
  return true;
}

// --swizzles LIST (sparse24, blockwise): bands of tiles to time each configuration in, each 0 (the
// library's order), 1, 2, 4 or 8 (the options' max_swizzle). Empty without the flag; false (after
// printing why) on a bad item.
bool parse_swizzles(int argc, char** argv, std::vector<int>* out) {
  std::string v;
  if (!arg_value(argc, argv, "--swizzles", &v)) return true;
  if (!parse_int_list(v, 0, 9, "--swizzles", "a band", out)) return false;
  for (int b : *out)
    if (b != 0 && b != 1 && b != 2 && b != 4 && b != 8) {
      std::fprintf(stderr, "qsgemm tune: --swizzles item %d is not 0 (the library's order), 1, 2, 4 or 8\n", b);
      return false;
    }
  return true;
}

// Times run(config, stream) for every configuration of a table (or those of opt.only; L2 flushed,
// median, graph replays), prints one line each (and one JSON line to jf when given) and the winner
// next to the heuristic's pick (chosen = -1: the pick is not among them). Returns the process exit
// code: 0 when at least one configuration ran.
int sweep(const char* family, int64_t M, int64_t N, int64_t K, int count, int chosen,
          const std::function<std::string(int)>& name, const std::function<void(int, cudaStream_t)>& run,
          bench::Timer& timer, FILE* jf, const SweepOptions& opt = {}) {
  std::vector<int> ids = opt.only;
  if (ids.empty())
    for (int i = 0; i < count; ++i) ids.push_back(i);
  std::vector<double> sum(ids.size(), 0.0);
  std::vector<std::string> errs(ids.size());
  const int rounds = opt.interleave ? 2 : 1;
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < ids.size(); ++j) {
      const size_t at = r == 0 ? j : ids.size() - 1 - j;
      if (!errs[at].empty()) continue;
      try {
        bench::TimeOptions to;
        to.graph = true;
        sum[at] += timer.time_us([&](cudaStream_t st) { run(ids[at], st); }, to);
      } catch (const std::exception& e) {
        errs[at] = e.what();
      }
    }
  double best = 1e30;
  int best_i = -1;
  for (size_t j = 0; j < ids.size(); ++j) {
    const int i = ids[j];
    const double us = errs[j].empty() ? sum[j] / rounds : -1;
    const double tflops = us > 0 ? 2.0 * M * N * K / (us * 1e-6) / 1e12 : 0;
    std::printf("  [%d] %-34s %10.1f us %8.1f TFLOP/s%s %s\n", i, name(i).c_str(), us, tflops,
                i == chosen ? "  <- heuristic" : "", errs[j].c_str());
    if (jf)
      std::fprintf(jf, "{\"family\":\"%s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"config\":\"%s\",\"us\":%.3f%s%s%s}\n", family,
                   static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), name(i).c_str(), us,
                   opt.json_extra.c_str(), opt.interleave ? ",\"interleaved\":true" : "",
                   i == chosen ? ",\"heuristic\":true" : "");
    if (us > 0 && us < best) {
      best = us;
      best_i = i;
    }
  }
  std::printf("winner: [%d] %s %.1f us (heuristic [%d]: %s)\n", best_i, best_i >= 0 ? name(best_i).c_str() : "-", best,
              chosen, chosen >= 0 ? name(chosen).c_str() : "-");
  return best_i >= 0 ? 0 : 1;
}

// `qsgemm tune blockwise`: every configuration that serves the granularity pair.
int tune_blockwise(int argc, char** argv, int64_t M, int64_t N, int64_t K, int sm_count) {
  using namespace qsgemm::bench;
  ScaleGranularity gx = ScaleGranularity::kGroup1x128, gw = ScaleGranularity::kBlock128x128;
  std::string v;
  if (arg_value(argc, argv, "--gx", &v) && !parse_granularity(v, &gx)) {
    std::fprintf(stderr, "qsgemm tune: --gx %s is not one of group_1x128, block_128x128, per_row\n", v.c_str());
    return 2;
  }
  if (arg_value(argc, argv, "--gw", &v) && !parse_granularity(v, &gw)) {
    std::fprintf(stderr, "qsgemm tune: --gw %s is not one of block_128x128, group_1x128, per_row\n", v.c_str());
    return 2;
  }
  // --ld-align B: the rows of X and W start every round_up(K, B) bytes instead of every K (what a
  // producer that pads its rows gives the GEMM; K itself is unchanged).
  const int64_t ld_align = arg_int(argc, argv, "--ld-align", 16);
  if (ld_align < 16 || ld_align % 16 != 0) {
    std::fprintf(stderr, "qsgemm tune: --ld-align %lld must be a positive multiple of 16\n", static_cast<long long>(ld_align));
    return 2;
  }
  const int64_t ld = (K + ld_align - 1) / ld_align * ld_align;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  const int64_t nsx = blockwise_scale_floats(gx, M, K), nsw = blockwise_scale_floats(gw, N, K);
  DeviceBuffer x(static_cast<size_t>(M * ld)), w(static_cast<size_t>(N * ld)), sx(static_cast<size_t>(4 * nsx)),
      sw(static_cast<size_t>(4 * nsw)), y(static_cast<size_t>(2 * M * N));
  fill_e4m3(x.get(), static_cast<size_t>(M * ld), 1, stream);
  fill_e4m3(w.get(), static_cast<size_t>(N * ld), 2, stream);
  fill_f32(sx.as<float>(), static_cast<size_t>(nsx), 3, 0.01f, 0.02f, stream);
  fill_f32(sw.as<float>(), static_cast<size_t>(nsw), 4, 0.01f, 0.02f, stream);
  Timer timer(stream);
  const int chosen = blockwise_choose_config(M, N, K, gx, gw, sm_count, ld, ld);
  std::printf("tune blockwise M=%lld N=%lld K=%lld ld=%lld x_scale=%s w_scale=%s\n", static_cast<long long>(M),
              static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(ld), granularity_name(gx),
              granularity_name(gw));
  // --skinny-clusters: the skinny configuration with each cluster size instead of the table.
  const bool clusters = has_flag(argc, argv, "--skinny-clusters");
  static const int kClusters[] = {1, 2, 4, 8};
  int skinny = -1;
  for (int i = 0; i < blockwise_num_configs(); ++i)
    if (blockwise_config_name(i).rfind("skinny", 0) == 0) skinny = i;
  if (clusters && skinny < 0) {
    std::fprintf(stderr, "qsgemm tune: the blockwise table has no skinny configuration\n");
    return 2;
  }
  SweepOptions so;
  if (!parse_sweep_options(argc, argv, clusters ? 4 : blockwise_num_configs(),
                           clusters ? std::function<int(const std::string&)>() : blockwise_config_index, &so))
    return 2;
  so.json_extra = std::string(",\"scales\":\"") + granularity_name(gx) + "_x_" + granularity_name(gw) + "\"";
  // --split-k LIST: each CUTLASS configuration (those of --configs, or all that serve the pair) with
  // each forced split (BlockwiseOptions::split_k; 1 = none), given a workspace.
  struct Item {
    int config, split;
    bool whole = false;  // --whole-last-tile: BlockwiseOptions::whole_last_tile
    int swizzle = 0;     // --swizzles: BlockwiseOptions::max_swizzle (0: the library's order)
  };
  std::vector<Item> items;
  const bool splitting = arg_value(argc, argv, "--split-k", &v);
  if (splitting && clusters) {
    std::fprintf(stderr, "qsgemm tune: --split-k applies to the CUTLASS configurations, not with --skinny-clusters\n");
    return 2;
  }
  if (clusters) {
    for (int i = 0; i < 4; ++i) items.push_back({skinny, 0});  // so.only: cluster indices
  } else {
    // The items are --configs' configurations themselves (so.only would filter the items by
    // position, which leaves out the splits and the --whole-last-tile twins appended below).
    std::vector<int> configs = so.only;
    if (configs.empty())
      for (int i = 0; i < blockwise_num_configs(); ++i) configs.push_back(i);
    so.only.clear();
    if (splitting) {
      std::vector<int> splits;
      if (!parse_int_list(v, 1, 17, "--split-k", "a split", &splits)) return 2;
      for (int c : configs)
        if (c != skinny && blockwise_config_supports(c, gx, gw))
          for (int s : splits) items.push_back({c, s});
    } else {
      for (int c : configs) items.push_back({c, 0});
    }
  }
  // One workspace for every item, the largest any needs: a split's slices, and for x blocks beyond
  // 128 tokens on a tile of 1x128 groups their expanded copy (timed with the GEMM). A split the
  // library refuses for this shape (e.g. one that does not divide the K groups) is reported and left
  // out; the other items still run (a configuration that does not serve the pair is reported by the
  // sweep).
  size_t ws_bytes = 0;
  std::vector<Item> runnable;
  for (const Item& it : items) {
    if (!clusters) {
      BlockwiseOptions o;
      o.config = it.config;
      o.split_k = it.split > 1 ? it.split : 1;
      try {
        ws_bytes = std::max(ws_bytes, blockwise_linear_workspace_bytes(M, N, K, gx, gw, o, sm_count));
      } catch (const Error& e) {
        if (it.split > 1) {
          std::printf("  skipped %s_splitk%d: %s\n", blockwise_config_name(it.config).c_str(), it.split, e.what());
          continue;
        }
      }
    }
    runnable.push_back(it);
  }
  items.swap(runnable);
  // --whole-last-tile: each item again with the last token tile loading X's whole box (the A side
  // of an A/B of BlockwiseOptions::whole_last_tile; the skinny kernel has no such tile).
  // --whole-last-tile-only: those items alone (probes that must not take the rows' load).
  const bool only_whole = has_flag(argc, argv, "--whole-last-tile-only");
  if (only_whole || has_flag(argc, argv, "--whole-last-tile")) {
    const size_t n = items.size();
    for (size_t j = 0; j < n; ++j)
      if (!clusters && items[j].config != skinny) {
        if (only_whole)
          items[j].whole = true;
        else
          items.push_back({items[j].config, items[j].split, true});
      }
  }
  // --swizzles LIST: each CUTLASS item once per listed band (BlockwiseOptions::max_swizzle; 0: the
  // library's order, no name suffix).
  std::vector<int> swizzles;
  if (!parse_swizzles(argc, argv, &swizzles)) return 2;
  if (clusters && !swizzles.empty()) {
    std::fprintf(stderr, "qsgemm tune: --swizzles applies to the CUTLASS configurations, not with --skinny-clusters\n");
    return 2;
  }
  if (!swizzles.empty()) {
    std::vector<Item> banded;
    for (const Item& it : items)
      if (it.config == skinny)
        banded.push_back(it);
      else
        for (int b : swizzles) banded.push_back({it.config, it.split, it.whole, b});
    items.swap(banded);
  }
  DeviceBuffer ws(std::max<size_t>(ws_bytes, 16));
  // The heuristic's line: its configuration (with --split-k: what it runs given a workspace).
  const LinearPlan plan = blockwise_plan(M, N, K, gx, gw, BlockwiseOptions{}, sm_count);
  int chosen_item = -1;
  if (!clusters)
    for (size_t j = 0; j < items.size(); ++j)
      if (items[j].whole == (only_whole && items[j].config != skinny) && items[j].swizzle == 0 &&
          (splitting ? items[j].config == plan.config && items[j].split == plan.split_k : items[j].config == chosen))
        chosen_item = static_cast<int>(j);
  std::string json;
  arg_value(argc, argv, "--json", &json);
  FILE* jf = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
  const int rc = sweep(
      "blockwise", M, N, K, static_cast<int>(items.size()), chosen_item,
      [&](int i) {
        if (clusters) return blockwise_config_name(skinny) + "_c" + std::to_string(kClusters[i]);
        const Item& it = items[static_cast<size_t>(i)];
        return blockwise_config_name(it.config) + (splitting ? "_splitk" + std::to_string(it.split) : std::string()) +
               (it.whole ? "_wholelast" : "") + (it.swizzle > 0 ? "_sw" + std::to_string(it.swizzle) : std::string());
      },
      [&](int i, cudaStream_t st) {
        const Item& it = items[static_cast<size_t>(i)];
        BlockwiseOptions opt;
        opt.config = it.config;
        if (clusters) opt.skinny_cluster = kClusters[i];
        opt.whole_last_tile = it.whole;
        opt.max_swizzle = it.swizzle;
        if (!clusters) {
          opt.split_k = splitting ? it.split : 1;  // without --split-k: unsplit, as without a workspace
          opt.workspace = ws.get();
          opt.workspace_bytes = ws_bytes;
        }
        blockwise_linear(MatrixView(x.get(), DType::kE4M3, M, K, ld), ScaleView{sx.as<float>(), gx, M},
                         MatrixView(w.get(), DType::kE4M3, N, K, ld), ScaleView{sw.as<float>(), gw, 0}, {},
                         MatrixView(y.get(), DType::kBF16, M, N), opt, st);
      },
      timer, jf, so);
  if (jf) std::fclose(jf);
  cudaStreamDestroy(stream);
  return rc;
}

// `qsgemm tune w4a4`: every configuration of the W4A4 + low-rank table on Y[M,N] = X1[M,K]·W1[N,K]ᵀ
// + X2[M,r]·W2[N,r]ᵀ (bf16 output; --rank r, default 64; --group 64|128, default 64). Each
// configuration reads X1 in its own staging (w4a4_x1_dtype: packed INT4 or e4m3 codes).
int tune_w4a4(int argc, char** argv, int64_t M, int64_t N, int64_t K, int sm_count, int G) {
  using namespace qsgemm::bench;
  const int64_t R = arg_int(argc, argv, "--rank", 64);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  const int64_t ng = K / G;
  // --x-scale-ld: the activation scales' ld (>= M); default the layout the bench and the Python
  // quantizer use, w4a4_x_scale_ld(M).
  const int64_t ld_sx = arg_int(argc, argv, "--x-scale-ld", w4a4_x_scale_ld(M));
  DeviceBuffer x1(static_cast<size_t>(M * K + 16)), w1(static_cast<size_t>(N * K / 2 + 16)),
      sx(static_cast<size_t>(4 * ld_sx * ng)), sw(static_cast<size_t>(4 * std::max<int64_t>(N * ng, 1))),
      x2(static_cast<size_t>(2 * M * R + 16)), w2(static_cast<size_t>(2 * N * R + 16)), y(static_cast<size_t>(2 * M * N));
  fill_e4m3(x1.get(), static_cast<size_t>(M * K), 1, stream);  // timing only: any INT4 pairs / finite e4m3 bytes
  fill_e4m3(w1.get(), static_cast<size_t>(N * K / 2), 2, stream);
  fill_f32(sx.as<float>(), static_cast<size_t>(ld_sx * ng), 3, 0.01f, 0.02f, stream);
  fill_f32(sw.as<float>(), static_cast<size_t>(N * ng), 4, 0.01f, 0.02f, stream);
  fill_bf16(x2.get(), static_cast<size_t>(M * R), 5, 1.0f, stream);
  fill_bf16(w2.get(), static_cast<size_t>(N * R), 6, 1.0f, stream);
  Timer timer(stream);
  SweepOptions so;
  if (!parse_sweep_options(argc, argv, w4a4_num_configs(), w4a4_config_index, &so)) return 2;
  so.json_extra = ",\"rank\":" + std::to_string(R) + ",\"group\":" + std::to_string(G) + ",\"ld_x_scale\":" +
                  std::to_string(ld_sx);
  const int chosen = w4a4_choose_config(M, N, K, static_cast<int>(R), sm_count, G);
  std::string json;
  arg_value(argc, argv, "--json", &json);
  FILE* jf = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
  std::printf("tune w4a4 M=%lld N=%lld K=%lld rank=%lld group=%lld\n", static_cast<long long>(M),
              static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(R), G);
  const int rc = sweep(
      "w4a4", M, N, K, w4a4_num_configs(), chosen, [](int i) { return w4a4_config_name(i); },
      [&](int i, cudaStream_t st) {
        W4A4Options opt;
        opt.config = i;
        const bool bytes = w4a4_x1_dtype(i) == DType::kE4M3;  // the staging this configuration reads
        w4a4_linear(bytes ? MatrixView(x1.get(), DType::kE4M3, M, K) : MatrixView(x1.get(), DType::kI4x2, M, K / 2),
                    sx.as<float>(), ld_sx,
                    MatrixView(w1.get(), DType::kI4x2, N, K / 2), sw.as<float>(), G,
                    MatrixView(x2.get(), DType::kBF16, M, R), MatrixView(w2.get(), DType::kBF16, N, R), {},
                    MatrixView(y.get(), DType::kBF16, M, N), opt, st);
      },
      timer, jf, so);
  if (jf) std::fclose(jf);
  cudaStreamDestroy(stream);
  return rc;
}

}  // namespace

int run_tune(int argc, char** argv) {
  if (argc < 1 || has_flag(argc, argv, "--help")) {
    std::printf(
        "usage: qsgemm tune sparse24 --m M --n N --k K [--json FILE] [--configs NAME|I,...] [--interleave]\n"
        "                            [--split-k S1,S2,...] [--whole-last-tile | --whole-last-tile-only]\n"
        "                            [--fast-accum] [--swizzles B1,B2,...]\n"
        "       qsgemm tune blockwise --m M --n N --k K [--json FILE] [--gx group_1x128|block_128x128|per_row]\n"
        "                             [--gw block_128x128|group_1x128|per_row] [--skinny-clusters]\n"
        "                             [--split-k S1,S2,...] [--ld-align BYTES]\n"
        "                             [--whole-last-tile | --whole-last-tile-only]\n"
        "                             [--configs NAME|I,...] [--interleave] [--swizzles B1,B2,...]\n"
        "       qsgemm tune w4a4 --m M --n N --k K [--rank R] [--group 64|128] [--x-scale-ld LD] [--json FILE]\n"
        "                        [--configs NAME|I,...] [--interleave]\n\n"
        "Times every sparse24 kernel configuration on Y[M,N] = X[M,K]·W[N,K]ᵀ (bf16 output, per-token and\n"
        "per-channel scales; L2 flushed, median time) and prints each with the winner and the heuristic's\n"
        "pick. --json appends one JSON line per configuration to FILE (the pick's with \"heuristic\":true;\n"
        "scripts/tune_regret.py reads it). 'tune blockwise' does the same for the\n"
        "blockwise table with the given scale granularities (default 1x128 activations, 128x128 weights);\n"
        "--skinny-clusters times the skinny decode kernel with K split over clusters of 1, 2, 4 and 8 CTAs.\n"
        "--whole-last-tile times each configuration a second time (name suffix _wholelast) with its last token\n"
        "tile loading X's whole box, rows past M included (Sparse24Options / BlockwiseOptions::whole_last_tile);\n"
        "--whole-last-tile-only times only those.\n"
        "--ld-align starts the rows of X and W every round_up(K, BYTES) bytes (blockwise; default 16 = K).\n"
        "--x-scale-ld sets the W4A4 activation scales' leading dimension (>= M; default w4a4_x_scale_ld(M)).\n"
        "--fast-accum (sparse24): the heuristic's line is the plan of a fast-accumulation request.\n"
        "--swizzles (sparse24, blockwise) times each configuration once per listed band of tiles (1, 2, 4, 8;\n"
        "name suffix _swB; the options' max_swizzle; 0: the library's order, no suffix); list 0 for the\n"
        "heuristic's line.\n"
        "--split-k times each CUTLASS configuration (of --configs, or all) with each listed split-K factor\n"
        "(1 = no split), given a workspace; the heuristic's line is its configuration with its split (for\n"
        "sparse24 the stream-K and decode configurations run once, unsplit).\n"
        "--configs times only the listed configurations, by name or index (with --skinny-clusters: cluster indices\n"
        "0-3). --interleave times them in two rounds, forward then reverse order, and reports the mean of\n"
        "the two medians (what the benchmark does; a kernel timed right after a long one can run slower).\n");
    return argc < 1 ? 2 : 0;
  }
  const std::string family = argv[0];
  if (family != "sparse24" && family != "blockwise" && family != "w4a4") {
    std::fprintf(stderr, "qsgemm tune: unknown family '%s' (known: sparse24, blockwise, w4a4)\n", family.c_str());
    return 2;
  }
  const int64_t M = arg_int(argc, argv, "--m", 16), N = arg_int(argc, argv, "--n", 4096),
                K = arg_int(argc, argv, "--k", 4096);
  const int64_t group = family == "w4a4" ? arg_int(argc, argv, "--group", 64) : 64;
  if (group != 64 && group != 128) {  // before the device check: the CLI tests run without a GPU
    std::fprintf(stderr, "qsgemm tune: --group %lld must be 64 or 128\n", static_cast<long long>(group));
    return 2;
  }
  const DeviceInfo d = device_info();
  if (!d.supports_kernels()) {
    std::fprintf(stderr, "qsgemm tune: needs an sm_90a GPU (%s)\n", d.present ? d.name.c_str() : d.error.c_str());
    return 2;
  }
  if (family == "blockwise") return tune_blockwise(argc, argv, M, N, K, d.sm_count);
  if (family == "w4a4") return tune_w4a4(argc, argv, M, N, K, d.sm_count, static_cast<int>(group));
  using namespace qsgemm::bench;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
  DeviceBuffer dense(static_cast<size_t>(N * K * 2)), values(b.values), meta(b.meta), scales(b.scales),
      ws(sparse24_compress_workspace_bytes(N, K)), x(static_cast<size_t>(M * K)), sx(static_cast<size_t>(M * 4)),
      y(static_cast<size_t>(M * N * 2));
  fill_bf16(dense.get(), static_cast<size_t>(N * K), 1, 1.0f, stream);
  fill_e4m3(x.get(), static_cast<size_t>(M * K), 2, stream);
  fill_f32(static_cast<float*>(sx.get()), static_cast<size_t>(M), 3, 0.01f, 0.02f, stream);
  SparseFp8Weight w{N, K, static_cast<uint8_t*>(values.get()), static_cast<uint8_t*>(meta.get()),
                    static_cast<float*>(scales.get()), false};
  sparse24_compress(MatrixView(dense.get(), DType::kBF16, N, K), w, {}, ws.get(), stream);
  Timer timer(stream);
  SweepOptions so;
  if (!parse_sweep_options(argc, argv, sparse24_num_configs(), sparse24_config_index, &so)) return 2;
  // --split-k LIST: each data-parallel configuration (of --configs, or all) with each forced split
  // (Sparse24Options::split_k; 1 = none); the stream-K and decode configurations once, unsplit.
  struct Item {
    int config, split;   // split 0: the configuration as it is (no --split-k)
    bool whole = false;  // --whole-last-tile: Sparse24Options::whole_last_tile
    int swizzle = 0;     // --swizzles: Sparse24Options::max_swizzle (0: the library's order)
  };
  std::vector<Item> items;
  std::string v;
  const bool splitting = arg_value(argc, argv, "--split-k", &v);
  std::vector<int> configs = so.only;
  if (configs.empty())
    for (int i = 0; i < sparse24_num_configs(); ++i) configs.push_back(i);
  so.only.clear();
  if (splitting) {
    std::vector<int> splits;
    if (!parse_int_list(v, 1, 17, "--split-k", "a split", &splits)) return 2;
    for (int c : configs) {
      const Sparse24Config cfg = sparse24_config(c);
      if (cfg.stream_k || cfg.skinny)
        items.push_back({c, 1});
      else
        for (int sk : splits) items.push_back({c, sk});
    }
  } else {
    for (int c : configs) items.push_back({c, 0});
  }
  // --whole-last-tile: each CUTLASS item again with the last token column loading X's whole box;
  // --whole-last-tile-only: those items alone.
  const bool only_whole = has_flag(argc, argv, "--whole-last-tile-only");
  if (only_whole || has_flag(argc, argv, "--whole-last-tile")) {
    const size_t n = items.size();
    for (size_t j = 0; j < n; ++j)
      if (!sparse24_config(items[j].config).skinny) {
        if (only_whole)
          items[j].whole = true;
        else
          items.push_back({items[j].config, items[j].split, true});
      }
  }
  // --swizzles LIST: each CUTLASS item once per listed band (Sparse24Options::max_swizzle: 1, 2, 4 or 8;
  // 0: the library's order, no name suffix).
  std::vector<int> swizzles;
  if (!parse_swizzles(argc, argv, &swizzles)) return 2;
  if (!swizzles.empty()) {
    std::vector<Item> banded;
    for (const Item& it : items)
      if (sparse24_config(it.config).skinny)
        banded.push_back(it);
      else
        for (int b : swizzles) banded.push_back({it.config, it.split, it.whole, b});
    items.swap(banded);
  }
  // --fast-accum: the heuristic's line is the fast-accumulation plan (Sparse24Options::fast_accum).
  const bool fast_accum = has_flag(argc, argv, "--fast-accum");
  auto options_of = [&](const Item& it) {
    Sparse24Options opt;
    opt.config = it.config;
    opt.fast_accum = fast_accum;
    opt.split_k = it.split;
    opt.whole_last_tile = it.whole;
    opt.max_swizzle = it.swizzle;
    return opt;
  };
  // One workspace for every item (the largest any needs; an item whose split does not apply is
  // left to fail in the sweep with the library's message).
  size_t ws_bytes = 16;
  for (const Item& it : items) try {
      ws_bytes = std::max(ws_bytes, sparse24_linear_workspace_bytes(M, N, K, options_of(it), d.sm_count));
    } catch (const Error&) {
    }
  DeviceBuffer workspace(ws_bytes);
  // The heuristic's line: what sparse24_linear runs given a workspace (its configuration and split).
  Sparse24Options plan_options;
  plan_options.fast_accum = fast_accum;
  const LinearPlan plan = sparse24_plan(M, N, K, plan_options, d.sm_count);
  int chosen = -1;
  for (size_t j = 0; j < items.size(); ++j)
    if (items[j].whole == (only_whole && !sparse24_config(items[j].config).skinny) && items[j].config == plan.config &&
        (!splitting || std::max(items[j].split, 1) == plan.split_k) && items[j].swizzle == 0)
      chosen = static_cast<int>(j);
  // A plan with a tail launch is not one configuration: time it as its own line (config -1 runs
  // the library's plan).
  if (plan.tail_config >= 0) {
    items.push_back({-1, 0, only_whole});
    chosen = static_cast<int>(items.size()) - 1;
  }
  std::string json;
  arg_value(argc, argv, "--json", &json);
  FILE* jf = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
  std::printf("tune sparse24 M=%lld N=%lld K=%lld\n", static_cast<long long>(M), static_cast<long long>(N),
              static_cast<long long>(K));
  const int rc = sweep(
      "sparse24", M, N, K, static_cast<int>(items.size()), chosen,
      [&](int i) {
        const Item& it = items[static_cast<size_t>(i)];
        if (it.config < 0)
          return sparse24_config(plan.config).name() + "+" + sparse24_config(plan.tail_config).name() + "@" +
                 std::to_string(plan.tail_rows) + (it.whole ? "_wholelast" : "");
        const Sparse24Config cfg = sparse24_config(it.config);
        const bool split_name = splitting && !cfg.stream_k && !cfg.skinny;
        return cfg.name() + (split_name ? "_splitk" + std::to_string(it.split) : std::string()) +
               (it.whole ? "_wholelast" : "") + (it.swizzle > 0 ? "_sw" + std::to_string(it.swizzle) : std::string());
      },
      [&](int i, cudaStream_t st) {
        Sparse24Options opt = options_of(items[static_cast<size_t>(i)]);
        opt.workspace = workspace.get();
        opt.workspace_bytes = ws_bytes;
        sparse24_linear(MatrixView(x.get(), DType::kE4M3, M, K),
                        ScaleView{static_cast<const float*>(sx.get()), ScaleGranularity::kPerRow, 0}, w, {},
                        MatrixView(y.get(), DType::kBF16, M, N), opt, st);
      },
      timer, jf, so);
  if (jf) std::fclose(jf);
  cudaStreamDestroy(stream);
  return rc;
}

}  // namespace qsgemm::cli
