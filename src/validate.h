// Operand validation shared by every entry point: one place that formats the error messages.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>

#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/tensor.h"

namespace qsgemm::detail {

// Throws Error(code, operand, "<fn>: <message> (operand <operand>)").
[[noreturn]] void fail(const char* fn, Status code, const std::string& operand, const std::string& message);

// Throws Status::kCudaError naming the call when `e` is not cudaSuccess.
void check_cuda(cudaError_t e, const char* fn, const char* what);
// After a launch: surfaces launch-configuration errors (cudaGetLastError), no synchronization.
void check_launch(const char* fn, const char* kernel);

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Checks a matrix operand: non-null data (when rows*cols > 0), dtype in `allowed`, the exact shape
// (pass -1 to skip a dimension), ld >= cols, the base pointer aligned to `align_bytes`, and
// ld * element size a multiple of `align_bytes` (for one row too).
void check_matrix(const char* fn, const char* name, const MatrixView& m, std::initializer_list<DType> allowed,
                  int64_t rows, int64_t cols, int align_bytes);
void check_dtype(const char* fn, const char* name, DType t, std::initializer_list<DType> allowed);
void check_ptr(const char* fn, const char* name, const void* p, int align_bytes);

// The bytes a matrix view spans: [data, data + ((rows - 1) * ld + cols) * element size); empty
// (begin == end) for an empty view or a null pointer.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
};
ByteRange byte_range(const MatrixView& m);
ByteRange byte_range(const void* p, size_t bytes);
// Throws kInvalidArgument naming both operands when an output range overlaps an input (or another
// output): a kernel reading what it writes gives a result that depends on timing.
void check_no_overlap(const char* fn, const char* out_name, ByteRange out, const char* in_name, ByteRange in);

// The device `stream` belongs to: cudaStreamGetDevice for a created stream; the current device for
// the legacy default stream (0 / cudaStreamLegacy) and the per-thread default stream. Throws
// kUnsupported when no CUDA device is available, kCudaError when the query fails.
int stream_device(const char* fn, cudaStream_t stream);
// Throws kUnsupported unless `device` (an index, -1: the current device) has compute capability 9.0
// (the sm_90a kernels run there only). Returns its properties.
DeviceInfo require_sm90(const char* fn, int device);

}  // namespace qsgemm::detail
