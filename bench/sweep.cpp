// bench/sweep.cpp — see sweep.h.
#include "sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "bench.h"

namespace qsgemm::bench {
namespace {

constexpr double kTflops = 700e12;         // dense FP8 a GEMM reaches on an H200, roughly
constexpr double kBytesPerS = 4.0e12;      // HBM3e, roughly
constexpr double kLaunchUs = 4;            // fixed cost of one timed call
constexpr double kFlushUs = 140;           // the 512 MiB read before every timed run, plus its gaps
constexpr double kHostPerPointS = 80e-3;   // baseline set-up, cuBLASLt heuristic, graph capture tests, syncs
constexpr double kCusparseltS = 20e-3;     // cuSPARSELt plan + compression of its own copy
constexpr int kCusparseltSearchRuns = 20;  // cusparseLtMatmulSearch's timed runs, roughly
constexpr double kCheckS = 30e-3;          // downloads + float64 references (qsgemm and baselines)
constexpr double kPerLayerS = 0.2;         // buffers, fills, weight compression

// Runs of one measurement as TimeOptions picks them: reps at most, budget_ms / run, at least min_reps.
double runs_of(double run_us, int reps, int min_reps, double budget_ms) {
  const double by_budget = std::floor(budget_ms * 1e3 / std::max(run_us, 1.0));
  return std::clamp(by_budget, static_cast<double>(min_reps), static_cast<double>(std::max(reps, min_reps)));
}

}  // namespace

double estimate_runtime_s(const std::vector<Layer>& layers, const std::vector<int64_t>& ms,
                          const std::function<std::vector<PointShape>(int64_t M)>& points, const BenchOptions& o) {
  const int half_reps = std::max(5, (std::max(1, o.reps) + 1) / 2);
  const int search_reps = std::max(1, o.search_reps), search_min = std::min(3, search_reps);
  double total = 0;
  for (const Layer& l : layers) {
    total += kPerLayerS;
    for (const int64_t M : ms) {
      const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(l.N) * static_cast<double>(l.K);
      const double bytes = static_cast<double>(l.N * l.K + M * l.K + 2 * M * l.N);
      for (const PointShape& p : points(M)) {
        auto kernel_us = [&](double scale) {
          return kLaunchUs + std::max(flops * scale / kTflops, bytes * std::min(1.0, scale + 0.25) / kBytesPerS) * 1e6;
        };
        auto measurement_s = [&](double run_us) {  // warm-up + two interleaved rounds
          const double per_run = run_us + kFlushUs;
          return (2 + 2 * runs_of(run_us, half_reps, 5, o.budget_ms / 2)) * per_run * 1e-6;
        };
        const double q_us = kernel_us(p.flop_scale), b_us = kernel_us(1.0);
        total += kHostPerPointS + (o.check ? kCheckS : 0.0);
        if (p.timed > 0) total += measurement_s(q_us);  // qsgemm
        if (p.timed > 1) total += (p.timed - 1) * measurement_s(b_us * 0.5);  // its other mode, memcpy floor
        total += p.searched * measurement_s(b_us);
        total += p.searched * std::max(1, o.algo_search) *
                 (1 + runs_of(b_us, search_reps, search_min, o.budget_ms / 10)) * (b_us + kFlushUs) * 1e-6;
        if (p.cusparselt)
          total += kCusparseltS + measurement_s(b_us * 0.6) + kCusparseltSearchRuns * b_us * 0.6 * 1e-6;
      }
    }
  }
  return total;
}

std::vector<int64_t> run_token_counts(const BenchOptions& o, const std::vector<int64_t>& quick_ms) {
  if (!o.ms.empty()) return o.ms;
  if (o.sweep) return sweep_token_counts(o.sweep_max_m, o.sweep_step);
  if (o.quick) return quick_ms;
  return grid_token_counts(o.grid);
}

std::vector<Layer> run_layers(const BenchOptions& o, const std::vector<Layer>& all,
                              const std::vector<std::string>& quick_layers, const std::vector<std::string>& sweep_layers) {
  if (o.sweep) return select_layers(all, !o.sweep_layers.empty() ? o.sweep_layers
                                         : !o.layers.empty()     ? o.layers
                                                                 : sweep_layers);
  return select_layers(all, o.layers.empty() && o.quick ? quick_layers : o.layers);
}

void print_run_plan(const char* title, const std::vector<Layer>& layers, const std::vector<int64_t>& ms, double estimate_s) {
  std::string names, list;
  for (const Layer& l : layers) names += (names.empty() ? "" : ",") + l.name;
  const size_t shown = ms.size() > 40 ? 30 : ms.size();
  for (size_t i = 0; i < shown; ++i) list += (i ? "," : "") + std::to_string(ms[i]);
  if (shown < ms.size()) {
    list += ", ... (" + std::to_string(ms.size() - shown - 5) + " more) ...";
    for (size_t i = ms.size() - 5; i < ms.size(); ++i) list += "," + std::to_string(ms[i]);
  }
  std::printf("%s: %zu layers x %zu values of M = %zu points\n  layers: %s\n  M: %s\n", title, layers.size(),
              ms.size(), layers.size() * ms.size(), names.c_str(), list.c_str());
  std::printf("  estimated run time on an H200: ~%.0f s (rough model, within ~2x; bound it with --sweep-layers, "
              "--sweep-max-m, --sweep-step, --reps, --algo-search)\n",
              estimate_s);
  std::fflush(stdout);
}

}  // namespace qsgemm::bench
