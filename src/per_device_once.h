// One-time set-up per CUDA device. Kernel attributes such as the dynamic shared-memory limit are
// per device (cudaFuncSetAttribute applies to the current device only), so a process that drives
// several GPUs must set them once on each, not once per process.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>

namespace qsgemm::detail {

// The current device, or -1 when it cannot be read.
inline int current_device() {
  int d = -1;
  return cudaGetDevice(&d) == cudaSuccess ? d : -1;
}

class PerDeviceOnce {
 public:
  static constexpr int kMaxDevices = 64;

  // Runs fn() (which returns a cudaError_t) the first time it is called for `device`, and returns
  // that result on this and every later call for the same device. Thread-safe. A device outside
  // [0, kMaxDevices) runs fn() on every call.
  template <class Fn>
  cudaError_t run(int device, Fn&& fn) {
    if (device < 0 || device >= kMaxDevices) return fn();
    std::call_once(flags_[device], [&] { status_[device] = fn(); });
    return status_[device];
  }

 private:
  std::once_flag flags_[kMaxDevices];
  cudaError_t status_[kMaxDevices] = {};
};

}  // namespace qsgemm::detail
