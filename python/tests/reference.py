"""Float64 torch references of the qsgemm ops on the same quantized operands, and the accuracy
bounds of tests/tolerances.h (the C++ suites' single definition, restated here)."""

import math

import torch

FLT_MIN = 2.0**-126
E4M3_MAX = 448.0

# ---- tests/tolerances.h ------------------------------------------------------------------------------
REL_BF16, REL_F16 = 2e-3, 1e-3
REL_F32 = {"sparse24": 5e-4, "blockwise": 2e-4}
F32_ARITH = {"sparse24": 1e-4, "blockwise": 2e-4}
REL_FAST_ACCUM = 5e-3
ELEM_ATOL, ELEM_ATOL_FAST_ACCUM = 5e-3, 0.1
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def rel_frobenius(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.double()
    if not torch.isfinite(out).all():
        return math.inf
    denom = ref.norm().item()
    num = (out - ref).norm().item()
    return num / denom if denom > 0 else num


def check_gemm(out: torch.Tensor, ref: torch.Tensor, family: str, fast_accum: bool = False) -> float:
    """Asserts both checks of tests/tolerances.h; returns the relative Frobenius error."""
    ref = ref.double().cpu()
    out = out.cpu()
    dt = out.dtype
    e = rel_frobenius(out, ref)
    if fast_accum:
        bound = REL_FAST_ACCUM
    elif dt == torch.float32:
        bound = REL_F32[family]
    else:
        e_round = rel_frobenius(ref.to(dt), ref)
        bound = max(REL_BF16 if dt == torch.bfloat16 else REL_F16, e_round + 2 * F32_ARITH[family])
    assert e <= bound, f"relative Frobenius error {e:.3e} > {bound:.3e} ({family}, {dt})"
    # Element-wise: |Y - ref| <= rtol |ref| + atol * max(row max, column max of |ref|) (+ fp16 floor).
    a = ref.abs()
    scale = torch.maximum(a.amax(dim=1, keepdim=True).expand_as(a), a.amax(dim=0, keepdim=True).expand_as(a))
    rtol = UNIT_ROUNDOFF[dt] * (1 + 1e-6)
    atol = ELEM_ATOL_FAST_ACCUM if fast_accum else ELEM_ATOL
    floor = 2.0**-24 if dt == torch.float16 else 0.0
    err = (out.double() - ref).abs()
    bad = err > rtol * a + atol * scale + floor
    if bad.any():
        r, c = [int(v) for v in bad.nonzero()[0]]
        raise AssertionError(
            f"{int(bad.sum())} elements out of bounds, first ({r}, {c}): got {out[r, c].item()}, ref {ref[r, c].item()}"
        )
    return e


# ---- quantizers (docs/formats.md §2): q = e4m3(x * (1 / s)), s = max(amax / 448, FLT_MIN), 1 for amax 0 ------


def fp8_scale(amax: torch.Tensor) -> torch.Tensor:
    amax = amax.float()
    s = torch.clamp(amax / E4M3_MAX, min=FLT_MIN)
    return torch.where(amax == 0, torch.ones_like(s), s)


def quantize(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    inv = 1.0 / s.float()
    return (x.float() * inv).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def quantize_per_token(x):
    s = fp8_scale(x.float().abs().amax(dim=1))
    return quantize(x, s[:, None]), s


def expand_groups(s: torch.Tensor, rows: int, K: int, block_rows: int) -> torch.Tensor:
    """[ceil(rows/block_rows), G] scales to one per element [rows, K]."""
    return s.repeat_interleave(block_rows, dim=0)[:rows].repeat_interleave(128, dim=1)[:, :K]


# ---- GEMMs in float64 ---------------------------------------------------------------------------------


def sparse24_linear_ref(x, x_scale, w_dense, bias=None):
    """(x_scale ⊙ x) · W_dequantizedᵀ + bias, W the decompressed weight (scales applied)."""
    xd = x.cpu().double() * x_scale.cpu().double().reshape(-1, 1)
    y = xd @ w_dense.cpu().double().T
    return y if bias is None else y + bias.cpu().double()


def scale_per_element(s, g, rows, K):
    s = s.cpu().double()
    if g == "per_tensor":
        return s.reshape(1, 1).expand(rows, K)
    if g == "per_row":
        return s.reshape(rows, 1).expand(rows, K)
    if g == "group_1x128":
        return expand_groups(s, rows, K, 1)
    if g == "block_128x128":
        return expand_groups(s, rows, K, 128)
    raise ValueError(g)


def blockwise_linear_ref(x, x_scale, gx, w, w_scale, gw, bias=None):
    M, K = x.shape
    N = w.shape[0]
    xd = x.cpu().double() * scale_per_element(x_scale, gx, M, K)
    wd = w.cpu().double() * scale_per_element(w_scale, gw, N, K)
    y = xd @ wd.T
    return y if bias is None else y + bias.cpu().double()


def prune_24_magnitude(w: torch.Tensor) -> torch.Tensor:
    """Keeps the two largest magnitudes of every group of 4 along K (ties: the lower index)."""
    N, K = w.shape
    g = w.float().reshape(N, K // 4, 4)
    a = g.abs()
    # Stable descending sort by magnitude: equal magnitudes keep index order (lower index first).
    idx = torch.sort(a, dim=-1, descending=True, stable=True).indices[..., :2]
    mask = torch.zeros_like(a, dtype=torch.bool).scatter_(-1, idx, True)
    return (g * mask).reshape(N, K).to(w.dtype)


# ---- opcheck ----------------------------------------------------------------------------------------------

OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _snapshot(t):
    return t.detach().view(torch.uint8).clone() if t.dtype == torch.float8_e4m3fn else t.detach().clone()


def run_opcheck(op, args, kwargs=None):
    """torch.library.opcheck; for ops with float8 inputs, test_schema is replaced by an equivalent
    bitwise check (torch 2.11's SchemaCheckMode compares inputs with a multiply that has no float8
    kernel: "mul_cpu_reduced_float not implemented for Float8_e4m3fn"): no argument but `out` changes."""
    kwargs = kwargs or {}
    utils = OPCHECK_UTILS
    if any(isinstance(a, torch.Tensor) and a.dtype == torch.float8_e4m3fn for a in args):
        utils = OPCHECK_UTILS[1:]
        before = [_snapshot(a) if isinstance(a, torch.Tensor) else None for a in args]
        op(*args, **kwargs)
        for i, (a, b) in enumerate(zip(args, before)):
            if b is not None:
                assert torch.equal(_snapshot(a), b), f"{op}: argument {i} was modified"
    torch.library.opcheck(op, args, kwargs, test_utils=utils)
