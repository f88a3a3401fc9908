// bench/bench_util.h — small pieces every part of `qsgemm bench` uses: CUDA error checks, device
// buffers, random fills, downloads, statistics, string formatting, the layer lists' helpers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
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

// Stream-ordered copy to the host, then a wait on the stream.
void download(void* host, const void* device, size_t bytes, cudaStream_t stream);
// Rows `rows` of a row-major device matrix with `row_bytes` bytes per row, packed on the host.
// stride_bytes: the distance between row starts (0: row_bytes).
std::vector<uint8_t> download_rows(const void* device, size_t row_bytes, const std::vector<int64_t>& rows,
                                   cudaStream_t stream, size_t stride_bytes = 0);
// Floats `index[i]` of a device array.
std::vector<float> download_floats(const float* device, const std::vector<int64_t>& index, cudaStream_t stream);

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

// ---- layers and sweeps -------------------------------------------------------------------------------
struct Layer {
  std::string name;
  int64_t N, K;  // weight [N, K]
};
// The layers of `all` named in `wanted` (all of them when `wanted` is empty), in `all`'s order.
// Throws std::invalid_argument naming an unknown layer.
std::vector<Layer> select_layers(const std::vector<Layer>& all, const std::vector<std::string>& wanted);

// The powers-of-two grid of token counts (`--grid powers`): 1, 8, 16, 32, 64, ..., 16384.
const std::vector<int64_t>& default_token_counts();
// The default grid (`--grid users`): the powers of two plus in-between values that continuous
// batching produces (issue #24): 1, 2, 3, 5, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 288,
// 384, 512, 640, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 6144, 8192, 12288, 16384.
const std::vector<int64_t>& user_token_counts();
// The grid named by `--grid`: "users" or "powers"; throws std::invalid_argument otherwise.
const std::vector<int64_t>& grid_token_counts(const std::string& grid);
// The dense sweep (`--sweep`): M_0 = 1, M_{i+1} = max(M_i + 1, round(M_i * step)) while <= max_m,
// and max_m itself as the last point (1.05 and 16384: 159 points). step must be > 1.
std::vector<int64_t> sweep_token_counts(int64_t max_m, double step);
// Decode sizes: the issues' weight-bandwidth goals apply up to this M, and the GEMM rows up to it
// also time a memcpy of the same bytes (add_memcpy_baseline).
inline constexpr int64_t kDecodeMaxM = 32;
// A seed derived from a name (FNV-1a), so that every layer gets its own data.
uint32_t seed_of(const std::string& name);

// ---- small helpers ----------------------------------------------------------------------------------
double geomean(const std::vector<double>& v);  // NaN for an empty vector
double median(std::vector<double> v);          // NaN for an empty vector
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Evenly spaced indices 0 .. n-1 (first and last included), at most `count` of them.
std::vector<int64_t> sample_indices(int64_t n, int64_t count);
// f(i) for i in [0, n) on up to hardware_concurrency() threads (the CPU reference checks: each
// token's row of the float64 reference is independent). The first exception is rethrown.
void parallel_for(int64_t n, const std::function<void(int64_t)>& f);

}  // namespace qsgemm::bench
