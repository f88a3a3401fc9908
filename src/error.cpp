#include "qsgemm/error.h"
#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm {

const char* status_name(Status s) noexcept {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kInvalidArgument: return "invalid_argument";
    case Status::kMisaligned: return "misaligned";
    case Status::kInvalidValue: return "invalid_value";
    case Status::kUnsupported: return "unsupported";
    case Status::kCudaError: return "cuda_error";
    case Status::kInternal: return "internal";
  }
  return "unknown";
}

const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kE4M3: return "e4m3";
    case DType::kU8: return "u8";
    case DType::kI4x2: return "int4x2";
    case DType::kI8: return "int8";
  }
  return "unknown";
}

const char* granularity_name(ScaleGranularity g) noexcept {
  switch (g) {
    case ScaleGranularity::kPerTensor: return "per_tensor";
    case ScaleGranularity::kPerRow: return "per_row";
    case ScaleGranularity::kGroup1x128: return "group_1x128";
    case ScaleGranularity::kBlock128x128: return "block_128x128";
  }
  return "unknown";
}

}  // namespace qsgemm
