"""SVDQuant's offline recipe in torch (the semantics of the C++ ``qsgemm::ref::svdquant_decompose``,
include/qsgemm/svdquant.h), on the weight's device.

Given Y = X·Wᵀ (W [N, K]) it produces the operands of

    Y ≈ Q(X̂)·Q(R)ᵀ + (X̂·L1ᵀ)·L2ᵀ,   X̂ = X·diag(1/s),

1. smoothing: s_k = amax_x[k]^α / amax_w[k]^(1-α) (1 where either is 0 or not finite), Ŵ = W·diag(s),
   so that X̂·Ŵᵀ = X·Wᵀ. Without calibration activations (``act_amax=None``) amax_x is taken as
   flat: s_k = (g / amax_w[k])^(1-α) with g the geometric mean of the non-zero amax_w (weight-only
   statistics: it evens out the weight's input channels; a constant factor of s does not change
   the result). ``alpha=None`` disables smoothing (s = 1).
2. low rank: the best rank-r approximation Ŵ ≈ L2·L1 by ``torch.linalg.svd`` (L2 = U_r·Σ_r [N, r],
   L1 = V_rᵀ [r, K]; the C++ reference reaches the same subspace by subspace iteration);
3. the residual R = Ŵ − L2·L1 (with the bf16-rounded factors the kernel uses, so that R absorbs
   their rounding) quantized to INT4 groups of ``group`` by ``w4a4_pack_weight``.

Computed in float64 on the CPU, float32 on a GPU (float64 SVD there is slow).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from . import _ops


class SvdQuantWeight(NamedTuple):
    qdata: torch.Tensor      # uint8 [N, K/2] packed INT4 codes of the residual
    scale: torch.Tensor      # float32 [N, K/group]
    lora_down: torch.Tensor  # bf16 [r, K] L1, applied to the smoothed X̂
    lora_up: torch.Tensor    # bf16 [N, r] L2
    smooth: torch.Tensor     # float32 [K] s (ones without smoothing)


def smooth_factors(w: torch.Tensor, act_amax: Optional[torch.Tensor], alpha: Optional[float]) -> torch.Tensor:
    """The per-input-channel factors s [K] (float32) of step 1 (module docstring)."""
    K = w.shape[1]
    if alpha is None:
        return torch.ones(K, dtype=torch.float32, device=w.device)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"svdquant: smooth_alpha={alpha} must be in [0, 1] (or None: no smoothing)")
    wmax = w.detach().abs().to(torch.float64).amax(dim=0)
    if act_amax is None:
        nz = wmax[wmax > 0]
        if nz.numel() == 0:
            return torch.ones(K, dtype=torch.float32, device=w.device)
        ax = nz.log().mean().exp().expand(K)  # flat activations: the geometric mean of amax_w
    else:
        ax = act_amax.detach().to(device=w.device, dtype=torch.float64).reshape(-1)
        if ax.numel() != K:
            raise ValueError(f"svdquant: act_amax has {ax.numel()} entries, the weight K={K}")
    ok = (ax > 0) & (wmax > 0) & torch.isfinite(ax)
    s = torch.where(ok, ax.clamp_min(1e-300).pow(alpha) / wmax.clamp_min(1e-300).pow(1.0 - alpha),
                    torch.ones_like(wmax))
    return s.to(torch.float32)


def svdquant_decompose(w: torch.Tensor, rank: int = 32, group: int = 64, act_amax: Optional[torch.Tensor] = None,
                       alpha: Optional[float] = 0.5) -> SvdQuantWeight:
    """SVDQuant's decomposition of W [N, K] (bf16/fp16/fp32) on its device (module docstring)."""
    if w.dim() != 2:
        raise ValueError(f"svdquant: weight must be 2-D, got {tuple(w.shape)}")
    N, K = w.shape
    if rank < 0 or rank % 16 or rank > min(_ops.W4A4_MAX_RANK, N, K):
        raise ValueError(f"svdquant: rank={rank} must be a multiple of 16 in [0, min(128, N={N}, K={K})]")
    if group not in _ops.W4A4_GROUPS or K % group:
        raise ValueError(f"svdquant: group={group} must be 64 or 128 and divide K={K}")
    if not torch.isfinite(w).all():
        bad = (~torch.isfinite(w)).nonzero()[0].tolist()
        raise ValueError(f"svdquant: w[{bad[0]}, {bad[1]}] = {w[bad[0], bad[1]].item()} is not finite")
    work = torch.float64 if w.device.type == "cpu" else torch.float32
    s = smooth_factors(w, act_amax, alpha)
    ws = w.detach().to(work) * s.to(work)
    if rank > 0:
        U, S, Vh = torch.linalg.svd(ws, full_matrices=False)
        l2 = (U[:, :rank] * S[:rank]).to(torch.bfloat16).contiguous()
        l1 = Vh[:rank].to(torch.bfloat16).contiguous()
        resid = ws - l2.to(work) @ l1.to(work)
    else:
        l2 = torch.empty(N, 0, dtype=torch.bfloat16, device=w.device)
        l1 = torch.empty(0, K, dtype=torch.bfloat16, device=w.device)
        resid = ws
    qdata, scale = _ops.w4a4_pack_weight(resid.to(torch.float32).contiguous(), group)
    return SvdQuantWeight(qdata, scale, l1, l2, s.contiguous())
