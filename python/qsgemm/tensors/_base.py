"""Common machinery of the quantized weight tensors (torchao's conventions, no torchao dependency).

A quantized weight is a *wrapper* tensor subclass: the outer tensor has the logical shape (N, K) of
an ``nn.Linear`` weight and a logical dtype, and holds no storage; the quantized buffers are plain
tensors listed in ``tensor_data_names``, and the non-tensor attributes in ``tensor_attribute_names``
(both names as in torchao's ``TorchAOBaseTensor``). From these two lists come
``__tensor_flatten__`` / ``__tensor_unflatten__`` (so that ``torch.compile`` and AOTAutograd can
trace through the subclass), ``_apply_fn_to_data`` (device moves, clone, detach) and the
serialization metadata.

Ops are implemented in two tables filled with the ``implements`` decorators:
- ``implements_torch_function(F.linear)``: caught at the Python API level, before any decomposition
  (the eager ``nn.Linear`` path);
- ``implements(aten.op)``: caught in ``__torch_dispatch__``, where ``F.linear`` arrives decomposed
  into ``aten.t`` + ``aten.addmm`` / ``aten.mm`` (what torch.compile's tracing sees).
An aten op missing from the table raises ``NotImplementedError`` naming it, rather than silently
dequantizing.

The logical dtype
-----------------
``weight.dtype`` is the dtype of the high-precision weight the tensor stands for (bf16 by default)
and the default dtype of ``dequantize()``. ``linear`` returns ``x.dtype`` (as ``nn.Linear`` does),
whatever the weight's dtype. ``weight.to(dtype)`` / ``_to_copy(dtype=...)`` with bf16, fp16 or fp32
changes only that logical dtype (the quantized buffers are untouched), so ``model.to(torch.float16)``
works; any other dtype is a ``ValueError``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

aten = torch.ops.aten

#: Logical dtypes a quantized weight may carry (and output dtypes of its linear).
LOGICAL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _check_logical_dtype(dtype: torch.dtype, cls_name: str) -> torch.dtype:
    if dtype not in LOGICAL_DTYPES:
        raise ValueError(
            f"{cls_name}: dtype {dtype} is not supported; the logical dtype of a quantized weight "
            f"is one of bfloat16, float16, float32 (the quantized buffers keep their own dtypes)"
        )
    return dtype


class QuantizedWeightTensor(torch.Tensor):
    """Base class of :class:`Sparse24Fp8Tensor` and :class:`BlockwiseFp8Tensor`.

    Subclasses set ``tensor_data_names`` and ``tensor_attribute_names``; their ``__init__`` takes
    the data tensors positionally, then the attributes as keywords. The attributes ``dtype``
    (logical dtype) and ``transposed`` are common to all.
    """

    tensor_data_names: List[str] = []
    tensor_attribute_names: List[str] = []

    _ATEN_OP_TABLE: Dict[Any, Callable]
    _TORCH_FN_TABLE: Dict[Any, Callable]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Each class gets its own tables, starting from a copy of its parent's.
        cls._ATEN_OP_TABLE = dict(getattr(cls, "_ATEN_OP_TABLE", {}))
        cls._TORCH_FN_TABLE = dict(getattr(cls, "_TORCH_FN_TABLE", {}))

    # ---- registration -------------------------------------------------------------------------
    @classmethod
    def implements(cls, ops):
        ops = ops if isinstance(ops, (list, tuple)) else [ops]

        def decorator(fn):
            for op in ops:
                cls._ATEN_OP_TABLE[op] = fn
            return fn

        return decorator

    @classmethod
    def implements_torch_function(cls, fns):
        fns = fns if isinstance(fns, (list, tuple)) else [fns]

        def decorator(fn):
            for f in fns:
                cls._TORCH_FN_TABLE[f] = fn
            return fn

        return decorator

    # ---- dispatch -----------------------------------------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = cls._TORCH_FN_TABLE.get(func)
        if handler is not None:
            return handler(func, types, args, kwargs)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = cls._ATEN_OP_TABLE.get(func)
        if handler is None:
            raise NotImplementedError(
                f"{cls.__name__} does not implement {func} (supported: linear / mm / addmm with "
                f"the weight as the second operand, t, slice/narrow along dim 0, detach, clone, "
                f"to, copy_); call .dequantize() first for other uses"
            )
        return handler(func, types, args, kwargs)

    # ---- the common contract ------------------------------------------------------------------
    def _attributes(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.tensor_attribute_names}

    def _data(self) -> List[torch.Tensor]:
        return [getattr(self, name) for name in self.tensor_data_names]

    def __tensor_flatten__(self):
        return list(self.tensor_data_names), self._attributes()

    @classmethod
    def __tensor_unflatten__(cls, inner_tensors, attributes, outer_size, outer_stride):
        return cls(*[inner_tensors[name] for name in cls.tensor_data_names], **attributes)

    def _apply_fn_to_data(self, fn: Callable[[torch.Tensor], torch.Tensor], **changes):
        attrs = self._attributes()
        attrs.update(changes)
        return type(self)(*[fn(t) for t in self._data()], **attrs)

    def _fast_layout(self):
        """The weight with its buffers in the layout the kernels read fastest (a copy where that
        differs from what a file or a generic op gave); self by default."""
        return self

    def _with(self, **changes):
        """The same buffers (no copy) under changed attributes."""
        return self._apply_fn_to_data(lambda t: t, **changes)

    def dequantize(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = self._attributes()
        if "granularity" not in shown and hasattr(self, "granularity"):
            shown = {"granularity": self.granularity, **shown}
        attrs = ", ".join(f"{k}={v}" for k, v in shown.items())
        data = ", ".join(
            f"{n}={tuple(t.shape)}:{str(t.dtype).replace('torch.', '')}"
            for n, t in zip(self.tensor_data_names, self._data())
        )
        return (
            f"{type(self).__name__}(shape={tuple(self.shape)}, device={self.device}, {attrs}, {data})"
        )


def _make_wrapper(cls, shape: Sequence[int], device: torch.device, dtype: torch.dtype):
    return torch.Tensor._make_wrapper_subclass(
        cls, tuple(shape), dtype=dtype, device=device, requires_grad=False
    )


# ---- helpers shared by the linear paths ------------------------------------------------------


def _arg(args, kwargs, i: int, name: str, default=None):
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


def _slice_range(size: int, start: Optional[int], end: Optional[int]) -> tuple:
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


def register_common_ops(cls):
    """detach, clone, alias, _to_copy / to, t, copy_ and slicing along N (the class's narrow_rows)
    for a QuantizedWeightTensor subclass. ``cls._slice_k_reason`` says why it cannot be sliced along K."""

    @cls.implements(aten.slice.Tensor)
    def _slice(func, types, args, kwargs):
        self = args[0]
        dim = _arg(args, kwargs, 1, "dim", 0)
        start = _arg(args, kwargs, 2, "start")
        end = _arg(args, kwargs, 3, "end")
        step = _arg(args, kwargs, 4, "step", 1)
        if step != 1:
            raise ValueError(f"{cls.__name__}: slicing with a step is not supported")
        if self.transposed:
            raise ValueError(f"slicing a transposed {cls.__name__}; slice the (N, K) weight, then t()")
        size = self.shape[dim]
        start, end = _slice_range(size, start, end)
        if dim in (0, -2):
            return self._with() if start == 0 and end == size else self.narrow_rows(start, end)
        reason = getattr(cls, "_slice_k_reason", "")
        raise ValueError(f"{cls.__name__} can be sliced only along N (dim 0)" + (f": {reason}" if reason else ""))

    @cls.implements([aten.detach.default, aten.alias.default])
    def _detach(func, types, args, kwargs):
        return args[0]._apply_fn_to_data(func)

    @cls.implements(aten.clone.default)
    def _clone(func, types, args, kwargs):
        return args[0]._apply_fn_to_data(lambda t: t.clone())

    @cls.implements(aten._to_copy.default)
    def _to_copy(func, types, args, kwargs):
        self = args[0]
        device = kwargs.get("device", None)
        dtype = kwargs.get("dtype", None)
        changes = {}
        if dtype is not None and dtype != self.dtype:
            changes["dtype"] = _check_logical_dtype(dtype, cls.__name__)
        if device is None:
            return self._apply_fn_to_data(lambda t: t.clone(), **changes)
        return self._apply_fn_to_data(lambda t: t.to(device=device, copy=True), **changes)

    @cls.implements(aten.t.default)
    def _t(func, types, args, kwargs):
        return args[0]._with(transposed=not args[0].transposed)

    @cls.implements(aten.copy_.default)
    def _copy_(func, types, args, kwargs):
        dst, src = args[0], args[1]
        if type(src) is not type(dst) or src._attributes() != dst._attributes() or any(
            a.shape != b.shape or a.dtype != b.dtype for a, b in zip(src._data(), dst._data())
        ):
            raise ValueError(
                f"copy_ into a {cls.__name__} needs a {cls.__name__} of the same shapes and "
                f"attributes (got {type(src).__name__}); assign a new Parameter instead"
            )
        for a, b in zip(dst._data(), src._data()):
            a.copy_(b)
        return dst

    return cls
