// python/csrc/ops.h — the qsgemm torch ops: what the CPU and CUDA kernels share (operand checks,
// tensor <-> view conversion, allocation through torch, error tagging).
//
// Built against the LibTorch stable ABI only (torch/csrc/stable, torch/headeronly and the AOTI C
// shim) with TORCH_TARGET_VERSION = 2.10, so one binary serves torch >= 2.10.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "qsgemm/error.h"
#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm_torch {

using Tensor = torch::stable::Tensor;
using OptTensor = std::optional<torch::stable::Tensor>;
using ScalarType = torch::headeronly::ScalarType;
using Tensors2 = std::tuple<Tensor, Tensor>;
using Tensors3 = std::tuple<Tensor, Tensor, Tensor>;

// The values of a message, streamed into one string.
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// ---- errors -------------------------------------------------------------------------------------
// Every kernel runs inside `guarded`: a qsgemm::Error leaves as std::runtime_error whose message is
// "[qsgemm:<status>] <library message>" (status_name: invalid_argument, misaligned, invalid_value,
// unsupported, cuda_error, internal). python/qsgemm/_ops.py maps the tag to ValueError /
// NotImplementedError / RuntimeError; a direct torch.ops.qsgemm call sees RuntimeError with the tag.
[[noreturn]] void fail(const char* fn, qsgemm::Status code, const std::string& operand, const std::string& message);
[[noreturn]] void rethrow_tagged(const qsgemm::Error& e);

template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const qsgemm::Error& e) {
    rethrow_tagged(e);
  }
}

// ---- dtypes -------------------------------------------------------------------------------------
// The AOTI dtype codes (int32) of the dtypes the ops use, read once.
struct DtypeCodes {
  int32_t f32, f16, bf16, e4m3, u8, i8;
};
const DtypeCodes& dtype_codes();
int32_t dtype_code(const Tensor& t);
int32_t dtype_code(ScalarType t);
// qsgemm::DType of a tensor; kInvalidArgument naming `name` for a dtype qsgemm has no name for.
qsgemm::DType qs_dtype(const char* fn, const char* name, const Tensor& t);
const char* torch_dtype_name(int32_t code);
// An output dtype argument: bf16 (default), fp16 or fp32.
int32_t out_dtype_code(const char* fn, std::optional<ScalarType> t);

// ---- checks ------------------------------------------------------------------------------------
// dtype among `allowed` (AOTI codes), else kInvalidArgument "dtype X is not accepted; expected one of {..}".
void check_dtype(const char* fn, const char* name, const Tensor& t, std::initializer_list<int32_t> allowed);
void check_dim(const char* fn, const char* name, const Tensor& t, int64_t dim);
// Row-major with unit column stride (a [rows, cols] matrix whose rows may have any stride >= cols).
qsgemm::MatrixView matrix_view(const char* fn, const char* name, const Tensor& t);
void check_contiguous(const char* fn, const char* name, const Tensor& t);
// The quantizers' input: 2-D, contiguous, dtype among `allowed`, K % 8 == 0.
qsgemm::MatrixView check_quant_input(const char* fn, const char* name, const Tensor& x,
                                     std::initializer_list<int32_t> allowed);
void check_numel(const char* fn, const char* name, const Tensor& t, int64_t expected, const char* what);
// All tensors on the device of `ref` (CUDA) or all on the CPU.
void check_same_device(const char* fn, const Tensor& ref, const char* name, const Tensor& t);

struct CompressArgs {
  bool require;     // prune == "require"
  bool per_tensor;  // scale == "per_tensor"
};
CompressArgs parse_compress(const char* fn, const std::string& prune, const std::string& scale);
qsgemm::ScaleGranularity parse_granularity(const char* fn, const char* name, const std::string& s);
// Scale count of an operand with `rows` rows: per_tensor 1, per_row rows, group_1x128 rows x G,
// block_128x128 ceil(rows/128) x G.
int64_t scale_count(qsgemm::ScaleGranularity g, int64_t rows, int64_t K);

