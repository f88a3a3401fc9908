// bench/summary.cpp — see summary.h.
#include "summary.h"

#include <sys/types.h>

#include <algorithm>
#include <climits>
#include <cstdio>

namespace qsgemm::bench {

std::string short_name(const std::string& b) {
  if (b == "cublaslt_fp8_rowwise") return "lt_rowwise";
  if (b == "cublaslt_fp8_tensor") return "lt_tensor";
  if (b == "cublaslt_fp8_block128") return "lt_blk128";
  if (b == "cusparselt_fp8") return "spLt_fp8";
  if (b == "cublas_bf16") return "lt_bf16";
  if (b == "cuda_memcpy_same_bytes") return "memcpy";
  return b.size() > 11 ? b.substr(0, 11) : b;
}

ResultTable::ResultTable(std::vector<std::string> baselines, std::vector<std::string> ratios)
    : baselines_(std::move(baselines)), ratios_(std::move(ratios)) {}

void ResultTable::print_header() const {
  std::printf("\n%-14s %-16s %6s %-28s %9s", "family", "layer", "M", "config", "qsgemm_us");
  for (const auto& b : baselines_) std::printf(" %11s", short_name(b).c_str());
  std::printf(" %8s %8s", "TFLOP/s", "GB/s");
  for (const auto& r : ratios_) std::printf(" %11s", ("x" + short_name(r)).c_str());
  std::printf(" %8s\n", "rel_err");
  std::fflush(stdout);
}

void ResultTable::print_row(const BenchRow& r) const {
  const std::string config = r.config.size() > 28 ? r.config.substr(0, 27) + "~" : r.config;
  std::printf("%-14s %-16s %6lld %-28s", r.family.c_str(), r.layer.c_str(), static_cast<long long>(r.M),
              config.c_str());
  if (r.qsgemm_us)
    std::printf(" %9.2f", *r.qsgemm_us);
  else
    std::printf(" %9s", "-");
  for (const auto& b : baselines_) {
    const auto t = r.baseline(b);
    if (t)
      std::printf(" %11.2f", *t);
    else
      std::printf(" %11s", "n/a");
  }
  if (r.qsgemm_us) {
    const double s = *r.qsgemm_us * 1e-6;
    std::printf(" %8.1f %8.0f", 2.0 * r.M * r.N * r.K / s / 1e12, static_cast<double>(r.bytes_moved) / s / 1e9);
  } else {
    std::printf(" %8s %8s", "-", "-");
  }
  for (const auto& b : ratios_) {
    const auto t = r.baseline(b);
    if (t && r.qsgemm_us)
      std::printf(" %10.2fx", *t / *r.qsgemm_us);
    else
      std::printf(" %11s", "-");
  }
  if (r.rel_err)
    std::printf(" %8.1e", *r.rel_err);
  else
    std::printf(" %8s", "-");
  std::printf("\n");
  if (!r.notes.empty()) std::printf("    note: %s\n", r.notes.c_str());
  std::fflush(stdout);
}


void print_memory_row(const BenchRow& r, double copy_bandwidth_GBps) {
  std::printf("%-22s %-14s", r.family.c_str(), r.layer.c_str());
  const auto pct = [&](double us) {
    return 100.0 * static_cast<double>(r.bytes_moved) / (us * 1e-6) / 1e9 / copy_bandwidth_GBps;
  };
  if (r.qsgemm_us) {
    const double gbps = static_cast<double>(r.bytes_moved) / (*r.qsgemm_us * 1e-6) / 1e9;
    std::printf(" %10.2f us %8.0f GB/s  %5.1f%% of copy bandwidth", *r.qsgemm_us, gbps, pct(*r.qsgemm_us));
  } else {
    std::printf(" %10s", "-");
  }
  if (const auto m = r.baseline("cuda_memcpy_same_bytes"))
    std::printf("  (memcpy of the same bytes: %.2f us, %.1f%%)", *m, pct(*m));
  if (r.rel_err) std::printf("  rel_err %.1e", *r.rel_err);
  std::printf("\n");
  if (!r.notes.empty()) std::printf("    note: %s\n", r.notes.c_str());
  std::fflush(stdout);
}

std::vector<double> speedups(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline,
                             int64_t lo, int64_t hi) {
  std::vector<double> v;
  for (const BenchRow& r : rows) {
    if (r.family != family || r.M < lo || r.M > hi || !r.qsgemm_us) continue;
    if (const auto t = r.baseline(baseline)) v.push_back(*t / *r.qsgemm_us);
  }
  return v;
}

void print_decode_bandwidth(const std::vector<BenchRow>& rows, const std::string& family, const char* what,
                            const std::function<double(const BenchRow&)>& weight_bytes, double copy_bandwidth_GBps) {
  std::vector<double> frac, of_memcpy;
  for (const BenchRow& r : rows) {
    if (r.family != family || r.M > kDecodeMaxM || !r.qsgemm_us) continue;
    frac.push_back(weight_bytes(r) / (*r.qsgemm_us * 1e-6) / 1e9 / copy_bandwidth_GBps);
    if (const auto m = r.baseline("cuda_memcpy_same_bytes")) of_memcpy.push_back(*m / *r.qsgemm_us);
  }
  const auto at_least = [](const std::vector<double>& v, double x) {
    return std::count_if(v.begin(), v.end(), [x](double f) { return f >= x; });
  };
  if (frac.empty()) {
    std::printf("%s M <= %lld: %s bandwidth n/a\n", family.c_str(), static_cast<long long>(kDecodeMaxM), what);
    return;
  }
  std::printf("%s M <= %lld: %s at %.0f%% .. %.0f%% of copy bandwidth (median %.0f%%, >= 80%% on %zd of %zu points)\n",
              family.c_str(), static_cast<long long>(kDecodeMaxM), what,
              100 * *std::min_element(frac.begin(), frac.end()), 100 * *std::max_element(frac.begin(), frac.end()),
              100 * median(frac), static_cast<ssize_t>(at_least(frac, 0.8)), frac.size());
  if (!of_memcpy.empty())
    std::printf("%s M <= %lld: memcpy of the same bytes / qsgemm time: %.0f%% .. %.0f%% (median %.0f%%, >= 80%% on %zd of "
                "%zu points)\n",
                family.c_str(), static_cast<long long>(kDecodeMaxM),
                100 * *std::min_element(of_memcpy.begin(), of_memcpy.end()),
                100 * *std::max_element(of_memcpy.begin(), of_memcpy.end()), 100 * median(of_memcpy),
                static_cast<ssize_t>(at_least(of_memcpy, 0.8)), of_memcpy.size());
}

void print_speedup_summary(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline) {
  constexpr size_t kListedSlower = 24;
  struct Range {
    const char* label;
    int64_t lo, hi;
  };
  // Contiguous bands, so that every M of any grid or sweep lands in one (on the powers grid they are
  // M >= 2048, 64..1024 and M <= 32).
  const Range ranges[] = {{"M > 1024", 1025, INT64_MAX}, {"33 <= M <= 1024", 33, 1024}, {"M <= 32", 0, 32}};
  std::printf("%s vs %s, geomean speedup:", family.c_str(), baseline.c_str());
  for (const Range& g : ranges) {
    const auto v = speedups(rows, family, baseline, g.lo, g.hi);
    if (v.empty())
      std::printf("  %s: n/a", g.label);
    else
      std::printf("  %s: %.2fx (%zu points)", g.label, geomean(v), v.size());
  }
  std::printf("\n");
  std::string slower;
  size_t n = 0, total = 0;
  for (const BenchRow& r : rows) {
    if (r.family != family || !r.qsgemm_us) continue;
    const auto t = r.baseline(baseline);
    if (!t) continue;
    ++total;
    if (*t / *r.qsgemm_us < 1.0) {
      ++n;
      if (n == kListedSlower + 1) slower += ", ...";
      if (n > kListedSlower) continue;  // a sweep can have hundreds: the JSON and check_cliffs.py have them all
      slower += strprintf("%s%s@M=%lld %.2fx", slower.empty() ? "" : ", ", r.layer.c_str(),
                          static_cast<long long>(r.M), *t / *r.qsgemm_us);
    }
  }
  std::printf("  points below 1.0x vs %s: %zu of %zu%s%s\n", baseline.c_str(), n, total, n ? ": " : "", slower.c_str());
}

void print_algo_search_summary(const std::vector<BenchRow>& rows) {
  std::vector<std::string> names;
  for (const BenchRow& r : rows)
    for (const auto& [name, a] : r.baselines_algo)
      if (a.how == "timed" && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  for (const std::string& name : names) {
    size_t searched = 0, other = 0;
    std::vector<double> gain;
    for (const BenchRow& r : rows)
      for (const auto& [n, a] : r.baselines_algo) {
        if (n != name || a.how != "timed") continue;
        ++searched;
        if (a.index > 0) {
          ++other;
          if (a.top_us && a.best_us && *a.best_us > 0) gain.push_back(*a.top_us / *a.best_us);
        }
      }
    std::printf("%s algorithm search: the heuristic's top pick was beaten on %zu of %zu points", name.c_str(), other,
                searched);
    if (!gain.empty()) std::printf(" (there by %.2fx geomean in the search phase)", geomean(gain));
    std::printf("\n");
  }
}

void print_baseline_errors(const std::vector<BenchRow>& rows) {
  std::vector<std::pair<std::string, double>> worst;
  for (const BenchRow& r : rows)
    for (const auto& [name, e] : r.baselines_rel_err) {
      auto it = std::find_if(worst.begin(), worst.end(), [&](const auto& w) { return w.first == name; });
      if (it == worst.end())
        worst.emplace_back(name, e);
      else
        it->second = std::max(it->second, e);
    }
  for (const auto& [name, e] : worst) std::printf("%s rel_err vs the float64 reference: at most %.1e\n", name.c_str(), e);
}

}  // namespace qsgemm::bench
