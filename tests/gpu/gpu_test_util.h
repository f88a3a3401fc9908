// Helpers shared by the GPU tests: RAII device buffers, poisoning, seeded random data, the skip rule,
// the element-wise and exact output checks, a parallel loop for the float64 reference.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "tolerances.h"

namespace qsgemm::test {

// Whether "no usable GPU" must fail the tests instead of skipping them: QSGEMM_REQUIRE_GPU=1 (set by
// scripts/device_check.sh, so that a device run that silently skipped everything cannot pass).
inline bool gpu_required() {
  const char* v = std::getenv("QSGEMM_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// Every GPU test starts with this (or calls it from SetUp): without an sm_90 device the test is
// skipped, with the reason; with QSGEMM_REQUIRE_GPU=1 it fails instead. This is the only way a GPU
// test may skip.
#define QSGEMM_REQUIRE_SM90()                                                                      \
  do {                                                                                             \
    const auto _info = ::qsgemm::device_info();                                                    \
    if (!_info.supports_kernels()) {                                                               \
      const std::string _why = "needs an sm_90 (H100/H200) GPU: " +                                \
                               (_info.present ? "found " + _info.name                              \
                                              : "no CUDA device (" + _info.error + ")");           \
      if (::qsgemm::test::gpu_required()) FAIL() << _why << " [QSGEMM_REQUIRE_GPU=1]";             \
      GTEST_SKIP() << _why;                                                                        \
    }                                                                                              \
  } while (0)

// The SM count of the current device, for tests that assert a heuristic's pick: the library plans
// with the device's own count (sm_count 0 = the current device), so the test must too.
inline int device_sm_count() { return ::qsgemm::device_info().sm_count; }

#define QSGEMM_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void resize(size_t count) {
    release();
    count_ = count;
    if (count && cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes()) != cudaSuccess) {
      ptr_ = nullptr;
      ADD_FAILURE() << "cudaMalloc(" << bytes() << ") failed";
    }
  }
  void upload(const std::vector<T>& h) {
    EXPECT_LE(h.size(), count_);
    EXPECT_EQ(cudaMemcpy(ptr_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> h(count_);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr_, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  // Fill every byte with `byte` (0xFF makes floats NaN and e4m3 NaN): a kernel that skips an
  // element leaves it visibly wrong.
  void poison(uint8_t byte = 0xFF) { EXPECT_EQ(cudaMemset(ptr_, byte, bytes()), cudaSuccess); }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// Random floats in [-range, range] with a few exact zeros avoided (fresh data per case).
inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float range = 2.0f) {
  std::uniform_real_distribution<float> d(-range, range);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = d(rng);
    if (x == 0.0f) x = 0.5f;
  }
  return v;
}
// Rounds floats to bf16 (so that a bf16 device copy and the float host copy hold the same values).
inline std::vector<uint16_t> to_bf16(std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    b[i] = bf16_encode(v[i]);
    v[i] = bf16_decode(b[i]);
  }
  return b;
}
inline std::vector<uint16_t> to_fp16(std::vector<float>& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    b[i] = fp16_encode(v[i]);
    v[i] = fp16_decode(b[i]);
  }
  return b;
}
// Random e4m3 codes that are finite (never 0x7F/0xFF) and not all zero.
inline std::vector<uint8_t> random_e4m3(size_t n, std::mt19937& rng) {
  std::vector<uint8_t> v(n);
  for (auto& x : v) {
    do x = static_cast<uint8_t>(rng() & 0xFF); while ((x & 0x7F) == 0x7F || (x & 0x78) > 0x58);  // |x| <= 32
  }
  return v;
}
// Output of a GPU GEMM as float, whatever its dtype.
inline std::vector<float> to_float(const std::vector<uint16_t>& raw, bool bf16) {
  std::vector<float> f(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) f[i] = bf16 ? bf16_decode(raw[i]) : fp16_decode(raw[i]);
  return f;
}

// ---- output checks ----------------------------------------------------------------------------

