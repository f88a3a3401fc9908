"""BlockwiseFp8Tensor: quantize, dequantize, linear per granularity, t, narrow, to, compile."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import qsgemm
from qsgemm.tensors import BlockwiseFp8Tensor
from qsgemm_test_util import (
    DEVICES,
    E4M3,
    assert_close_to_ref,
    assert_matches,
    dequant_x,
    expand_scale,
    on_device,
    require_gpu,
)

GRANULARITIES = ["block_128x128", "group_1x128", "per_row"]


def make_weight(N, K, device, granularity, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N, K, generator=g).to(dtype).to(device)
    return w, BlockwiseFp8Tensor.from_float(w, granularity)


def ref_weight(t: BlockwiseFp8Tensor):
    N, K = t.qdata.shape
    return t.qdata.cpu().to(torch.float64) * expand_scale(t.scale, t.granularity, N, K)


def ref_linear(x, t: BlockwiseFp8Tensor, bias=None):
    """float64 reference on the same quantized operands (x quantized by the op, as linear does)."""
    K = t.shape[1]
    x2 = x.reshape(-1, K)
    if x2.dtype == torch.float32:
        x2 = x2.to(torch.bfloat16)
    x2 = x2.contiguous()
    if t.granularity == "per_row":
        xq, xs = qsgemm.ops.quantize_fp8_per_token(x2)
        xg = "per_row"
    else:
        xq, xs = qsgemm.ops.quantize_fp8_per_token_group(x2)
        xg = "group_1x128"
    y = dequant_x(xq, xs, xg) @ ref_weight(t).t()
    if bias is not None:
        y = y + bias.detach().cpu().to(torch.float64)
    return y.reshape(*x.shape[:-1], t.shape[0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_quantize_and_dequantize(device, granularity):
    dev = on_device(device)
    N, K = 136, 272  # partial 128-blocks in both directions
    w, t = make_weight(N, K, dev, granularity)
    assert t.shape == (N, K) and t.dtype == torch.bfloat16 and t.qdata.dtype == E4M3
    expected_scale = {"block_128x128": (2, 3), "group_1x128": (N, 3), "per_row": (N,)}[granularity]
    assert tuple(t.scale.shape) == expected_scale and t.scale.dtype == torch.float32
    ref = ref_weight(t)
    assert torch.equal(t.dequantize(torch.float32).cpu(), ref.to(torch.float32))
    assert torch.equal(t.dequantize().cpu(), ref.to(torch.float32).to(torch.bfloat16))
    # The quantization error is within half an e4m3 step (2^-4 relative) of each scaled element.
    err = (ref - w.cpu().to(torch.float64)).abs()
    assert bool((err <= 2.0 ** -4 * w.cpu().to(torch.float64).abs() + 2.0 ** -9 * expand_scale(
        t.scale, granularity, N, K) * 448).all())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("x_dtype", [torch.bfloat16, torch.float32])
def test_linear_matches_float64_reference(device, granularity, x_dtype):
    dev = on_device(device)
    N, K = 136, 272
    _, t = make_weight(N, K, dev, granularity)
    b = torch.randn(N, device=dev, dtype=x_dtype)
    x = torch.randn(2, 3, K, device=dev, dtype=x_dtype)
    y = F.linear(x, t, b)
    assert y.shape == (2, 3, N) and y.dtype == x_dtype
    assert_close_to_ref(y, ref_linear(x, t, b), f"{granularity} F.linear")
    with torch._C.DisableTorchFunctionSubclass():
        assert torch.equal(F.linear(x, t, b), y)
        assert torch.equal(torch.mm(x[0], t.t()), F.linear(x[0], t))


@pytest.mark.parametrize("device", DEVICES)
def test_t_narrow_to_clone_detach_repr(device):
    dev = on_device(device)
    _, t = make_weight(264, 128, dev, "block_128x128")
    tt = t.t()
    assert tt.shape == (128, 264) and tt.transposed and torch.equal(tt.dequantize(), t.dequantize().t())
    full = t.dequantize(torch.float32)
    for start, end in [(0, 128), (128, 264), (0, 264), (128, 256)]:
        s = t[start:end]
        assert isinstance(s, BlockwiseFp8Tensor) and s.shape == (end - start, 128)
        assert torch.equal(s.dequantize(torch.float32), full[start:end])
    for start, end in [(8, 136), (0, 64), (64, 128)]:
        with pytest.raises(ValueError, match="row atom of 128 rows"):
            t[start:end]
    with pytest.raises(ValueError, match="only along N"):
        t.narrow(1, 0, 64)
    _, g = make_weight(264, 128, dev, "group_1x128")
    s = g.narrow(0, 8, 64)
    assert torch.equal(s.dequantize(), g.dequantize()[8:72])
    with pytest.raises(ValueError, match="row atom of 8 rows"):
        g.narrow(0, 4, 8)
    c = t.clone()
    assert c.qdata.data_ptr() != t.qdata.data_ptr() and torch.equal(c.dequantize(), t.dequantize())
    assert torch.equal(t.detach().dequantize(), t.dequantize())
    assert t.to(torch.float32).dtype == torch.float32
    with pytest.raises(ValueError, match="logical dtype"):
        t.to(torch.float8_e4m3fn)
    assert "BlockwiseFp8Tensor" in repr(t) and "block_128x128" in repr(t)
    assert t.to("cpu").qdata.device.type == "cpu"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_all_zero_weight(device, granularity):
    dev = on_device(device)
    t = BlockwiseFp8Tensor.from_float(torch.zeros(16, 128, device=dev, dtype=torch.bfloat16), granularity)
    assert not t.dequantize().any()
    x = torch.randn(3, 128, device=dev, dtype=torch.bfloat16)
    assert not F.linear(x, t).any()


def test_rules_and_bad_granularity():
    with pytest.raises(ValueError, match="granularity"):
        BlockwiseFp8Tensor.from_float(torch.randn(16, 128), "per_tensor")
    with pytest.raises(ValueError, match="multiple of 16"):
        BlockwiseFp8Tensor.from_float(torch.randn(16, 120))
    with pytest.raises(ValueError, match="multiple of 8"):
        BlockwiseFp8Tensor.from_float(torch.randn(12, 128))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_torch_compile_fullgraph(device, granularity):
    dev = on_device(device)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64)).to(dev, torch.bfloat16)
    qsgemm.quantize_(m, qsgemm.BlockwiseFp8Config(weight=granularity))
    assert isinstance(m[0].weight, BlockwiseFp8Tensor)
    x = torch.randn(3, 4, 256, device=dev, dtype=torch.bfloat16)
    torch._dynamo.reset()
    # inductor once on the GPU (its compile time is the cost); aot_eager traces the same subclass.
    inductor = dev.type == "cuda" and granularity == "block_128x128"
    with torch.no_grad():
        compiled = torch.compile(m, fullgraph=True, backend="inductor" if inductor else "aot_eager")
        assert_matches(compiled(x), m(x), not inductor, "compiled")


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_cuda_graph_capture(granularity):
    require_gpu()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64)).to(dev, torch.bfloat16)
    qsgemm.quantize_(m, qsgemm.BlockwiseFp8Config(weight=granularity))
    x = torch.randn(4, 256, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = m(x)
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, m(x))


@pytest.mark.parametrize("M", [1, 33, 300])
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_gpu_linear_model_shapes(M, granularity):
    """Shapes that reach the decode and tiled kernels, with partial K groups, vs float64 (GPU only)."""
    require_gpu()
    dev = torch.device("cuda")
    N, K = 1024, 2064  # K % 128 = 16: a partial last group
    w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    t = BlockwiseFp8Tensor.from_float(w, granularity)
    b = torch.randn(N, device=dev, dtype=torch.bfloat16)
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    assert_close_to_ref(F.linear(x, t, b), ref_linear(x.cpu(), t, b), f"M={M}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_partial_k_rows_padded_to_128_bytes(device, granularity, tmp_path):
    """K % 128 != 0: qdata's rows start every fp8_row_ld(K) bytes (the GEMM's fast layout), through
    from_float, clone, to, narrow and a save / load; the activations' quantizer pads the same way; a
    weight built from packed rows gives the same results."""
    dev = on_device(device)
    N, K = 264, 272
    ld = qsgemm.ops.fp8_row_ld(K)
    assert ld == 384 and qsgemm.ops.fp8_row_ld(256) == 256
    w, t = make_weight(N, K, dev, granularity)
    assert t.qdata.shape == (N, K) and t.qdata.stride() == (ld, 1)
    for c in (t.clone(), t.to(dev), t.detach(), t.to("cpu"), t[0:128]):
        assert c.qdata.stride() == (ld, 1), c
        assert torch.equal(c.dequantize().cpu(), t.dequantize().cpu()[: c.shape[0]])
    qsgemm.save_quantized({"w": t}, str(tmp_path / "w.safetensors"))
    loaded = qsgemm.load_quantized_state_dict(str(tmp_path / "w.safetensors"), device=str(dev))["w"]
    assert loaded.qdata.stride() == (ld, 1) and torch.equal(loaded.dequantize(), t.dequantize())
    xq, _ = qsgemm.ops.quantize_fp8_per_token_group(torch.randn(5, K, device=dev, dtype=torch.bfloat16))
    assert xq.stride() == (ld, 1)
    # Packed rows (a weight made elsewhere) are accepted and give the same bits.
    packed = BlockwiseFp8Tensor(t.qdata.contiguous(), t.scale, granularity=granularity)
    assert packed.qdata.stride() == (K, 1)
    x = torch.randn(77, K, device=dev, dtype=torch.bfloat16)
    y = F.linear(x, t)
    assert torch.equal(F.linear(x, packed), y)
    assert_close_to_ref(y, ref_linear(x, t), f"{granularity} padded rows")
