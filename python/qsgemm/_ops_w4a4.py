"""The W4A4 + low-rank ops (python/csrc/w4a4.cpp): fake kernels and wrappers (re-exported by
``qsgemm.ops``).

Schemas::

    w4a4_pack_weight(Tensor w, int group) -> (Tensor packed, Tensor scale)
    w4a4_quantize_activations(Tensor x, int group, Tensor? lora_down=None, bool e4m3=False)
        -> (Tensor x1, Tensor x_scale, Tensor? x2)
    w4a4_linear(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,
                Tensor? w2=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor
    w4a4_linear.out(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,
                    Tensor? w2=None, Tensor? bias=None, *, Tensor(a!) out) -> ()

Dtypes (docs/formats.md §5): packed INT4 is ``torch.uint8`` with K/2 columns (two signed values
-8..7 per byte, the even k in the low nibble); the activations' e4m3 staging (``e4m3=True``) is
``torch.float8_e4m3fn`` [M, K], one code per byte as an e4m3 value: what the wgmma kernel reads
(``w4a4_linear`` takes either; ``w4a4_x1_e4m3(M, N, K, group)`` says which one the library's
heuristic prefers); scales float32, weight scales [N, K/group] row-major,
activation scales [M, K/group] M-major (strides (1, ld), ld >= M); the low-rank operands x2 [M, r], w2 [N, r]
and lora_down [r, K] are bfloat16; r = 0, 16, ..., 128; group 64 or 128; K % group == 0; N % 8 == 0.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ._ops import _call, _ceil_div, _out_dtype

__all__ = [
    "w4a4_pack_weight",
    "w4a4_quantize_activations",
    "w4a4_linear",
    "w4a4_linear_out",
    "w4a4_x1_e4m3",
    "w4a4_sm_count",
    "W4A4_GROUPS",
    "W4A4_MAX_RANK",
]

W4A4_GROUPS = (64, 128)
W4A4_MAX_RANK = 128
# The staging the library's heuristic reads (src/w4a4_heuristic.h, w4a4_prefers_e4m3), mirrored here
# so that it runs at trace time (torch.compile, symbolic M): packed INT4 up to 16 tokens; from 17 a cost
# model of the packed-X1 kernels (the decode row; at group 128 also the mma.sync 32x64 tile) and the
# wgmma kernel, in µs on the H200 per group (the constants of kW4A4CostGroup64/128; the band tile up to
# 112 tokens; no rows past M where the library clamps the wgmma kernel's last token tile); e4m3 codes
# for the wgmma kernel above 256 tokens. The library runs either staging; this only picks the faster one.
# test_w4a4_ops_cpu.py checks it against libqsgemm's own function.
W4A4_MODEL_MAX_L = 256
# decode (fixed, per element, per row; per SM), wgmma (fixed, wave, K tile, K tile past M), 32x64 or None
_W4A4_COST = {
    64: ((12.06, 3.34e-5, 2.83e-2), (6.16, 5.08, 1.019, 0.317), None),
    128: ((13.21, 2.79e-5, 3.80e-2), (4.375, 5.71, 0.751, 0.0456), (8.097, 1.0724e-3, 2.502e-3)),
}
_ops = torch.ops.qsgemm


_W4A4_CLAMP_MIN_OOB_PER_TILE = 0.03
# kW4A4BandTiles and kW4A4BandFixedShare: up to 112 tokens the wgmma kernel runs the narrowest band
# tile that holds M, a K tile of which costs share(tile) of the 128-token tile's.
_W4A4_BAND_TILES = (64, 80, 96, 112)
_W4A4_BAND_FIXED_SHARE = 0.6


def _wgmma_clamp_pays(M: int) -> bool:
    """Whether the library runs the wgmma kernel with its last token tile clamped inside M, where the
    cost model then counts no rows past M (w4a4_wgmma_clamp_pays, src/w4a4_heuristic.h)."""
    if M <= 128 or M % 128 == 0:
        return False
    tiles = _ceil_div(M, 128)
    return (tiles * 128 - M) / 128 >= _W4A4_CLAMP_MIN_OOB_PER_TILE * tiles


def w4a4_x1_e4m3(M: int, N: int, K: int, group: int = 64, sm_count: int = 132) -> bool:
    """Whether activations of M tokens for a weight [N, K] should be quantized into the e4m3 staging
    (the wgmma kernel's operand) rather than packed INT4 (the decode and mma.sync kernels'): what the
    library's heuristic runs on a GPU of ``sm_count`` SMs (the H200's 132 by default). M >= 0, N and
    K > 0, group 64 or 128, sm_count > 0 (ValueError naming the values otherwise)."""
    if group not in _W4A4_COST:
        raise ValueError(f"w4a4_x1_e4m3: group={group}; expected 64 or 128")
    if M < 0 or N <= 0 or K <= 0 or sm_count <= 0:
        raise ValueError(f"w4a4_x1_e4m3: M={M}, N={N}, K={K}, sm_count={sm_count}; expected M >= 0 and the rest > 0")
    if M > W4A4_MODEL_MAX_L:
        return True
    if M <= 16:
        return False
    (dec_fixed, dec_elem, dec_row), (wg_fixed, wg_wave, wg_ktile, wg_oob), small = _W4A4_COST[group]
    packed = dec_fixed + _ceil_div(M, 32) * (N / sm_count) * (dec_row + K * dec_elem)
    if small is not None:
        ctas = _ceil_div(M, 32) * _ceil_div(N, 64)
        s = small[0] + ctas * K / sm_count * small[1] + _ceil_div(ctas, 4 * sm_count) * K * small[2]
        packed = min(packed, s)
    # The token tile the e4m3 staging runs: the narrowest band tile that holds M up to 112 tokens.
    tile = next((t for t in _W4A4_BAND_TILES if M <= t), 128)
    share = _W4A4_BAND_FIXED_SHARE + (1 - _W4A4_BAND_FIXED_SHARE) * tile / 128
    tiles = _ceil_div(M, tile)
    waves = _ceil_div(tiles * _ceil_div(N, 128), sm_count)
    oob = 0.0 if _wgmma_clamp_pays(M) else (tiles * tile - M) / 128
    wgmma = wg_fixed + waves * (wg_wave + _ceil_div(K, 128) * (wg_ktile * share + wg_oob * oob))
    return wgmma < packed


_SM_COUNTS: dict = {}


@torch.compiler.assume_constant_result
def w4a4_sm_count(device: torch.device) -> int:
    """The SM count w4a4_x1_e4m3 takes for tensors on ``device``: the CUDA device's (cached), 132 (an
    H200's) for any other device. A constant to torch.compile."""
    if device.type != "cuda":
        return 132
    index = device.index if device.index is not None else torch.cuda.current_device()
    n = _SM_COUNTS.get(index)
    if n is None:
        n = _SM_COUNTS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return n