// Element-wise check of a GEMM output against the float64 reference, on every element:
//   |out - ref| <= rtol * |ref| + atol * max(rowmax_m, colmax_n) + floor
// with rowmax_m / colmax_n the largest |ref| of the element's row / column, and (rtol, atol, floor)
// from tolerances.h (element_bound). Why this form:
//  * Output rounding is relative to the element itself: round to nearest is off by at most the unit
//    roundoff u (bf16 2^-8, fp16 2^-11, fp32 2^-24) times |v|, v the kernel's float32 value, so
//    |round(v) - ref| <= u |ref| + (1 + u) |v - ref|: rtol = u, and the float32 error goes to atol.
//  * The float32 arithmetic error is not relative to the element: it comes from the FP8 tensor
//    cores' partial sums (~14 bits kept within a promotion interval of 128 / 256 of K, then summed
//    in float32: ~sqrt(K / interval) * 2^-24 of the terms), whose size is that of the element's
//    typical magnitude, not of its value (an output that cancels to ~0 keeps the error of the
//    partial sums). Its scale is therefore taken from the output around it: the row maximum
//    (x's row magnitude: per-token and per-group x scales) or the column maximum (the weight row's
//    magnitude), whichever is larger, so that a row of small values next to a large column, or a
//    small column in a large row, is not held to a bound its partial sums cannot meet. The measured
//    relative Frobenius error (<= 1.64e-4 fp32, promoted) is about the per-element error relative
//    to that magnitude; atol = 5e-3 is >= 25x that, and still far below what a real fault gives
//    (a dropped or doubled K tile: >= 1/sqrt(K tiles) of the element, a wrong scale: O(1)).
//  * floor: fp16's subnormal spacing, the only absolute error (the data never underflows bf16/fp32).
// Reports the first few failing elements as (row, col) and returns how many failed.
inline int64_t expect_elements_close(const double* ref, const float* out, int64_t M, int64_t N, int64_t ld_out,
                                     const ElementBound& b) {
  std::vector<double> rowmax(static_cast<size_t>(M), 0.0), colmax(static_cast<size_t>(N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double a = std::fabs(ref[m * N + n]);
      rowmax[m] = std::max(rowmax[m], a);
      colmax[n] = std::max(colmax[n], a);
    }
  int64_t bad = 0, first_m = -1, first_n = -1;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double r = ref[m * N + n], o = out[m * ld_out + n];
      const double bound = b.rtol * std::fabs(r) + b.atol * std::max(rowmax[m], colmax[n]) + b.floor;
      if (!(std::fabs(o - r) <= bound)) {  // NaN fails
        if (bad == 0) first_m = m, first_n = n;
        if (bad < 3)
          ADD_FAILURE() << "element (" << m << ", " << n << "): got " << o << ", expected " << r << ", |diff| "
                        << std::fabs(o - r) << " > bound " << bound;
        ++bad;
      }
    }
  EXPECT_EQ(bad, 0) << "of " << M * N << " elements out of bound, the first at (" << first_m << ", " << first_n
                    << ")";
  return bad;
}

// Exact check: every element of out (float, [M][ld_out]) equals ref (float64, [M][N]), which must
// be exactly representable in float32 (checked: that is the test's own premise). Reports the first
// few mismatches as (row, col) and returns how many there were.
inline int64_t expect_elements_exact(const double* ref, const float* out, int64_t M, int64_t N, int64_t ld_out) {
  int64_t bad = 0, not_exact = 0, first_m = -1, first_n = -1;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double r = ref[m * N + n];
      const float rf = static_cast<float>(r);
      if (static_cast<double>(rf) != r) ++not_exact;
      const float o = out[m * ld_out + n];
      if (!(o == rf)) {  // NaN (an unwritten, poisoned element) fails
        if (bad == 0) first_m = m, first_n = n;
        if (bad < 3) ADD_FAILURE() << "element (" << m << ", " << n << "): got " << o << ", expected exactly " << rf;
        ++bad;
      }
    }
  EXPECT_EQ(not_exact, 0) << "reference values not exact in float32: the test's data is wrong, not the kernel";
  EXPECT_EQ(bad, 0) << "of " << M * N << " elements differ, the first at (" << first_m << ", " << first_n << ")";
  return bad;
}

// The bytes of each row of a row-major output past its N elements (ld > N) must keep the poison
// byte: the kernels write only [M, N].
inline int64_t expect_padding_untouched(const std::vector<uint8_t>& raw, int64_t M, int64_t N, int64_t ld, int esize,
                                        uint8_t poison = 0xFF) {
  int64_t written = 0, first_m = -1;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = N * esize; b < ld * esize; ++b)
      if (raw[static_cast<size_t>(m * ld * esize + b)] != poison) {
        if (written++ == 0) first_m = m;
      }
  EXPECT_EQ(written, 0) << "bytes of the padding columns (ld " << ld << " > N " << N << ") were written, first in row "
                        << first_m;
  return written;
}

// Runs f(m0, m1) over [0, M) in chunks on several host threads (the float64 reference of every
// row is O(M N K) on the CPU); chunk starts are multiples of `align` (e.g. 128, so that 128x128
// x-scale blocks stay whole). Threads: QSGEMM_TEST_THREADS, else min(8, hardware threads / 2).
template <class F>
void parallel_rows(int64_t M, int64_t align, F f) {
  int threads = static_cast<int>(std::thread::hardware_concurrency() / 2);
  if (const char* t = std::getenv("QSGEMM_TEST_THREADS")) threads = std::atoi(t);
  threads = std::max(1, std::min(threads, 8));
  const int64_t units = (M + align - 1) / align;
  const int64_t per = (units + threads - 1) / threads;
  if (threads == 1 || units <= 1) {
    f(int64_t{0}, M);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t u = 0; u < units; u += per) {
    const int64_t m0 = u * align, m1 = std::min(M, (u + per) * align);
    pool.emplace_back([=, &f] { f(m0, m1); });
  }
  for (auto& t : pool) t.join();
}

}  // namespace qsgemm::test
