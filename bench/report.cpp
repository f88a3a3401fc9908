// bench/report.cpp — see report.h.
#include "report.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_util.h"

namespace qsgemm::bench {

void BenchRow::add_note(const std::string& note) {
  if (note.empty()) return;
  if (!notes.empty()) notes += "; ";
  notes += note;
}

std::optional<double> BenchRow::baseline(const std::string& name) const {
  for (const auto& [n, us] : baselines_us)
    if (n == name) return us;
  return std::nullopt;
}

BenchReport make_report(double copy_bandwidth_GBps) {
  BenchReport r;
  int dev = 0;
  QSB_CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  QSB_CHECK_CUDA(cudaGetDeviceProperties(&p, dev));
  r.device = p.name;
  r.sms = p.multiProcessorCount;
  int rt = 0;
  QSB_CHECK_CUDA(cudaRuntimeGetVersion(&rt));
  r.cuda = strprintf("%d.%d", rt / 1000, (rt % 1000) / 10);
  const char* commit = std::getenv("QSGEMM_GIT_COMMIT");
  r.git_commit = commit && *commit ? commit : "unknown";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  r.date = buf;
  r.copy_bandwidth_GBps = copy_bandwidth_GBps;
  return r;
}

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20)
          out += strprintf("\\u%04x", c);
        else
          out += ch;
    }
  }
  return out + "\"";
}

// 7 significant digits: µs to 0.1 ns at 1 ms, rel_err to 1e-7 relative. JSON has no inf/NaN: null.
std::string json_number(double v) { return std::isfinite(v) ? strprintf("%.7g", v) : "null"; }
std::string json_number(const std::optional<double>& v) { return v ? json_number(*v) : "null"; }

std::string json_object(const std::vector<std::pair<std::string, double>>& v) {
  std::string s = "{";
  for (size_t j = 0; j < v.size(); ++j) s += (j ? ", " : "") + json_string(v[j].first) + ": " + json_number(v[j].second);
  return s + "}";
}

std::string json_algo(const AlgoChoice& a) {
  std::string s = "{\"how\": " + json_string(a.how);
  if (a.index >= 0) s += strprintf(", \"index\": %d, \"of\": %d", a.index, a.of);
  if (a.id >= 0) s += strprintf(", \"id\": %lld", static_cast<long long>(a.id));
  if (a.top_us) s += ", \"top_us\": " + json_number(a.top_us);
  if (a.best_us) s += ", \"best_us\": " + json_number(a.best_us);
  return s + "}";
}

}  // namespace

std::string to_json(const BenchReport& r) {
  std::ostringstream os;
  os << "{\n";
  os << "  \"device\": " << json_string(r.device) << ", \"sms\": " << r.sms << ", \"cuda\": " << json_string(r.cuda)
     << ",\n";
  os << "  \"git_commit\": " << json_string(r.git_commit) << ", \"date\": " << json_string(r.date) << ",\n";
  os << "  \"copy_bandwidth_GBps\": " << json_number(r.copy_bandwidth_GBps) << ",\n";
  os << "  \"rows\": [";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const BenchRow& w = r.rows[i];
    os << (i ? ",\n" : "\n") << "    {";
    os << "\"family\": " << json_string(w.family) << ", \"layer\": " << json_string(w.layer) << ", \"M\": " << w.M
       << ", \"N\": " << w.N << ", \"K\": " << w.K << ", \"out_dtype\": " << json_string(w.out_dtype)
       << ", \"config\": " << json_string(w.config) << ", \"qsgemm_us\": " << json_number(w.qsgemm_us)
       << ", \"baselines_us\": " << json_object(w.baselines_us) << ", \"bytes_moved\": " << w.bytes_moved
       << ", \"rel_err\": " << json_number(w.rel_err);
    if (!w.baselines_rel_err.empty()) os << ", \"baselines_rel_err\": " << json_object(w.baselines_rel_err);
    if (!w.baselines_algo.empty()) {
      os << ", \"baselines_algo\": {";
      for (size_t j = 0; j < w.baselines_algo.size(); ++j)
        os << (j ? ", " : "") << json_string(w.baselines_algo[j].first) << ": " << json_algo(w.baselines_algo[j].second);
      os << "}";
    }
    if (!w.timing.empty()) os << ", \"timing\": " << json_string(w.timing);
    for (const auto& e : w.extra) os << ", " << json_string(e.first) << ": " << json_number(e.second);
    if (!w.notes.empty()) os << ", \"notes\": " << json_string(w.notes);
    os << "}";
  }
  os << (r.rows.empty() ? "]\n" : "\n  ]\n") << "}\n";
  return os.str();
}

void write_json(const std::string& path, const BenchReport& report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) throw BenchError("cannot create folder " + p.parent_path().string() + ": " + ec.message());
  const std::string tmp = path + ".partial";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw BenchError("cannot open " + tmp + " for writing");
    f << to_json(report);
    f.close();
    if (!f) throw BenchError("write to " + tmp + " failed");
  }
  fs::rename(tmp, p, ec);
  if (ec) throw BenchError("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

}  // namespace qsgemm::bench
