"""GPU tests of the qsgemm ops (CUDA sm_90). Skipped with the reason on a machine without one; failed
instead when QSGEMM_REQUIRE_GPU=1 (scripts/device_check.sh sets it on the H200)."""

import importlib.util
from pathlib import Path

import pytest
import torch

from qsgemm import ops

import reference as ref
from test_ops_cpu import opcheck_cases

pytestmark = pytest.mark.usefixtures("gpu")


def _load_bench(name):
    """A script of bench/ as a module (the host-overhead timing is bench/host_overhead.py's)."""
    path = Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"qsgemm_bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_host_overhead = _load_bench("host_overhead")
E4M3 = torch.float8_e4m3fn
MS = [1, 77, 288]


def u8(t):
    return t.view(torch.uint8) if t.dtype == E4M3 else t


def assert_bits_equal(a, b, what):
    assert a.shape == b.shape and a.dtype == b.dtype, what
    assert torch.equal(u8(a.cpu()), u8(b.cpu())), what


def sparse_weight(N, K, device, dtype=torch.bfloat16, scale="per_channel"):
    w = torch.randn(N, K, dtype=dtype, device=device)
    return (w,) + ops.sparse24_compress(w, "magnitude", scale)


# ---- opcheck, bit-exactness with the CPU kernels ------------------------------------------------------------


