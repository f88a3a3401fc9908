// bench/harness.cpp — see harness.h.
#include "harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "bench.h"
#include "qsgemm/device.h"

namespace qsgemm::bench {
namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

bool BenchEnv::save() {
  try {
    write_json(json_path, report);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qsgemm bench: %s\n", e.what());
    return false;
  }
}

double BenchEnv::elapsed_s() const { return now_s() - start_s; }

int run_bench(const char* title, const BenchOptions& options, const std::string& json_name,
              const std::function<void(BenchEnv&)>& body) {
  const DeviceInfo dev = device_info();
  if (!dev.present) {
    std::fprintf(stderr, "qsgemm bench %s: no usable CUDA device (%s)\n", title, dev.error.c_str());
    return 2;
  }
  cudaStream_t stream = nullptr;
  int code = 0;
  BenchEnv env;
  env.start_s = now_s();
  env.json_path = options.json_path.empty() ? options.out_dir + "/" + json_name : options.json_path;
  try {
    QSB_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Timer timer(stream);
    LtContext lt(options.algo_search);
    env.stream = stream;
    env.timer = &timer;
    env.lt = &lt;
    env.time.reps = std::max(1, options.reps);
    env.time.budget_ms = options.budget_ms;
    env.time.graph = options.graph;
    env.time.dirty_flush = options.dirty_flush;
    env.search = env.time;
    env.search.warmup = 1;
    env.search.reps = std::max(1, options.search_reps);
    env.search.min_reps = std::min(3, env.search.reps);
    env.search.budget_ms = options.budget_ms / 10;
    env.check = options.check;
    env.kernels_ok = dev.supports_kernels();
    env.report = make_report(measure_copy_bandwidth_GBps(timer));
    std::printf("qsgemm bench %s on %s (%d SMs, sm_%d%d), CUDA runtime %s, commit %s, %s\n", title,
                env.report.device.c_str(), env.report.sms, dev.cc_major, dev.cc_minor, env.report.cuda.c_str(),
                env.report.git_commit.c_str(), env.report.date.c_str());
    std::printf("copy bandwidth (D2D, read + write): %.0f GB/s; data: hashed random (never zero); L2 flushed before "
                "every timed run (%s); median of up to %d runs (%.0f ms budget each), two interleaved rounds; %s\n",
                env.report.copy_bandwidth_GBps,
                env.time.dirty_flush ? "512 MiB memset: dirty lines" : "512 MiB read: clean lines", env.time.reps,
                env.time.budget_ms,
                env.time.graph ? "points with a run under 50 us: every candidate as CUDA-graph replays"
                               : "launched directly");
    std::printf("cuBLASLt: best of its heuristic's top %d algorithms per point (search: %d-%d runs each)\n",
                lt.max_algorithms(), env.search.min_reps, env.search.reps);
    std::printf("writing %s after every layer\n", env.json_path.c_str());
    if (!env.kernels_ok)
      std::printf("note: qsgemm's kernels need an sm_90 GPU; only the baselines will have times\n");
    std::fflush(stdout);
    try {
      body(env);
    } catch (const std::exception& e) {  // ContextLost included
      std::fprintf(stderr, "qsgemm bench %s: stopped early: %s\n", title, e.what());
      code = 1;
    }
  } catch (const std::exception& e) {  // set-up failed (no stream, no cuBLASLt, out of memory)
    std::fprintf(stderr, "qsgemm bench %s: %s\n", title, e.what());
    code = 1;
  }
  if (!env.report.device.empty()) {
    if (env.save())
      std::printf("wrote %s (%zu rows) after %.0f s\n", env.json_path.c_str(), env.report.rows.size(), env.elapsed_s());
    else
      code = 1;
  }
  if (stream) cudaStreamDestroy(stream);
  std::fflush(stdout);
  return code;
}

void for_each_layer(BenchEnv& env, const std::vector<Layer>& layers, const std::function<void(const Layer&)>& bench_layer) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = layers[i];
    const double t0 = env.elapsed_s();
    try {
      bench_layer(layer);
    } catch (const ContextLost&) {
      throw;
    } catch (const std::exception& e) {  // e.g. out of memory for this layer's buffers
      std::printf("%s: skipped: %s\n", layer.name.c_str(), e.what());
      const std::string lost = cuda_context_error();
      if (!lost.empty()) throw ContextLost(lost);
    }
    env.save();
    std::printf("[layer %zu/%zu] %s: %.1f s (elapsed %.0f s, %zu rows saved)\n", i + 1, layers.size(),
                layer.name.c_str(), env.elapsed_s() - t0, env.elapsed_s(), env.report.rows.size());
    std::fflush(stdout);
  }
}

