// bench/bench_util.cpp — see bench_util.h.
#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace qsgemm::bench {

// ---- errors ----------------------------------------------------------------------------------------

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  const char* base = std::strrchr(file, '/');
  throw BenchError(strprintf("CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), what,
                             base ? base + 1 : file, line));
}

std::string cuda_context_error() {
  // A sticky error (illegal address, launch failure) is returned by every later synchronization;
  // a one-off error is cleared by cudaGetLastError. Synchronize twice to tell them apart.
  cudaDeviceSynchronize();
  cudaGetLastError();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return strprintf("CUDA context lost: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
}

// ---- device memory ---------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&p_, bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    cudaGetLastError();  // an out-of-memory error is not sticky: clear it
    throw BenchError(strprintf("cudaMalloc of %zu bytes (%.2f GiB) failed: %s", bytes,
                               static_cast<double>(bytes) / (1u << 30), cudaGetErrorString(e)));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);  // errors here are reported by the next checked call
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, bytes_ = o.bytes_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

void download(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  QSB_CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
}

std::vector<uint8_t> download_rows(const void* device, size_t row_bytes, const std::vector<int64_t>& rows,
                                   cudaStream_t stream, size_t stride_bytes) {
  std::vector<uint8_t> out(rows.size() * row_bytes);
  const auto* base = static_cast<const uint8_t*>(device);
  const size_t stride = stride_bytes > 0 ? stride_bytes : row_bytes;
  for (size_t i = 0; i < rows.size(); ++i)
    QSB_CHECK_CUDA(cudaMemcpyAsync(&out[i * row_bytes], base + static_cast<size_t>(rows[i]) * stride, row_bytes,
                                   cudaMemcpyDeviceToHost, stream));
  QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
  return out;
}

std::vector<float> download_floats(const float* device, const std::vector<int64_t>& index, cudaStream_t stream) {
  std::vector<float> out(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    QSB_CHECK_CUDA(cudaMemcpyAsync(&out[i], device + index[i], 4, cudaMemcpyDeviceToHost, stream));
  QSB_CHECK_CUDA(cudaStreamSynchronize(stream));
  return out;
}

// ---- layers and sweeps -------------------------------------------------------------------------------

std::vector<Layer> select_layers(const std::vector<Layer>& all, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return all;
  for (const std::string& w : wanted) {
    if (std::none_of(all.begin(), all.end(), [&](const Layer& l) { return l.name == w; })) {
      std::string known;
      for (const Layer& l : all) known += (known.empty() ? "" : ", ") + l.name;
      throw std::invalid_argument("unknown layer '" + w + "' (known: " + known + ")");
    }
  }
  std::vector<Layer> out;
  for (const Layer& l : all)
    if (std::find(wanted.begin(), wanted.end(), l.name) != wanted.end()) out.push_back(l);
  return out;
}

const std::vector<int64_t>& default_token_counts() {
  static const std::vector<int64_t> ms = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  return ms;
}

const std::vector<int64_t>& user_token_counts() {
  static const std::vector<int64_t> ms = {1,   2,   3,   5,    8,    12,   16,   24,   32,   48,   64,
                                          96,  128, 160, 192,  256,  288,  384,  512,  640,  768,  1024,
                                          1280, 1536, 2048, 2560, 3072, 4096, 6144, 8192, 12288, 16384};
  return ms;
}

const std::vector<int64_t>& grid_token_counts(const std::string& grid) {
  if (grid == "users") return user_token_counts();
  if (grid == "powers") return default_token_counts();
  throw std::invalid_argument("--grid: '" + grid + "' is not a grid (users or powers)");
}

std::vector<int64_t> sweep_token_counts(int64_t max_m, double step) {
  if (max_m < 1) throw std::invalid_argument("--sweep-max-m must be >= 1");
  if (!(step > 1.0) || !std::isfinite(step)) throw std::invalid_argument("--sweep-step must be > 1");
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= max_m;
       m = std::max(m + 1, static_cast<int64_t>(std::llround(static_cast<double>(m) * step))))
    ms.push_back(m);
  if (ms.back() != max_m) ms.push_back(max_m);
  return ms;
}

uint32_t seed_of(const std::string& name) {
  uint32_t h = 2166136261u;
  for (const char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// ---- small helpers ---------------------------------------------------------------------------------

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

std::vector<int64_t> sample_indices(int64_t n, int64_t count) {
  std::vector<int64_t> out;
  if (n <= 0 || count <= 0) return out;
  if (n <= count) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (count == 1) return {0};
  for (int64_t j = 0; j < count; ++j) out.push_back(j * (n - 1) / (count - 1));
  return out;
}

void parallel_for(int64_t n, const std::function<void(int64_t)>& f) {
  if (n <= 0) return;
  const int64_t threads = std::min<int64_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::exception_ptr first;
  std::mutex mu;
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int64_t i = t; i < n; i += threads) f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  for (std::thread& th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace qsgemm::bench