// ---- allocation (torch's allocators: the CUDA caching allocator on GPU) -----------------------------
Tensor empty(std::initializer_list<int64_t> sizes, int32_t dtype, const Tensor& like);
Tensor empty_strided(std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides, int32_t dtype,
                     const Tensor& like);

// ---- the kernels ----------------------------------------------------------------------------------
// Names and arguments follow the schemas in register.cpp; *_out write `out` and return nothing.
namespace cuda {
Tensors3 sparse24_compress(const Tensor& w, const std::string& prune, const std::string& scale, const OptTensor& given);
void sparse24_decompress_out(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N, int64_t K,
                             const Tensor& out);
void sparse24_linear_out(const Tensor& x, const Tensor& x_scale, const Tensor& values, const Tensor& meta,
                         const Tensor& w_scale, const OptTensor& bias, bool fast_accum, const Tensor& out);
Tensors2 quantize_fp8_per_token(const Tensor& x, bool pow2);
Tensors2 quantize_fp8_per_token_group(const Tensor& x, bool pow2);
Tensors2 quantize_fp8_weight(const Tensor& w, const std::string& granularity);
void blockwise_linear_out(const Tensor& x, const Tensor& x_scale, const std::string& gx, const Tensor& w,
                          const Tensor& w_scale, const std::string& gw, const OptTensor& bias, const Tensor& out);
}  // namespace cuda
namespace cpu {
Tensors3 sparse24_compress(const Tensor& w, const std::string& prune, const std::string& scale, const OptTensor& given);
void sparse24_decompress_out(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N, int64_t K,
                             const Tensor& out);
void sparse24_linear_out(const Tensor& x, const Tensor& x_scale, const Tensor& values, const Tensor& meta,
                         const Tensor& w_scale, const OptTensor& bias, bool fast_accum, const Tensor& out);
Tensors2 quantize_fp8_per_token(const Tensor& x, bool pow2);
Tensors2 quantize_fp8_per_token_group(const Tensor& x, bool pow2);
Tensors2 quantize_fp8_weight(const Tensor& w, const std::string& granularity);
void blockwise_linear_out(const Tensor& x, const Tensor& x_scale, const std::string& gx, const Tensor& w,
                          const Tensor& w_scale, const std::string& gw, const OptTensor& bias, const Tensor& out);
}  // namespace cpu

// Shared operand checks of the GEMMs (both devices), returning the problem shape.
struct Sparse24Problem {
  int64_t M, N, K;
  bool per_tensor_w, per_tensor_x;
};
Sparse24Problem check_sparse24_linear(const char* fn, const Tensor& x, const Tensor& x_scale, const Tensor& values,
                                      const Tensor& meta, const Tensor& w_scale, const OptTensor& bias,
                                      const Tensor& out);
// N, K > 0, N % 8 == 0, K % 32 == 0 (the library's rule and wording, src/sparse24.cpp).
void check_sparse24_shape(const char* fn, int64_t N, int64_t K);
void check_sparse24_weight(const char* fn, const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N,
                           int64_t K);
struct BlockwiseProblem {
  int64_t M, N, K;
  qsgemm::ScaleGranularity gx, gw;
  int64_t ld_sx;  // group_1x128 x scales: the M-major leading dimension
  int64_t ld_x, ld_w;  // row strides of x and w (row-major; rows may be padded, e.g. to fp8_row_ld(K))
};
BlockwiseProblem check_blockwise_linear(const char* fn, const Tensor& x, const Tensor& x_scale, const std::string& gx,
                                        const Tensor& w, const Tensor& w_scale, const std::string& gw,
                                        const OptTensor& bias, const Tensor& out);
// Output shapes (the fake kernels in python/qsgemm/_ops.py compute the same).
std::tuple<int64_t, int64_t> weight_scale_shape(qsgemm::ScaleGranularity g, int64_t N, int64_t K);

}  // namespace qsgemm_torch
