#include "qsgemm/device.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>

namespace qsgemm {
namespace {

// Device properties do not change while the process runs. The device count is read once, each
// device's properties once; after that device_info is an atomic load and a copy, with no lock and
// no CUDA call except cudaGetDevice for device = -1. Every GEMM launch asks for its device's SM
// count, so this is on the hot path.
constexpr int kMaxDevices = 64;

struct Count {
  int count = 0;
  std::string error;  // why count == 0
};
const Count& device_count() {
  static const Count c = [] {
    Count r;
    const cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess || r.count <= 0) {
      r.count = 0;
      r.error = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
      cudaGetLastError();  // clear the error so that later calls are not confused
    }
    return r;
  }();  // thread-safe initialization; later calls read it without a lock
  return c;
}

struct Entry {
  std::atomic<bool> ready{false};
  DeviceInfo info;  // written once under `mu`, before ready is set (release)
};
Entry g_entries[kMaxDevices];
std::mutex g_fill_mu;  // only taken while a device's entry is filled for the first time

DeviceInfo read_properties(int device) {
  DeviceInfo info;
  cudaDeviceProp p{};
  const cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) {
    info.error = cudaGetErrorString(e);
    cudaGetLastError();
    return info;
  }
  info.present = true;
  info.device = device;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.global_memory = p.totalGlobalMem;
  info.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  return info;
}

}  // namespace

DeviceInfo device_info(int device) {
  const Count& c = device_count();
  if (c.count == 0) {
    DeviceInfo info;
    info.error = c.error;
    return info;
  }
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) device = 0;
  if (device >= c.count) {
    DeviceInfo info;
    info.error = "device index out of range";
    return info;
  }
  if (device >= kMaxDevices) return read_properties(device);  // not cached (no such machine today)
  Entry& en = g_entries[device];
  if (en.ready.load(std::memory_order_acquire)) return en.info;  // the hot path
  std::lock_guard<std::mutex> lock(g_fill_mu);
  if (!en.ready.load(std::memory_order_relaxed)) {
    DeviceInfo info = read_properties(device);
    if (!info.present) return info;  // not cached: a later call tries again
    en.info = std::move(info);
    en.ready.store(true, std::memory_order_release);
  }
  return en.info;
}

namespace detail {

const DeviceInfo* cached_device_info(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  const Entry& en = g_entries[device];
  return en.ready.load(std::memory_order_acquire) ? &en.info : nullptr;
}

}  // namespace detail

std::string build_info() {
  std::string s = "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
  s += ", CUTLASS " QSGEMM_CUTLASS_VERSION ", device code sm_90a";
  return s;
}

}  // namespace qsgemm
