// python/csrc/cuda_common.h — what the CUDA kernels of the ops share (ops_cuda.cpp, w4a4.cpp): the
// operands' device, torch's current stream on it, and a scope that makes that device current.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "ops.h"

// The AOTI shim declares this under USE_CUDA only; it is part of its C ABI in every CUDA build of
// torch >= 2.3 (an extension that defines USE_CUDA itself would see the same declaration).
#ifndef USE_CUDA
extern "C" {
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);
}
#endif

namespace qsgemm_torch::cuda {

// The device of `t` must be a CUDA device; returns its index.
inline int32_t device_of(const char* fn, const char* name, const Tensor& t) {
  int32_t type = 0, index = 0;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(t.get(), &type));
  if (type != aoti_torch_device_type_cuda()) fail(fn, qsgemm::Status::kInvalidArgument, name, "must be a CUDA tensor");
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(t.get(), &index));
  return index;
}

// torch's current stream of `device` (what the caller's torch.cuda.stream(...) context selected).
inline cudaStream_t current_stream(int32_t device) {
  void* s = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(device, &s));
  return static_cast<cudaStream_t>(s);
}

// Makes `device` current for the call when it is not (the library reads the current device for the
// SM count and, while a stream is being captured, for the stream's device); restores it on exit.
class DeviceScope {
 public:
  explicit DeviceScope(int32_t device) {
    int current = 0;
    if (cudaGetDevice(&current) == cudaSuccess && current != device) guard_.emplace(device);
  }

 private:
  std::optional<torch::stable::accelerator::DeviceGuard> guard_;
};

}  // namespace qsgemm_torch::cuda
