#include "qsgemm/device.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

namespace qsgemm {

DeviceInfo device_info(int device) {
  DeviceInfo info;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    info.error = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the sticky-free error so later calls are not confused
    return info;
  }
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) device = 0;
  // Device properties do not change while the process runs: cache them (thread-safe).
  static std::mutex mu;
  static std::vector<DeviceInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (cache.empty()) cache.resize(static_cast<size_t>(count));
  if (device >= count) {
    info.error = "device index out of range";
    return info;
  }
  DeviceInfo& c = cache[static_cast<size_t>(device)];
  if (!c.present) {
    cudaDeviceProp p{};
    e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
      info.error = cudaGetErrorString(e);
      return info;
    }
    c.present = true;
    c.device = device;
    c.name = p.name;
    c.cc_major = p.major;
    c.cc_minor = p.minor;
    c.sm_count = p.multiProcessorCount;
    c.global_memory = p.totalGlobalMem;
    c.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  }
  return c;
}

std::string build_info() {
  std::string s = "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
  s += ", CUTLASS " QSGEMM_CUTLASS_VERSION ", device code sm_90a";
  return s;
}

}  // namespace qsgemm
