"""Float64 / bit-exact torch references of the W4A4 + low-rank ops (docs/formats.md §5), written
independently of the library: s = max(amax/7, FLT_MIN) (1 for an all-zero group),
q = clamp(rint(x/s), -8, 7) in float32, two codes per byte with the even k in the low nibble."""

import torch

import reference as ref

FLT_MIN = 2.0**-126


def int4_quantize(x: torch.Tensor, group: int):
    """(packed uint8 [rows, K/2], scale float32 [rows, K/group], codes int8 [rows, K]) of x."""
    xf = x.detach().cpu().to(torch.float32)
    rows, K = xf.shape
    g = xf.reshape(rows, K // group, group)
    amax = g.abs().amax(-1)
    s = torch.where(amax > 0, torch.clamp(amax / 7.0, min=FLT_MIN), torch.ones_like(amax))
    q = torch.round(g / s.unsqueeze(-1)).clamp(-8, 7).to(torch.int16).reshape(rows, K)
    nib = (q & 0xF).reshape(rows, K // 2, 2)
    packed = (nib[..., 0] | (nib[..., 1] << 4)).to(torch.uint8)
    return packed, s, q.to(torch.int8)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    p = packed.cpu().to(torch.int16)
    c = torch.stack([p & 0xF, p >> 4], -1).reshape(p.shape[0], -1)
    return torch.where(c >= 8, c - 16, c).to(torch.int8)


def dequant(packed, scale, group):
    """float64 [rows, K] = code · scale of its group."""
    s = scale.detach().cpu().to(torch.float64)
    if s.dim() == 2:
        s = s.contiguous()
    return unpack(packed).to(torch.float64) * s.repeat_interleave(group, dim=1)


def linear_ref(x1, x_scale, w1, w_scale, group, x2=None, w2=None, bias=None):
    """float64 [M, N] on the same quantized operands."""
    y = dequant(x1, x_scale, group) @ dequant(w1, w_scale, group).t()
    if x2 is not None and x2.shape[1] > 0:
        y = y + x2.detach().cpu().to(torch.float64) @ w2.detach().cpu().to(torch.float64).t()
    if bias is not None:
        y = y + bias.detach().cpu().to(torch.float64)
    return y


def check_w4a4_gemm(out, r):
    """tests/tolerances.h's check with the blockwise family's float32 bounds (the W4A4 family's
    integer part is exact; float32 accumulation of the group sums and the low-rank term)."""
    return ref.check_gemm(out, r, "blockwise")
