// qsgemm/device.h — what qsgemm knows about the GPU it runs on.
#pragma once

#include <string>

namespace qsgemm {

struct DeviceInfo {
  bool present = false;     // a CUDA device is visible and the driver answers
  int device = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t global_memory = 0; // bytes
  size_t l2_bytes = 0;
  std::string error;        // why present == false
  bool supports_kernels() const { return present && cc_major == 9 && cc_minor == 0; }
};

// Properties of `device` (-1: the current device). Never throws; thread-safe. The device count is
// read once per process and each device's properties once (under a lock, the first time); every
// later call is lock-free: an atomic load and a copy (plus cudaGetDevice for device = -1).
DeviceInfo device_info(int device = -1);

// Build facts: CUDA version compiled against, CUTLASS version, target architectures.
std::string build_info();

}  // namespace qsgemm
