"""GPU tests of the W4A4 + low-rank ops (CUDA sm_90). Skipped with the reason without one; failed
instead when QSGEMM_REQUIRE_GPU=1."""

import pytest
import torch

from qsgemm import ops

import reference as ref
import w4a4_reference as wref
from test_w4a4_ops_cpu import operands, unpack_codes, w4a4_opcheck_cases

pytestmark = pytest.mark.usefixtures("gpu")


def test_opcheck_cuda():
    for op, args, kwargs in w4a4_opcheck_cases("cuda"):
        ref.run_opcheck(op, args, kwargs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("group", [64, 128])
@pytest.mark.parametrize("M", [1, 77, 288])
def test_pack_and_quantizer_cuda_equal_cpu(dtype, group, M):
    K = 512
    w = (torch.randn(200, K) * 0.05).to(dtype)
    w[1, :group] = 0
    (pc, sc), (pg, sg) = ops.w4a4_pack_weight(w, group), ops.w4a4_pack_weight(w.cuda(), group)
    assert torch.equal(pg.cpu(), pc) and torch.equal(sg.cpu(), sc)
    x = (torch.randn(M, K) * 3).to(dtype)
    x[0, :group] = 0
    for r in (0, 16, 128):
        l1 = (torch.randn(r, K) / K**0.5).to(torch.bfloat16) if r else None
        c = ops.w4a4_quantize_activations(x, group, l1)
        g = ops.w4a4_quantize_activations(x.cuda(), group, None if l1 is None else l1.cuda())
        assert torch.equal(g[0].cpu(), c[0]), "codes"
        assert torch.equal(g[1].cpu(), c[1]) and g[1].stride() == c[1].stride(), "scales"
        g8 = ops.w4a4_quantize_activations(x.cuda(), group, None if l1 is None else l1.cuda(), e4m3=True)
        assert g8[0].dtype == torch.float8_e4m3fn, "e4m3 staging"
        assert torch.equal(g8[0].cpu().float(), unpack_codes(c[0]).float()), "e4m3 staging"
        assert torch.equal(g8[1].cpu(), c[1]), "scales (e4m3 staging)"
        if r:
            # float32 accumulation on the GPU vs float64 on the CPU: within one bf16 rounding.
            torch.testing.assert_close(g[2].cpu().float(), c[2].float(), rtol=2.0**-7, atol=1e-3)
        else:
            assert g[2] is None and c[2] is None


@pytest.mark.parametrize("M", [1, 33, 77, 288])
@pytest.mark.parametrize("r", [0, 32, 128])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_linear_cuda_vs_float64(M, r, out_dtype):
    N, K, group = 264, 1024, 64
    x1, xs, x2, w1, ws, w2 = operands(M, N, K, r, group)
    bias = torch.randn(N)
    expect = wref.linear_ref(x1, xs, w1, ws, group, x2, w2, bias)
    d = lambda t: None if t is None else t.cuda()  # noqa: E731
    y = ops.w4a4_linear(d(x1), d(xs), d(w1), d(ws), group, d(x2), d(w2), d(bias), out_dtype)
    assert y.dtype == out_dtype and y.shape == (M, N)
    wref.check_w4a4_gemm(y, expect)
    out = torch.full((M, N), float("nan"), dtype=out_dtype, device="cuda")
    ops.w4a4_linear_out(d(x1), d(xs), d(w1), d(ws), group, d(x2), d(w2), d(bias), out=out)
    wref.check_w4a4_gemm(out, expect)
    # The e4m3 staging of the same codes: the wgmma prefill kernel.
    y8 = ops.w4a4_linear(d(unpack_codes(x1).to(torch.float8_e4m3fn)), d(xs), d(w1), d(ws), group, d(x2), d(w2), d(bias), out_dtype)
    wref.check_w4a4_gemm(y8, expect)


def test_graph_capture_and_no_sync():
    N, K, group = 128, 256, 64
    w1, ws = ops.w4a4_pack_weight(torch.randn(N, K, device="cuda"), group)
    l1 = (torch.randn(32, K, device="cuda") / 16).to(torch.bfloat16)
    w2 = torch.randn(N, 32, device="cuda").to(torch.bfloat16)
    x = torch.randn(9, K, device="cuda", dtype=torch.bfloat16)

    def step():
        x1, xs, x2 = ops.w4a4_quantize_activations(x, group, l1)
        return ops.w4a4_linear(x1, xs, w1, ws, group, x2, w2)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step()
        x.copy_(torch.randn_like(x))
        g.replay()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert torch.equal(out, step())


def test_compile_cuda():
    N, K, group = 128, 256, 64
    w1, ws = ops.w4a4_pack_weight(torch.randn(N, K, device="cuda"), group)
    l1 = (torch.randn(16, K, device="cuda") / 16).to(torch.bfloat16)
    w2 = torch.randn(N, 16, device="cuda").to(torch.bfloat16)

    def f(x):
        x1, xs, x2 = ops.w4a4_quantize_activations(x, group, l1)
        return ops.w4a4_linear(x1, xs, w1, ws, group, x2, w2) * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    for M in (3, 40):
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        assert torch.equal(compiled(x), f(x))
