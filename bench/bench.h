// bench/bench.h — `qsgemm bench`: qsgemm's kernels against the vendor libraries, timed in the same run.
//
// Each benchmark times qsgemm and its baselines on the same shapes, by the same method (timer.h,
// harness.h), cuBLASLt at the best of its heuristic's top algorithms, L2 flushed before every timed
// run; it prints a table with ratios against the baselines plus TFLOP/s and GB/s against the
// device's ceilings, and writes one JSON file in the shape of shared/BENCH_RESULTS.md (after every
// layer, so a run stopped by a time limit keeps what it measured):
//   qsgemm bench sparse24   -> <out>/sparse24.json
//   qsgemm bench blockwise  -> <out>/blockwise.json
//   qsgemm bench w4a4       -> <out>/w4a4.json (W4A4 + low-rank, bench_w4a4.cpp)
//   qsgemm bench <family> --sweep -> <out>/<family>_sweep.json (a dense M sweep on a few layers,
//                                    qsgemm and the family's main baseline(s) only: the cliff check's
//                                    input, scripts/check_cliffs.py)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qsgemm::bench {

struct BenchOptions {
  std::string out_dir = "bench/results/h200";  // the JSON files go here (created if missing)
  std::string json_path;                       // overrides <out_dir>/<benchmark>.json (one benchmark only)
  std::vector<std::string> layers;             // layer names to run; empty = all of the benchmark's layers
  std::vector<int64_t> ms;                     // token counts M; empty = the grid below (or the sweep's list)
  std::vector<int> ranks;                      // w4a4: low-rank ranks; empty = 0, 16, 32, 64, 128
  std::string grid = "users";                  // default M list: "users" (powers of two plus the in-between
                                               // values users run) or "powers" (1, 8, 16, 32, ..., 16384)
  // --sweep: a dense M sweep (sweep_token_counts) on a few layers per family, written to
  // <out>/<family>_sweep.json; only qsgemm and the main baseline(s) unless sweep_full.
  bool sweep = false;
  std::vector<std::string> sweep_layers;       // empty = the family's sweep layers
  int64_t sweep_max_m = 16384;
  double sweep_step = 1.05;                    // M_{i+1} = max(M_i + 1, round(M_i * step))
  bool sweep_full = false;                     // sweep every candidate of the normal benchmark (per-tensor, bf16,
                                               // row-wise family, ...), not only the main ones
  bool estimate_only = false;                  // print the point count and runtime estimate, run nothing
  bool quick = false;       // a few points only (smoke test): 2 layers x 3 Ms, no extra families
  bool all_combos = false;  // blockwise: also 1d1d, 2d1d, 2d2d (no baseline for those)
  bool packed_rows = false; // blockwise: FP8 rows of K % 128 != 0 packed (ld = K) instead of fp8_row_ld(K)
  bool graph = false;       // time launches under ~50 µs as CUDA-graph replays
  bool dirty_flush = false; // flush L2 with a memset (dirty lines) instead of a read (TimeOptions::dirty_flush)
  bool check = true;        // rel_err vs the float64 CPU reference on sampled rows/columns
  int reps = 50;            // timed runs per measurement at most (fewer for long runs)
  double budget_ms = 200;   // stop adding timed runs to one measurement past this much GPU time
  int algo_search = 8;      // cuBLASLt: time up to this many of its heuristic's algorithms per point, keep
                            // the best (1 = the heuristic's top pick, no search)
  int search_reps = 5;      // timed runs per algorithm in that search at most (at least min(3, this))
};

// Each returns a process exit code: 0 when the sweep ran and the JSON was written (rows whose
// kernel or baseline failed carry a note), 1 when the JSON could not be written or the CUDA context
// was lost mid-way (the rows measured so far are still written), 2 when there is no usable GPU.
int bench_sparse24(const BenchOptions& options);
int bench_blockwise(const BenchOptions& options);
int bench_w4a4(const BenchOptions& options);  // bench_w4a4.cpp: -> <out>/w4a4.json

// `qsgemm bench <sparse24|blockwise|all> [options]`; argv[0] is the word after "bench".
int bench_main(int argc, char** argv);

}  // namespace qsgemm::bench

// The CLI (tools/qsgemm.cpp) may call these without the namespace.
using qsgemm::bench::bench_blockwise;
using qsgemm::bench::bench_main;
using qsgemm::bench::bench_sparse24;
using qsgemm::bench::BenchOptions;
