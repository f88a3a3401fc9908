#include "validate.h"

#include <cstdint>

#include "qsgemm/device.h"

namespace qsgemm::detail {

void fail(const char* fn, Status code, const std::string& operand, const std::string& message) {
  std::string msg = cat("qsgemm::", fn, ": ", message);
  if (!operand.empty()) msg += cat(" (operand ", operand, ")");
  throw Error(code, operand, msg);
}

void check_cuda(cudaError_t e, const char* fn, const char* what) {
  if (e != cudaSuccess)
    fail(fn, Status::kCudaError, "", cat(what, " failed: ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
}

void check_launch(const char* fn, const char* kernel) { check_cuda(cudaGetLastError(), fn, kernel); }

void check_dtype(const char* fn, const char* name, DType t, std::initializer_list<DType> allowed) {
  std::string list;
  for (DType a : allowed) {
    if (a == t) return;
    list += list.empty() ? dtype_name(a) : cat(", ", dtype_name(a));
  }
  fail(fn, Status::kInvalidArgument, name, cat("dtype ", dtype_name(t), " is not accepted; expected one of {", list, "}"));
}

void check_ptr(const char* fn, const char* name, const void* p, int align_bytes) {
  if (p == nullptr) fail(fn, Status::kInvalidArgument, name, "null pointer");
  if (reinterpret_cast<uintptr_t>(p) % align_bytes != 0)
    fail(fn, Status::kMisaligned, name, cat("pointer ", p, " must be ", align_bytes, "-byte aligned"));
}

void check_matrix(const char* fn, const char* name, const MatrixView& m, std::initializer_list<DType> allowed,
                  int64_t rows, int64_t cols, int align_bytes) {
  check_dtype(fn, name, m.dtype, allowed);
  if (rows >= 0 && m.rows != rows)
    fail(fn, Status::kInvalidArgument, name, cat("has ", m.rows, " rows, expected ", rows));
  if (cols >= 0 && m.cols != cols)
    fail(fn, Status::kInvalidArgument, name, cat("has ", m.cols, " columns, expected ", cols));
  if (m.rows < 0 || m.cols < 0) fail(fn, Status::kInvalidArgument, name, cat("negative shape [", m.rows, ", ", m.cols, "]"));
  if (m.ld < m.cols) fail(fn, Status::kInvalidArgument, name, cat("ld=", m.ld, " is smaller than cols=", m.cols));
  if (m.rows == 0 || m.cols == 0) return;
  check_ptr(fn, name, m.data, align_bytes);
  const int64_t ld_bytes = m.ld * dtype_size(m.dtype);
  if (ld_bytes % align_bytes != 0)  // also for one row: TMA descriptors encode the stride
    fail(fn, Status::kMisaligned, name,
         cat("ld=", m.ld, " (", ld_bytes, " bytes) must be a multiple of ", align_bytes, " bytes"));
}

ByteRange byte_range(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return {};
  const auto b = reinterpret_cast<uintptr_t>(p);
  return {b, b + bytes};
}

ByteRange byte_range(const MatrixView& m) {
  if (m.rows <= 0 || m.cols <= 0) return {};
  const size_t elems = static_cast<size_t>((m.rows - 1) * m.ld + m.cols);
  return byte_range(m.data, elems * static_cast<size_t>(dtype_size(m.dtype)));
}

void check_no_overlap(const char* fn, const char* out_name, ByteRange out, const char* in_name, ByteRange in) {
  if (out.empty() || in.empty()) return;
  if (out.begin < in.end && in.begin < out.end)
    fail(fn, Status::kInvalidArgument, out_name,
         cat(out_name, " [", reinterpret_cast<const void*>(out.begin), ", ", reinterpret_cast<const void*>(out.end),
             ") overlaps ", in_name, " [", reinterpret_cast<const void*>(in.begin), ", ",
             reinterpret_cast<const void*>(in.end), "): outputs may not alias inputs"));
}

int stream_device(const char* fn, cudaStream_t stream) {
  int device = -1;
  cudaError_t e;
  // cudaStreamGetDevice is not permitted on a stream that is being captured into a CUDA graph: it
  // fails with cudaErrorStreamCaptureUnsupported and invalidates the capture (tuning/graph_capture.txt).
  // cudaStreamIsCapturing is; a capturing stream is taken to belong to the current device, the one
  // the capturing code selected (as torch.cuda.graph does).
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool default_stream = stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
  if (!default_stream && cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    (void)cudaGetLastError();  // cudaStreamGetDevice below reports a bad stream
    capture = cudaStreamCaptureStatusNone;
  }
  if (default_stream || capture != cudaStreamCaptureStatusNone)
    e = cudaGetDevice(&device);  // the default streams belong to the current device
  else
    e = cudaStreamGetDevice(stream, &device);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    fail(fn, Status::kUnsupported, "", cat("no CUDA device is available (the kernels need an sm_90a GPU): ", cudaGetErrorString(e)));
  }
  check_cuda(e, fn, "cudaStreamGetDevice(stream)");
  return device;
}

DeviceInfo require_sm90(const char* fn, int device) {
  const DeviceInfo d = device_info(device);
  if (!d.present) fail(fn, Status::kUnsupported, "", "no CUDA device is available (the kernels need an sm_90a GPU)");
  if (d.cc_major != 9 || d.cc_minor != 0)
    fail(fn, Status::kUnsupported, "",
         cat("device ", d.device, " is sm_", d.cc_major, d.cc_minor, "; qsgemm's kernels are built for sm_90a (H100/H200)"));
  return d;
}

}  // namespace qsgemm::detail
