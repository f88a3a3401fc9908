// bench/harness.h — one benchmark run: the environment every benchmark body gets (stream, timer,
// cuBLASLt context, the report and where it is saved), error containment per point, and PointTimer,
// which times the candidates of one point (qsgemm and its baselines) the same way.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "baseline.h"
#include "bench_util.h"
#include "cublaslt_baselines.h"
#include "report.h"
#include "timer.h"

namespace qsgemm::bench {

struct BenchOptions;

// The CUDA context died (a kernel faulted): nothing more can be measured in this process.
class ContextLost : public BenchError {
 public:
  using BenchError::BenchError;
};

// What every benchmark body gets: one stream, the timer, the cuBLASLt context, the report.
struct BenchEnv {
  cudaStream_t stream = nullptr;
  Timer* timer = nullptr;
  LtContext* lt = nullptr;
  BenchReport report;
  TimeOptions time;        // from the options (reps, budget, graph)
  TimeOptions search;      // one algorithm of a cuBLASLt baseline in the search phase (fewer runs)
  bool check = true;       // compute rel_err (qsgemm's and the baselines')
  bool kernels_ok = true;  // an sm_90 device: qsgemm's kernels can run
  std::string json_path;   // where save() writes the report
  double start_s = 0;      // steady-clock seconds at the start of the run

  // Writes the report so far to json_path (after every layer: a run stopped by a time limit keeps
  // the layers it finished). Prints, does not throw, on failure; returns whether it worked.
  bool save();
  double elapsed_s() const;
};

// Checks for a GPU (exit code 2 without one), sets up BenchEnv, measures the copy bandwidth, runs
// body, writes <out_dir>/<json_name> (or options.json_path) even when the context was lost mid-way.
// Returns the exit code described in bench.h.
int run_bench(const char* title, const BenchOptions& options, const std::string& json_name,
              const std::function<void(BenchEnv&)>& body);

// bench_layer(layer) for each layer, with a progress line and env.save() after each; a layer that
// fails outside a guarded point (e.g. out of memory for its buffers) is skipped with a message.
void for_each_layer(BenchEnv& env, const std::vector<Layer>& layers, const std::function<void(const Layer&)>& bench_layer);

// Runs f. On any exception adds "<what>: <message>" to row.notes and returns false; throws
// ContextLost when the failure left the CUDA context unusable.
bool guarded(BenchRow& row, const std::string& what, const std::function<void()>& f);

// The timed candidates of one benchmark point (qsgemm, its other modes, the baselines, the memcpy
// floor). run() does, in order:
//   1. One timing method for the whole point. With --graph: every candidate is warmed up (its
//      last warm-up run is its estimate) and test-captured; when the shortest estimate is under
//      TimeOptions::graph_below_us (50 µs) and every candidate can be captured, ALL are timed as
//      CUDA-graph replays, otherwise all are timed directly (a note names what could not be
//      captured). Rows get "timing": "graph" | "direct".
//   2. Algorithm search: a baseline with several algorithms (cuBLASLt: its heuristic's top
//      candidates, up to --algo-search) has each timed with BenchEnv::search (fewer runs), by the
//      point's method; the fastest is kept and recorded in row.baselines_algo.
//   3. Two interleaved rounds: all candidates in order, then all in reverse order, each
//      measurement with half of options.reps and options.budget_ms; a candidate's time is the mean
//      of its two medians. Why: on the H200 the same kernel timed right after a long one (cuBLAS
//      bf16 at 16384 tokens) ran 0-16 % slower than when timed first; with one pass in a fixed
//      order, the candidate timed first (qsgemm) was favoured.
// Failures are guarded() into the candidate's row under its name; a candidate that fails in any
// phase gets no time (and is not run again).
class PointTimer {
 public:
  // fn(stream) is timed; on_time(us) receives the result after run() (not called on failure).
  void add(BenchRow& row, std::string name, std::function<void(cudaStream_t)> fn, std::function<void(double)> on_time);
  // Makes the baseline now (a note in row when it is unavailable or fails) and adds it; its time
  // goes to row.baselines_us under `name`, in the order of the add calls.
  void add_baseline(BenchRow& row, const std::string& name, const std::function<std::unique_ptr<Baseline>()>& make);
  void run(BenchEnv& env);
  // After run(), with env.check: each timed baseline's output against the float64 reference of its
  // own operands (Baseline::reference) over kBaselineCheckTokens x kBaselineCheckChannels sampled
  // outputs, into row.baselines_rel_err (fewer samples than qsgemm's check: it is a sanity check
  // of the vendor call's layout and scales, and the CPU reference is the slow part of a point).
  void check_baselines(BenchEnv& env);

  static constexpr int64_t kBaselineCheckTokens = 4;
  static constexpr int64_t kBaselineCheckChannels = 64;

 private:
  struct Candidate {
    BenchRow* row;
    std::string name;
    std::function<void(cudaStream_t)> fn;
    std::function<void(double)> on_time;
    Baseline* baseline = nullptr;  // null for qsgemm and other non-baseline candidates
    std::vector<double> medians;
    bool failed = false;
  };
  void search_algorithm(BenchEnv& env, Candidate& c, bool graph);

  std::vector<Candidate> candidates_;
  std::vector<std::unique_ptr<Baseline>> baselines_;  // kept alive for all phases and the checks
};

// Sets row.rel_err; a non-finite error (NaN, Inf, an unwritten element) becomes null plus a note.
void set_rel_err(BenchRow& row, double rel_err);

// Adds to `point` a cudaMemcpyAsync (device to device) of row.bytes_moved / 2 bytes, i.e. the same
// bytes read plus written as the row's kernel, timed like it (L2 flushed before each run), into
// row.baselines_us["cuda_memcpy_same_bytes"]: the floor for a memory-bound kernel of this size.
// The copy bandwidth of the report comes from a 1 GiB copy; at tens of MB the fixed cost of a
// launch is a visible part of the time, for the memcpy too.
void add_memcpy_baseline(PointTimer& point, BenchEnv& env, BenchRow& row);
// Times a memory-bound qsgemm kernel fn into row.qsgemm_us and, in the same interleaved rounds, the
// memcpy floor of its bytes (add_memcpy_baseline). Returns whether fn got a time.
bool time_with_memcpy_floor(BenchEnv& env, BenchRow& row, const std::function<void(cudaStream_t)>& fn);

}  // namespace qsgemm::bench
