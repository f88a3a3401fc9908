// qsgemm/reference.h — the CPU reference: every format and every GEMM family of qsgemm in plain
// host C++, GEMMs accumulated in float64. This is the oracle that every GPU test is judged against
// and the engine of `qsgemm verify` on a machine without a GPU. Slow by design; clear over clever.
//
// All matrices are host memory, row-major, with explicit leading dimensions (elements).
// Activation / weight inputs are float (bf16 and fp16 inputs convert to float exactly).
#pragma once

#include <cstdint>
#include <vector>

#include "qsgemm/quant.h"

namespace qsgemm::ref {

// ---- quantizers (bit-identical to the GPU quantizers) -----------------------------------------
// Per-row dynamic: scale[r] = fp8_scale_from_amax(amax(row r)), q = fp8_quantize(x, scale[r]).
void quantize_fp8_per_row(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                          float* scales, bool pow2 = false);
// Static: q = fp8_quantize(x, scale); all zeros when !fp8_scale_is_valid(scale), as on the GPU.
void quantize_fp8_static(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                         float scale);
// Per-tensor dynamic: one scale from the amax of the whole matrix.
float quantize_fp8_per_tensor(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq);
// 1x128 groups, scales M-major: scales[g * ld_s + r].
void quantize_fp8_1x128(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                        float* scales, int64_t ld_s, bool pow2 = false);
// 128x128 blocks, scales row-major [ceil(rows/128)][ceil(cols/128)].
void quantize_fp8_128x128(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                          float* scales);
// Per-row groups of 128 for weights, scales row-major [rows][ceil(cols/128)].
void quantize_fp8_row_groups(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* q, int64_t ldq,
                             float* scales);

// Signed INT4, groups of `group` along K (K % group == 0, group even): packed [rows][cols/2] bytes,
// scales [rows][cols/group].
void quantize_int4_groups(const float* x, int64_t rows, int64_t cols, int64_t ldx, int group, uint8_t* packed,
                          float* scales);

// ---- 2:4 sparse FP8 ----------------------------------------------------------------------------
struct Sparse24Host {
  int64_t N = 0, K = 0;
  std::vector<uint8_t> values;  // [N][K/2]
  std::vector<uint8_t> meta;    // sparse24_meta_bytes(N, K)
  std::vector<float> scales;    // [N] or [1]
};
enum class PruneMode { kMagnitude, kRequire };
enum class WeightScale { kPerChannel, kPerTensor, kGiven };
// Returns false (and sets *bad_row/*bad_group) when mode == kRequire and a group has more than two
// non-zeros, or when any value is NaN/Inf (then *bad_group = -1 - column). `given` holds the scales
// for WeightScale::kGiven ([N], or [1] when per_tensor).
bool sparse24_compress(const float* w, int64_t N, int64_t K, int64_t ldw, PruneMode mode, WeightScale scale,
                       const float* given, bool per_tensor, Sparse24Host* out, int64_t* bad_row = nullptr,
                       int64_t* bad_group = nullptr);
// Dense dequantized weight [N][K] (0 where pruned).
std::vector<float> sparse24_decompress(const Sparse24Host& w);

// ---- GEMMs: y[M][N] (float64, row-major, ld = N) ------------------------------------------------
// Per-token x per-channel FP8: y = sx[m] * sw[n] * Σ_k x[m,k] w[n,k] + bias[n].
// sx has M entries (or 1 when sx_scalar), sw N entries (or 1 when sw_scalar); bias may be null.
void gemm_fp8_rowwise(const uint8_t* x, int64_t ldx, const uint8_t* w, int64_t ldw, int64_t M, int64_t N, int64_t K,
                      const float* sx, bool sx_scalar, const float* sw, bool sw_scalar, const float* bias,
                      double* y);

// Groupwise/blockwise FP8 with any granularity pair of qsgemm/blockwise.h.
void gemm_fp8_blockwise(const uint8_t* x, int64_t ldx, const uint8_t* w, int64_t ldw, int64_t M, int64_t N, int64_t K,
                        ScaleGranularity gx, const float* sx, int64_t ld_sx, ScaleGranularity gw, const float* sw,
                        const float* bias, double* y);

// 2:4 sparse FP8 linear: y = sx ⊙ x · (decompressed w)ᵀ + bias.
void gemm_sparse24_fp8(const uint8_t* x, int64_t ldx, int64_t M, const Sparse24Host& w, const float* sx,
                       bool sx_scalar, const float* bias, double* y);

// W4A4 + low rank: y = Σ_g sx[m,g] sw[n,g] Σ_{k in g} x1[m,k] w1[n,k] + Σ_r x2[m,r] w2[n,r] + bias[n].
// x1 packed [M][K/2], w1 packed [N][K/2], sx [M][K/group], sw [N][K/group]; x2 [M][R], w2 [N][R] float.
void gemm_w4a4_lowrank(const uint8_t* x1, const uint8_t* w1, const float* sx, const float* sw, int64_t M, int64_t N,
                       int64_t K, int group, const float* x2, const float* w2, int64_t R, const float* bias,
                       double* y);

// ‖out − ref‖_F / ‖ref‖_F over an [M][N] result (out with leading dimension ld_out). NaN-safe:
// any non-finite element of out yields +inf.
double rel_frobenius_error(const double* ref, const float* out, int64_t M, int64_t N, int64_t ld_out);

}  // namespace qsgemm::ref
