// The second kernel of a split-K call, shared by blockwise_linear and sparse24_linear: the GEMM ran
// as S batches over K slices into a float32 workspace ws [S][M][N] (scales applied, no bias); this
// kernel writes y[m,n] = Σ_s ws[s][m][n] (s = 0, 1, ... in order, float32) + bias[n], rounded once
// to y's dtype (splitk_reduce.cu). Launched with programmatic dependent launch after the GEMM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

struct SplitKReduceArgs {
  const float* ws = nullptr;   // [splits][M][N], 16-byte aligned
  int splits = 1;
  int M = 0, N = 0;            // N % 4 == 0
  const float* bias_f32 = nullptr;  // [N] fp32 bias, or null
  const void* bias_out = nullptr;   // [N] bias in y's dtype, or null (at most one of the two is set)
  void* y = nullptr;  DType y_dtype = DType::kBF16;  int64_t ldy = 0;  // rows 16-byte aligned
  int sm_count = 0;
  const char* fn = "";         // the API function, for errors
};

void run_splitk_reduce(const SplitKReduceArgs& a, cudaStream_t stream);

}  // namespace qsgemm::kernels