def test_opcheck_cuda():
    for op, args, kwargs in opcheck_cases("cuda"):
        ref.run_opcheck(op, args, kwargs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M", [1, 77, 288])
def test_quantizers_cuda_equal_cpu(dtype, M):
    x = torch.randn(M, 400, dtype=dtype) * 5
    x[0, :7] = 0
    for pow2 in (False, True):
        for fn in (ops.quantize_fp8_per_token, ops.quantize_fp8_per_token_group):
            (qc, sc), (qg, sg) = fn(x, pow2), fn(x.cuda(), pow2)
            assert_bits_equal(qg, qc, f"{fn.__name__} q")
            assert_bits_equal(sg, sc, f"{fn.__name__} scale")
            assert sg.stride() == sc.stride()
    w = torch.randn(200, 400, dtype=dtype)
    for g in ("block_128x128", "group_1x128", "per_row"):
        (qc, sc), (qg, sg) = ops.quantize_fp8_weight(w, g), ops.quantize_fp8_weight(w.cuda(), g)
        assert_bits_equal(qg, qc, f"weight {g} q")
        assert_bits_equal(sg, sc, f"weight {g} scale")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("scale", ["per_channel", "per_tensor"])
def test_compress_decompress_cuda_equal_cpu(dtype, scale):
    N, K = 136, 416
    w = torch.randn(N, K, dtype=dtype)
    cpu = ops.sparse24_compress(w, "magnitude", scale)
    gpu = ops.sparse24_compress(w.cuda(), "magnitude", scale)
    for a, b, name in zip(gpu, cpu, ("values", "meta", "scale")):
        assert_bits_equal(a, b, name)
    for dt in (torch.bfloat16, torch.float32):
        dc = ops.sparse24_decompress(*cpu, N, K, dt)
        dg = ops.sparse24_decompress(*gpu, N, K, dt)
        assert_bits_equal(dg, dc, f"decompress {dt}")
        out = torch.full((N, K), float("nan"), dtype=dt, device="cuda")
        ops.sparse24_decompress_out(*gpu, N, K, out=out)
        assert_bits_equal(out, dc, f"decompress.out {dt}")
    given = ops.sparse24_compress(w.cuda(), "magnitude", scale, given_scale=gpu[2])
    for a, b, name in zip(given, gpu, ("values", "meta", "scale")):
        assert_bits_equal(a, b, f"given_scale {name}")


# ---- GEMMs vs float64 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("fast_accum", [False, True])
def test_sparse24_linear_vs_float64(M, out_dtype, fast_accum):
    N, K = 512, 1024
    _, values, meta, s = sparse_weight(N, K, "cuda")
    x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    q, sx = ops.quantize_fp8_per_token(x)
    bias = torch.randn(N, device="cuda")
    y = ops.sparse24_linear(q, sx, values, meta, s, bias, out_dtype, fast_accum)
    wd = ops.sparse24_decompress(values, meta, s, N, K, torch.float32)
    r = ref.sparse24_linear_ref(q.float(), sx, wd, bias)
    ref.check_gemm(y, r, "sparse24", fast_accum)
    out = torch.full((M, N), float("nan"), dtype=out_dtype, device="cuda")  # poisoned
    ops.sparse24_linear_out(q, sx, values, meta, s, bias, fast_accum, out=out)
    torch.testing.assert_close(out, y, rtol=0, atol=0)
    # The CPU kernel on the same operands (float64 rounded once) is within the same bounds.
    if M <= 77 and not fast_accum:
        yc = ops.sparse24_linear(q.cpu(), sx.cpu(), values.cpu(), meta.cpu(), s.cpu(), bias.cpu(), out_dtype)
        ref.check_gemm(y, yc.double(), "sparse24")


@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize(
    "gx,gw,K",
    [
        ("group_1x128", "block_128x128", 1024),
        ("group_1x128", "block_128x128", 400),  # partial last K group
        ("group_1x128", "group_1x128", 1024),
        ("block_128x128", "block_128x128", 640),
        ("per_row", "per_row", 1024),
    ],
)
def test_blockwise_linear_vs_float64(M, gx, gw, K):
    N = 384
    x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    if gx == "group_1x128":
        q, sx = ops.quantize_fp8_per_token_group(x)
    elif gx == "per_row":
        q, sx = ops.quantize_fp8_per_token(x)
    else:
        q, sx = ops.quantize_fp8_weight(x, "block_128x128")
    wq, sw = ops.quantize_fp8_weight(torch.randn(N, K, dtype=torch.bfloat16, device="cuda"), gw)
    bias = torch.randn(N, dtype=torch.bfloat16, device="cuda")
    for out_dtype in (torch.bfloat16, torch.float32):
        b = bias if out_dtype == torch.bfloat16 else bias.float()
        y = ops.blockwise_linear(q, sx, gx, wq, sw, gw, b, out_dtype)
        r = ref.blockwise_linear_ref(q.float(), sx, gx, wq.float(), sw, gw, b)
        ref.check_gemm(y, r, "blockwise")
        out = torch.full((M, N), float("nan"), dtype=out_dtype, device="cuda")
        ops.blockwise_linear_out(q, sx, gx, wq, sw, gw, b, out=out)
        torch.testing.assert_close(out, y, rtol=0, atol=0)


# Shapes whose plan needs a workspace (from torch's caching allocator), by the library's plan on a
# 132-SM H200: split-K (sparse 2 slices, blockwise 4 slices) and sparse stream-K.
WORKSPACE_SHAPES = [("sparse24", 16, 512, 4096), ("blockwise", 16, 512, 4096), ("sparse24", 2048, 256, 4096)]


@pytest.mark.parametrize("family,M,N,K", WORKSPACE_SHAPES)
def test_workspace_plans_eager_and_graph(family, M, N, K):
    x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
    if family == "sparse24":
        _, values, meta, s = sparse_weight(N, K, "cuda")
        wd = ops.sparse24_decompress(values, meta, s, N, K, torch.float32)

        def f(x):
            q, sx = ops.quantize_fp8_per_token(x)
            return ops.sparse24_linear(q, sx, values, meta, s), q, sx

        def reference(q, sx):
            return ref.sparse24_linear_ref(q.float(), sx, wd)
    else:
        wq, sw = ops.quantize_fp8_weight(torch.randn(N, K, dtype=torch.bfloat16, device="cuda"))

        def f(x):
            q, sx = ops.quantize_fp8_per_token_group(x)
            return ops.blockwise_linear(q, sx, "group_1x128", wq, sw, "block_128x128"), q, sx

        def reference(q, sx):
            return ref.blockwise_linear_ref(q.float(), sx, "group_1x128", wq.float(), sw, "block_128x128")

    y, q, sx = f(x)
    ref.check_gemm(y, reference(q, sx), family)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        f(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        yg, qg, sxg = f(x)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.testing.assert_close(yg, f(x)[0], rtol=0, atol=0)
    ref.check_gemm(yg, reference(qg, sxg), family)


def test_zero_rows_and_errors_cuda():
    _, values, meta, s = sparse_weight(64, 128, "cuda")
    q = torch.empty(0, 128, dtype=E4M3, device="cuda")
    y = ops.sparse24_linear(q, torch.empty(0, device="cuda"), values, meta, s)
    assert y.shape == (0, 64)
    with pytest.raises(ValueError, match="not 2:4 sparse: row 0, group 0"):
        ops.sparse24_compress(torch.ones(64, 128, device="cuda"), prune="require")
    with pytest.raises(ValueError, match="must be a CUDA tensor|must be on the same device"):
        ops.sparse24_linear(*ops.quantize_fp8_per_token(torch.randn(4, 128, dtype=torch.bfloat16)), values, meta, s)
    with pytest.raises(ValueError, match=r"qsgemm::sparse24_linear: has 96 columns, expected K=128"):
        ops.sparse24_linear(*ops.quantize_fp8_per_token(torch.randn(4, 96, dtype=torch.bfloat16, device="cuda")),
                            values, meta, s)


# ---- torch.compile, CUDA graphs, streams, no sync ----------------------------------------------------------------


def _model(N=256, K=512):
    _, values, meta, s = sparse_weight(N, K, "cuda")
    wq, sw = ops.quantize_fp8_weight(torch.randn(N, K, dtype=torch.bfloat16, device="cuda"))

    def f(x):
        q, sx = ops.quantize_fp8_per_token(x)
        y = ops.sparse24_linear(q, sx, values, meta, s)
        qg, sg = ops.quantize_fp8_per_token_group(x)
        return y + ops.blockwise_linear(qg, sg, "group_1x128", wq, sw, "block_128x128")

    return f


@pytest.mark.parametrize("M", MS)
def test_compile_fullgraph_cuda(M):
    f = _model()
    x = torch.randn(M, 512, dtype=torch.bfloat16, device="cuda")
    compiled = torch.compile(f, fullgraph=True, dynamic=False)
    torch.testing.assert_close(compiled(x), f(x), rtol=0, atol=0)


def test_cuda_graph_capture_and_replay():
    f = _model()
    x = torch.randn(77, 512, dtype=torch.bfloat16, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up (workspaces, lazy init) off the capture
        for _ in range(2):
            f(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = f(x)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.testing.assert_close(y, f(x), rtol=0, atol=0)


def test_side_stream_is_used():
    f = _model()
    x = torch.randn(77, 512, dtype=torch.bfloat16, device="cuda")
    expect = f(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = f(x)
    torch.cuda.current_stream().wait_stream(s)
    torch.testing.assert_close(y, expect, rtol=0, atol=0)


def test_no_device_sync():
    f = _model()
    x = torch.randn(288, 512, dtype=torch.bfloat16, device="cuda")
    f(x)
    _, values, meta, s = sparse_weight(256, 512, "cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for M in MS:
            f(x[:M])
        ops.sparse24_decompress(values, meta, s, 256, 512, torch.bfloat16)
    finally:
        torch.cuda.set_sync_debug_mode("default")


# ---- host overhead ---------------------------------------------------------------------------------------------


def test_host_overhead_sparse24_linear(capsys):
    """Host time per eager call (1000 calls) at a small shape: what the caller's thread pays per op.
    Timed in chunks of 100 calls with a sync between chunks (not timed), so that the launch queue
    never fills and the figure is the host's, not the GPU's. The issue's goal is <= 10 us; how fast
    a host is decides most of that figure, so the assertion is against torch's own FP8 GEMM op
    (torch._scaled_mm, row-wise, same shape, same run): qsgemm's op may cost no more than it. The
    absolute figures are printed (bench/host_overhead.py writes them to a JSON)."""
    N, K = 1024, 1024
    _, values, meta, s = sparse_weight(N, K, "cuda")
    q, sx = ops.quantize_fp8_per_token(torch.randn(16, K, dtype=torch.bfloat16, device="cuda"))
    wq, ws = ops.quantize_fp8_weight(torch.randn(N, K, dtype=torch.bfloat16, device="cuda"), "per_row")
    wq_t, sx_col, ws_row = wq.t(), sx.reshape(-1, 1), ws.reshape(1, -1)
    op = torch.ops.qsgemm.sparse24_linear.default
    results = {}
    fns = (
        ("torch.ops.qsgemm.sparse24_linear", lambda: op(q, sx, values, meta, s)),
        ("qsgemm.ops.sparse24_linear", lambda: ops.sparse24_linear(q, sx, values, meta, s)),
        ("torch._scaled_mm (row-wise)", lambda: torch._scaled_mm(q, wq_t, scale_a=sx_col, scale_b=ws_row,
                                                                  out_dtype=torch.bfloat16)),
    )
    for name, fn in fns:
        results[name] = _host_overhead.host_us(fn)
    with capsys.disabled():  # the figure goes to the log even when the test passes
        for name, us in results.items():
            print(f"\nhost overhead per eager call, {name} (M=16, N={N}, K={K}): {us:.2f} us")
    assert results["torch.ops.qsgemm.sparse24_linear"] <= results["torch._scaled_mm (row-wise)"], results
