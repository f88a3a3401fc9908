// The second kernel of a split-K call, shared by blockwise_linear and sparse24_linear: the GEMM ran
// as S batches over K slices into a float32 workspace ws [S][M][N] (scales applied, no bias); this
// kernel writes y[m,n] = Σ_s ws[s][m][n] (s = 0, 1, ... in order, float32) + bias[n], rounded once
// to y's dtype (splitk_reduce.cu). Launched with programmatic dependent launch after the GEMM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

struct SplitKReduceArgs {
  const float* ws;             // [splits][M][N], 16-byte aligned
  int splits;
  int M, N;                    // N % 4 == 0
  const void* bias;            // [N], or null
  DType bias_dtype;            // kF32 or y_dtype
  void* y;                     // [M][ldy], rows 16-byte aligned
  DType y_dtype;
  int64_t ldy;
  int sm_count;
  const char* fn;              // the API function, for errors
};

void run_splitk_reduce(const SplitKReduceArgs& a, cudaStream_t stream);

// Bytes of a split-K workspace: split_k float32 slices of [M][N].
inline size_t splitk_workspace_bytes(int64_t M, int64_t N, int split_k) {
  return static_cast<size_t>(split_k) * static_cast<size_t>(M) * static_cast<size_t>(N) * sizeof(float);
}
// A forced split's workspace rule, shared by both families: non-null and at least
// splitk_workspace_bytes(M, N, split_k) bytes; otherwise kInvalidArgument (operand options.workspace)
// naming the size needed and what was given.
void check_splitk_workspace(const char* fn, int split_k, int64_t M, int64_t N, const void* workspace, size_t bytes);

}  // namespace qsgemm::kernels
