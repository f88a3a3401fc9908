// The second kernel of a split-K call, shared by blockwise_linear and sparse24_linear: the GEMM ran
// as S batches over K slices into a float32 workspace ws [S][M][N] (scales applied, no bias); this
// kernel writes y[m,n] = Σ_s ws[s][m][n] (s = 0, 1, ... in order, float32) [+ tail] + bias[n],
// rounded once to y's dtype (splitk_reduce.cu). Launched with programmatic dependent launch after the GEMM.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

// The partial last K group of a blockwise split (src/blockwise.cpp): the GEMM's slices hold the
// whole 128-wide groups, and the reduction adds, per output,
//   (Σ_k x[m,k] · w[n,k]) · (sx(m) · sw(n))   over the kt columns past them (fp32 FMAs, k in order).
struct SplitKTail {
  const uint8_t* x = nullptr;  int64_t ldx = 0;  // e4m3: row m's kt columns at x + m·ldx, 16-byte aligned
  const uint8_t* w = nullptr;  int64_t ldw = 0;  // e4m3: row n's kt columns at w + n·ldw, 16-byte aligned
  int kt = 0;                                     // a multiple of 16 in [16, 112]
  // The tail group's scale of row r is s[(r >> shift) · stride]: shift 0 for a scale per row, 7 for
  // one per 128-row block.
  const float* sx = nullptr;  int64_t sx_stride = 0;  int sx_shift = 0;
  const float* sw = nullptr;  int64_t sw_stride = 0;  int sw_shift = 0;
};

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
  const SplitKTail* tail = nullptr;  // or null: K holds whole groups only
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
