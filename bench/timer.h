// bench/timer.h — how `qsgemm bench` (and `qsgemm tune`) take a time.
//
// One measurement, Timer::time_us(fn, options):
//   1. Warm-up: `warmup` runs (default 2), each preceded by the L2 flush; the last one's time is the
//      estimate of one run (the first may pay for module loading or a library's lazy set-up).
//   2. With options.graph and an estimate under options.graph_below_us, fn is captured once into a
//      CUDA graph and the graph is what gets timed (one untimed replay uploads it). When fn cannot
//      be captured (it synchronizes or allocates) it is timed directly; last_graphed() says which.
//   3. N timed runs, N = budget_ms / estimate clamped to [min_reps, reps]. Before each run, outside
//      the timed region, the L2 (50-60 MB) is flushed: by default a kernel READS a 512 MiB buffer
//      (l2_read_flush), so the run starts with a cold L2 holding only clean lines, as a layer's GEMM
//      does in a model; with dirty_flush a 512 MiB cudaMemsetAsync is used instead (the method of
//      triton.testing.do_bench), which leaves dirty lines that the timed run must also write back.
//      Each run is bracketed alone by two CUDA events. All N runs are enqueued before the host waits
//      once, so launch latency does not land inside the timed region.
//   4. The result is the median of the N event times (an even N averages the two middle ones).
// Everything is enqueued on the timer's one stream.
//
// A benchmark point compares several candidates with PointTimer (harness.h): one timing method
// (graph or direct) for all of them, a short search over cuBLASLt's algorithms, then two interleaved
// rounds whose two medians are averaged.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "bench_util.h"

namespace qsgemm::bench {

struct TimeOptions {
  int warmup = 2;            // untimed-for-the-result runs (the first may pay lazy loading)
  int reps = 50;             // timed runs at most
  int min_reps = 5;          // ... and at least
  double budget_ms = 200;    // fewer runs when reps x (estimated run time) would exceed this
  bool flush_l2 = true;      // flush L2 before every timed run (outside the timed region), see dirty_flush
  // How: false (default) reads a 512 MiB buffer, so the timed run starts with a cold L2 of clean
  // lines. true memsets it instead: the timed run then also writes back up to the whole L2 of dirty
  // lines, several µs charged to every kernel.
  bool dirty_flush = false;
  bool graph = false;        // capture fn in a CUDA graph and time replays, if the run is short
  double graph_below_us = 50;  // "short"; PointTimer sets it to infinity once it has decided on graphs
};

class Timer {
 public:
  explicit Timer(cudaStream_t stream, size_t flush_bytes = size_t(512) << 20);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Median time of fn(stream) in microseconds (steps 1-4 above). fn must only enqueue work on the
  // stream it is given (no synchronization); it may throw, and the exception propagates.
  double time_us(const std::function<void(cudaStream_t)>& fn, const TimeOptions& options = {});
  // Whether the last time_us() timed graph replays.
  bool last_graphed() const { return last_graphed_; }
  // Step 1 alone: `warmup` flushed runs; returns the time of the last one (µs).
  double warm_up_us(const std::function<void(cudaStream_t)>& fn, int warmup, const TimeOptions& options);
  // Whether fn can be captured into a CUDA graph and instantiated (the graph is discarded). Errors
  // of a failed capture are cleared; an exception thrown by fn counts as "no".
  bool capturable(const std::function<void(cudaStream_t)>& fn);
  cudaStream_t stream() const { return stream_; }

 private:
  // Enqueues `runs` (flush, start event, fn, stop event) groups, waits once, returns the median µs.
  double time_direct(const std::function<void(cudaStream_t)>& fn, int runs, bool flush, bool dirty_flush);
  void ensure_events(size_t pairs);

  cudaStream_t stream_;
  DeviceBuffer flush_;
  DeviceBuffer sink_;  // l2_read_flush's output word
  unsigned flush_value_ = 0;
  double last_run_us_ = 0;  // the last run of the last time_direct()
  bool last_graphed_ = false;
  std::vector<cudaEvent_t> start_, stop_;
};

// Wall time (host clock) of a call that synchronizes by itself, median of `reps` after `warmup`.
double host_time_us(const std::function<void()>& fn, int warmup, int reps);

// Device-to-device copy bandwidth: (bytes read + bytes written) / time of one large cudaMemcpyAsync.
double measure_copy_bandwidth_GBps(Timer& timer, size_t bytes = size_t(1) << 30);

}  // namespace qsgemm::bench