@torch.library.register_fake("qsgemm::w4a4_pack_weight")
def _(w, group):
    N, K = w.shape
    return w.new_empty((N, K // 2), dtype=torch.uint8), w.new_empty((N, K // group), dtype=torch.float32)


@torch.library.register_fake("qsgemm::w4a4_quantize_activations")
def _(x, group, lora_down=None, e4m3=False):
    M, K = x.shape
    x1 = x.new_empty((M, K), dtype=torch.float8_e4m3fn) if e4m3 else x.new_empty((M, K // 2), dtype=torch.uint8)
    # M-major, the ld padded to 4 floats as the library reads it fastest (qsgemm::w4a4_x_scale_ld):
    # strides (1, 4 * ceil(M / 4)), (1, 4) for M <= 4.
    xs = x.new_empty_strided((M, K // group), (1, (torch.sym_max(M, 1) + 3) // 4 * 4), dtype=torch.float32)
    x2 = None if lora_down is None else x.new_empty((M, lora_down.shape[0]), dtype=torch.bfloat16)
    return x1, xs, x2


@torch.library.register_fake("qsgemm::w4a4_linear")
def _(x1, x_scale, w1, w_scale, group, x2=None, w2=None, bias=None, out_dtype=None):
    return x1.new_empty((x1.shape[0], w1.shape[0]), dtype=_out_dtype(out_dtype))


@torch.library.register_fake("qsgemm::w4a4_linear.out")
def _(x1, x_scale, w1, w_scale, group, x2=None, w2=None, bias=None, *, out):
    return None


_wl = _ops.w4a4_linear.default
_wq = _ops.w4a4_quantize_activations.default


def w4a4_pack_weight(w: torch.Tensor, group: int = 64) -> Tuple[torch.Tensor, torch.Tensor]:
    """Quantize a weight W [N, K] (bf16/fp16/fp32, contiguous, K % group == 0) to signed INT4 groups.

    Per group of ``group`` (64 or 128) consecutive k: s = amax/7 (1 for an all-zero group),
    q = clamp(rint(w/s), -8, 7). Returns (packed uint8 [N, K/2], scale float32 [N, K/group]).
    NaN/Inf is a ValueError naming the first one. On CUDA it synchronizes once (load-time op)."""
    return _call(_ops.w4a4_pack_weight.default, w, group)


def w4a4_quantize_activations(
    x: torch.Tensor, group: int = 64, lora_down: Optional[torch.Tensor] = None, e4m3: bool = False
) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """Quantize activations X [M, K] (bf16/fp16/fp32, contiguous) to INT4 groups, the low-rank
    down-projection fused: returns (x1, x_scale float32 [M, K/group] M-major with its ld padded to a
    multiple of 4 (the 16-byte rows w4a4_linear reads fastest), x2 = X·lora_downᵀ
    bf16 [M, r] from the unquantized X, or None without lora_down). x1 is packed uint8 [M, K/2], or
    with ``e4m3=True`` the e4m3 staging float8_e4m3fn [M, K] (the same codes, one per byte, the
    wgmma kernel's operand; see w4a4_x1_e4m3). lora_down: bf16 [r, K], r a multiple of 16 up to 128."""
    if e4m3:
        return _call(_wq, x, group, lora_down, True)
    if lora_down is None:
        return _call(_wq, x, group)
    return _call(_wq, x, group, lora_down)


def w4a4_linear(
    x1, x_scale, w1, w_scale, group: int = 64, x2=None, w2=None, bias=None, out_dtype: Optional[torch.dtype] = None
) -> torch.Tensor:
    """Y [M, N] = Σ_g x_scale[m, g]·w_scale[n, g]·(x1_g·w1_gᵀ) + x2·w2ᵀ (+ bias), one fused kernel.

    x1/x_scale from w4a4_quantize_activations (x1 packed or e4m3 staging), w1/w_scale from w4a4_pack_weight (N % 8 == 0); x2
    bf16 [M, r] and w2 bf16 [N, r] together or both None (plain W4A4); bias None or [N] (float32
    or the output dtype); out_dtype bfloat16 (default), float16 or float32."""
    if out_dtype is not None:  # trailing defaults left out: host time on the hot path
        return _call(_wl, x1, x_scale, w1, w_scale, group, x2, w2, bias, out_dtype)
    if bias is not None:
        return _call(_wl, x1, x_scale, w1, w_scale, group, x2, w2, bias)
    if x2 is not None or w2 is not None:
        return _call(_wl, x1, x_scale, w1, w_scale, group, x2, w2)
    return _call(_wl, x1, x_scale, w1, w_scale, group)


def w4a4_linear_out(x1, x_scale, w1, w_scale, group: int = 64, x2=None, w2=None, bias=None, *, out) -> torch.Tensor:
    """w4a4_linear into ``out`` ([M, N] bf16/fp16/fp32, contiguous; its dtype is the output dtype)."""
    _call(_ops.w4a4_linear.out, x1, x_scale, w1, w_scale, group, x2, w2, bias, out=out)
    return out