bool guarded(BenchRow& row, const std::string& what, const std::function<void()>& f) {
  std::string message;
  try {
    f();
    return true;
  } catch (const ContextLost&) {
    throw;
  } catch (const std::exception& e) {
    message = e.what();
  }
  row.add_note(what + ": " + message);
  const std::string lost = cuda_context_error();
  if (!lost.empty()) throw ContextLost(lost + " (after " + what + ": " + message + ")");
  return false;
}

void PointTimer::add(BenchRow& row, std::string name, std::function<void(cudaStream_t)> fn,
                     std::function<void(double)> on_time) {
  Candidate c;
  c.row = &row;
  c.name = std::move(name);
  c.fn = std::move(fn);
  c.on_time = std::move(on_time);
  candidates_.push_back(std::move(c));
}

void PointTimer::add_baseline(BenchRow& row, const std::string& name,
                              const std::function<std::unique_ptr<Baseline>()>& make) {
  std::unique_ptr<Baseline> b;
  if (!guarded(row, name, [&] { b = make(); })) return;
  if (!b->available()) {
    row.add_note(name + " unavailable: " + b->unavailable_reason());
    return;
  }
  if (!b->note().empty()) row.add_note(b->note());
  Baseline* raw = b.get();
  baselines_.push_back(std::move(b));
  BenchRow* r = &row;
  add(row, name, [raw](cudaStream_t s) { raw->run(s); },
      [r, name](double us) { r->baselines_us.emplace_back(name, us); });
  candidates_.back().baseline = raw;
}

void PointTimer::search_algorithm(BenchEnv& env, Candidate& c, bool graph) {
  Baseline& b = *c.baseline;
  const int n = b.algorithm_count();
  AlgoChoice choice = b.algorithm();
  if (n > 1) {
    TimeOptions o = env.search;
    o.graph = graph;
    o.graph_below_us = std::numeric_limits<double>::infinity();
    std::vector<double> t(static_cast<size_t>(n), std::numeric_limits<double>::infinity());
    std::string failures;
    for (int i = 0; i < n; ++i) {
      b.select_algorithm(i);
      BenchRow scratch;  // one algorithm's failure is not the candidate's
      double us = 0;
      const bool ok = guarded(scratch, "", [&] { us = env.timer->time_us(c.fn, o); });
      if (ok && graph && !env.timer->last_graphed()) {
        failures += strprintf("%s#%d not capturable", failures.empty() ? "" : ", ", i);
        continue;
      }
      if (ok)
        t[static_cast<size_t>(i)] = us;
      else
        failures += strprintf("%s#%d failed", failures.empty() ? "" : ", ", i);
    }
    const auto best = static_cast<int>(std::min_element(t.begin(), t.end()) - t.begin());
    if (!failures.empty()) c.row->add_note(c.name + " algorithm search: " + failures);
    if (!std::isfinite(t[static_cast<size_t>(best)])) {
      c.failed = true;
      return;
    }
    b.select_algorithm(best);
    choice = b.algorithm();
    choice.how = "timed";
    if (std::isfinite(t[0])) choice.top_us = t[0];
    choice.best_us = t[static_cast<size_t>(best)];
  }
  if (!choice.how.empty()) c.row->baselines_algo.emplace_back(c.name, choice);
}

