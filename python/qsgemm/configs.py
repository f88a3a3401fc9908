"""Configurations for ``qsgemm.quantize_`` (and, when torchao is installed, ``torchao.quantization.quantize_``).

Each config knows which ``nn.Linear`` weights it can take (``check``: a reason string or None) and
how to turn one into a quantized weight tensor (``quantize_weight``). When torchao is importable the
configs subclass its ``AOBaseConfig`` and are registered with ``register_quantize_module_handler``
(see ``qsgemm.quantize``), so torchao's ``quantize_`` accepts them; torchao is never required.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Optional

import torch

from .tensors import BLOCKWISE_GRANULARITIES, BlockwiseFp8Tensor, Sparse24Fp8Tensor
from .tensors.blockwise import BLOCKWISE_ALIGN_K, BLOCKWISE_ALIGN_N
from .tensors.sparse24 import SPARSE24_ALIGN_K, SPARSE24_ALIGN_N
from .tensors.w4a4 import W4A4_ALIGN_N, W4A4_GROUPS, W4A4LowRankTensor

W4A4_MAX_RANK = 128


def _torchao_config_base():
    """torchao's AOBaseConfig if torchao imports cleanly, else ``object``."""
    import importlib.util

    if importlib.util.find_spec("torchao") is None:
        return object, False
    try:
        from torchao.core.config import AOBaseConfig

        return AOBaseConfig, True
    except Exception:  # a torchao built for another torch: behave as if it were absent
        return object, False


_ConfigBase, TORCHAO_AVAILABLE = _torchao_config_base()


def _check_2d_float(w: torch.Tensor) -> Optional[str]:
    if w.dim() != 2:
        return f"weight is {w.dim()}-D"
    if w.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        return f"weight dtype {w.dtype} (expected bf16, fp16 or fp32)"
    return None


@dataclasses.dataclass
class Sparse24Fp8Config(_ConfigBase):
    """2:4-sparse FP8 weights (``Sparse24Fp8Tensor``), activations quantized per token.

    prune: ``"magnitude"`` keeps the two largest magnitudes of every 4 along K (changes the model:
      the layer's output is that of the pruned weight); ``"require"`` takes only weights that are
      already 2:4 (others are skipped and listed).
    scale: ``"per_channel"`` (a float32 scale per output row) or ``"per_tensor"``.
    fast_accum: allow the kernel's FP8 fast accumulation (faster from 768 tokens, less accurate at
      large K); below 512 tokens the promoted kernels run, which measured as fast or faster there
      (at 512-767 where no fast kernel models faster).
    """

    prune: str = "magnitude"
    scale: str = "per_channel"
    fast_accum: bool = False

    def __post_init__(self):
        if self.prune not in ("magnitude", "require"):
            raise ValueError(f"Sparse24Fp8Config: prune={self.prune!r}; expected 'magnitude' or 'require'")
        if self.scale not in ("per_channel", "per_tensor"):
            raise ValueError(f"Sparse24Fp8Config: scale={self.scale!r}; expected 'per_channel' or 'per_tensor'")

    def check(self, weight: torch.Tensor) -> Optional[str]:
        """Why this weight cannot be converted (None when it can); shape rules of §4.4."""
        bad = _check_2d_float(weight)
        if bad:
            return bad
        N, K = weight.shape
        if N % SPARSE24_ALIGN_N or K % SPARSE24_ALIGN_K or N == 0 or K == 0:
            return (f"shape (N={N}, K={K}): 2:4 sparse FP8 needs N % {SPARSE24_ALIGN_N} == 0 and "
                    f"K % {SPARSE24_ALIGN_K} == 0")
        return None

    def quantize_weight(self, weight: torch.Tensor) -> Sparse24Fp8Tensor:
        # "require" raises ValueError (from the op) for a weight that is not 2:4.
        return Sparse24Fp8Tensor.from_float(weight, prune=self.prune, scale=self.scale,
                                            fast_accum=self.fast_accum)


