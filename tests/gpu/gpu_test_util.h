// Helpers shared by the GPU tests: RAII device buffers, poisoning, seeded random data, the skip rule.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "qsgemm/device.h"
#include "qsgemm/formats.h"

namespace qsgemm::test {

// Every GPU test starts with this: without an sm_90 device the test is skipped, with the reason.
#define QSGEMM_REQUIRE_SM90()                                                                      \
  do {                                                                                             \
    const auto _info = ::qsgemm::device_info();                                                    \
    if (!_info.supports_kernels())                                                                 \
      GTEST_SKIP() << "needs an sm_90 (H100/H200) GPU: "                                           \
                   << (_info.present ? "found " + _info.name : "no CUDA device (" + _info.error + ")"); \
  } while (0)

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

}  // namespace qsgemm::test
