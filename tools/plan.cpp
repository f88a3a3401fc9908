// `qsgemm plan`: what the heuristics run for a shape, without a GPU. For users (which kernel serves
// my layer at this token count?) and, for the 2:4 sparse family, for replaying the committed tuning
// probes through the current heuristic (scripts/replay_regret.py) on either card's profile.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "linear_common.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/device.h"
#include "qsgemm/sparse24.h"
#include "qsgemm/w4a4.h"
#include "blockwise_heuristic.h"
#include "sparse24_heuristic.h"

namespace qsgemm::cli {

namespace {

const char* kPlanUsage =
    "usage: qsgemm plan sparse24 --m M --n N --k K [--fast-accum] [--no-workspace] [--card h100|h200]\n"
    "                            [--sms S] [--models] [--order]\n"
    "       qsgemm plan sparse24 --stdin [--fast-accum] [--no-workspace] [--card h100|h200] [--sms S] [--order]\n"
    "       qsgemm plan blockwise --m M --n N --k K [--gx G] [--gw G] [--sms S] [--order]\n"
    "       qsgemm plan w4a4 --m L --n D --k D1 [--rank R] [--group 64|128] [--sms S]\n\n"
    "Prints the plan sparse24_linear runs for Y[M,N] = X[M,K]·W[N,K]ᵀ (M tokens, N output channels),\n"
    "computed on the CPU, one line per shape:\n"
    "  M N K config split tail_config tail_rows model_us\n"
    "config and tail_config are configuration names (tail_config '-' and tail_rows 0 without a tail\n"
    "launch); model_us is the cost model's time of the plan (src/sparse24_heuristic.h: a model for\n"
    "choosing between plans, 15 % RMS, not a prediction to quote).\n"
    "--fast-accum plans a fast-accumulation request; --no-workspace a call without a workspace (no\n"
    "stream-K, no split-K). --card picks the heuristic's card profile (default: the current GPU's by\n"
    "its DRAM bandwidth, the H200's without a GPU); --sms the SM count (default: the current GPU's, 132\n"
    "without one). --stdin reads 'M N K' lines instead of --m/--n/--k (scripts/replay_regret.py).\n"
    "--order (sparse24, blockwise) appends two fields: the band of tiles the main launch runs (CUTLASS's max\n"
    "swizzle) and, where it runs bands, the fitted band (src/tile_order.h; scripts/band_fit_points.py).\n"
    "--models (sparse24, one shape): then, fastest first, every configuration the model covers as\n"
    "'  config model_us' for one launch on all M tokens (a cluster row the plan does not weigh at this\n"
    "shape marked 'not weighed'), to see why the plan is what it is.\n"
    "'plan blockwise' and 'plan w4a4' print the same line from blockwise_plan / w4a4_plan (model_us '-':\n"
    "those heuristics have no cost model): --gx / --gw the scale granularities (group_1x128,\n"
    "block_128x128, per_row; default group_1x128 x block_128x128); --rank (default 64), --group (64).\n";

struct PlanArgs {
  bool fast_accum = false;
  bool with_workspace = true;
  kernels::Sparse24Profile profile = kernels::Sparse24Profile::kH200;
  int sm_count = 132;
  bool order = false;  // --order: append the main launch's band (TileOrder::swizzle) and the fitted band
};

std::string plan_line(int64_t M, int64_t N, int64_t K, const PlanArgs& a) {
  // The library's own checks of the shape (qsgemm::Error naming the bad value, as sparse24_linear
  // would throw); the plan itself on the requested card's profile, which sparse24_plan cannot take.
  Sparse24Options opt;
  opt.fast_accum = a.fast_accum;
  (void)sparse24_plan(M, N, K, opt, a.sm_count);
  const kernels::Sparse24Choice c =
      kernels::sparse24_choose(M, N, K, -1, 0, a.fast_accum, a.sm_count, a.with_workspace, a.profile);
  const bool tail = c.tail_config >= 0;
  const double us = kernels::sparse24_choice_model_us(c, M, N, K, a.sm_count, a.profile);
  std::ostringstream o;
  o << M << ' ' << N << ' ' << K << ' ' << kernels::kSparse24Configs[c.config].name << ' ' << c.split_k << ' '
    << (tail ? kernels::kSparse24Configs[c.tail_config].name : "-") << ' ' << (tail ? c.tail_rows : 0) << ' ';
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", us);
  o << buf;
  if (a.order) {
    const int64_t rows = tail ? kernels::sparse24_main_rows(c.config, M) : M;
    const kernels::TileOrder order = kernels::sparse24_tile_order(rows, N, c.config, a.sm_count, a.profile);
    o << ' ' << order.swizzle << ' '
      << (order.raster == 1 ? kernels::sparse24_fitted_band(c.config, rows, N, a.sm_count) : order.swizzle);
  }
  return o.str();
}

// --models: every configuration with a modelled time (one launch on all M tokens), fastest first.
void print_models(int64_t M, int64_t N, int64_t K, const PlanArgs& a) {
  std::vector<std::pair<double, int>> rows;
  for (int i = 0; i < kernels::kSparse24NumConfigs; ++i) {
    const double us = kernels::sparse24_model_us(i, M, N, K, a.sm_count, a.profile);
    if (us > 0) rows.emplace_back(us, i);
  }
  std::sort(rows.begin(), rows.end());
  for (const auto& [us, i] : rows) {
    const bool cluster = kernels::kSparse24Configs[i].unit == kernels::Sparse24Unit::kCluster;
    std::printf("  %s %.2f%s\n", kernels::kSparse24Configs[i].name, us,
                cluster && !kernels::sparse24_weighs_cluster_row(i, M, N, a.sm_count) ? " not weighed" : "");
  }
}

}  // namespace

int run_plan(int argc, char** argv) {
  if (argc < 1 || has_flag(argc, argv, "--help")) {
    std::fputs(kPlanUsage, stdout);
    return argc < 1 ? 2 : 0;
  }
  const std::string family = argv[0];
  if (family != "sparse24" && family != "blockwise" && family != "w4a4") {
    std::fprintf(stderr, "qsgemm plan: unknown family '%s' (sparse24, blockwise, w4a4)\n", argv[0]);
    return 2;
  }
  PlanArgs a;
  a.fast_accum = has_flag(argc, argv, "--fast-accum");
  a.with_workspace = !has_flag(argc, argv, "--no-workspace");
  a.order = has_flag(argc, argv, "--order");
  const DeviceInfo d = device_info();
  a.sm_count = static_cast<int>(arg_int(argc, argv, "--sms", d.present ? d.sm_count : 132, 1));
  std::string card;
  if (arg_value(argc, argv, "--card", &card)) {
    if (card == "h100") a.profile = kernels::Sparse24Profile::kH100;
    else if (card == "h200") a.profile = kernels::Sparse24Profile::kH200;
    else throw std::invalid_argument("--card '" + card + "': expected h100 or h200");
  } else if (d.present) {
    a.profile = kernels::sparse24_profile(detail::device_dram_gbps(-1));
  }
  if (has_flag(argc, argv, "--stdin") && family != "sparse24")
    throw std::invalid_argument("--stdin: sparse24 only (scripts/replay_regret.py)");
  if (has_flag(argc, argv, "--stdin")) {
    if (has_flag(argc, argv, "--models")) throw std::invalid_argument("--models: one shape (--m, --n, --k), not --stdin");
    std::string line;
    int64_t n_line = 0;
    while (std::getline(std::cin, line)) {
      ++n_line;
      std::istringstream in(line);
      std::string m, n, k, extra;
      if (!(in >> m)) continue;  // a blank line
      if (!(in >> n >> k) || (in >> extra))
        throw std::invalid_argument("--stdin line " + std::to_string(n_line) + ": expected 'M N K', got '" + line + "'");
      std::puts(plan_line(parse_int_arg("M", m, 1), parse_int_arg("N", n, 1), parse_int_arg("K", k, 1), a).c_str());
    }
    return 0;
  }
  const int64_t M = arg_int(argc, argv, "--m", 0, 1), N = arg_int(argc, argv, "--n", 0, 1),
                K = arg_int(argc, argv, "--k", 0, 1);
  if (M == 0 || N == 0 || K == 0) throw std::invalid_argument("--m, --n and --k are required (or --stdin)");
  if (family == "sparse24") {
    std::puts(plan_line(M, N, K, a).c_str());
    if (has_flag(argc, argv, "--models")) print_models(M, N, K, a);
    return 0;
  }
  if (has_flag(argc, argv, "--models")) throw std::invalid_argument("--models: sparse24 only");
  LinearPlan p;
  std::string name;
  if (family == "blockwise") {
    ScaleGranularity gx = ScaleGranularity::kGroup1x128, gw = ScaleGranularity::kBlock128x128;
    std::string v;
    if (arg_value(argc, argv, "--gx", &v) && !parse_granularity(v, &gx))
      throw std::invalid_argument("--gx '" + v + "': expected group_1x128, block_128x128 or per_row");
    if (arg_value(argc, argv, "--gw", &v) && !parse_granularity(v, &gw))
      throw std::invalid_argument("--gw '" + v + "': expected block_128x128, group_1x128 or per_row");
    p = blockwise_plan(M, N, K, gx, gw, BlockwiseOptions{}, a.sm_count);
    name = blockwise_config_name(p.config);
  } else {
    const int rank = static_cast<int>(arg_int(argc, argv, "--rank", 64, 1));
    const int group = static_cast<int>(arg_int(argc, argv, "--group", 64, 1));
    p = w4a4_plan(M, N, K, rank, W4A4Options{}, a.sm_count, group);
    name = w4a4_config_name(p.config);
  }
  std::printf("%lld %lld %lld %s %d - 0 -", static_cast<long long>(M), static_cast<long long>(N),
              static_cast<long long>(K), name.c_str(), p.split_k);
  if (a.order && family == "blockwise") {
    const kernels::TileOrder order = kernels::blockwise_tile_order(M, N, p.config, a.sm_count);
    std::printf(" %d %d", order.swizzle,
                order.swizzle > 1 ? kernels::blockwise_fitted_band(p.config, M, N, a.sm_count) : order.swizzle);
  }
  std::printf("\n");
  return 0;
}

}  // namespace qsgemm::cli
