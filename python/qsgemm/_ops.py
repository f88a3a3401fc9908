"""The qsgemm ops: fake (meta) kernels and thin Python wrappers.

The ops are registered in C++ (python/csrc/register.cpp, LibTorch stable ABI) as
``torch.ops.qsgemm.<name>`` with CPU kernels (the library's float64 reference: slow, for tests) and
CUDA kernels (sm_90a; the current torch stream; outputs and workspaces from torch's caching
allocator; no device sync except ``sparse24_compress``). This module registers their fake kernels
(shapes, dtypes and strides for FakeTensor / torch.compile) and wraps each op in a function of the
same name that turns the library's errors into Python exceptions.

Schemas (``G = ceil(K / 128)``)::

    sparse24_compress(Tensor w, str prune="magnitude", str scale="per_channel", Tensor? given_scale=None)
        -> (Tensor values, Tensor meta, Tensor scale)
    sparse24_decompress(Tensor values, Tensor meta, Tensor scale, int N, int K, ScalarType dtype) -> Tensor
    sparse24_decompress.out(Tensor values, Tensor meta, Tensor scale, int N, int K, *, Tensor(a!) out) -> ()
    sparse24_linear(Tensor x, Tensor x_scale, Tensor values, Tensor meta, Tensor w_scale, Tensor? bias=None,
                    ScalarType? out_dtype=None, bool fast_accum=False) -> Tensor
    sparse24_linear.out(Tensor x, Tensor x_scale, Tensor values, Tensor meta, Tensor w_scale, Tensor? bias=None,
                        bool fast_accum=False, *, Tensor(a!) out) -> ()
    quantize_fp8_per_token(Tensor x, bool pow2_scales=False) -> (Tensor q, Tensor scale)
    quantize_fp8_per_token_group(Tensor x, bool pow2_scales=False) -> (Tensor q, Tensor scale)
    quantize_fp8_weight(Tensor w, str granularity="block_128x128") -> (Tensor q, Tensor scale)
    blockwise_linear(Tensor x, Tensor x_scale, str x_granularity, Tensor w, Tensor w_scale, str w_granularity,
                     Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor
    blockwise_linear.out(Tensor x, Tensor x_scale, str x_granularity, Tensor w, Tensor w_scale, str w_granularity,
                         Tensor? bias=None, *, Tensor(a!) out) -> ()

Errors: a kernel's error message is ``"[qsgemm:<status>] qsgemm::<op>: <what> (operand <name>)"``.
A direct ``torch.ops.qsgemm.<name>(...)`` call raises RuntimeError with that message; the wrappers
here strip the tag and raise ValueError (invalid_argument, misaligned, invalid_value),
NotImplementedError (unsupported) or RuntimeError (cuda_error, internal); ``translate_error(exc)``
does the same for an exception caught elsewhere.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

import torch

__all__ = [
    "sparse24_compress",
    "sparse24_decompress",
    "sparse24_decompress_out",
    "sparse24_linear",
    "sparse24_linear_out",
    "quantize_fp8_per_token",
    "quantize_fp8_per_token_group",
    "quantize_fp8_weight",
    "blockwise_linear",
    "blockwise_linear_out",
    "sparse24_meta_bytes",
    "fp8_row_ld",
    "pad_fp8_rows",
    "translate_error",
    "GRANULARITIES",
]

GRANULARITIES = ("per_tensor", "per_row", "group_1x128", "block_128x128")
_E4M3 = torch.float8_e4m3fn
_ops = torch.ops.qsgemm

# ---- errors ------------------------------------------------------------------------------------------

_TAG = re.compile(r"\[qsgemm:([a-z_]+)\] ")
_EXC = {
    "invalid_argument": ValueError,
    "misaligned": ValueError,
    "invalid_value": ValueError,
    "unsupported": NotImplementedError,
}


def translate_error(exc: BaseException) -> BaseException:
    """The Python exception for a qsgemm op's RuntimeError (``exc`` itself when it is not one).

    The message is the library's, from ``qsgemm::<op>:`` to its end, without the status tag."""
    text = str(exc)
    m = _TAG.search(text)
    if m is None:
        return exc
    message = text[m.end():].split("\n", 1)[0].strip()
    return _EXC.get(m.group(1), RuntimeError)(message)


