// bench/bench_common.h — the machinery shared by every `qsgemm bench` family: CUDA error checks,
// device buffers, random fills, the timer, the copy-bandwidth ceiling, the JSON writer
// (shared/BENCH_RESULTS.md) and the vendor baselines (cuBLASLt, cuSPARSELt).
//
// How times are taken (.library/device/METHOD.md): warm-up runs first; then every timed run is
// preceded by a 512 MiB cudaMemsetAsync that evicts the 50-60 MB L2, and bracketed alone by two
// CUDA events; the result is the median. The number of timed runs adapts to the run's length
// (TimeOptions). Everything is enqueued on one stream; the host synchronizes once per measurement.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "qsgemm/formats.h"
#include "qsgemm/quant.h"

namespace qsgemm::bench {

// ---- errors ----------------------------------------------------------------------------------------
// A failed CUDA runtime call, cuBLASLt or cuSPARSELt call inside the harness. (Failures inside qsgemm
// arrive as qsgemm::Error.) The message names the call and the error string.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const char* what, const char* file, int line);
#define QSB_CHECK_CUDA(call) ::qsgemm::bench::check_cuda((call), #call, __FILE__, __LINE__)

// Empty while the CUDA context is usable; otherwise why not (an illegal address, a launch failure:
// errors that stick to the context, after which every later call fails). Synchronizes the device.
std::string cuda_context_error();

// ---- device memory ---------------------------------------------------------------------------------
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // cudaMalloc (throws BenchError); 0 bytes -> null
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// ---- random data (device, stream-ordered) ------------------------------------------------------------
// Values are a hash of (seed, index): reproducible, never zero, never NaN (bench/fill_kernels.cu, compiled into the CLI).
void fill_bf16(void* p, size_t n, uint32_t seed, float amp, cudaStream_t stream);  // uniform (-amp, amp)
void fill_e4m3(void* p, size_t n, uint32_t seed, cudaStream_t stream);             // |v| in [0.125, 7.5]
void fill_f32(float* p, size_t n, uint32_t seed, float lo, float hi, cudaStream_t stream);  // (lo, hi)
// Floats of one operand's blockwise scales (include/qsgemm/blockwise.h): `rows` rows (M or N) over
// K under granularity g, with a leading dimension equal to the row count for 1x128 groups.
inline int64_t blockwise_scale_floats(ScaleGranularity g, int64_t rows, int64_t K) {
  const int64_t kb = ceil_div(K, kScaleGroupK);
  if (g == ScaleGranularity::kGroup1x128) return rows * kb;
  if (g == ScaleGranularity::kBlock128x128) return ceil_div(rows, kScaleGroupK) * kb;
  return rows;  // kPerRow
}
// Reads bytes/16 16-byte words of p (a multiple of 16 bytes) and writes *sink at most once: an L2
// flush that leaves only clean lines behind.
void l2_read_flush(const void* p, size_t bytes, uint32_t* sink, cudaStream_t stream);

// ---- timing --------------------------------------------------------------------------------------------
struct TimeOptions {
  int warmup = 2;            // untimed-for-the-result runs (the first may pay lazy loading)
  int reps = 50;             // timed runs at most
  int min_reps = 5;          // ... and at least
  double budget_ms = 200;    // fewer runs when reps x (estimated run time) would exceed this
  bool flush_l2 = true;      // flush L2 before every timed run (outside the timed region), see dirty_flush
  // How: false (default) reads a 512 MiB buffer, so the timed run starts with a cold L2 of clean
  // lines, as a layer's GEMM does in a model (the previous kernels read weights and wrote small
  // activations). true memsets it instead (the method of shared/tools): the timed run then also
  // writes back up to the whole L2 of dirty lines, several µs charged to every kernel.
  bool dirty_flush = false;
  bool graph = false;        // capture fn in a CUDA graph and time replays, if the run is short
  double graph_below_us = 50;
};

class Timer {
 public:
  explicit Timer(cudaStream_t stream, size_t flush_bytes = size_t(512) << 20);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Median time of fn(stream) in microseconds. fn must only enqueue work on the stream it is given
  // (no synchronization); it may throw, and the exception propagates.
  double time_us(const std::function<void(cudaStream_t)>& fn, const TimeOptions& options = {});
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
  std::vector<cudaEvent_t> start_, stop_;
};

// Wall time (host clock) of a call that synchronizes by itself, median of `reps` after `warmup`.
double host_time_us(const std::function<void()>& fn, int warmup, int reps);

// Device-to-device copy bandwidth: (bytes read + bytes written) / time of one large cudaMemcpyAsync.
double measure_copy_bandwidth_GBps(Timer& timer, size_t bytes = size_t(1) << 30);

// ---- results (shared/BENCH_RESULTS.md) --------------------------------------------------------------
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
  std::string notes;  // optional; written only when non-empty

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
// Writes to_json(report) to `path`, creating its folder. Throws BenchError on failure.
void write_json(const std::string& path, const BenchReport& report);

// ---- baselines --------------------------------------------------------------------------------------
// One cuBLASLt handle and one 32 MiB workspace for all cuBLASLt baselines of a run.
class LtContext {
 public:
  LtContext();
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  void* handle() const { return handle_; }  // cublasLtHandle_t
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  void* handle_ = nullptr;
  DeviceBuffer workspace_;
};

// Device operands of Y = X · Wᵀ in the nn.Linear convention, all row-major and dense:
// x [M,K], w [N,K] (e4m3 or bf16 as the baseline says), y [M,N] bf16 written.
struct GemmOperands {
  int64_t M = 0, N = 0, K = 0;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
};

// A vendor GEMM set up once for one shape (descriptors, algorithm, plan, its own scale buffers),
// then run(stream) enqueues exactly one call. When the library refuses the shape or is missing,
// available() is false and unavailable_reason() says why; run() must not be called then.
class Baseline {
 public:
  virtual ~Baseline() = default;
  const std::string& name() const { return name_; }
  bool available() const { return reason_.empty(); }
  const std::string& unavailable_reason() const { return reason_; }
  virtual void run(cudaStream_t stream) = 0;

