"""The linear entry points shared by the weight tensors: F.linear, aten.linear, aten.mm, aten.addmm.

``nn.Linear.forward`` calls ``F.linear(x, W, b)``, caught by ``__torch_function__``. Under
``torch.compile`` (and any other code below the Python API) ``F.linear`` arrives at
``__torch_dispatch__`` decomposed: ``aten.t(W)`` (our ``t``: a flag, no data movement), then
``aten.addmm(b, x2d, W.t())`` or ``aten.mm(x2d, W.t())`` with the leading dims of x flattened by
``matmul``. All of them end in ``cls._linear(x, weight, bias)`` with an untransposed weight.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._base import _arg

aten = torch.ops.aten


def register_linear(cls):
    @cls.implements_torch_function(F.linear)
    @cls.implements(aten.linear.default)
    def _linear(func, types, args, kwargs):
        x = _arg(args, kwargs, 0, "input")
        w = _arg(args, kwargs, 1, "weight")
        bias = _arg(args, kwargs, 2, "bias")
        if not isinstance(w, cls) or isinstance(x, cls):
            raise NotImplementedError(
                f"F.linear with a {cls.__name__}: the quantized tensor must be the weight"
            )
        if w.transposed:
            raise ValueError(f"F.linear got a transposed {cls.__name__}; pass the (N, K) weight")
        return cls._linear(x, w, bias)

    def _weight_of(wt, op):
        if not isinstance(wt, cls) or not wt.transposed:
            raise NotImplementedError(
                f"{op} with a {cls.__name__} is supported only as x @ W.t() (the linear pattern)"
            )
        return wt._with(transposed=False)

    @cls.implements(aten.mm.default)
    def _mm(func, types, args, kwargs):
        x, wt = args[0], args[1]
        if isinstance(x, cls):
            raise NotImplementedError(f"aten.mm with a {cls.__name__} as the first operand")
        return cls._linear(x, _weight_of(wt, "aten.mm"), None)

    @cls.implements(aten.addmm.default)
    def _addmm(func, types, args, kwargs):
        bias, x, wt = args[0], args[1], args[2]
        beta = kwargs.get("beta", 1)
        alpha = kwargs.get("alpha", 1)
        if beta != 1 or alpha != 1 or isinstance(x, cls):
            raise NotImplementedError(
                f"aten.addmm with a {cls.__name__}: only bias + x @ W.t() (beta = alpha = 1)"
            )
        return cls._linear(x, _weight_of(wt, "aten.addmm"), bias)

    return cls


def flatten_activation(x: torch.Tensor, K: int, cls_name: str):
    """x [..., K] -> (x2d [M, K] contiguous bf16/fp16, leading shape or None for 2-D x, out dtype)."""
    if x.shape[-1] != K:
        raise ValueError(f"{cls_name} linear: x has {x.shape[-1]} features, the weight K={K}")
    out_dtype = x.dtype
    if out_dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"{cls_name} linear: x dtype {x.dtype}; expected bf16, fp16 or fp32")
    # 2-D x (the common decode case) skips the reshapes: each costs ~1 µs of host time per call.
    lead = None if x.dim() == 2 else x.shape[:-1]
    x2 = x if lead is None else x.reshape(-1, K)
    # The FP8 activation quantizers read bf16/fp16 (docs/formats.md §3): fp32 input is rounded to
    # bf16 first (its e4m3 code is then at most one e4m3 step coarser in a double-rounding tie).
    if x2.dtype == torch.float32:
        x2 = x2.to(torch.bfloat16)
    return x2.contiguous(), lead, out_dtype


def prepare_bias(bias, N: int, out_dtype: torch.dtype, cls_name: str):
    if bias is None:
        return None
    if bias.shape != (N,):
        raise ValueError(f"{cls_name} linear: bias shape {tuple(bias.shape)}, expected ({N},)")
    # The kernels take a bias of fp32 or the output dtype, 16-byte aligned (a fresh contiguous one).
    if bias.dtype != torch.float32 and bias.dtype != out_dtype:
        bias = bias.to(out_dtype)
    return bias.contiguous()


def restore_leading(y: torch.Tensor, lead, N: int) -> torch.Tensor:
    return y if lead is None else y.reshape(*lead, N)
