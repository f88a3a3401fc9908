"""Shared helpers of the tensor / quantize / serialization tests (pkg-py).

References are float64 torch computations on the same quantized operands; the metadata decoder
below is an independent implementation of docs/formats.md §4.3 (not the library's decompressor).
"""

import os

import pytest
import torch

E4M3 = torch.float8_e4m3fn


def gpu_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"needs sm_90, device is sm_{''.join(map(str, torch.cuda.get_device_capability()))}"
    return None


def require_gpu():
    """Skip (or, with QSGEMM_REQUIRE_GPU=1, fail) a test that needs an sm_90 GPU."""
    reason = gpu_skip_reason()
    if reason is not None:
        if os.environ.get("QSGEMM_REQUIRE_GPU") == "1":
            pytest.fail(f"QSGEMM_REQUIRE_GPU=1 but {reason}")
        pytest.skip(reason)


#: Devices to parametrize over: "cuda" cases call require_gpu() first.
DEVICES = ["cpu", "cuda"]


def on_device(device):
    if device == "cuda":
        require_gpu()
    return torch.device(device)


def ref_sparse24_decompress(values, meta, scale, N, K):
    """float64 [N, K] from the compressed buffers, decoding §4.3 independently of the library."""
    values, meta, scale = values.cpu(), meta.cpu(), scale.cpu()
    rows = -(-N // 64) * 64
    kp = -(-K // 128) * 128
    panels = kp // 128
    byts = meta.view(panels, rows, 16)[:, :N, :].permute(1, 0, 2).reshape(N, kp // 8)[:, : K // 8]
    byts = byts.to(torch.int64)
    nib = torch.stack([byts & 0xF, byts >> 4], dim=-1).reshape(N, K // 4)
    i0, i1 = nib & 3, nib >> 2
    assert bool((i0 < i1).all()), "metadata: the lower index must come first (§4.3)"
    v = values.to(torch.float64).reshape(N, K // 4, 2)
    out = torch.zeros(N, K // 4, 4, dtype=torch.float64)
    out.scatter_(-1, i0.unsqueeze(-1), v[..., :1])
    out.scatter_(-1, i1.unsqueeze(-1), v[..., 1:])
    return out.reshape(N, K) * scale.to(torch.float64).reshape(-1, 1)


def expand_scale(scale, granularity, rows, K):
    """float64 [rows, K]: the scale of each element for a §2 granularity."""
    s = scale.detach().cpu().to(torch.float64)
    kb = -(-K // 128)
    if granularity == "per_tensor":
        return s.reshape(1, 1).expand(rows, K)
    if granularity == "per_row":
        return s.reshape(rows, 1).expand(rows, K)
    if granularity == "group_1x128":
        return s.reshape(rows, kb).repeat_interleave(128, 1)[:, :K]
    if granularity == "block_128x128":
        return s.repeat_interleave(128, 0)[:rows].repeat_interleave(128, 1)[:, :K]
    raise ValueError(granularity)


def dequant_x(xq, xs, granularity):
    M, K = xq.shape
    return xq.cpu().to(torch.float64) * expand_scale(xs, granularity, M, K)


def assert_close_to_ref(y, ref, what=""):
    """y (any float dtype) vs a float64 reference: the output's rounding plus float32 accumulation.

    Tolerance, defined once: |y - ref| <= 2^-7·|ref| + 2^-7·max|ref| · 2^-2 (bf16 has 8 bits).
    """
    y = y.detach().cpu().to(torch.float64)
    assert y.shape == ref.shape, (what, y.shape, ref.shape)
    scale = ref.abs().max().item() if ref.numel() else 0.0
    err = (y - ref).abs()
    bound = ref.abs() * 2.0 ** -7 + scale * 2.0 ** -9 + 1e-30
    worst = (err - bound).max().item() if ref.numel() else -1.0
    assert worst <= 0, f"{what}: max error {err.max().item():.3g} over the bound (max|ref| {scale:.3g})"


def two_four_weight(N, K, dtype=torch.bfloat16, seed=0):
    """A dense weight that is already 2:4 (two non-zeros in every group of 4)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N, K, generator=g)
    keep = torch.rand(N, K // 4, 4, generator=g).argsort(-1)[..., :2]
    mask = torch.zeros(N, K // 4, 4).scatter_(-1, keep, 1.0).reshape(N, K)
    return (w * mask).to(dtype)


def assert_matches(y, expected, exact, what=""):
    """Equality on CPU (a float64 reference rounded once is deterministic across shapes); on the GPU
    a different shape or a compiler's fusion of the surrounding ops may pick another kernel
    configuration or round an input differently (one e4m3 step of an activation), so there the
    bound is 2^-6 relative plus 2^-5 of the largest magnitude."""
    if exact:
        assert torch.equal(y, expected), what
        return
    scale = expected.abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(y, expected, rtol=2.0 ** -6, atol=2.0 ** -5 * scale + 1e-6, msg=what)
