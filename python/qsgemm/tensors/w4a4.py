"""``W4A4LowRankTensor``: an ``nn.Linear`` weight as SVDQuant stores it — an INT4 residual with group
scales, bf16 low-rank factors and optional smoothing (include/qsgemm/w4a4.h, docs/formats.md §5)."""

from __future__ import annotations

from typing import Optional

import torch

from .. import _ops
from ._base import (
    LOGICAL_DTYPES,
    QuantizedWeightTensor,
    _check_logical_dtype,
    _make_wrapper,
    register_common_ops,
)
from ._linear import prepare_bias, register_linear, restore_leading

aten = torch.ops.aten

#: Shape rules of w4a4_linear: N % 8 == 0 (whole n8 MMA tiles), K % group == 0.
W4A4_ALIGN_N = 8
W4A4_GROUPS = (64, 128)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """int8 [rows, 2·cols] codes -8..7 of packed uint8 [rows, cols] (even k in the low nibble)."""
    p = packed.to(torch.int16)
    lo, hi = p & 0xF, p >> 4
    codes = torch.stack([lo, hi], dim=-1).reshape(packed.shape[0], -1)
    return ((codes ^ 8) - 8).to(torch.int8)


class W4A4LowRankTensor(QuantizedWeightTensor):
    """A weight W [N, K] ≈ (deq(Q(R)) + L2·L1)·diag(1/s) (SVDQuant).

    Tensor data:
      - ``qdata``: uint8 [N, K/2], the residual's INT4 codes (two per byte, even k low nibble);
      - ``scale``: float32 [N, K/group], one scale per row per group of ``group`` k;
      - ``lora_down``: bf16 [r, K], L1, the down-projection applied to the smoothed x by the fused
        activation quantizer (x2 = x̂·L1ᵀ);
      - ``lora_up``: bf16 [N, r], L2, the up-projection (w2 of ``w4a4_linear``);
      - ``smooth``: float32 [K], the smoothing factors s (x̂ = x / s; ones when not smoothed).
    Attributes: ``group`` (64 or 128), ``smoothed`` (whether x is divided by s), ``dtype``
    (logical), ``transposed``. The rank r = ``lora_down.shape[0]`` (0, 16, ..., 128).

    ``F.linear(x, W, b)``: x̂ = x / s (when smoothed; in float32, rounded to x's dtype), then
    ``w4a4_quantize_activations(x̂, group, lora_down)`` (INT4 x̂ and the fused down-projection),
    then ``w4a4_linear`` (INT4 GEMM + the low-rank up-projection + bias in one kernel). The
    output dtype is x's. Rules: K % group == 0, N % 8 == 0.
    """

    # Why it cannot be sliced along K (register_common_ops's slice).
    _slice_k_reason = "K holds whole INT4 groups and the low-rank factors span all of K"
    tensor_data_names = ["qdata", "scale", "lora_down", "lora_up", "smooth"]
    tensor_attribute_names = ["group", "smoothed", "dtype", "transposed"]

    def __new__(cls, qdata, scale, lora_down, lora_up, smooth, *, group=64, smoothed=False,
                dtype=torch.bfloat16, transposed=False):
        N, K = qdata.shape[0], 2 * qdata.shape[1]
        shape = (K, N) if transposed else (N, K)
        return _make_wrapper(cls, shape, qdata.device, _check_logical_dtype(dtype, cls.__name__))

    def __init__(self, qdata, scale, lora_down, lora_up, smooth, *, group=64, smoothed=False,
                 dtype=torch.bfloat16, transposed=False):
        if group not in W4A4_GROUPS:
            raise ValueError(f"W4A4LowRankTensor: group={group}; expected 64 or 128")
        N, K = qdata.shape[0], 2 * qdata.shape[1]
        r = lora_down.shape[0]
        if (tuple(scale.shape) != (N, K // group) or tuple(lora_down.shape) != (r, K)
                or tuple(lora_up.shape) != (N, r) or tuple(smooth.shape) != (K,)):
            raise ValueError(
                f"W4A4LowRankTensor: inconsistent buffers qdata {tuple(qdata.shape)}, scale "
                f"{tuple(scale.shape)}, lora_down {tuple(lora_down.shape)}, lora_up "
                f"{tuple(lora_up.shape)}, smooth {tuple(smooth.shape)} for group {group}"
            )
        self.qdata = qdata
        self.scale = scale
        self.lora_down = lora_down
        self.lora_up = lora_up
        self.smooth = smooth
        self.group = int(group)
        self.smoothed = bool(smoothed)
        self.transposed = bool(transposed)

    @property
    def N(self) -> int:
        return self.qdata.shape[0]

    @property
    def K(self) -> int:
        return 2 * self.qdata.shape[1]

    @property
    def rank(self) -> int:
        return self.lora_down.shape[0]

    @property
    def granularity(self) -> str:
        """A name of the format for file metadata and repr: ``int4_g<group>_r<rank>``."""
        return f"int4_g{self.group}_r{self.rank}"

    @classmethod
    def from_float(cls, w: torch.Tensor, rank: int = 32, group: int = 64, smooth_alpha: Optional[float] = 0.5,
                   act_amax: Optional[torch.Tensor] = None, dtype: Optional[torch.dtype] = None):
        """SVDQuant's conversion of a dense [N, K] weight (``qsgemm.svdquant.svdquant_decompose``):
        smoothing (from ``act_amax`` [K], the calibration max |x| per input channel, or from the
        weight alone when it is None; ``smooth_alpha=None``: none), rank-``rank`` SVD of the
        smoothed weight into lora_up·lora_down, INT4 residual in groups of ``group``."""
        from ..svdquant import svdquant_decompose

        if w.dim() != 2:
            raise ValueError(f"W4A4LowRankTensor.from_float: weight must be 2-D, got {tuple(w.shape)}")
        N, K = w.shape
        if N % W4A4_ALIGN_N or N == 0 or group not in W4A4_GROUPS or K == 0 or K % group:
            raise ValueError(
                f"W4A4LowRankTensor: shape (N={N}, K={K}) with group={group}: needs N % {W4A4_ALIGN_N} == 0, "
                f"group 64 or 128 and K % group == 0 (docs/formats.md §5)"
            )
        logical = dtype or (w.dtype if w.dtype in LOGICAL_DTYPES else torch.bfloat16)
        d = svdquant_decompose(w.detach(), rank=rank, group=group, act_amax=act_amax, alpha=smooth_alpha)
        return cls(d.qdata, d.scale, d.lora_down, d.lora_up, d.smooth, group=group,
                   smoothed=smooth_alpha is not None, dtype=logical)

    def dequantize(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        """(codes·scale + lora_up·lora_down) / s in float32, then rounded to ``dtype`` (default: the
        logical dtype)."""
        r = unpack_int4(self.qdata).to(torch.float32) * self.scale.repeat_interleave(self.group, dim=1)
        if self.rank > 0:
            # One rank at a time, in ascending order: every element gets the same float32 operations
            # whatever the slice or the device (a matmul's kernel, and its rounding, depends on the
            # shape), so a row slice dequantizes to exactly the rows of the whole.
            up, down = self.lora_up.to(torch.float32), self.lora_down.to(torch.float32)
            lr = torch.zeros_like(r)
            for j in range(self.rank):
                lr.addcmul_(up[:, j : j + 1], down[j : j + 1, :])
            r = r + lr
        if self.smoothed:
            r = r / self.smooth
        w = r.to(dtype or self.dtype)
        return w.t() if self.transposed else w

    @staticmethod
    def _linear(x: torch.Tensor, w: "W4A4LowRankTensor", bias: Optional[torch.Tensor]):
        N, K = w.N, w.K
        name = "W4A4LowRankTensor"
        if x.shape[-1] != K:
            raise ValueError(f"{name} linear: x has {x.shape[-1]} features, the weight K={K}")
        out_dtype = x.dtype
        if out_dtype not in LOGICAL_DTYPES:
            raise ValueError(f"{name} linear: x dtype {x.dtype}; expected bf16, fp16 or fp32")
        lead = None if x.dim() == 2 else x.shape[:-1]
        x2 = x if lead is None else x.reshape(-1, K)
        if w.smoothed:
            x2 = (x2.to(torch.float32) / w.smooth).to(out_dtype)
        x2 = x2.contiguous()
        b = prepare_bias(bias, N, out_dtype, name)
        # The staging the library's faster kernel reads (its heuristic, for this GPU's SM count).
        e4m3 = _ops.w4a4_x1_e4m3(x2.shape[0], N, K, w.group, _ops.w4a4_sm_count(x2.device))
        if w.rank > 0:
            x1, xs, xl = _ops.w4a4_quantize_activations(x2, w.group, w.lora_down, e4m3)
            y = _ops.w4a4_linear(x1, xs, w.qdata, w.scale, w.group, xl, w.lora_up, b, out_dtype)
        else:
            x1, xs, _ = _ops.w4a4_quantize_activations(x2, w.group, None, e4m3)
            y = _ops.w4a4_linear(x1, xs, w.qdata, w.scale, w.group, None, None, b, out_dtype)
        return restore_leading(y, lead, N)

    def narrow_rows(self, start: int, end: int) -> "W4A4LowRankTensor":
        """Rows [start, end) as a new weight (a tensor-parallel shard along N), fresh buffers.

        Rows are independent in this format (per-row group scales, lora_up rows), so any start
        and end that are multiples of 8 (the N % 8 rule) work; lora_down and smooth are shared
        by all rows (copied)."""
        if self.transposed:
            raise ValueError("narrow of a transposed W4A4LowRankTensor; narrow the weight, then t()")
        N = self.N
        if not (end > start and start % W4A4_ALIGN_N == 0 and end % W4A4_ALIGN_N == 0):
            raise ValueError(
                f"W4A4LowRankTensor can be sliced along N only at multiples of {W4A4_ALIGN_N} rows "
                f"(the N % 8 rule of w4a4_linear): rows [{start}, {end}) of N={N}"
            )
        return W4A4LowRankTensor(
            self.qdata[start:end].clone(), self.scale[start:end].clone(), self.lora_down.clone(),
            self.lora_up[start:end].clone(), self.smooth.clone(), group=self.group,
            smoothed=self.smoothed, dtype=self.dtype,
        )


register_common_ops(W4A4LowRankTensor)
register_linear(W4A4LowRankTensor)
