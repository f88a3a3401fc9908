// bench/summary.h — what `qsgemm bench` prints: one table line per point as it is measured, and
// the summaries at the end (geomean speedups per M range, decode bandwidth).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "report.h"

namespace qsgemm::bench {

// One line per GEMM row: family, layer, M, config, qsgemm µs, the µs of each baseline, TFLOP/s
// (2MNK / qsgemm time, dense-equivalent), GB/s (bytes_moved / qsgemm time) and qsgemm's speedup
// over each baseline in `ratios` (baseline time / qsgemm time).
class ResultTable {
 public:
  ResultTable(std::vector<std::string> baselines, std::vector<std::string> ratios);
  void print_header() const;
  void print_row(const BenchRow& row) const;

 private:
  std::vector<std::string> baselines_, ratios_;
};

// One line per memory-bound row (quantizers, compression): µs, GB/s and the fraction of copy bandwidth.
void print_memory_row(const BenchRow& row, double copy_bandwidth_GBps);

// Short column label of a baseline ("cublaslt_fp8_rowwise" -> "lt_rowwise").
std::string short_name(const std::string& baseline);

// baseline_us / qsgemm_us of the rows of `family` with lo <= M <= hi where both ran.
std::vector<double> speedups(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline,
                             int64_t lo, int64_t hi);
// The standard summary of `family` vs `baseline`: geomean speedup for M > 1024, 33 <= M <= 1024 and
// M <= 32, then the points where qsgemm is slower (the first 24 listed).
void print_speedup_summary(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline);
// The decode-bandwidth summary of `family` (rows with M <= kDecodeMaxM): the weight's bytes
// (weight_bytes(row): what the kernel must read of W, scales and metadata included) over qsgemm's
// time, as a fraction of the 1 GiB copy's bandwidth (range, median, points at >= 80 %), and the
// time of a memcpy of the row's own bytes over qsgemm's time (the same, where the row has one).
void print_decode_bandwidth(const std::vector<BenchRow>& rows, const std::string& family, const char* what,
                            const std::function<double(const BenchRow&)>& weight_bytes, double copy_bandwidth_GBps);
// How often the cuBLASLt search picked something other than the heuristic's top pick, and what that
// gained in the search phase (geomean of top_us / best_us where it did), per baseline.
void print_algo_search_summary(const std::vector<BenchRow>& rows);
// The largest baselines_rel_err per baseline over all rows (a sanity check of the vendor calls).
void print_baseline_errors(const std::vector<BenchRow>& rows);

}  // namespace qsgemm::bench
