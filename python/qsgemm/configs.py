"""Configurations for ``qsgemm.quantize_`` (and, when torchao is installed, ``torchao.quantization.quantize_``).

Each config knows which ``nn.Linear`` weights it can take (``check``: a reason string or None) and
how to turn one into a quantized weight tensor (``quantize_weight``). When torchao is importable the
configs subclass its ``AOBaseConfig`` and are registered with ``register_quantize_module_handler``
(see ``qsgemm.quantize``), so torchao's ``quantize_`` accepts them; torchao is never required.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import torch

from .tensors import BLOCKWISE_GRANULARITIES, BlockwiseFp8Tensor, Sparse24Fp8Tensor
from .tensors.blockwise import BLOCKWISE_ALIGN_K, BLOCKWISE_ALIGN_N
from .tensors.sparse24 import SPARSE24_ALIGN_K, SPARSE24_ALIGN_N


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
    fast_accum: use the kernel's FP8 fast accumulation (faster, less accurate at large K).
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


# ---- later families --------------------------------------------------------------------------
# W4A4LowRankConfig(rank, group): smoothing + rank-r SVD + INT4 residual (SVDQuant's recipe), with
# a W4A4LowRankTensor in qsgemm/tensors/. It goes here, with the same two methods (check,
# quantize_weight), in ALL_CONFIGS, and in qsgemm.serialization's TENSOR_TYPES. Not implemented yet.

ALL_CONFIGS = (Sparse24Fp8Config, BlockwiseFp8Config)