void PointTimer::run(BenchEnv& env) {
  // 1. The point's timing method.
  bool graph = false;
  if (env.time.graph) {
    double shortest = std::numeric_limits<double>::infinity();
    std::string not_capturable;
    for (Candidate& c : candidates_) {
      double est = 0;
      if (!guarded(*c.row, c.name, [&] { est = env.timer->warm_up_us(c.fn, env.time.warmup, env.time); })) {
        c.failed = true;
        continue;
      }
      shortest = std::min(shortest, est);
      if (!env.timer->capturable(c.fn)) not_capturable += (not_capturable.empty() ? "" : ", ") + c.name;
    }
    graph = shortest < env.time.graph_below_us && not_capturable.empty();
    if (shortest < env.time.graph_below_us && !not_capturable.empty())
      for (Candidate& c : candidates_)
        if (c.row->notes.find("cannot be captured") == std::string::npos)
          c.row->add_note("timed directly: " + not_capturable + " cannot be captured into a CUDA graph");
  }
  TimeOptions base = env.time;
  base.graph = graph;
  base.graph_below_us = std::numeric_limits<double>::infinity();
  for (Candidate& c : candidates_) c.row->timing = graph ? "graph" : "direct";

  // 2. The baselines' algorithm search.
  for (Candidate& c : candidates_)
    if (c.baseline && !c.failed) search_algorithm(env, c, graph);

  // 3. Two interleaved rounds.
  TimeOptions half = base;
  half.reps = std::max(half.min_reps, (half.reps + 1) / 2);
  half.budget_ms = half.budget_ms / 2;
  const size_t n = candidates_.size();
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < n; ++i) {
      Candidate& c = candidates_[round == 0 ? i : n - 1 - i];
      if (c.failed) continue;
      double us = 0;
      if (guarded(*c.row, c.name, [&] { us = env.timer->time_us(c.fn, half); })) {
        c.medians.push_back(us);
        if (graph && !env.timer->last_graphed()) c.row->add_note(c.name + ": timed directly (graph capture failed)");
      } else {
        c.failed = true;
      }
    }
  }
  for (Candidate& c : candidates_)
    if (!c.failed && !c.medians.empty())
      c.on_time(std::accumulate(c.medians.begin(), c.medians.end(), 0.0) / static_cast<double>(c.medians.size()));
}

void PointTimer::check_baselines(BenchEnv& env) {
  if (!env.check) return;
  for (Candidate& c : candidates_) {
    if (!c.baseline || c.failed || c.medians.empty() || !c.baseline->operands()) continue;
    const GemmOperands& ops = *c.baseline->operands();
    const std::vector<int64_t> tokens = sample_indices(ops.M, kBaselineCheckTokens);
    const std::vector<int64_t> channels = sample_indices(ops.N, kBaselineCheckChannels);
    double e = NAN;
    if (!guarded(*c.row, c.name + " rel_err", [&] { e = baseline_rel_err(*c.baseline, tokens, channels, env.stream); }))
      continue;
    if (std::isnan(e)) continue;  // no reference for this baseline
    if (std::isfinite(e))
      c.row->baselines_rel_err.emplace_back(c.name, e);
    else
      c.row->add_note(c.name + " rel_err: the output holds NaN/Inf or elements that were not written");
  }
}

void set_rel_err(BenchRow& row, double rel_err) {
  if (std::isfinite(rel_err))
    row.rel_err = rel_err;
  else
    row.add_note("rel_err: the output holds NaN/Inf or elements that were not written");
}

void add_memcpy_baseline(PointTimer& point, BenchEnv& env, BenchRow& row) {
  const auto bytes = static_cast<size_t>(row.bytes_moved / 2);
  if (bytes == 0) return;
  point.add_baseline(row, "cuda_memcpy_same_bytes", [&] { return make_memcpy_same_bytes(bytes, env.stream); });
}

bool time_with_memcpy_floor(BenchEnv& env, BenchRow& row, const std::function<void(cudaStream_t)>& fn) {
  PointTimer point;
  point.add(row, "qsgemm", fn, [&](double us) { row.qsgemm_us = us; });
  add_memcpy_baseline(point, env, row);
  point.run(env);
  return row.qsgemm_us.has_value();
}

}  // namespace qsgemm::bench
