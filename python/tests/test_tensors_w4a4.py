"""W4A4LowRankTensor and W4A4LowRankConfig: SVDQuant conversion, dequantize, linear vs float64 on the
same quantized operands, t / narrow / to / clone / detach / repr / flatten, SQNR vs naive W4A4,
quantize_ (+ calibration), serialization, torch.compile; GPU: CUDA vs CPU, graph capture, compile."""

import io
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import qsgemm
from qsgemm import W4A4LowRankConfig, W4A4LowRankTensor
from qsgemm.svdquant import smooth_factors, svdquant_decompose
from qsgemm_test_util import DEVICES, assert_matches, on_device, require_gpu

import w4a4_reference as wref


def make(N=64, K=256, rank=16, group=64, device="cpu", seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(N, K, generator=g) * 0.05).to(torch.bfloat16).to(device)
    return w, W4A4LowRankTensor.from_float(w, rank=rank, group=group, **kw)


def ref_linear(x, t: W4A4LowRankTensor, bias=None):
    """float64 on the same quantized operands: x̂ = x / s rounded to x's dtype, x̂ quantized and
    down-projected by the op, the residual codes and factors of t."""
    K = t.K
    x2d = x.reshape(-1, K)
    if t.smoothed:
        x2d = (x2d.float() / t.smooth).to(x.dtype)
    x2d = x2d.contiguous()
    l1 = t.lora_down if t.rank else None
    x1, xs, xl = qsgemm.ops.w4a4_quantize_activations(x2d, t.group, l1)
    y = wref.linear_ref(x1, xs, t.qdata, t.scale, t.group, xl, t.lora_up if t.rank else None, bias)
    return y.reshape(*x.shape[:-1], t.N)


def sqnr_db(ref, y):
    ref = ref.double().cpu()
    return 10 * torch.log10((ref**2).sum() / ((y.double().cpu() - ref) ** 2).sum()).item()


