// qsgemm/svdquant.h — the offline SVDQuant recipe (Li et al., "SVDQuant: Absorbing Outliers by
// Low-Rank Components for 4-Bit Diffusion Models", 2024) for the W4A4 + low-rank family
// (qsgemm/w4a4.h), as a CPU utility in float64. Load-time code: slow by design, clear over clever.
//
// Given a linear layer Y = X·Wᵀ (W [N,K]) and per-input-channel activation magnitudes from
// calibration, it produces the operands of
//     Y ≈ Q(X̂)·Q(R)ᵀ + (X·L1ᵀ)·L2ᵀ,   X̂ = X·diag(1/s)
// 1. Smoothing (SmoothQuant's migration): s_k = amax_x[k]^α / amax_w[k]^(1-α) (1 where either is
//    0), Ŵ = W·diag(s), so that X̂·Ŵᵀ = X·Wᵀ and activation outliers move into the weight.
// 2. Low rank: the best rank-r approximation Ŵ ≈ L2·L̂1 (L2 [N,r] = U_r·Σ_r, L̂1 [r,K] = V_rᵀ), by
//    subspace iteration; the outliers of Ŵ live mostly in it.
// 3. Residual R = Ŵ − L2·L̂1, quantized to INT4 with groups of `group` (docs/formats.md §5).
// 4. Down-projections for both forms of the input: l1_smoothed = L̂1 for X̂ (SVDQuant folds 1/s into
//    the previous layer, e.g. a norm's weight, so the layer's input already is X̂: then pass X̂ and
//    lora_down = l1_smoothed to w4a4_quantize_activations), and l1 = L̂1·diag(1/s) for the
//    unsmoothed X (X·L1ᵀ = X̂·L̂1ᵀ, when X2 is computed apart from the quantizer).
#pragma once

#include <cstdint>
#include <vector>

namespace qsgemm::ref {

struct SvdQuantWeight {
  int64_t N = 0, K = 0;
  int rank = 0, group = 64;
  std::vector<float> smooth;       // [K] s_k (all 1 without activation statistics)
  std::vector<float> l1;           // [rank][K] down-projection for the unsmoothed X (L̂1·diag(1/s))
  std::vector<float> l1_smoothed;  // [rank][K] L̂1: down-projection for X̂ (1/s folded upstream)
  std::vector<float> l2;           // [N][rank] up-projection (W2 of w4a4_linear)
  std::vector<uint8_t> w1;         // [N][K/2] packed INT4 codes of the residual
  std::vector<float> w1_scales;    // [N][K/group] row-major
};

// w: [N][K] row-major (ld = K). act_amax: [K] max |x| per input channel from calibration, or null
// (no smoothing). alpha in [0, 1] (SVDQuant and SmoothQuant use 0.5). rank in [0, min(N, K)];
// group divides K (64 or 128 for the GPU kernels). iters: subspace iterations (20 is plenty for
// the leading singular vectors of weight matrices). Deterministic (fixed seed).
// Errors (qsgemm::Error): N or K <= 0, w null, rank outside [0, min(N, K)], an odd group or one that does not
// divide K, alpha outside [0, 1] (kInvalidArgument); NaN or Inf in w (kInvalidValue, naming the
// element).
SvdQuantWeight svdquant_decompose(const float* w, int64_t N, int64_t K, const float* act_amax, float alpha, int rank,
                                  int group, int iters = 20);

// SQNR in dB of an approximation y of ref (both [count]): 10·log10(Σ ref² / Σ (y − ref)²).
double sqnr_db(const double* ref, const double* y, int64_t count);

}  // namespace qsgemm::ref
