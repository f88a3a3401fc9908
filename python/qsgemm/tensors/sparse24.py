"""``Sparse24Fp8Tensor``: a 2:4-sparse FP8 e4m3 ``nn.Linear`` weight (docs/formats.md §4)."""

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

#: Shape rules of the sparse kernel and compressor (docs/formats.md §4.4).
SPARSE24_ALIGN_N = 8
SPARSE24_ALIGN_K = 32
#: Metadata panels: rows padded to 64, K to 128; one panel per 128 columns (docs/formats.md §4.3).
META_ROW_ATOM = 64
META_K_ATOM = 128
META_PAD_BYTE = 0x44


def sparse24_meta_rows(N: int) -> int:
    return -(-N // META_ROW_ATOM) * META_ROW_ATOM


def sparse24_meta_bytes(N: int, K: int) -> int:
    """``sparse24_meta_bytes(N, K)`` of the C++ API: rows_padded · K_padded / 8."""
    return sparse24_meta_rows(N) * (-(-K // META_K_ATOM) * META_K_ATOM) // 8


class Sparse24Fp8Tensor(QuantizedWeightTensor):
    """A weight W [N, K] stored 2:4-sparse in FP8 e4m3 (docs/formats.md §4).

    Tensor data (names as torchao's FP8 2:4 tensor):
      - ``qdata``: float8_e4m3fn [N, K/2], the kept values, dense row-major (§4.2);
      - ``sparse_metadata``: uint8 [sparse24_meta_bytes(N, K)], 2-bit indices in 64-row × 128-k
        panels (§4.3);
      - ``scale``: float32 [N] (per channel) or [1] (per tensor); W ≈ decode(qdata) · scale.
    Attributes: ``dtype`` (logical dtype, see ``qsgemm.tensors._base``), ``transposed``
    (set by ``t()``; only linear understands it), ``fast_accum`` (the kernel's FP8 fast
    accumulation; off by default).

    ``F.linear(x, W, b)`` quantizes x per token (``quantize_fp8_per_token``) and calls
    ``sparse24_linear``; x may have any leading dims; the output has x's dtype.
    Rules: N % 8 == 0, K % 32 == 0.
    """

    # Why it cannot be sliced along K (register_common_ops's slice).
    _slice_k_reason = (
        "a column range of the compressed values is not a valid weight (docs/formats.md "
        "§4.3); shard the dense weight along K and compress each shard"
    )
    tensor_data_names = ["qdata", "sparse_metadata", "scale"]
    tensor_attribute_names = ["dtype", "transposed", "fast_accum"]

    def __new__(cls, qdata, sparse_metadata, scale, *, dtype=torch.bfloat16, transposed=False,
                fast_accum=False):
        N, K = qdata.shape[0], qdata.shape[1] * 2
        shape = (K, N) if transposed else (N, K)
        return _make_wrapper(cls, shape, qdata.device, _check_logical_dtype(dtype, cls.__name__))

    def __init__(self, qdata, sparse_metadata, scale, *, dtype=torch.bfloat16, transposed=False,
                 fast_accum=False):
        self.qdata = qdata
        self.sparse_metadata = sparse_metadata
        self.scale = scale
        self.transposed = bool(transposed)
        self.fast_accum = bool(fast_accum)

    # ``dtype`` (an attribute name) is the wrapper's own dtype, set in __new__.
    @property
    def N(self) -> int:
        return self.qdata.shape[0]

    @property
    def K(self) -> int:
        return self.qdata.shape[1] * 2

    @property
    def granularity(self) -> str:
        return "per_tensor" if self.scale.numel() == 1 else "per_channel"

    @classmethod
    def from_float(cls, w: torch.Tensor, prune: str = "magnitude", scale: str = "per_channel",
                   dtype: Optional[torch.dtype] = None, fast_accum: bool = False):
        """Compress a dense [N, K] bf16/fp16/fp32 weight with ``sparse24_compress``.

        ``prune="magnitude"`` keeps the two largest magnitudes of every group of 4 along K;
        ``"require"`` raises if a group has more than two non-zeros. ``scale`` is
        ``"per_channel"`` ([N]) or ``"per_tensor"`` ([1]).
        """
        if w.dim() != 2:
            raise ValueError(f"Sparse24Fp8Tensor.from_float: weight must be 2-D, got {tuple(w.shape)}")
        N, K = w.shape
        if N % SPARSE24_ALIGN_N or K % SPARSE24_ALIGN_K:
            raise ValueError(
                f"Sparse24Fp8Tensor: N={N} must be a multiple of {SPARSE24_ALIGN_N} and K={K} a "
                f"multiple of {SPARSE24_ALIGN_K} (docs/formats.md §4.4)"
            )
        logical = dtype or (w.dtype if w.dtype in (torch.bfloat16, torch.float16, torch.float32)
                            else torch.bfloat16)
        values, meta, s = _ops.sparse24_compress(w.detach().contiguous(), prune, scale, None)
        return cls(values, meta, s, dtype=logical, fast_accum=fast_accum)

    def dequantize(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        """The dense weight decode(qdata)·scale, through ``sparse24_decompress`` (§4.4)."""
        dtype = dtype or self.dtype
        # The decompressor writes fp32 (exact) or bf16 (RNE of that float).
        kernel_dtype = dtype if dtype in (torch.float32, torch.bfloat16) else torch.float32
        w = _ops.sparse24_decompress(
            self.qdata, self.sparse_metadata, self.scale, self.N, self.K, kernel_dtype
        ).to(dtype)
        return w.t() if self.transposed else w

    @staticmethod
    def _linear(x: torch.Tensor, w: "Sparse24Fp8Tensor", bias: Optional[torch.Tensor]):
        N, K = w.N, w.K
        x2, lead, out_dtype = flatten_activation(x, K, "Sparse24Fp8Tensor")
        xq, xs = _ops.quantize_fp8_per_token(x2, False)
        y = _ops.sparse24_linear(
            xq, xs, w.qdata, w.sparse_metadata, w.scale,
            prepare_bias(bias, N, out_dtype, "Sparse24Fp8Tensor"), out_dtype, w.fast_accum,
        )
        return restore_leading(y, lead, N)

    def narrow_rows(self, start: int, end: int) -> "Sparse24Fp8Tensor":
        """Rows [start, end) (output features) as a new weight, e.g. a tensor-parallel shard.

        start and end - start must be multiples of 8, the sparse weight's row atom (the kernel's
        N % 8 rule, §4.4). The values and per-channel scales are row slices; the metadata is
        re-laid out (§4.3: its panel stride depends on N, so a row range is not a byte range) by
        a gather of the rows from every 128-k panel into panels padded for the new N. The result
        owns fresh buffers, and equals compressing the dense rows [start, end) directly.
        """
        if self.transposed:
            raise ValueError("narrow of a transposed Sparse24Fp8Tensor; narrow the weight, then t()")
        N, K = self.N, self.K
        if start % SPARSE24_ALIGN_N or (end - start) % SPARSE24_ALIGN_N or end <= start:
            raise ValueError(
                f"Sparse24Fp8Tensor can be sliced along N only at its row atom of "
                f"{SPARSE24_ALIGN_N} rows (the N % {SPARSE24_ALIGN_N} rule of docs/formats.md "
                f"§4.4): rows [{start}, {end}) of N={N}"
            )
        n = end - start
        panels = -(-K // META_K_ATOM)
        old = self.sparse_metadata.view(panels, sparse24_meta_rows(N), 16)
        new = torch.full((panels, sparse24_meta_rows(n), 16), META_PAD_BYTE, dtype=torch.uint8,
                         device=old.device)
        new[:, :n, :] = old[:, start:end, :]
        scale = self.scale if self.scale.numel() == 1 else self.scale[start:end]
        return Sparse24Fp8Tensor(
            self.qdata[start:end].clone(), new.view(-1), scale.clone(),
            dtype=self.dtype, transposed=False, fast_accum=self.fast_accum,
        )


register_common_ops(Sparse24Fp8Tensor)
register_linear(Sparse24Fp8Tensor)
