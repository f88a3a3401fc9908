// The one-time shared-memory set-up every CUTLASS kernel launch of qsgemm needs (both families).
#pragma once

#include <cuda_runtime_api.h>

#include "cutlass/device_kernel.h"
#include "per_device_once.h"
#include "validate.h"

namespace qsgemm::detail {

// Raises the dynamic shared-memory limit of CUTLASS kernel `Kernel` to what it uses, once per device
// (the attribute is per kernel and per device, not per call). Kernels under the 48 KiB default need
// nothing. Throws qsgemm::Error (naming `fn`) when the CUDA call fails.
template <class Kernel>
void set_cutlass_smem_limit_once(const char* fn, int device) {
  static PerDeviceOnce once;  // one per kernel type
  check_cuda(once.run(device,
                      [] {
                        constexpr int smem = static_cast<int>(Kernel::SharedStorageSize);
                        if (smem < (48 << 10)) return cudaSuccess;
                        return cudaFuncSetAttribute(cutlass::device_kernel<Kernel>,
                                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
                      }),
             fn, "cudaFuncSetAttribute(max dynamic shared memory)");
}

}  // namespace qsgemm::detail
