// bench/report.h — the rows and the JSON file of a benchmark run, in the shape of
// shared/BENCH_RESULTS.md (one shape for every kernel family, so any two runs can be compared by a
// script that knows nothing about the kernels).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qsgemm::bench {

// How a vendor baseline's algorithm was chosen for one point ("baselines_algo" in the JSON).
struct AlgoChoice {
  std::string how;          // "timed" (cuBLASLt: best of its heuristic's candidates), "heuristic"
                            // (its top pick, no search), "cusparseLtMatmulSearch"
  int index = -1;           // the winner's position in the heuristic's list (0 = its top pick); -1: n/a
  int of = 0;               // candidates timed (the heuristic returned this many, up to --algo-search)
  int64_t id = -1;          // the library's algorithm / config id; -1: unknown
  std::optional<double> top_us, best_us;  // search-phase times of the heuristic's pick and of the winner
};

struct BenchRow {
  std::string family;  // sparse24 | blockwise_1d2d | ... | quant_* | compress_*
  std::string layer;
  int64_t M = 0, N = 0, K = 0;
  std::string out_dtype = "bf16";
  std::string config;
  std::optional<double> qsgemm_us;                           // null when qsgemm could not run
  std::vector<std::pair<std::string, double>> baselines_us;  // baselines that ran, in the order added
  int64_t bytes_moved = 0;
  std::optional<double> rel_err;
  std::vector<std::pair<std::string, double>> baselines_rel_err;   // written when non-empty
  std::vector<std::pair<std::string, AlgoChoice>> baselines_algo;  // written when non-empty
  std::string timing;  // "graph" | "direct": how every candidate of the point was timed; empty: not written
  std::string notes;   // optional; written only when non-empty
  // Family-specific numeric fields written at the top level of the row, e.g. w4a4's "rank" and "group".
  std::vector<std::pair<std::string, double>> extra;

  void add_note(const std::string& note);
  std::optional<double> baseline(const std::string& name) const;
};

struct BenchReport {
  std::string device;
  int sms = 0;
  std::string cuda;        // runtime version, e.g. "13.0"
  std::string git_commit;  // $QSGEMM_GIT_COMMIT or "unknown"
  std::string date;        // UTC, ISO 8601
  double copy_bandwidth_GBps = 0;
  std::vector<BenchRow> rows;
};

// Fills device, sms, cuda, git_commit and date for the current device.
BenchReport make_report(double copy_bandwidth_GBps);
std::string to_json(const BenchReport& report);
// Writes to_json(report) to `path` (through a temporary file and a rename, so that a run killed
// while writing leaves the previous complete file), creating its folder. Throws BenchError on failure.
void write_json(const std::string& path, const BenchReport& report);

}  // namespace qsgemm::bench