 protected:
  explicit Baseline(std::string name) : name_(std::move(name)) {}
  std::string name_;
  std::string reason_;
};

// cuBLASLt FP8 e4m3, bf16 out, float32 accumulation. The factories allocate and fill random positive
// scales in the layout cuBLASLt reads (bench_common.cpp documents each).
std::unique_ptr<Baseline> make_cublaslt_fp8_rowwise(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
std::unique_ptr<Baseline> make_cublaslt_fp8_tensor(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
std::unique_ptr<Baseline> make_cublaslt_fp8_block128(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
// cuBLASLt bf16 x bf16 -> bf16, float32 accumulation (x and w bf16).
std::unique_ptr<Baseline> make_cublas_bf16(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
// cuSPARSELt FP8 2:4 (w: dense e4m3 [N,K]; a pruned, compressed copy is made), bf16 out, no scales,
// plan made once, best algorithm from cusparseLtMatmulSearch. Loaded at run time (dlopen).
std::unique_ptr<Baseline> make_cusparselt_fp8(const GemmOperands& ops, cudaStream_t stream);
// "cuSPARSELt <version> from <path>" or why it is unavailable (loads it on first use).
std::string cusparselt_status();

// ---- one benchmark run -------------------------------------------------------------------------------
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
  bool check = true;       // compute rel_err
  bool kernels_ok = true;  // an sm_90 device: qsgemm's kernels can run
};

// Checks for a GPU (exit code 2 without one), sets up BenchEnv, measures the copy bandwidth, runs
// body, writes <out_dir>/<json_name> (or options.json_path) even when the context was lost mid-way.
// Returns the exit code described in bench.h.
int run_bench(const char* title, const BenchOptions& options, const std::string& json_name,
              const std::function<void(BenchEnv&)>& body);

// Runs f. On any exception adds "<what>: <message>" to row.notes and returns false; throws
// ContextLost when the failure left the CUDA context unusable.
bool guarded(BenchRow& row, const std::string& what, const std::function<void()>& f);

// The timed candidates of one benchmark point (qsgemm and its baselines), timed in interleaved
// rounds: all candidates in order, then all in reverse order. A candidate's time is the mean of
// its two medians, each from half of options.reps and options.budget_ms, so a point costs about
// what one pass did. Why: on the H200 the same kernel timed right after a long one (cuBLAS bf16 at
// 16384 tokens) ran 0-16 % slower than when timed first; with one pass in a fixed order, the
// candidate timed first (qsgemm) was favoured. Failures are guarded() into the candidate's row
// under its name; a candidate that fails in either round gets no time (and is not run again).
class PointTimer {
 public:
  // fn(stream) is timed; on_time(us) receives the result after run() (not called on failure).
  void add(BenchRow& row, std::string name, std::function<void(cudaStream_t)> fn, std::function<void(double)> on_time);
  // Makes the baseline now (a note in row when it is unavailable or fails) and adds it; its time
  // goes to row.baselines_us under `name`, in the order of the add calls.
  void add_baseline(BenchRow& row, const std::string& name, const std::function<std::unique_ptr<Baseline>()>& make);
  void run(BenchEnv& env);

 private:
  struct Candidate {
    BenchRow* row;
    std::string name;
    std::function<void(cudaStream_t)> fn;
    std::function<void(double)> on_time;
    std::vector<double> medians;
    bool failed = false;
  };
  std::vector<Candidate> candidates_;
  std::vector<std::unique_ptr<Baseline>> baselines_;  // kept alive for both rounds
};

// Sets row.rel_err; a non-finite error (NaN, Inf, an unwritten element) becomes null plus a note.
void set_rel_err(BenchRow& row, double rel_err);

// Stream-ordered copy to the host, then a wait on the stream.
void download(void* host, const void* device, size_t bytes, cudaStream_t stream);

// ---- printing ---------------------------------------------------------------------------------------
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

// Adds to `point` a cudaMemcpyAsync (device to device) of row.bytes_moved / 2 bytes, i.e. the same
// bytes read plus written as the row's kernel, timed like it (L2 flushed before each run), into
// row.baselines_us["cuda_memcpy_same_bytes"]: the floor for a memory-bound kernel of this size.
// The copy bandwidth of the report comes from a 1 GiB copy; at tens of MB the fixed cost of a
// launch is a visible part of the time, for the memcpy too.
void add_memcpy_baseline(PointTimer& point, BenchEnv& env, BenchRow& row);
// Times a memory-bound qsgemm kernel fn into row.qsgemm_us and, in the same interleaved rounds, the
// memcpy floor of its bytes (add_memcpy_baseline). Returns whether fn got a time.
bool time_with_memcpy_floor(BenchEnv& env, BenchRow& row, const std::function<void(cudaStream_t)>& fn);

// Short column label of a baseline ("cublaslt_fp8_rowwise" -> "lt_rowwise").
std::string short_name(const std::string& baseline);

// baseline_us / qsgemm_us of the rows of `family` with lo <= M <= hi where both ran.
std::vector<double> speedups(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline,
                             int64_t lo, int64_t hi);
// The standard summary of `family` vs `baseline`: geomean speedup for M >= 2048, 64 <= M <= 1024 and
// M <= 32, then the points where qsgemm is slower (listed).
void print_speedup_summary(const std::vector<BenchRow>& rows, const std::string& family, const std::string& baseline);
// The decode-bandwidth summary of `family` (rows with M <= kDecodeMaxM): the weight's bytes
// (weight_bytes(row): what the kernel must read of W, scales and metadata included) over qsgemm's
// time, as a fraction of the 1 GiB copy's bandwidth (range, median, points at >= 80 %), and the
// time of a memcpy of the row's own bytes over qsgemm's time (the same, where the row has one).
void print_decode_bandwidth(const std::vector<BenchRow>& rows, const std::string& family, const char* what,
                            const std::function<double(const BenchRow&)>& weight_bytes, double copy_bandwidth_GBps);

// ---- small helpers ----------------------------------------------------------------------------------
struct Layer {
  std::string name;
  int64_t N, K;  // weight [N, K]
};
// The layers of `all` named in `wanted` (all of them when `wanted` is empty), in `all`'s order.
// Throws std::invalid_argument naming an unknown layer.
std::vector<Layer> select_layers(const std::vector<Layer>& all, const std::vector<std::string>& wanted);

// The default sweep of token counts: 1, 8, 16, 32, 64, ..., 16384.
const std::vector<int64_t>& default_token_counts();
// Decode sizes: the issues' weight-bandwidth goals apply up to this M, and the GEMM rows up to it
// also time a memcpy of the same bytes (add_memcpy_baseline).
inline constexpr int64_t kDecodeMaxM = 32;
// A seed derived from a name (FNV-1a), so that every layer gets its own data.
uint32_t seed_of(const std::string& name);

double geomean(const std::vector<double>& v);  // NaN for an empty vector
double median(std::vector<double> v);          // NaN for an empty vector
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Evenly spaced indices 0 .. n-1 (first and last included), at most `count` of them.
std::vector<int64_t> sample_indices(int64_t n, int64_t count);

}  // namespace qsgemm::bench
