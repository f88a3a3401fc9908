// bench/timer.cpp — see timer.h.
#include "timer.h"

#include <algorithm>
#include <chrono>

namespace qsgemm::bench {

Timer::Timer(cudaStream_t stream, size_t flush_bytes) : stream_(stream), flush_(flush_bytes), sink_(16) {
  QSB_CHECK_CUDA(cudaMemsetAsync(flush_.get(), 0x5A, flush_.bytes(), stream_));
}

Timer::~Timer() {
  for (cudaEvent_t e : start_) cudaEventDestroy(e);
  for (cudaEvent_t e : stop_) cudaEventDestroy(e);
}

void Timer::ensure_events(size_t pairs) {
  while (start_.size() < pairs) {
    cudaEvent_t a = nullptr, b = nullptr;
    QSB_CHECK_CUDA(cudaEventCreate(&a));
    start_.push_back(a);
    QSB_CHECK_CUDA(cudaEventCreate(&b));
    stop_.push_back(b);
  }
}

double Timer::time_direct(const std::function<void(cudaStream_t)>& fn, int runs, bool flush, bool dirty_flush) {
  ensure_events(static_cast<size_t>(runs));
  // All runs are enqueued before the host waits: while the GPU flushes L2 (~150 µs) the
  // host has long enqueued the next run, so launch latency never lands inside the timed region.
  for (int i = 0; i < runs; ++i) {
    if (flush && dirty_flush)
      QSB_CHECK_CUDA(cudaMemsetAsync(flush_.get(), static_cast<int>(flush_value_++ & 0xFF), flush_.bytes(), stream_));
    else if (flush)
      l2_read_flush(flush_.get(), flush_.bytes(), static_cast<uint32_t*>(sink_.get()), stream_);
    QSB_CHECK_CUDA(cudaEventRecord(start_[i], stream_));
    fn(stream_);
    QSB_CHECK_CUDA(cudaEventRecord(stop_[i], stream_));
  }
  QSB_CHECK_CUDA(cudaEventSynchronize(stop_[runs - 1]));
  std::vector<double> t(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    float ms = 0;
    QSB_CHECK_CUDA(cudaEventElapsedTime(&ms, start_[i], stop_[i]));
    t[i] = 1e3 * ms;
  }
  // The caller wants the median, except for the warm-up estimate (the last run, past lazy loading).
  last_run_us_ = t.back();
  return median(t);
}

namespace {
// Owns a captured graph and its executable form.
struct GraphGuard {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphGuard() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

// Captures fn on `stream` into g. False (errors cleared) when fn cannot be captured; rethrows what fn throws.
bool capture(const std::function<void(cudaStream_t)>& fn, cudaStream_t stream, GraphGuard& g) {
  QSB_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    fn(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &g.graph);
    cudaGetLastError();
    throw;
  }
  cudaError_t e = cudaStreamEndCapture(stream, &g.graph);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&g.exec, g.graph, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();  // fn synchronizes or allocates: not capturable
    return false;
  }
  return true;
}
}  // namespace

double Timer::warm_up_us(const std::function<void(cudaStream_t)>& fn, int warmup, const TimeOptions& o) {
  time_direct(fn, std::max(1, warmup), o.flush_l2, o.dirty_flush);
  return last_run_us_;
}

bool Timer::capturable(const std::function<void(cudaStream_t)>& fn) {
  GraphGuard g;
  try {
    return capture(fn, stream_, g);
  } catch (const std::exception&) {
    return false;
  }
}

double Timer::time_us(const std::function<void(cudaStream_t)>& fn, const TimeOptions& o) {
  last_graphed_ = false;
  // Warm-up: also estimates the length of one run (the last warm-up run; the first may pay for
  // module loading or a library's lazy initialization).
  const double estimate_us = std::max(warm_up_us(fn, o.warmup, o), 1.0);

  std::function<void(cudaStream_t)> timed = fn;
  GraphGuard g;
  if (o.graph && estimate_us < o.graph_below_us && capture(fn, stream_, g)) {
    cudaGraphExec_t exec = g.exec;
    timed = [exec](cudaStream_t s) { QSB_CHECK_CUDA(cudaGraphLaunch(exec, s)); };
    time_direct(timed, 1, o.flush_l2, o.dirty_flush);  // upload the graph
    last_graphed_ = true;
  }

  const double want = o.budget_ms * 1e3 / estimate_us;
  const int runs = std::clamp(static_cast<int>(want), std::max(1, o.min_reps), std::max(1, o.reps));
  return time_direct(timed, runs, o.flush_l2, o.dirty_flush);
}

double host_time_us(const std::function<void()>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, reps); ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  return median(t);
}

double measure_copy_bandwidth_GBps(Timer& timer, size_t bytes) {
  DeviceBuffer src(bytes), dst(bytes);
  QSB_CHECK_CUDA(cudaMemsetAsync(src.get(), 0x5A, bytes, timer.stream()));
  TimeOptions o;
  o.flush_l2 = false;  // 1 GiB each way is ~20x the L2
  o.reps = 20;
  o.min_reps = 10;
  const double us = timer.time_us(
      [&](cudaStream_t s) {
        QSB_CHECK_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s));
      },
      o);
  return 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;
}

}  // namespace qsgemm::bench
