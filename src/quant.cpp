// Public FP8 quantizers (include/qsgemm/quant.h): validation, then the launchers.
#include "qsgemm/quant.h"

#include "kernels/sm90/quant/quant_launch.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm {
namespace {

// Shared rules: x bf16/fp16 (or fp32 for weights) with 16-byte rows; q e4m3 [same shape] with
// 8-byte rows; cols % 8 == 0 (each thread moves 8 elements); q may not overlap x.
void check_x_q(const char* fn, const MatrixView& x, const MatrixView& q, bool allow_f32, const char* x_name = "x") {
  if (allow_f32)
    detail::check_matrix(fn, x_name, x, {DType::kBF16, DType::kF16, DType::kF32}, -1, -1, 16);
  else
    detail::check_matrix(fn, x_name, x, {DType::kBF16, DType::kF16}, -1, -1, 16);
  detail::check_matrix(fn, "q", q, {DType::kE4M3}, x.rows, x.cols, 8);
  if (x.cols % 8 != 0)
    detail::fail(fn, Status::kInvalidArgument, x_name, detail::cat("K=", x.cols, " must be a multiple of 8"));
  detail::check_no_overlap(fn, "q", detail::byte_range(q), x_name, detail::byte_range(x));
}

// The scales an output writes may overlap neither the input nor the codes.
void check_scales(const char* fn, const float* scales, size_t count, const MatrixView& x, const MatrixView& q,
                  const char* x_name = "x") {
  detail::check_ptr(fn, "scales", scales, 4);
  const detail::ByteRange r = detail::byte_range(scales, count * sizeof(float));
  detail::check_no_overlap(fn, "scales", r, x_name, detail::byte_range(x));
  detail::check_no_overlap(fn, "scales", r, "q", detail::byte_range(q));
}

void check_error_flag(const char* fn, const int32_t* error_flag, const MatrixView& x, const MatrixView& q) {
  if (error_flag == nullptr) return;
  detail::check_ptr(fn, "error_flag", error_flag, 4);
  const detail::ByteRange r = detail::byte_range(error_flag, sizeof(int32_t));
  detail::check_no_overlap(fn, "error_flag", r, "x", detail::byte_range(x));
  detail::check_no_overlap(fn, "error_flag", r, "q", detail::byte_range(q));
}

}  // namespace

void quantize_fp8_per_token(const MatrixView& x, const MatrixView& q, float* scales, bool pow2_scales,
                            cudaStream_t stream) {
  const char* fn = "quantize_fp8_per_token";
  check_x_q(fn, x, q, false);
  if (x.rows == 0 || x.cols == 0) return;
  check_scales(fn, scales, static_cast<size_t>(x.rows), x, q);
  kernels::launch_quantize_fp8_groups(x.data, x.dtype, x.ld, static_cast<uint8_t*>(q.data), q.ld, x.rows, x.cols,
                                      x.cols, scales, 1, 0, pow2_scales, stream);
}

void quantize_fp8_static(const MatrixView& x, const MatrixView& q, const float* scale, cudaStream_t stream,
                         int32_t* error_flag) {
  const char* fn = "quantize_fp8_static";
  check_x_q(fn, x, q, false);
  if (x.rows == 0 || x.cols == 0) return;
  detail::check_ptr(fn, "scale", scale, 4);
  detail::check_no_overlap(fn, "q", detail::byte_range(q), "scale", detail::byte_range(scale, sizeof(float)));
  check_error_flag(fn, error_flag, x, q);
  kernels::launch_quantize_fp8_static(x.data, x.dtype, x.ld, static_cast<uint8_t*>(q.data), q.ld, x.rows, x.cols,
                                      scale, 0.0f, error_flag, stream);
}

void quantize_fp8_static(const MatrixView& x, const MatrixView& q, float scale, cudaStream_t stream) {
  const char* fn = "quantize_fp8_static";
  check_x_q(fn, x, q, false);
  if (!fp8_scale_is_valid(scale))
    detail::fail(fn, Status::kInvalidValue, "scale",
                 detail::cat("scale=", scale, " must be a positive, normal, finite float (>= ", FLT_MIN, ")"));
  if (x.rows == 0 || x.cols == 0) return;
  kernels::launch_quantize_fp8_static(x.data, x.dtype, x.ld, static_cast<uint8_t*>(q.data), q.ld, x.rows, x.cols,
                                      nullptr, scale, nullptr, stream);
}

void quantize_fp8_per_token_group(const MatrixView& x, const MatrixView& q, float* scales, int64_t ld_scales,
                                  bool pow2_scales, cudaStream_t stream) {
  const char* fn = "quantize_fp8_per_token_group";
  check_x_q(fn, x, q, false);
  if (ld_scales < x.rows)
    detail::fail(fn, Status::kInvalidArgument, "ld_scales", detail::cat("ld_scales=", ld_scales, " must be >= M=", x.rows));
  if (x.rows == 0 || x.cols == 0) return;
  const int64_t groups = ceil_div(x.cols, kScaleGroupK);
  check_scales(fn, scales, static_cast<size_t>((groups - 1) * ld_scales + x.rows), x, q);
  kernels::launch_quantize_fp8_groups(x.data, x.dtype, x.ld, static_cast<uint8_t*>(q.data), q.ld, x.rows, x.cols,
                                      kScaleGroupK, scales, 1, ld_scales, pow2_scales, stream);
}

void quantize_fp8_weight(const MatrixView& w, const MatrixView& q, float* scales, ScaleGranularity g,
                         cudaStream_t stream) {
  const char* fn = "quantize_fp8_weight";
  check_x_q(fn, w, q, true, "w");
  if (g != ScaleGranularity::kBlock128x128 && g != ScaleGranularity::kGroup1x128)
    detail::fail(fn, Status::kInvalidArgument, "granularity",
                 detail::cat("granularity ", granularity_name(g), " is not a weight granularity; use block_128x128 or group_1x128"));
  if (w.rows == 0 || w.cols == 0) return;
  const int64_t kb = ceil_div(w.cols, kScaleGroupK);
  const int64_t n_scales = g == ScaleGranularity::kBlock128x128 ? ceil_div(w.rows, kScaleGroupK) * kb : w.rows * kb;
  check_scales(fn, scales, static_cast<size_t>(n_scales), w, q, "w");
  if (g == ScaleGranularity::kBlock128x128)
    kernels::launch_quantize_fp8_blocks(w.data, w.dtype, w.ld, static_cast<uint8_t*>(q.data), q.ld, w.rows, w.cols,
                                        scales, stream);
  else
    kernels::launch_quantize_fp8_groups(w.data, w.dtype, w.ld, static_cast<uint8_t*>(q.data), q.ld, w.rows, w.cols,
                                        kScaleGroupK, scales, ceil_div(w.cols, kScaleGroupK), 1, false, stream);
}

}  // namespace qsgemm
