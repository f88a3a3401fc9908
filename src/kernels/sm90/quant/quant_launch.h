// Launchers of the FP8 quantization kernels (sm90_quantize_fp8.cu). Operands are validated by the
// callers in src/quant.cpp; these only launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

// Dynamic FP8 quantization of x [rows, cols] in groups of `group` columns (group == cols: one group
// per row; group == 128: 1x128 groups). The scale of (row r, group g) goes to
// scales[r * s_row + g * s_grp]. cols % 8 == 0, x 16-byte aligned rows, q 8-byte aligned rows.
void launch_quantize_fp8_groups(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, int64_t group, float* scales, int64_t s_row, int64_t s_grp, bool pow2,
                                cudaStream_t stream);

// Static: q = e4m3(x * (1 / s)) with s = *scale, or s = scale_value when scale is null. When s is not
// a valid scale (fp8_scale_is_valid), q is all zeros and, if error_flag is not null, *error_flag = 1
// (never cleared by the kernel).
void launch_quantize_fp8_static(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, const float* scale, float scale_value, int32_t* error_flag,
                                cudaStream_t stream);

// 128x128 blocks: scales row-major [ceil(rows/128)][ceil(cols/128)].
void launch_quantize_fp8_blocks(const void* x, DType xt, int64_t ldx, uint8_t* q, int64_t ldq, int64_t rows,
                                int64_t cols, float* scales, cudaStream_t stream);

}  // namespace qsgemm::kernels
