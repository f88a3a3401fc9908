"""Sparse24Fp8Tensor: compress, dequantize, linear, t, narrow, to, clone, detach, repr, compile."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import qsgemm
from qsgemm.tensors import Sparse24Fp8Tensor, sparse24_meta_bytes
from qsgemm_test_util import (
    DEVICES,
    E4M3,
    assert_close_to_ref,
    assert_matches,
    dequant_x,
    on_device,
    ref_sparse24_decompress,
    require_gpu,
)


def make_weight(N, K, device, dtype=torch.bfloat16, scale="per_channel", seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N, K, generator=g).to(dtype).to(device)
    return w, Sparse24Fp8Tensor.from_float(w, scale=scale)


def ref_linear(x, w: Sparse24Fp8Tensor, bias=None):
    """float64 reference on the same quantized operands: x quantized per token by the op."""
    K = w.shape[1]
    x2 = x.reshape(-1, K)
    if x2.dtype == torch.float32:
        x2 = x2.to(torch.bfloat16)
    xq, xs = qsgemm.ops.quantize_fp8_per_token(x2.contiguous())
    W = ref_sparse24_decompress(w.qdata, w.sparse_metadata, w.scale, w.shape[0], K)
    y = dequant_x(xq, xs, "per_row") @ W.t()
    if bias is not None:
        y = y + bias.detach().cpu().to(torch.float64)
    return y.reshape(*x.shape[:-1], w.shape[0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", ["per_channel", "per_tensor"])
def test_from_float_buffers_and_dequantize(device, scale):
    dev = on_device(device)
    N, K = 72, 160  # off the 64-row and 128-k metadata atoms (§4.3 example)
    w, t = make_weight(N, K, dev, scale=scale)
    assert t.shape == (N, K) and t.dtype == torch.bfloat16 and t.device.type == dev.type
    assert t.qdata.shape == (N, K // 2) and t.qdata.dtype == E4M3
    assert t.sparse_metadata.dtype == torch.uint8
    assert t.sparse_metadata.numel() == sparse24_meta_bytes(N, K) == 4096
    assert t.scale.shape == ((N,) if scale == "per_channel" else (1,))
    assert t.granularity == scale
    ref = ref_sparse24_decompress(t.qdata, t.sparse_metadata, t.scale, N, K)
    # fp32 decompression is decode·scale in float32: the float64 product rounded once.
    d32 = t.dequantize(torch.float32)
    assert torch.equal(d32.cpu(), ref.to(torch.float32))
    assert torch.equal(t.dequantize().cpu(), ref.to(torch.float32).to(torch.bfloat16))
    assert t.dequantize(torch.float16).dtype == torch.float16
    # 2:4: at most two non-zeros per group, the kept ones are the largest magnitudes.
    assert int((ref.reshape(N, K // 4, 4) != 0).sum(-1).max()) <= 2
    kept_mask = (ref != 0)
    wf = w.cpu().float().abs().reshape(N, K // 4, 4)
    second = wf.sort(-1, descending=True).values[..., 1:2]
    assert bool((wf.reshape(N, K)[kept_mask] >= second.expand(-1, -1, 4).reshape(N, K)[kept_mask]).all())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("x_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_matches_float64_reference(device, x_dtype, bias):
    dev = on_device(device)
    N, K = 64, 256
    _, t = make_weight(N, K, dev)
    b = torch.randn(N, device=dev, dtype=x_dtype) if bias else None
    x = torch.randn(2, 3, K, device=dev, dtype=x_dtype)  # leading batch dims
    y = F.linear(x, t, b)
    assert y.shape == (2, 3, N) and y.dtype == x_dtype and y.device.type == dev.type
    assert_close_to_ref(y, ref_linear(x, t, b), "F.linear")
    # nn.Linear with the tensor as its weight.
    lin = nn.Linear(K, N, bias=bias, device=dev, dtype=x_dtype)
    lin.weight = nn.Parameter(t, requires_grad=False)
    if bias:
        lin.bias = nn.Parameter(b, requires_grad=False)
    assert torch.equal(lin(x), y)


@pytest.mark.parametrize("device", DEVICES)
def test_aten_paths_equal_torch_function_path(device):
    """Below __torch_function__, F.linear arrives as t + addmm / mm (the torch.compile path)."""
    dev = on_device(device)
    N, K = 32, 128
    _, t = make_weight(N, K, dev)
    b = torch.randn(N, device=dev, dtype=torch.bfloat16)
    x = torch.randn(4, 5, K, device=dev, dtype=torch.bfloat16)
    with torch._C.DisableTorchFunctionSubclass():
        y_addmm = F.linear(x, t, b)
        y_mm = F.linear(x[0], t)
        y_mm2 = torch.mm(x[0], t.t())
    assert torch.equal(y_addmm, F.linear(x, t, b))
    assert torch.equal(y_mm, F.linear(x[0], t))
    assert torch.equal(y_mm2, y_mm)


@pytest.mark.parametrize("device", DEVICES)
def test_t_is_a_flag_linear_understands(device):
    dev = on_device(device)
    _, t = make_weight(32, 64, dev)
    tt = t.t()
    assert isinstance(tt, Sparse24Fp8Tensor) and tt.transposed and tt.shape == (64, 32)
    assert tt.qdata is t.qdata  # no data movement
    assert torch.equal(tt.dequantize(), t.dequantize().t())
    back = tt.t()
    assert not back.transposed and back.shape == (32, 64)
    with pytest.raises(ValueError, match="transposed"):
        F.linear(torch.randn(2, 32, dtype=torch.bfloat16, device=dev), tt)
    with pytest.raises(NotImplementedError, match="dequantize"):
        torch.add(t, 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scale", ["per_channel", "per_tensor"])
def test_narrow_along_n_relays_metadata(device, scale):
    dev = on_device(device)
    N, K = 200, 288  # 4 row atoms of 64 (last partial), 3 k panels (last partial)
    w, t = make_weight(N, K, dev, scale=scale)
    full = t.dequantize(torch.float32).cpu()
    for start, length in [(0, 8), (8, 64), (64, 64), (72, 128), (192, 8), (0, 200)]:
        s = t.narrow(0, start, length)
        assert isinstance(s, Sparse24Fp8Tensor) and s.shape == (length, K)
        assert s.sparse_metadata.numel() == sparse24_meta_bytes(length, K)
        assert torch.equal(s.dequantize(torch.float32).cpu(), full[start:start + length])
        # The independent decoder agrees, so the re-laid metadata (padding included) is §4.3's.
        ref = ref_sparse24_decompress(s.qdata, s.sparse_metadata, s.scale, length, K)
        assert torch.equal(ref.to(torch.float32), full[start:start + length])
        if scale == "per_channel":
            # Bit-identical to compressing the dense rows directly.
            d = Sparse24Fp8Tensor.from_float(w[start:start + length])
            assert torch.equal(d.qdata.view(torch.uint8), s.qdata.view(torch.uint8))
            assert torch.equal(d.sparse_metadata, s.sparse_metadata)
            assert torch.equal(d.scale, s.scale)
    # Slicing syntax, and the shard's linear.
    s = t[64:128]
    x = torch.randn(3, K, device=dev, dtype=torch.bfloat16)
    # Another N may run another kernel configuration on the GPU: equal on CPU, close on GPU.
    assert_matches(F.linear(x, s), F.linear(x, t)[:, 64:128], dev.type == "cpu", "shard linear")


@pytest.mark.parametrize("device", DEVICES)
def test_narrow_off_the_atom_is_an_error(device):
    dev = on_device(device)
    _, t = make_weight(64, 64, dev)
    for start, length in [(4, 8), (0, 12), (3, 16)]:
        with pytest.raises(ValueError, match="row atom of 8 rows"):
            t.narrow(0, start, length)
    with pytest.raises(ValueError, match="only along N"):
        t.narrow(1, 0, 32)
    with pytest.raises(ValueError, match="transposed"):
        t.t().narrow(1, 0, 8)


@pytest.mark.parametrize("device", DEVICES)
def test_to_clone_detach_repr(device):
    dev = on_device(device)
    _, t = make_weight(16, 64, dev)
    c = t.clone()
    assert isinstance(c, Sparse24Fp8Tensor) and c.qdata.data_ptr() != t.qdata.data_ptr()
    assert torch.equal(c.dequantize(), t.dequantize())
    d = t.detach()
    assert isinstance(d, Sparse24Fp8Tensor) and not d.requires_grad
    assert torch.equal(d.dequantize(), t.dequantize())
    # dtype: the logical dtype only (buffers untouched), bf16/fp16/fp32; others are rejected.
    h = t.to(torch.float16)
    assert h.dtype == torch.float16 and h.qdata.dtype == E4M3 and h.dequantize().dtype == torch.float16
    assert t.to(torch.float32).dtype == torch.float32
    with pytest.raises(ValueError, match="logical dtype"):
        t.to(torch.int8)
    r = repr(t)
    assert "Sparse24Fp8Tensor" in r and "shape=(16, 64)" in r and "qdata=(16, 32)" in r
    # Device moves (cpu <-> cuda on the GPU machine).
    cpu = t.to("cpu")
    assert cpu.device.type == "cpu" and cpu.qdata.device.type == "cpu"
    if dev.type == "cuda":
        x = torch.randn(5, 64, dtype=torch.bfloat16)
        back = cpu.to(dev)
        assert back.qdata.device.type == "cuda"
        assert_close_to_ref(F.linear(x.to(dev), back), ref_linear(x, cpu), "to(cuda)")


@pytest.mark.parametrize("device", DEVICES)
def test_module_to_dtype_keeps_quantized_weight(device):
    dev = on_device(device)
    lin = nn.Linear(64, 32, device=dev, dtype=torch.bfloat16)
    lin.weight = nn.Parameter(Sparse24Fp8Tensor.from_float(lin.weight.detach()), requires_grad=False)
    lin = lin.to(torch.float16)
    assert isinstance(lin.weight, Sparse24Fp8Tensor) and lin.weight.dtype == torch.float16
    y = lin(torch.randn(3, 64, device=dev, dtype=torch.float16))
    assert y.dtype == torch.float16


@pytest.mark.parametrize("device", DEVICES)
def test_all_zero_weight(device):
    dev = on_device(device)
    t = Sparse24Fp8Tensor.from_float(torch.zeros(32, 64, device=dev, dtype=torch.bfloat16))
    assert torch.equal(t.scale.cpu(), torch.ones(32))
    assert not t.dequantize().any()
    b = torch.randn(32, device=dev, dtype=torch.bfloat16)
    x = torch.randn(4, 64, device=dev, dtype=torch.bfloat16)
    assert torch.equal(F.linear(x, t, b), b.expand(4, 32))
    z = torch.zeros(0, 64, device=dev, dtype=torch.bfloat16)  # no tokens
    assert F.linear(z, t).shape == (0, 32)


@pytest.mark.parametrize("device", DEVICES)
def test_require_mode(device):
    from qsgemm_test_util import two_four_weight

    dev = on_device(device)
    w = two_four_weight(32, 64).to(dev)
    a = Sparse24Fp8Tensor.from_float(w, prune="require")
    b = Sparse24Fp8Tensor.from_float(w, prune="magnitude")
    assert torch.equal(a.sparse_metadata, b.sparse_metadata)
    assert torch.equal(a.dequantize(torch.float32), b.dequantize(torch.float32))
    with pytest.raises(ValueError, match="2:4"):
        Sparse24Fp8Tensor.from_float(torch.randn(32, 64, device=dev), prune="require")


def test_shape_rules():
    with pytest.raises(ValueError, match="multiple of 8"):
        Sparse24Fp8Tensor.from_float(torch.randn(12, 64))
    with pytest.raises(ValueError, match="multiple of 32"):
        Sparse24Fp8Tensor.from_float(torch.randn(16, 48))


def _model(device, dtype=torch.bfloat16):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 32)).to(device=device, dtype=dtype)
    qsgemm.quantize_(m, qsgemm.Sparse24Fp8Config())
    return m


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    dev = on_device(device)
    m = _model(dev)
    x = torch.randn(2, 7, 128, device=dev, dtype=torch.bfloat16)
    torch._dynamo.reset()
    # CPU: aot_eager (traces through __tensor_flatten__ and __torch_dispatch__ with fake tensors,
    # quickly); GPU: inductor, what users run.
    backend = "inductor" if dev.type == "cuda" else "aot_eager"
    with torch.no_grad():
        eager = m(x)
        compiled = torch.compile(m, fullgraph=True, backend=backend)
        exact = dev.type == "cpu"  # inductor may round the GELU's input differently
        assert_matches(compiled(x), eager, exact, "compiled")
        x2 = torch.randn(3, 5, 128, device=dev, dtype=torch.bfloat16)  # another shape
        assert_matches(compiled(x2), m(x2), exact, "compiled, second shape")


def test_cuda_graph_capture():
    require_gpu()
    dev = torch.device("cuda")
    m = _model(dev)
    x = torch.randn(4, 128, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        eager = m(x)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            m(x)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = m(x)
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        assert_matches(out, m(x), True, "graph replay")  # same shapes: the same kernel
        assert not torch.equal(out, eager)


@pytest.mark.parametrize("M", [1, 33, 300])
@pytest.mark.parametrize("fast_accum", [False, True])
def test_gpu_linear_model_shapes(M, fast_accum):
    """Shapes that reach the decode, data-parallel and stream-K kernels, vs float64 (GPU only)."""
    require_gpu()
    dev = torch.device("cuda")
    N, K = 1024, 2048
    w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    t = Sparse24Fp8Tensor.from_float(w, fast_accum=fast_accum)
    b = torch.randn(N, device=dev, dtype=torch.bfloat16)
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    y = F.linear(x, t, b)
    ref = ref_linear(x.cpu(), t, b)  # x quantized by the CPU op: bit-identical to the GPU's
    if fast_accum:
        # FP8 fast accumulation over the whole K: a looser bound (docs/performance.md measures it).
        assert_matches(y.cpu().double(), ref, False, "fast_accum")
    else:
        assert_close_to_ref(y, ref, f"M={M}")


def test_compiled_graph_calls_the_qsgemm_ops():
    """The traced graph holds the quantize and GEMM ops on the flattened buffers (no dequantize)."""
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    m = _model("cpu")
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(m, fullgraph=True, backend=aot_autograd(fw_compiler=capture))(
            torch.randn(4, 128, dtype=torch.bfloat16))
    targets = [str(n.target) for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert sum("qsgemm.sparse24_linear" in t for t in targets) == 2, targets
    assert sum("qsgemm.quantize_fp8_per_token" in t for t in targets) == 2, targets
    assert not any("decompress" in t or t.startswith("aten.mm") for t in targets), targets
