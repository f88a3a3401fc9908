// bench/sweep.h — what a `qsgemm bench` run will cover, said before it starts: the M list
// (--grid users|powers, --ms, or the dense --sweep list), the layers, and a rough estimate of the
// run's length, so that a caller with a device-time budget can bound it (--sweep-layers,
// --sweep-max-m, --sweep-step, --reps, --algo-search) before spending any of it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

namespace qsgemm::bench {

struct BenchOptions;

// The timed candidates of one point (one row, or the rows that share a PointTimer), as the
// estimate counts them.
struct PointShape {
  int timed = 0;          // candidates timed without an algorithm search (qsgemm, memcpy floor)
  int searched = 0;       // cuBLASLt baselines: each also gets the --algo-search phase
  bool cusparselt = false;  // cuSPARSELt: a plan plus cusparseLtMatmulSearch per point
  double flop_scale = 1.0;  // qsgemm's work relative to a dense FP8 GEMM of the shape (0.5: 2:4 sparse)
};

// Rough wall time (s) of running `points(M, N, K)` (the point groups of one M) for every layer and M:
// per timed run the kernel (from 2MNK at 700 TFLOP/s and the bytes at 4 TB/s, +4 µs) plus the
// 512 MiB L2 flush (~140 µs); the runs per measurement as TimeOptions picks them (warm-up, two
// rounds of min(reps/2, budget/2 / run) runs, at least 5); the algorithm search; 80 ms of host work
// per point (+20 ms and 20 runs for cuSPARSELt's plan and search, +30 ms for the CPU checks), 0.2 s
// per layer (buffers, fills, compression). The host figures are calibrated on one datum only: the
// README's ~100 s + 15-20 s (search) for the default blockwise run (14 layers x 13 Ms x 2 families),
// for which this gives ~95 s. Say "rough" when printing it.
double estimate_runtime_s(const std::vector<Layer>& layers, const std::vector<int64_t>& ms,
                          const std::function<std::vector<PointShape>(int64_t M)>& points, const BenchOptions& options);

// The M list of a run: --ms if given, else the --sweep list (with --sweep), else --quick's, else
// the --grid list. Throws std::invalid_argument for a bad --grid / --sweep-max-m / --sweep-step.
std::vector<int64_t> run_token_counts(const BenchOptions& options, const std::vector<int64_t>& quick_ms);

// The layers of a run: --sweep-layers / --layers if given, else the sweep's / quick's / all layers.
// Throws std::invalid_argument naming an unknown layer.
std::vector<Layer> run_layers(const BenchOptions& options, const std::vector<Layer>& all,
                              const std::vector<std::string>& quick_layers, const std::vector<std::string>& sweep_layers);

// Prints "<title>: L layers x P values of M = N points; M: ...; estimated ~S s" (M list abbreviated
// past 40 values) before any GPU work, so that it shows even without a GPU.
void print_run_plan(const char* title, const std::vector<Layer>& layers, const std::vector<int64_t>& ms, double estimate_s);

}  // namespace qsgemm::bench
