"""``BlockwiseFp8Tensor``: an FP8 e4m3 ``nn.Linear`` weight with block, group or row scales
(docs/formats.md §2, §3)."""

from __future__ import annotations

from typing import Optional

import torch

from .. import _ops

from ._base import (
    QuantizedWeightTensor,
    _check_logical_dtype,
    _make_wrapper,
    register_common_ops,
)
from ._linear import flatten_activation, prepare_bias, register_linear, restore_leading

aten = torch.ops.aten

BLOCKWISE_GRANULARITIES = ("block_128x128", "group_1x128", "per_row")
#: Shape rules of blockwise_linear (docs/formats.md §3): K % 16; N % 8 for 16-bit outputs.
BLOCKWISE_ALIGN_K = 16
BLOCKWISE_ALIGN_N = 8
GROUP = 128


def _kb(K: int) -> int:
    return -(-K // GROUP)


class BlockwiseFp8Tensor(QuantizedWeightTensor):
    """A weight W [N, K] in FP8 e4m3 with float32 scales of one of three granularities.

    Tensor data:
      - ``qdata``: float8_e4m3fn [N, K], row-major, row stride ``fp8_row_ld(K)`` (K % 128 != 0:
        rows padded to 128 bytes, the GEMM's fast layout; ``clone`` / ``to`` keep it, files store
        packed rows);
      - ``scale``: float32, by ``granularity``:
          ``"block_128x128"`` [⌈N/128⌉, ⌈K/128⌉] (DeepSeek-V3's weights), row-major;
          ``"group_1x128"``   [N, ⌈K/128⌉] (per-channel groups of 128 k), row-major;
          ``"per_row"``       [N] (per channel).
    Attributes: ``granularity``, ``dtype`` (logical), ``transposed``.

    ``F.linear`` quantizes x in 1×128 groups (``quantize_fp8_per_token_group``), or per token
    for ``"per_row"`` weights (``quantize_fp8_per_token``), and calls ``blockwise_linear``.
    Rules: K % 16 == 0, N % 8 == 0.
    """

    tensor_data_names = ["qdata", "scale"]
    tensor_attribute_names = ["granularity", "dtype", "transposed"]

    def __new__(cls, qdata, scale, *, granularity="block_128x128", dtype=torch.bfloat16,
                transposed=False):
        N, K = qdata.shape
        shape = (K, N) if transposed else (N, K)
        return _make_wrapper(cls, shape, qdata.device, _check_logical_dtype(dtype, cls.__name__))

    def __init__(self, qdata, scale, *, granularity="block_128x128", dtype=torch.bfloat16,
                 transposed=False):
        if granularity not in BLOCKWISE_GRANULARITIES:
            raise ValueError(
                f"BlockwiseFp8Tensor: granularity {granularity!r}; expected one of "
                f"{BLOCKWISE_GRANULARITIES}"
            )
        self.qdata = qdata
        self.scale = scale
        self.granularity = granularity
        self.transposed = bool(transposed)

    def _apply_fn_to_data(self, fn, **changes):
        # clone / to / _to_copy pack the padded rows of K % 128 != 0 again: pad them back.
        return super()._apply_fn_to_data(fn, **changes)._fast_layout()

    def _fast_layout(self) -> "BlockwiseFp8Tensor":
        """Self, or the same weight with qdata's rows moved onto 128-byte lines (a copy)."""
        q = _ops.pad_fp8_rows(self.qdata)
        return self if q is self.qdata else BlockwiseFp8Tensor(
            q, self.scale, granularity=self.granularity, dtype=self.dtype, transposed=self.transposed)

    @property
    def N(self) -> int:
        return self.qdata.shape[0]

    @property
    def K(self) -> int:
        return self.qdata.shape[1]

    @classmethod
    def from_float(cls, w: torch.Tensor, granularity: str = "block_128x128",
                   dtype: Optional[torch.dtype] = None):
        """Quantize a dense [N, K] bf16/fp16/fp32 weight.

        ``block_128x128`` and ``group_1x128`` go through ``quantize_fp8_weight``; ``per_row``
        through ``quantize_fp8_per_token`` (which reads bf16/fp16: an fp32 weight is rounded to
        bf16 first).
        """
        if granularity not in BLOCKWISE_GRANULARITIES:
            raise ValueError(
                f"BlockwiseFp8Tensor: granularity {granularity!r}; expected one of "
                f"{BLOCKWISE_GRANULARITIES}"
            )
        if w.dim() != 2:
            raise ValueError(f"BlockwiseFp8Tensor.from_float: weight must be 2-D, got {tuple(w.shape)}")
        N, K = w.shape
        if K % BLOCKWISE_ALIGN_K or N % BLOCKWISE_ALIGN_N:
            raise ValueError(
                f"BlockwiseFp8Tensor: K={K} must be a multiple of {BLOCKWISE_ALIGN_K} and N={N} a "
                f"multiple of {BLOCKWISE_ALIGN_N} (docs/formats.md §3)"
            )
        logical = dtype or (w.dtype if w.dtype in (torch.bfloat16, torch.float16, torch.float32)
                            else torch.bfloat16)
        w = w.detach().contiguous()
        if granularity == "per_row":
            if w.dtype not in (torch.bfloat16, torch.float16):
                w = w.to(torch.bfloat16)
            q, s = _ops.quantize_fp8_per_token(w, False)
        else:
            q, s = _ops.quantize_fp8_weight(w, granularity)
        return cls(q, s.contiguous(), granularity=granularity, dtype=logical)._fast_layout()

    def _scale_per_element(self) -> torch.Tensor:
        """The scale of every element, float32 [N, K]."""
        N, K = self.N, self.K
        s = self.scale.float()
        if self.granularity == "per_row":
            return s.reshape(N, 1).expand(N, K)
        if self.granularity == "group_1x128":
            return s.reshape(N, _kb(K)).repeat_interleave(GROUP, dim=1)[:, :K]
        return s.repeat_interleave(GROUP, dim=0)[:N].repeat_interleave(GROUP, dim=1)[:, :K]

    def dequantize(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        """decode(qdata) · scale, in float32, then rounded to ``dtype`` (default: the logical dtype)."""
        w = (self.qdata.float() * self._scale_per_element()).to(dtype or self.dtype)
        return w.t() if self.transposed else w

    @staticmethod
    def _linear(x: torch.Tensor, w: "BlockwiseFp8Tensor", bias: Optional[torch.Tensor]):
        N, K = w.N, w.K
        x2, lead, out_dtype = flatten_activation(x, K, "BlockwiseFp8Tensor")
        if w.granularity == "per_row":
            xq, xs = _ops.quantize_fp8_per_token(x2, False)
            x_gran = "per_row"
        else:
            xq, xs = _ops.quantize_fp8_per_token_group(x2, False)
            x_gran = "group_1x128"
        y = _ops.blockwise_linear(
            xq, xs, x_gran, w.qdata, w.scale, w.granularity,
            prepare_bias(bias, N, out_dtype, "BlockwiseFp8Tensor"), out_dtype,
        )
        return restore_leading(y, lead, N)

    def narrow_rows(self, start: int, end: int) -> "BlockwiseFp8Tensor":
        """Rows [start, end) as a new weight (a tensor-parallel shard), fresh buffers.

        The rows must be multiples of 8 (the N % 8 rule); with ``block_128x128`` scales, start must
        be a multiple of the 128-row block and end too unless it is N (a block is not split).
        """
        if self.transposed:
            raise ValueError("narrow of a transposed BlockwiseFp8Tensor; narrow the weight, then t()")
        N = self.N
        atom = GROUP if self.granularity == "block_128x128" else BLOCKWISE_ALIGN_N
        ok = (end > start and start % atom == 0 and (end % atom == 0 or end == N)
              and (end - start) % BLOCKWISE_ALIGN_N == 0)
        if not ok:
            raise ValueError(
                f"BlockwiseFp8Tensor ({self.granularity}) can be sliced along N only at its row "
                f"atom of {atom} rows (and shards of a multiple of {BLOCKWISE_ALIGN_N} rows): "
                f"rows [{start}, {end}) of N={N}"
            )
        if self.granularity == "block_128x128":
            scale = self.scale[start // GROUP: -(-end // GROUP)]
        else:
            scale = self.scale[start:end]
        return BlockwiseFp8Tensor(
            self.qdata[start:end].clone(), scale.clone(), granularity=self.granularity,
            dtype=self.dtype,
        )._fast_layout()


register_common_ops(BlockwiseFp8Tensor)
register_linear(BlockwiseFp8Tensor)
