// The unit scale of the per-row blockwise family (sm90_blockwise_gemm.cuh): its mainloop runs with
// one scale per tile, always 1, read from this device variable (all strides 0), and the per-token x
// per-channel scales are applied in the epilogue. A device variable, not an allocation: it exists
// once the module is loaded, and its address is read once per device.
#include <cuda_runtime_api.h>

#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "per_device_once.h"
#include "validate.h"

namespace qsgemm::kernels {
namespace {

__device__ float unit_scale = 1.0f;  // never written

}  // namespace

const float* blockwise_unit_scale(int device) {
  constexpr int kMax = detail::PerDeviceOnce::kMaxDevices;
  static detail::PerDeviceOnce once;
  static const float* ptr[kMax] = {};
  void* p = nullptr;
  cudaError_t e;
  if (device >= 0 && device < kMax) {
    e = once.run(device, [&] {
      void* q = nullptr;
      const cudaError_t r = cudaGetSymbolAddress(&q, unit_scale);
      ptr[device] = static_cast<const float*>(q);
      return r;
    });
    p = const_cast<float*>(ptr[device]);
  } else {
    e = cudaGetSymbolAddress(&p, unit_scale);
  }
  detail::check_cuda(e, "blockwise_linear", "cudaGetSymbolAddress(unit scale)");
  return static_cast<const float*>(p);
}

}  // namespace qsgemm::kernels
