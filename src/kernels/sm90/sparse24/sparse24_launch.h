// Launchers of the 2:4 sparse FP8 kernels. Operands are validated by src/sparse24.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

// Everything one sparse GEMM launch needs, in the kernel's coordinates (see sm90_sparse24_configs.h):
// D[n_out, m_tok] column-major == Y[m_tok, n_out] row-major with leading dimension ldy.
struct Sparse24GemmArgs {
  int64_t m_tok = 0, n_out = 0, k = 0;
  const uint8_t* x = nullptr;  int64_t ldx = 0;   // e4m3 [m_tok, k]
  const uint8_t* w_values = nullptr;              // e4m3 [n_out, k/2]
  const uint8_t* w_meta = nullptr;
  const float* w_scale = nullptr;  bool w_scale_scalar = false;
  const float* x_scale = nullptr;  bool x_scale_scalar = false;
  const void* bias = nullptr;      DType bias_dtype = DType::kF32;  // null: no bias
  void* y = nullptr;  DType y_dtype = DType::kBF16;  int64_t ldy = 0;
  int device = 0;    // the stream's device (CUTLASS's hw_info.device_id, per-device kernel attributes)
  int sm_count = 0;  // its SM count (> 0)
  int swizzle = 1, raster = 0;  // CUTLASS's tile order (tile_order.h)
  // Stream-K configurations only: device memory of at least sparse24_gemm_workspace_bytes() bytes
  // (16-byte aligned) and its size; null and 0 for the others.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Split-K (data-parallel configurations only): > 1 runs the GEMM as `splits` batches over K slices
  // of K / splits (whole 256-wide K tiles: K % (256 * splits) == 0) into y = float32
  // [splits][m_tok][ldy], scaled and unbiased; run_splitk_reduce (kernels/sm90/common/splitk_reduce.h)
  // then writes the real output. src/sparse24.cpp sets it up.
  int splits = 1;
  // Tuning (Sparse24Options::whole_last_tile): a last token column partly past M loads X's whole
  // box, rows past M included, instead of its own rows only.
  bool whole_last_tile = false;
};

// Runs CUTLASS configuration `config` (a row of kSparse24Configs, not the decode kernel). Throws qsgemm::Error when
// CUTLASS refuses the problem (can_implement) or the launch fails.
void run_sparse24_gemm(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
// The workspace configuration `config` needs for the problem in `a` (host arithmetic only: no device
// call; a.sm_count must be set): 0 for the configurations without stream-K.
size_t sparse24_gemm_workspace_bytes(const Sparse24GemmArgs& a, int config);
// The kWide rows, one instantiation per output / bias
// dtype pair (sm90_sparse24_gemm_wide_*.cu); run_sparse24_gemm dispatches to them.
template <class ElementOut, class ElementBias>
void run_sparse24_wide_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
// The kBetween rows (sm90_sparse24_gemm_between_*.cu), likewise.
template <class ElementOut, class ElementBias>
void run_sparse24_between_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
// The kBand rows (sm90_sparse24_gemm_band_*.cu), likewise.
template <class ElementOut, class ElementBias>
void run_sparse24_band_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
// The kCluster rows (sm90_sparse24_gemm_cluster_*.cu), likewise.
template <class ElementOut, class ElementBias>
void run_sparse24_cluster_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
// The kStreamK rows, one instantiation per output / bias dtype pair
// (sm90_sparse24_gemm_streamk_*.cu); run_sparse24_gemm and sparse24_gemm_workspace_bytes dispatch to them.
template <class ElementOut, class ElementBias>
void run_sparse24_streamk_config(const Sparse24GemmArgs& a, int config, cudaStream_t stream);
template <class ElementOut, class ElementBias>
size_t sparse24_streamk_workspace_bytes(const Sparse24GemmArgs& a, int config);

// Compression: see include/qsgemm/sparse24.h. Workspace layout: Sparse24CompressStatus.
// The launcher's caller initializes the first_* fields to ~0 and the rest to 0 (kFirstFieldsBytes).
struct Sparse24CompressStatus {
  unsigned long long first_nonfinite;  // row * K + column of the first NaN/Inf, ~0 if none
  unsigned long long first_not_24;     // row * (K/4) + group of the first group with > 2 non-zeros, ~0 if none
  unsigned long long first_bad_scale;  // Sparse24Scale::kGiven: the first channel whose given scale is
                                       // not fp8_scale_is_valid (0 for a per-tensor scale), ~0 if none
  unsigned int amax_bits;              // per-tensor amax of the kept values (float bits)
  unsigned int pad;
  static constexpr size_t kFirstFieldsBytes = 3 * sizeof(unsigned long long);
};
static_assert(sizeof(Sparse24CompressStatus) == 32, "sparse24_compress memsets the status in two parts");
// Runs on the device of `stream`. A given scale (scale_mode 2) that is not fp8_scale_is_valid is
// recorded in status->first_bad_scale and its channel's values are written as zeros.
void launch_sparse24_compress(const void* w, DType wt, int64_t ldw, int64_t N, int64_t K, bool require_24,
                              int scale_mode /*0 per-channel, 1 per-tensor, 2 given*/, bool given_scalar, uint8_t* values, uint8_t* meta,
                              float* scales, Sparse24CompressStatus* status, cudaStream_t stream);
void launch_sparse24_decompress(const uint8_t* values, const uint8_t* meta, const float* scales, bool scale_scalar,
                                int64_t N, int64_t K, void* out, DType out_dtype, int64_t ld_out, cudaStream_t stream);

}  // namespace qsgemm::kernels
