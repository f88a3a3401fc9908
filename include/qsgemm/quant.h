// qsgemm/quant.h — GPU quantizers into the FP8 formats of docs/formats.md §1–§3.
//
// Every function is stream-ordered (enqueues on `stream`, never synchronizes, never allocates) and
// validates its operands first, throwing qsgemm::Error naming the bad operand and value. Outputs are
// bit-identical to the CPU reference in qsgemm/reference.h (checked by tests/gpu/test_quant_gpu.cpp).
// Outputs (q, scales) may not overlap the input or each other (kInvalidArgument naming both).
// Dynamic scales come from fp8_scale_from_amax (qsgemm/formats.h): never below FLT_MIN, so that a
// group with a tiny non-zero amax still quantizes to finite codes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "qsgemm/tensor.h"

namespace qsgemm {

// How many scales one operand carries (docs/formats.md §2).
enum class ScaleGranularity : uint8_t {
  kPerTensor,    // one float
  kPerRow,       // one float per row: per-token [M] for X, per-channel [N] for W
  kGroup1x128,   // one float per row per 128 of K; activations: M-major [ceil(K/128)][ld_s >= M],
                 // weights (per-channel groups): row-major [N][ceil(K/128)]
  kBlock128x128, // one float per 128x128 block, row-major [ceil(rows/128)][ceil(K/128)]
};
const char* granularity_name(ScaleGranularity g) noexcept;

// Scales of one operand as the kernels read them.
//   data: float32, device memory, 4-byte aligned.
//   ld:   for kGroup1x128 activations, the M-major leading dimension (>= M); ignored otherwise.
struct ScaleView {
  const float* data = nullptr;
  ScaleGranularity granularity = ScaleGranularity::kPerRow;
  int64_t ld = 0;
};

// The row stride (elements) to give an e4m3 [rows, K] operand of the FP8 GEMMs: K when K % 128 == 0,
// else K rounded up to a multiple of 128. The GEMMs' TMA loads read 128-byte row chunks; a row that
// starts off a 128-byte line makes each of them touch two lines (K = 4112 packed runs ~1.45x the
// time of ld = 4224 on one 128x128 tile, M = N = 4096 on the H200). The Python package's quantizers
// allocate their e4m3 outputs with this stride; C++ callers pass it as the q view's ld.
constexpr int64_t fp8_row_ld(int64_t K) noexcept { return K % 128 == 0 ? K : (K / 128 + 1) * 128; }

// The leading dimension (floats) to give M-major activation scales [groups][ld >= M] where a GEMM
// loads them by TMA (w4a4_linear's, blockwise_linear's expanded copy of x blocks): M rounded up to
// a multiple of 4, so that every group's column starts 16 bytes after the last (the stride rule of
// a TMA map; DeepGEMM pads its M-major scales the same way). 4 for M <= 4.
constexpr int64_t m_major_scale_ld(int64_t M) noexcept { return M <= 4 ? 4 : (M + 3) / 4 * 4; }

// Dynamic per-token (kPerRow) FP8 quantization of activations.
//   x:      bf16 or fp16 [M, K], row-major, ld >= K, 16-byte aligned base, ld a multiple of 8;
//           K % 8 == 0 (each thread moves 8 elements).
//   q:      e4m3 [M, K] written, row-major, ld >= K, 8-byte aligned base, ld a multiple of 8.
//           (The GEMMs want 16-byte e4m3 rows: use ld % 16 == 0 when q feeds them.)
//   scales: float [M] written, 4-byte aligned: scale[m] = max(amax(x[m,:]) / 448, FLT_MIN) (1 for
//           an all-zero row), or the power of two at or above it with pow2_scales.
// M = 0 is a no-op. Non-finite inputs propagate (NaN -> e4m3 NaN code 0x7F); they are not checked.
void quantize_fp8_per_token(const MatrixView& x, const MatrixView& q, float* scales, bool pow2_scales,
                            cudaStream_t stream);

// Static FP8 quantization with a given scale: q = e4m3(x * (1 / scale)) (docs/formats.md §2).
//   x, q: as for quantize_fp8_per_token (q may not overlap x).
// A usable scale is positive, normal and finite (fp8_scale_is_valid in qsgemm/formats.h:
// FLT_MIN <= scale <= FLT_MAX); 0, negative, subnormal, NaN and Inf are not (1/scale would be Inf,
// NaN or negative and the codes NaN or negated). Never a silent NaN:
//  * Host scale (this overload): checked on the host before anything is enqueued; a bad scale
//    throws Status::kInvalidValue naming "scale" and its value.
//  * Device scale (one float in device memory, 4-byte aligned): the kernel reads it, and when it is
//    not usable it writes q = all zeros (0x00 codes) and, if error_flag is not null, sets
//    *error_flag = 1. The kernel never clears the flag: zero it once (cudaMemsetAsync), run any
//    number of static quantizations with it, then read it back when convenient; non-zero means at
//    least one of them had a bad scale. error_flag: int32 in device memory, 4-byte aligned.
// M = 0 is a no-op (the host scale is still checked).
void quantize_fp8_static(const MatrixView& x, const MatrixView& q, float scale, cudaStream_t stream);
void quantize_fp8_static(const MatrixView& x, const MatrixView& q, const float* scale, cudaStream_t stream,
                         int32_t* error_flag = nullptr);

// Dynamic per-token-group (1x128) FP8 quantization of activations, DeepSeek-V3 style.
//   scales: float written, 4-byte aligned, M-major: scale of row m, group g at scales[g * ld_scales + m];
//           ld_scales >= M. The last group may be partial (K % 128 != 0): its amax covers the
//           columns that exist.
void quantize_fp8_per_token_group(const MatrixView& x, const MatrixView& q, float* scales,
                                  int64_t ld_scales, bool pow2_scales, cudaStream_t stream);

// FP8 quantization of a weight W [N, K] (bf16/fp16/fp32) with 128x128 block scales
// (granularity kBlock128x128, scales row-major [ceil(N/128)][ceil(K/128)]) or per-channel
// groups of 128 (kGroup1x128, scales row-major [N][ceil(K/128)]). w: 16-byte aligned base and rows,
// K % 8 == 0; q: e4m3 [N, K], 8-byte aligned base and rows; scales: 4-byte aligned.
void quantize_fp8_weight(const MatrixView& w, const MatrixView& q, float* scales, ScaleGranularity g,
                         cudaStream_t stream);

}  // namespace qsgemm