# ---- conversion ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rank,group", [(0, 64), (16, 64), (32, 128)])
def test_from_float_and_dequantize(device, rank, group):
    dev = on_device(device)
    w, t = make(rank=rank, group=group, device=dev)
    N, K = w.shape
    assert t.shape == (N, K) and t.dtype == torch.bfloat16 and t.rank == rank and t.group == group
    assert t.qdata.dtype == torch.uint8 and t.qdata.shape == (N, K // 2)
    assert t.scale.dtype == torch.float32 and t.scale.shape == (N, K // group)
    assert t.lora_down.shape == (rank, K) and t.lora_up.shape == (N, rank)
    assert t.lora_down.dtype == t.lora_up.dtype == torch.bfloat16 and t.smooth.shape == (K,)
    # dequantize = (codes·scale + L2·L1) / s, from an independent decoder.
    expect = wref.dequant(t.qdata, t.scale, group)
    expect = expect + t.lora_up.double().cpu() @ t.lora_down.double().cpu()
    expect = expect / t.smooth.double().cpu()
    got = t.dequantize(torch.float32).cpu().double()
    torch.testing.assert_close(got, expect, rtol=1e-5, atol=1e-6)
    assert t.dequantize().dtype == torch.bfloat16
    # A faithful approximation of the weight (INT4 residual: a few % relative).
    err = (got - w.cpu().double()).norm() / w.cpu().double().norm()
    assert err < 0.15, err


def test_svdquant_semantics():
    """svdquant_decompose matches ref::svdquant_decompose's recipe: s from the formula, the best
    rank-r factors of Ŵ = W·diag(s), the residual's INT4 codes bit-exact to the packer's rule."""
    torch.manual_seed(1)
    N, K, r = 48, 128, 16
    w = torch.randn(N, K, dtype=torch.float32)
    amax = torch.rand(K) * 4
    amax[3] = 0  # factor 1 where the statistic is 0
    d = svdquant_decompose(w, rank=r, group=64, act_amax=amax, alpha=0.5)
    wmax = w.double().abs().amax(0)
    s_ref = (amax.double() ** 0.5 / wmax**0.5).float()
    s_ref[3] = 1.0
    torch.testing.assert_close(d.smooth, s_ref, rtol=1e-6, atol=0)
    ws = w.double() * d.smooth.double()
    S = torch.linalg.svdvals(ws)
    lr = d.lora_up.double() @ d.lora_down.double()
    # Best rank-r: the approximation error is the tail of the spectrum (bf16 factors: ~1e-2 rel).
    tail = S[r:].pow(2).sum().sqrt()
    assert abs((ws - lr).norm() - tail) / tail < 0.02
    resid = (ws - lr).float()
    rp, rs, _ = wref.int4_quantize(resid, 64)
    assert torch.equal(d.qdata, rp) and torch.equal(d.scale, rs)
    # Weight-only smoothing: flat activations (the geometric mean of amax_w), alpha None: s = 1.
    s_w = smooth_factors(w, None, 0.5).double()
    gm = wmax.log().mean().exp()
    torch.testing.assert_close(s_w, (gm / wmax).sqrt(), rtol=1e-6, atol=0)
    assert torch.equal(smooth_factors(w, None, None), torch.ones(K))


def test_svdquant_sqnr_above_naive_w4a4(capsys):
    """Synthetic weights with 1 % outlier input channels x50: SVDQuant's recipe vs naive W4A4
    (same bits, rank 0, no smoothing), SQNR of Y against the bf16 GEMM."""
    torch.manual_seed(0)
    N, K, M = 256, 512, 64
    w = torch.randn(N, K) * 0.02
    idx = torch.randperm(K)[: K // 100]
    w[:, idx] *= 50
    w = w.to(torch.bfloat16)
    x = torch.randn(M, K).to(torch.bfloat16)
    ref = x.double() @ w.double().t()
    naive = W4A4LowRankTensor.from_float(w, rank=0, smooth_alpha=None)
    svdq = W4A4LowRankTensor.from_float(w, rank=32)  # the config's defaults: weight-only smoothing
    svdq_ns = W4A4LowRankTensor.from_float(w, rank=32, smooth_alpha=None)
    svdq_cal = W4A4LowRankTensor.from_float(w, rank=32, act_amax=x.float().abs().amax(0))
    db = {name: sqnr_db(ref, F.linear(x, t)) for name, t in
          [("naive", naive), ("svdquant", svdq), ("svdquant_no_smooth", svdq_ns), ("svdquant_calib", svdq_cal)]}
    with capsys.disabled():
        print("\nW4A4 SQNR of Y vs bf16 (dB): " + ", ".join(f"{k} {v:.2f}" for k, v in db.items()))
    assert db["svdquant"] >= db["naive"] + 6, db
    assert db["svdquant_no_smooth"] >= db["naive"] + 6, db
    assert db["svdquant_calib"] >= db["naive"] + 6, db


# ---- linear ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rank,smooth", [(0, None), (16, 0.5), (32, None)])
@pytest.mark.parametrize("x_dtype", [torch.bfloat16, torch.float32])
def test_linear_matches_float64_reference(device, rank, smooth, x_dtype):
    dev = on_device(device)
    _, t = make(rank=rank, device=dev, smooth_alpha=smooth)
    b = torch.randn(t.N, device=dev, dtype=x_dtype)
    x = torch.randn(2, 3, t.K, device=dev, dtype=x_dtype)
    y = F.linear(x, t, b)
    assert y.shape == (2, 3, t.N) and y.dtype == x_dtype
    expect = ref_linear(x.cpu(), t.to("cpu"), b.cpu())
    if dev.type == "cpu":
        assert torch.equal(y, expect.float().to(x_dtype))  # the float64 result rounded once
    else:
        wref.check_w4a4_gemm(y.reshape(-1, t.N), expect.reshape(-1, t.N))
    with torch._C.DisableTorchFunctionSubclass():  # the aten path (mm / addmm with W.t())
        assert_matches(F.linear(x, t, b), y, dev.type == "cpu")
        assert_matches(torch.mm(x[0], t.t()), F.linear(x[0], t), dev.type == "cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_t_narrow_to_clone_detach_repr_flatten(device):
    dev = on_device(device)
    _, t = make(N=48, rank=16, device=dev)
    tt = t.t()
    assert tt.shape == (256, 48) and tt.transposed and torch.equal(tt.dequantize(), t.dequantize().t())
    full = t.dequantize(torch.float32)
    for start, end in [(0, 8), (8, 48), (16, 40), (0, 48)]:
        s = t[start:end]
        assert isinstance(s, W4A4LowRankTensor) and s.shape == (end - start, 256)
        assert torch.equal(s.dequantize(torch.float32), full[start:end])
    x = torch.randn(3, 256, device=dev, dtype=torch.bfloat16)
    # Another N may pick another kernel configuration on the GPU (equal up to float32 rounding).
    assert_matches(F.linear(x, t.narrow(0, 16, 24)), F.linear(x, t)[:, 16:40], dev.type == "cpu")
    for start, end in [(4, 16), (0, 12)]:
        with pytest.raises(ValueError, match="multiples of 8 rows"):
            t[start:end]
    with pytest.raises(ValueError, match="only along N"):
        t.narrow(1, 0, 64)
    c = t.clone()
    assert c.qdata.data_ptr() != t.qdata.data_ptr() and torch.equal(c.dequantize(), t.dequantize())
    assert torch.equal(t.detach().dequantize(), t.dequantize())
    assert t.to(torch.float16).dtype == torch.float16 and t.to(torch.float16).qdata is not None
    with pytest.raises(ValueError, match="logical dtype"):
        t.to(torch.int8)
    r = repr(t)
    assert "W4A4LowRankTensor" in r and "int4_g64_r16" in r and "lora_up=(48, 16)" in r
    assert t.to("cpu").qdata.device.type == "cpu"
    names, attrs = t.__tensor_flatten__()
    assert names == ["qdata", "scale", "lora_down", "lora_up", "smooth"]
    assert attrs == {"group": 64, "smoothed": True, "dtype": torch.bfloat16, "transposed": False}
    u = W4A4LowRankTensor.__tensor_unflatten__({n: getattr(t, n) for n in names}, attrs, t.shape, t.stride())
    assert torch.equal(u.dequantize(), t.dequantize())


@pytest.mark.parametrize("device", DEVICES)
def test_deepcopy_and_model_dtype(device):
    import copy

    dev = on_device(device)
    m = nn.Sequential(nn.Linear(128, 64)).to(dev, torch.bfloat16)
    qsgemm.quantize_(m, W4A4LowRankConfig(rank=16))
    x = torch.randn(2, 128, device=dev, dtype=torch.bfloat16)
    m2 = copy.deepcopy(m)
    assert type(m2[0].weight) is W4A4LowRankTensor and torch.equal(m2(x), m(x))
    m.half()  # only the logical dtype changes
    assert m[0].weight.dtype == torch.float16 and m(x.half()).dtype == torch.float16
    assert torch.equal(m[0].weight.qdata, m2[0].weight.qdata)


def test_rules():
    with pytest.raises(ValueError, match="N % 8"):
        W4A4LowRankTensor.from_float(torch.randn(12, 128), rank=0)
    with pytest.raises(ValueError, match="K % group"):
        W4A4LowRankTensor.from_float(torch.randn(16, 96), rank=0)
    with pytest.raises(ValueError, match="rank=24 must be a multiple of 16"):
        W4A4LowRankTensor.from_float(torch.randn(16, 128), rank=24)
    with pytest.raises(ValueError, match="rank=24"):
        W4A4LowRankConfig(rank=24)
    with pytest.raises(ValueError, match="group=32"):
        W4A4LowRankConfig(group=32)
    bad = torch.randn(16, 128)
    bad[2, 3] = float("nan")
    with pytest.raises(ValueError, match=r"w\[2, 3\] = nan is not finite"):
        W4A4LowRankTensor.from_float(bad, rank=16)


# ---- quantize_, calibration, serialization, compile ---------------------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(128, 64)
        self.odd = nn.Linear(128, 20)      # N % 8: skipped
        self.small_k = nn.Linear(96, 64)   # K % 64: skipped
        self.down = nn.Linear(64, 128, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


@pytest.mark.parametrize("device", DEVICES)
def test_quantize_skips_and_calibration(device):
    dev = on_device(device)
    torch.manual_seed(0)
    m = Net().to(dev, torch.bfloat16)
    with pytest.warns(UserWarning, match="left 2 linear layer") as rec:
        skipped = qsgemm.quantize_(m, W4A4LowRankConfig(rank=16))
    assert [s.name for s in skipped] == ["odd", "small_k"] and "N % 8" in skipped[0].reason
    assert "odd" in str(rec[0].message)
    assert isinstance(m.up.weight, W4A4LowRankTensor) and m.up.weight.rank == 16
    assert isinstance(m.down.weight, W4A4LowRankTensor)
    assert m(torch.randn(3, 128, device=dev, dtype=torch.bfloat16)).shape == (3, 128)
    # Calibration: per-layer max |x|, used by the layer of that name.
    torch.manual_seed(0)
    m2 = Net().to(dev, torch.bfloat16)
    batches = [torch.randn(4, 128, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    amax = qsgemm.collect_act_amax(m2, batches)
    assert set(amax) == {"up", "down"} and amax["up"].shape == (128,)
    assert torch.equal(amax["up"], torch.cat(batches).float().abs().amax(0))
    w_up = m2.up.weight.detach().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qsgemm.quantize_(m2, W4A4LowRankConfig(rank=16, act_amax=amax))
    assert torch.equal(m2.up.weight.smooth, smooth_factors(w_up, amax["up"], 0.5))
    assert not torch.equal(m2.up.weight.smooth, m.up.weight.smooth)  # act statistics were used


@pytest.mark.filterwarnings("ignore:qsgemm.quantize_")
@pytest.mark.parametrize("device", DEVICES)
def test_serialization_round_trip(tmp_path, device):
    dev = on_device(device)
    torch.manual_seed(0)
    m = Net().to(dev, torch.bfloat16)
    qsgemm.quantize_(m, W4A4LowRankConfig(rank=16))
    m.down.weight = nn.Parameter(W4A4LowRankTensor.from_float(
        torch.randn(128, 64, device=dev), rank=0, smooth_alpha=None), requires_grad=False)
    path = tmp_path / "w4a4.safetensors"
    qsgemm.save_quantized(m, path)
    torch.manual_seed(1)
    fresh = Net().to(dev, torch.bfloat16)
    qsgemm.load_quantized(fresh, path)
    x = torch.randn(3, 128, device=dev, dtype=torch.bfloat16)
    for name in ("up", "down"):
        a, b = getattr(m, name).weight, getattr(fresh, name).weight
        assert type(b) is W4A4LowRankTensor and a._attributes() == b._attributes()
        for u, v in zip(a._data(), b._data()):
            assert u.dtype == v.dtype and u.shape == v.shape and torch.equal(u.cpu(), v.cpu())
    assert torch.equal(fresh(x), m(x))
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, weights_only=True)
    assert isinstance(sd["up.weight"], W4A4LowRankTensor)
    assert torch.equal(sd["up.weight"].dequantize(), m.up.weight.dequantize())


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    dev = on_device(device)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64)).to(dev, torch.bfloat16)
    qsgemm.quantize_(m, W4A4LowRankConfig(rank=16))
    assert isinstance(m[0].weight, W4A4LowRankTensor)
    x = torch.randn(3, 4, 256, device=dev, dtype=torch.bfloat16)
    torch._dynamo.reset()
    inductor = dev.type == "cuda"
    with torch.no_grad():
        compiled = torch.compile(m, fullgraph=True, backend="inductor" if inductor else "aot_eager")
        assert_matches(compiled(x), m(x), not inductor, "compiled")


# ---- GPU ---------------------------------------------------------------------------------------------------------


def test_gpu_conversion_and_linear_vs_cpu():
    require_gpu()
    torch.manual_seed(0)
    N, K = 1024, 2048
    w = (torch.randn(N, K) * 0.02).to(torch.bfloat16)
    t = W4A4LowRankTensor.from_float(w.cuda(), rank=64)  # float32 SVD on the GPU
    tc = W4A4LowRankTensor.from_float(w, rank=64)        # float64 SVD on the CPU
    # The two decompositions agree as weights (the factors' signs may differ).
    wg, wc = t.dequantize(torch.float32).cpu().double(), tc.dequantize(torch.float32).double()
    assert (wg - wc).norm() / wc.norm() < 0.05
    b = torch.randn(N, dtype=torch.bfloat16)
    for M in (1, 33, 300):
        x = torch.randn(M, K, dtype=torch.bfloat16)
        y = F.linear(x.cuda(), t, b.cuda())
        wref.check_w4a4_gemm(y, ref_linear(x, t.to("cpu"), b))


def test_gpu_cuda_graph_capture():
    require_gpu()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64)).to(dev, torch.bfloat16)
    qsgemm.quantize_(m, W4A4LowRankConfig(rank=32))
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


def test_torchao_quantize_accepts_w4a4_config():
    pytest.importorskip("torchao")
    from qsgemm.configs import TORCHAO_AVAILABLE
    from qsgemm.quantize import TORCHAO_HANDLERS_REGISTERED

    if not (TORCHAO_AVAILABLE and TORCHAO_HANDLERS_REGISTERED):
        pytest.skip("torchao is installed but does not import against this torch")
    from torchao.quantization import quantize_ as torchao_quantize_

    m = nn.Sequential(nn.Linear(128, 64), nn.Linear(64, 20)).to(torch.bfloat16)
    with pytest.warns(UserWarning, match="unquantized"):
        torchao_quantize_(m, W4A4LowRankConfig(rank=16))
    assert isinstance(m[0].weight, W4A4LowRankTensor) and m[0].weight.rank == 16
    assert type(m[1].weight) is nn.Parameter
    assert m(torch.randn(2, 128, dtype=torch.bfloat16)).shape == (2, 20)