@dataclasses.dataclass
class BlockwiseFp8Config(_ConfigBase):
    """Dense FP8 weights with block/group/row scales (``BlockwiseFp8Tensor``).

    weight: ``"block_128x128"`` (DeepSeek-V3 style), ``"group_1x128"`` or ``"per_row"``.
    Activations are quantized in 1×128 groups, or per token with ``"per_row"`` weights.
    """

    weight: str = "block_128x128"

    def __post_init__(self):
        if self.weight not in BLOCKWISE_GRANULARITIES:
            raise ValueError(f"BlockwiseFp8Config: weight={self.weight!r}; expected one of "
                             f"{BLOCKWISE_GRANULARITIES}")

    def check(self, weight: torch.Tensor) -> Optional[str]:
        bad = _check_2d_float(weight)
        if bad:
            return bad
        N, K = weight.shape
        if N % BLOCKWISE_ALIGN_N or K % BLOCKWISE_ALIGN_K or N == 0 or K == 0:
            return (f"shape (N={N}, K={K}): blockwise FP8 needs N % {BLOCKWISE_ALIGN_N} == 0 and "
                    f"K % {BLOCKWISE_ALIGN_K} == 0")
        return None

    def quantize_weight(self, weight: torch.Tensor) -> BlockwiseFp8Tensor:
        return BlockwiseFp8Tensor.from_float(weight, granularity=self.weight)


# ---- W4A4 + low rank (SVDQuant) --------------------------------------------------------------


@dataclasses.dataclass
class W4A4LowRankConfig(_ConfigBase):
    """SVDQuant's W4A4 + low-rank weights (``W4A4LowRankTensor``): INT4 weights and activations in
    groups of ``group`` along K, plus a bf16 rank-``rank`` branch that absorbs the outliers.

    Conversion (``qsgemm.svdquant.svdquant_decompose``, on the weight's device): smoothing
    s_k = amax_x[k]^α / amax_w[k]^(1-α) with α = ``smooth_alpha`` (``None``: no smoothing), the
    rank-``rank`` SVD of the smoothed weight into lora_up·lora_down, the residual quantized to INT4.
    amax_x comes from ``act_amax`` (``{layer name: max |x| per input channel [K]}``, e.g. from
    ``qsgemm.collect_act_amax(model, batches)``) when it has the layer; otherwise the smoothing
    uses the weight's statistics alone (activations taken as flat across channels). Layers
    converted through torchao's ``quantize_`` have no name here: weight-only smoothing.

    rank: 0, 16, ..., 128 (0: plain W4A4). group: 64 (SVDQuant's) or 128.
    Shape rules: N % 8 == 0, K % group == 0, rank <= min(N, K).
    """

    rank: int = 32
    group: int = 64
    smooth_alpha: Optional[float] = 0.5
    act_amax: Optional[Dict[str, torch.Tensor]] = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        if self.rank < 0 or self.rank % 16 or self.rank > W4A4_MAX_RANK:
            raise ValueError(f"W4A4LowRankConfig: rank={self.rank} must be a multiple of 16 in [0, {W4A4_MAX_RANK}]")
        if self.group not in W4A4_GROUPS:
            raise ValueError(f"W4A4LowRankConfig: group={self.group}; expected 64 or 128")
        if self.smooth_alpha is not None and not 0.0 <= self.smooth_alpha <= 1.0:
            raise ValueError(f"W4A4LowRankConfig: smooth_alpha={self.smooth_alpha} must be in [0, 1] or None")

    def check(self, weight: torch.Tensor) -> Optional[str]:
        bad = _check_2d_float(weight)
        if bad:
            return bad
        N, K = weight.shape
        if N % W4A4_ALIGN_N or N == 0 or K == 0 or K % self.group:
            return (f"shape (N={N}, K={K}): W4A4 needs N % {W4A4_ALIGN_N} == 0 and K % group "
                    f"({self.group}) == 0")
        if self.rank > min(N, K):
            return f"rank {self.rank} exceeds min(N={N}, K={K})"
        return None

    def quantize_weight(self, weight: torch.Tensor, act_amax: Optional[torch.Tensor] = None) -> W4A4LowRankTensor:
        return W4A4LowRankTensor.from_float(weight, rank=self.rank, group=self.group,
                                            smooth_alpha=self.smooth_alpha, act_amax=act_amax)

    def quantize_named_weight(self, weight: torch.Tensor, name: str) -> W4A4LowRankTensor:
        """quantize_weight with the calibration statistics of layer ``name`` (if any)."""
        act = self.act_amax.get(name) if self.act_amax and name else None
        return self.quantize_weight(weight, act)


ALL_CONFIGS = (Sparse24Fp8Config, BlockwiseFp8Config, W4A4LowRankConfig)