def _call(op, *args, **kwargs):
    if torch.compiler.is_compiling():
        return op(*args, **kwargs)
    try:
        return op(*args, **kwargs)
    except RuntimeError as exc:
        translated = translate_error(exc)
        if translated is exc:
            raise
        raise translated from None


# ---- shapes shared by the fake kernels ---------------------------------------------------------------------


def _ceil_div(a, b):
    return (a + b - 1) // b


def fp8_row_ld(K):
    """The row stride (elements) of an e4m3 [rows, K] GEMM operand: K when K % 128 == 0, else K
    rounded up to 128 (qsgemm/quant.h's fp8_row_ld). Rows that start off a 128-byte line cost the
    GEMMs' loads a second line each (K = 4112 packed: ~1.45x the time of padded rows on the H200)."""
    return K if K % 128 == 0 else (K // 128 + 1) * 128


def pad_fp8_rows(q: torch.Tensor) -> torch.Tensor:
    """``q`` [rows, K] with row stride fp8_row_ld(K): ``q`` itself when its rows already start on
    128-byte lines (or it has one row), else a copy (the bytes between rows are not written).
    ``clone()``, ``.to()`` and ``.contiguous()`` of a padded tensor pack its rows again."""
    if q.dim() != 2:
        raise ValueError(f"pad_fp8_rows: q must be 2-D, got {tuple(q.shape)}")
    rows, K = q.shape
    if rows <= 1 or (q.stride(1) == 1 and q.stride(0) % 128 == 0 and q.stride(0) >= K):
        return q
    out = torch.empty_strided((rows, K), (fp8_row_ld(K), 1), dtype=q.dtype, device=q.device)
    out.copy_(q)
    return out


def sparse24_meta_bytes(N, K):
    """Bytes of the 2:4 metadata of an [N, K] weight: rows padded to 64, K to 128, 4 bits per group of 4."""
    return _ceil_div(N, 64) * 64 * (_ceil_div(K, 128) * 128) // 8


def _out_dtype(out_dtype: Optional[torch.dtype]) -> torch.dtype:
    return torch.bfloat16 if out_dtype is None else out_dtype


# ---- fake kernels ------------------------------------------------------------------------------------------


@torch.library.register_fake("qsgemm::sparse24_compress")
def _(w, prune="magnitude", scale="per_channel", given_scale=None):
    N, K = w.shape
    values = w.new_empty((N, K // 2), dtype=_E4M3)
    meta = w.new_empty((sparse24_meta_bytes(N, K),), dtype=torch.uint8)
    scales = w.new_empty((1 if scale == "per_tensor" else N,), dtype=torch.float32)
    return values, meta, scales


@torch.library.register_fake("qsgemm::sparse24_decompress")
def _(values, meta, scale, N, K, dtype):
    return values.new_empty((N, K), dtype=dtype)


@torch.library.register_fake("qsgemm::sparse24_decompress.out")
def _(values, meta, scale, N, K, *, out):
    return None


@torch.library.register_fake("qsgemm::sparse24_linear")
def _(x, x_scale, values, meta, w_scale, bias=None, out_dtype=None, fast_accum=False):
    return x.new_empty((x.shape[0], values.shape[0]), dtype=_out_dtype(out_dtype))


@torch.library.register_fake("qsgemm::sparse24_linear.out")
def _(x, x_scale, values, meta, w_scale, bias=None, fast_accum=False, *, out):
    return None


@torch.library.register_fake("qsgemm::quantize_fp8_per_token")
def _(x, pow2_scales=False):
    M, K = x.shape
    return x.new_empty((M, K), dtype=_E4M3), x.new_empty((M,), dtype=torch.float32)


@torch.library.register_fake("qsgemm::quantize_fp8_per_token_group")
def _(x, pow2_scales=False):
    M, K = x.shape
    G = _ceil_div(K, 128)
    # M-major: the transpose of a contiguous [G, M] (strides (1, M); (1, 1) for M == 0).
    scale = x.new_empty_strided((M, G), (1, torch.sym_max(M, 1)), dtype=torch.float32)
    return x.new_empty_strided((M, K), (fp8_row_ld(K), 1), dtype=_E4M3), scale


@torch.library.register_fake("qsgemm::quantize_fp8_weight")
def _(w, granularity="block_128x128"):
    N, K = w.shape
    G = _ceil_div(K, 128)
    if granularity == "block_128x128":
        shape = (_ceil_div(N, 128), G)
    elif granularity == "group_1x128":
        shape = (N, G)
    else:  # per_row (other strings fail in the real kernel)
        shape = (N,)
    return w.new_empty_strided((N, K), (fp8_row_ld(K), 1), dtype=_E4M3), w.new_empty(shape, dtype=torch.float32)


@torch.library.register_fake("qsgemm::blockwise_linear")
def _(x, x_scale, x_granularity, w, w_scale, w_granularity, bias=None, out_dtype=None):
    return x.new_empty((x.shape[0], w.shape[0]), dtype=_out_dtype(out_dtype))


@torch.library.register_fake("qsgemm::blockwise_linear.out")
def _(x, x_scale, x_granularity, w, w_scale, w_granularity, bias=None, *, out):
    return None


# ---- wrappers ---------------------------------------------------------------------------------------------

_sl = _ops.sparse24_linear.default
_bl = _ops.blockwise_linear.default


def sparse24_compress(
    w: torch.Tensor, prune: str = "magnitude", scale: str = "per_channel", given_scale: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Prune (or check) to 2:4, quantize to FP8 and compress a weight W [N, K] (bf16/fp16/fp32).

    N % 8 == 0, K % 32 == 0, rows contiguous. prune "magnitude" keeps the two largest of every 4
    (ties: lower index); "require" rejects a group with more than two non-zeros (ValueError naming
    row and group). scale "per_channel" ([N]) or "per_tensor" ([1]); given_scale (float32 of that
    shape) uses those scales. NaN/Inf in w is a ValueError. Returns (values float8_e4m3fn [N, K/2],
    meta uint8 [sparse24_meta_bytes(N, K)], scale float32 [N] or [1]). On CUDA this synchronizes the
    stream once (a load-time op)."""
    return _call(_ops.sparse24_compress.default, w, prune, scale, given_scale)


def sparse24_decompress(values, meta, scale, N: int, K: int, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """The dense dequantized weight [N, K] (dtype bfloat16 or float32): e4m3(value) * scale, 0 where pruned."""
    return _call(_ops.sparse24_decompress.default, values, meta, scale, N, K, dtype)


def sparse24_decompress_out(values, meta, scale, N: int, K: int, *, out: torch.Tensor) -> torch.Tensor:
    """sparse24_decompress into ``out`` ([N, K] bfloat16/float32, contiguous); returns ``out``."""
    _call(_ops.sparse24_decompress.out, values, meta, scale, N, K, out=out)
    return out


def sparse24_linear(
    x, x_scale, values, meta, w_scale, bias=None, out_dtype: Optional[torch.dtype] = None, fast_accum: bool = False
) -> torch.Tensor:
    """Y [M, N] = (x_scale ⊙ x) · (w_scale ⊙ W)ᵀ + bias with a compressed 2:4 FP8 weight.

    x float8_e4m3fn [M, K] contiguous; x_scale float32 [M] (per token) or [1]; values/meta/w_scale
    from sparse24_compress; bias None or [N] (float32 or the output dtype); out_dtype bfloat16
    (default), float16 or float32. fast_accum: allow FP8 fast accumulation (faster from 768 tokens,
    larger error; below 512, and at 512-767 where no fast kernel models faster, the promoted kernels
    run)."""
    # Trailing defaults are left out: every argument torch.ops parses is host time on the hot path.
    if fast_accum:
        return _call(_sl, x, x_scale, values, meta, w_scale, bias, _out_dtype(out_dtype), True)
    if out_dtype is not None:
        return _call(_sl, x, x_scale, values, meta, w_scale, bias, out_dtype)
    if bias is not None:
        return _call(_sl, x, x_scale, values, meta, w_scale, bias)
    return _call(_sl, x, x_scale, values, meta, w_scale)


def sparse24_linear_out(x, x_scale, values, meta, w_scale, bias=None, fast_accum: bool = False, *, out) -> torch.Tensor:
    """sparse24_linear into ``out`` ([M, N] bf16/fp16/fp32, contiguous; its dtype is the output dtype)."""
    if fast_accum:
        _call(_ops.sparse24_linear.out, x, x_scale, values, meta, w_scale, bias, True, out=out)
    else:
        _call(_ops.sparse24_linear.out, x, x_scale, values, meta, w_scale, bias, out=out)
    return out


def quantize_fp8_per_token(x: torch.Tensor, pow2_scales: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-token FP8: x bf16/fp16 [M, K] (contiguous, K % 8 == 0) -> (q float8_e4m3fn [M, K],
    scale float32 [M]); scale = max(amax / 448, FLT_MIN) (1 for an all-zero row), a power of two at
    or above it with pow2_scales."""
    return _call(_ops.quantize_fp8_per_token.default, x, pow2_scales)


def quantize_fp8_per_token_group(x: torch.Tensor, pow2_scales: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """Dynamic 1x128-group FP8 (DeepSeek-V3 style): x bf16/fp16 [M, K] -> (q float8_e4m3fn [M, K],
    scale float32 [M, ceil(K/128)] M-major: strides (1, M), the transpose of a contiguous [G, M]),
    the x_scale layout blockwise_linear's "group_1x128" reads. q's row stride is fp8_row_ld(K):
    rows of K % 128 != 0 are padded to 128 bytes (not contiguous then), the GEMMs' fast layout."""
    return _call(_ops.quantize_fp8_per_token_group.default, x, pow2_scales)


def quantize_fp8_weight(w: torch.Tensor, granularity: str = "block_128x128") -> Tuple[torch.Tensor, torch.Tensor]:
    """FP8 weight quantization of W [N, K] (contiguous, K % 8 == 0): granularity "block_128x128"
    (scale [ceil(N/128), G]), "group_1x128" (scale [N, G]) with w bf16/fp16/fp32, or "per_row"
    (scale [N]; w bf16/fp16). Returns (q float8_e4m3fn [N, K] with row stride fp8_row_ld(K), as
    quantize_fp8_per_token_group's, scale float32)."""
    return _call(_ops.quantize_fp8_weight.default, w, granularity)


def blockwise_linear(
    x, x_scale, x_granularity: str, w, w_scale, w_granularity: str, bias=None, out_dtype: Optional[torch.dtype] = None
) -> torch.Tensor:
    """Y [M, N] = Σ_g x_scale[m, g] w_scale[n, g] · x_g · w_gᵀ (+ bias), FP8 operands with scales.

    x float8_e4m3fn [M, K], w float8_e4m3fn [N, K] (row-major, row stride % 16 == 0, K % 16 == 0,
    N % 8 == 0 or % 4 for float32 output; fastest with rows on 128-byte lines: fp8_row_ld). Pairs:
    x "group_1x128" ([M, G] M-major, as quantize_fp8_per_token_group) or "block_128x128"
    ([ceil(M/128), G]) with w "block_128x128" ([ceil(N/128), G]) or "group_1x128" ([N, G]); or x
    "per_row" [M] with w "per_row" [N]. bias None or [N]; out_dtype bfloat16
    (default), float16 or float32."""
    if out_dtype is not None:  # trailing defaults left out, as in sparse24_linear
        return _call(_bl, x, x_scale, x_granularity, w, w_scale, w_granularity, bias, out_dtype)
    if bias is not None:
        return _call(_bl, x, x_scale, x_granularity, w, w_scale, w_granularity, bias)
    return _call(_bl, x, x_scale, x_granularity, w, w_scale, w_granularity)


def blockwise_linear_out(x, x_scale, x_granularity: str, w, w_scale, w_granularity: str, bias=None, *, out):
    """blockwise_linear into ``out`` ([M, N] bf16/fp16/fp32, contiguous)."""
    _call(_ops.blockwise_linear.out, x, x_scale, x_granularity, w, w_scale, w_granularity, bias, out=out)
    return out


# ---- the W4A4 + low-rank family (python/csrc/w4a4.cpp; schemas in _ops_w4a4.py) ----------------------------
from ._ops_w4a4 import *  # noqa: E402,F401,F403
from ._ops_w4a4 import __all__ as _w4a4_all  # noqa: E402

__all__ += _w4a4_all
