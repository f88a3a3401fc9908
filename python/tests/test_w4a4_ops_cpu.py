"""CPU-runnable tests of the W4A4 + low-rank ops: schemas, fake kernels, opcheck, torch.compile,
errors, and the CPU kernels (the float64 reference) against independent torch references."""

import ctypes
import pathlib

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import qsgemm
from qsgemm import _ops_w4a4, ops

import reference as ref
import w4a4_reference as wref

OPS = ["w4a4_pack_weight", "w4a4_quantize_activations", "w4a4_linear"]


def unpack_codes(packed):
    """Packed INT4 (uint8 [M, K/2], even k in the low nibble) -> int8 codes [M, K]."""
    lo = (packed & 0xF).to(torch.int8)
    hi = (packed >> 4).to(torch.int8)
    v = torch.stack([lo, hi], dim=-1).reshape(packed.shape[0], -1)
    return torch.where(v > 7, v - 16, v)


def operands(M, N, K, r, group=64, x_dtype=torch.bfloat16, device="cpu"):
    """Quantized operands from the ops: (x1, x_scale, x2, w1, w_scale, w2)."""
    x = (torch.randn(M, K) * 3).to(x_dtype).to(device)
    w = torch.randn(N, K).to(device)
    l1 = (torch.randn(r, K) / K**0.5).to(torch.bfloat16).to(device) if r else None
    w2 = torch.randn(N, r).to(torch.bfloat16).to(device) if r else None
    x1, xs, x2 = ops.w4a4_quantize_activations(x, group, l1)
    w1, ws = ops.w4a4_pack_weight(w, group)
    return x1, xs, x2, w1, ws, w2


# ---- schemas and fake kernels ---------------------------------------------------------------------------


def test_schemas():
    s = {n: str(getattr(torch.ops.qsgemm, n).default._schema) for n in OPS}
    assert s["w4a4_pack_weight"] == "qsgemm::w4a4_pack_weight(Tensor w, int group) -> (Tensor packed, Tensor scale)"
    assert s["w4a4_quantize_activations"] == (
        "qsgemm::w4a4_quantize_activations(Tensor x, int group, Tensor? lora_down=None, bool e4m3=False)"
        " -> (Tensor x1, Tensor x_scale, Tensor? x2)"
    )
    assert s["w4a4_linear"] == (
        "qsgemm::w4a4_linear(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,"
        " Tensor? w2=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor"
    )
    out = str(torch.ops.qsgemm.w4a4_linear.out._schema)
    assert "Tensor? bias=None, *, Tensor(a!) out) -> ()" in out, out
    for n in OPS + ["w4a4_linear_out"]:
        assert callable(getattr(ops, n))


def test_fake_shapes():
    with FakeTensorMode():
        w = torch.empty(72, 256, dtype=torch.bfloat16)
        p, s = torch.ops.qsgemm.w4a4_pack_weight(w, 128)
        assert p.shape == (72, 128) and p.dtype == torch.uint8 and s.shape == (72, 2) and s.dtype == torch.float32
        x = torch.empty(5, 256, dtype=torch.float16)
        l1 = torch.empty(32, 256, dtype=torch.bfloat16)
        x1, xs, x2 = torch.ops.qsgemm.w4a4_quantize_activations(x, 64, l1)
        assert x1.shape == (5, 128) and xs.shape == (5, 4) and xs.stride() == (1, 8)
        assert x2.shape == (5, 32) and x2.dtype == torch.bfloat16
        assert torch.ops.qsgemm.w4a4_quantize_activations(x, 64)[2] is None
        q8 = torch.ops.qsgemm.w4a4_quantize_activations(x, 64, None, True)[0]
        assert q8.shape == (5, 256) and q8.dtype == torch.float8_e4m3fn
        assert torch.ops.qsgemm.w4a4_linear(q8, xs, p, s, 128).shape == (5, 72)
        y = torch.ops.qsgemm.w4a4_linear(x1, xs, p, s, 128, x2, torch.empty(72, 32, dtype=torch.bfloat16))
        assert y.shape == (5, 72) and y.dtype == torch.bfloat16
        y = torch.ops.qsgemm.w4a4_linear(x1, xs, p, s, 128, out_dtype=torch.float32)
        assert y.dtype == torch.float32


@pytest.mark.parametrize("M", [0, 1, 7])
def test_fake_matches_real_cpu(M):
    x = torch.randn(M, 256, dtype=torch.bfloat16)
    l1 = torch.randn(16, 256, dtype=torch.bfloat16)
    w = torch.randn(64, 256)
    cases = [
        (torch.ops.qsgemm.w4a4_pack_weight.default, (w, 64)),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x, 64, l1)),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x, 128)),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x, 64, l1, True)),
    ]
    for op, args in cases:
        real = op(*args)
        with FakeTensorMode() as mode:
            fake = op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args])
        for r, f in zip(real, fake):
            if r is None:
                assert f is None
                continue
            assert (r.shape, r.dtype, r.stride()) == (f.shape, f.dtype, f.stride()), op


# ---- opcheck ----------------------------------------------------------------------------------------------


def w4a4_opcheck_cases(device="cpu"):
    d = device
    x = torch.randn(5, 256, dtype=torch.bfloat16)
    l1 = torch.randn(16, 256, dtype=torch.bfloat16) * 0.1
    x1, xs, x2, w1, ws, w2 = operands(5, 64, 256, 16)
    bias = torch.randn(64)
    return [
        (torch.ops.qsgemm.w4a4_pack_weight.default, (torch.randn(64, 256, device=d), 64), {}),
        (torch.ops.qsgemm.w4a4_pack_weight.default, (x.to(d), 128), {}),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x.to(d), 64, l1.to(d)), {}),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x.to(d), 128), {}),
        (torch.ops.qsgemm.w4a4_quantize_activations.default, (x.to(d), 64, None, True), {}),
        (torch.ops.qsgemm.w4a4_linear.default, (x1.to(d), xs.to(d), w1.to(d), ws.to(d), 64), {}),
        (torch.ops.qsgemm.w4a4_linear.default, (unpack_codes(x1).to(torch.float8_e4m3fn).to(d), xs.to(d), w1.to(d), ws.to(d), 64), {}),
        (
            torch.ops.qsgemm.w4a4_linear.default,
            (x1.to(d), xs.to(d), w1.to(d), ws.to(d), 64, x2.to(d), w2.to(d), bias.to(d), torch.float32),
            {},
        ),
        (
            torch.ops.qsgemm.w4a4_linear.out,
            (x1.to(d), xs.to(d), w1.to(d), ws.to(d), 64, x2.to(d), w2.to(d)),
            {"out": torch.empty(5, 64, dtype=torch.bfloat16, device=d)},
        ),
    ]


def test_opcheck_cpu():
    for op, args, kwargs in w4a4_opcheck_cases("cpu"):
        ref.run_opcheck(op, args, kwargs)


# ---- torch.compile ------------------------------------------------------------------------------------------


def test_compile_fullgraph_cpu():
    w1, ws = ops.w4a4_pack_weight(torch.randn(64, 128), 64)
    l1 = torch.randn(16, 128, dtype=torch.bfloat16) * 0.1
    w2 = torch.randn(64, 16, dtype=torch.bfloat16)

    def f(x):
        x1, xs, x2 = ops.w4a4_quantize_activations(x, 64, l1)
        y = ops.w4a4_linear(x1, xs, w1, ws, 64, x2, w2)
        x1b, xsb, _ = ops.w4a4_quantize_activations(x, 64)
        out = torch.empty(x.shape[0], 64, dtype=torch.float32)
        ops.w4a4_linear_out(x1b, xsb, w1, ws, 64, out=out)
        return y.float() + out * 2

    # aot_eager: the fake kernels (None x2, symbolic M-major strides) traced with dynamic M; Inductor
    # (a C++ compile here, ~20 s) runs in the GPU tests.
    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for M in (3, 7, 1):
        x = torch.randn(M, 128, dtype=torch.bfloat16)
        torch.testing.assert_close(compiled(x), f(x), rtol=0, atol=0)


# ---- errors --------------------------------------------------------------------------------------------------


def test_errors():
    x1, xs, x2, w1, ws, w2 = operands(4, 64, 256, 16)
    with pytest.raises(ValueError, match=r"^qsgemm::w4a4_pack_weight: group=32 must be 64 or 128"):
        ops.w4a4_pack_weight(torch.randn(64, 256), 32)
    with pytest.raises(ValueError, match=r"D1=192 must be a positive multiple of group=128"):
        ops.w4a4_pack_weight(torch.randn(64, 192), 128)
    bad = torch.randn(16, 128)
    bad[3, 5] = float("inf")
    with pytest.raises(ValueError, match=r"w\[3, 5\] = inf is not finite"):
        ops.w4a4_pack_weight(bad, 64)
    with pytest.raises(ValueError, match=r"rank r=8 must be a multiple of 16"):
        ops.w4a4_quantize_activations(torch.randn(4, 128), 64, torch.zeros(8, 128, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"dtype float32 is not accepted; expected one of \{bfloat16\}"):
        ops.w4a4_quantize_activations(torch.randn(4, 128), 64, torch.zeros(16, 128))
    with pytest.raises(ValueError, match=r"M-major"):
        ops.w4a4_linear(x1, xs.contiguous(), w1, ws, 64)
    with pytest.raises(ValueError, match=r"x2 and w2 must be given together"):
        ops.w4a4_linear(x1, xs, w1, ws, 64, x2)
    with pytest.raises(ValueError, match=r"expected \[64, 16\]"):
        ops.w4a4_linear(x1, xs, w1, ws, 64, x2, w2[:32].contiguous())
    with pytest.raises(ValueError, match=r"has 64 columns, expected K/2=128"):
        ops.w4a4_linear(x1[:, :64].contiguous(), xs, w1, ws, 64)
    with pytest.raises(ValueError, match=r"must be a positive multiple of 8"):
        ops.w4a4_linear(x1, xs, w1[:12].contiguous(), ws[:12].contiguous(), 64)
    with pytest.raises(ValueError, match=r"must be torch.bfloat16, torch.float16 or torch.float32"):
        ops.w4a4_linear(x1, xs, w1, ws, 64, out_dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"^\[qsgemm:invalid_argument\] qsgemm::w4a4_linear: "):
        torch.ops.qsgemm.w4a4_linear(x1, xs, w1, ws, 128)


# ---- CPU kernels vs torch references ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("group", [64, 128])
def test_pack_and_quantize_bit_exact(dtype, group):
    w = (torch.randn(24, 256) * 0.05).to(dtype)
    w[2, :group] = 0  # an all-zero group: scale 1, codes 0
    w[3, 0] = 7.5 * 0.01  # ties and clamps exercised by the ratios below
    p, s = ops.w4a4_pack_weight(w, group)
    rp, rs, _ = wref.int4_quantize(w, group)
    assert torch.equal(s, rs) and torch.equal(p, rp)
    assert s[2, 0].item() == 1.0 and not wref.unpack(p)[2, :group].any()
    x = (torch.randn(9, 256) * 4).to(dtype)
    l1 = torch.randn(32, 256, dtype=torch.bfloat16) * 0.1
    x1, xs, x2 = ops.w4a4_quantize_activations(x, group, l1)
    rp, rs, _ = wref.int4_quantize(x, group)
    assert torch.equal(x1, rp) and torch.equal(xs, rs) and xs.stride() == (1, 12)
    r2 = (x.double() @ l1.double().t()).float().to(torch.bfloat16)
    assert torch.equal(x2, r2)


@pytest.mark.parametrize("M", [1, 13])
@pytest.mark.parametrize("r", [0, 16, 32])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_linear_cpu_vs_torch(M, r, out_dtype):
    N, K, group = 64, 256, 64
    x1, xs, x2, w1, ws, w2 = operands(M, N, K, r, group)
    bias = torch.randn(N)
    y = ops.w4a4_linear(x1, xs, w1, ws, group, x2, w2, bias, out_dtype)
    expect = wref.linear_ref(x1, xs, w1, ws, group, x2, w2, bias)
    assert y.dtype == out_dtype and y.shape == (M, N)
    assert torch.equal(y, expect.float().to(out_dtype))  # the float64 result rounded once
    out = torch.full((M, N), float("nan"), dtype=out_dtype)
    ops.w4a4_linear_out(x1, xs, w1, ws, group, x2, w2, bias, out=out)
    assert torch.equal(out, y)


def test_linear_m0_and_rank0_lora():
    x1, xs, x2, w1, ws, w2 = operands(0, 64, 128, 16)
    assert ops.w4a4_linear(x1, xs, w1, ws, 64, x2, w2).shape == (0, 64)
    # lora_down with 0 rows: an empty x2, and r = 0 factors are plain W4A4.
    x = torch.randn(3, 128, dtype=torch.bfloat16)
    x1, xs, x2 = ops.w4a4_quantize_activations(x, 64, torch.empty(0, 128, dtype=torch.bfloat16))
    assert x2.shape == (3, 0)
    w1, ws = ops.w4a4_pack_weight(torch.randn(8, 128), 64)
    y0 = ops.w4a4_linear(x1, xs, w1, ws, 64, x2, torch.empty(8, 0, dtype=torch.bfloat16))
    assert torch.equal(y0, ops.w4a4_linear(x1, xs, w1, ws, 64))


# ---- the e4m3 staging of the activations ----------------------------------------------------------------


@pytest.mark.parametrize("group", [64, 128])
def test_e4m3_staging_is_the_unpacked_codes_and_computes_the_same(group):
    x = torch.randn(9, 256, dtype=torch.bfloat16) * 3
    l1 = (torch.randn(32, 256) / 16).to(torch.bfloat16)
    p1, ps, px2 = ops.w4a4_quantize_activations(x, group, l1)
    q8, qs, qx2 = ops.w4a4_quantize_activations(x, group, l1, e4m3=True)
    assert q8.dtype == torch.float8_e4m3fn and q8.shape == (9, 256)
    assert torch.equal(q8.float(), unpack_codes(p1).float()) and torch.equal(qs, ps) and torch.equal(qx2, px2)
    w1, ws = ops.w4a4_pack_weight(torch.randn(64, 256), group)
    w2 = torch.randn(64, 32).to(torch.bfloat16)
    assert torch.equal(ops.w4a4_linear(q8, qs, w1, ws, group, qx2, w2), ops.w4a4_linear(p1, ps, w1, ws, group, px2, w2))
    with pytest.raises(ValueError, match="expected K=256"):
        ops.w4a4_linear(q8[:, :128].contiguous(), qs, w1, ws, group)


# ---- the heuristic's staging (w4a4_x1_e4m3 mirrors libqsgemm's w4a4_prefers_e4m3) ------------------------


def _library_x1_e4m3():
    """libqsgemm's own choice, through its exported C++ functions (the wheel's libqsgemm.so.0):
    w4a4_choose_config(L, D, D1, rank, sm_count, group) and w4a4_x1_dtype(config) (DType::kE4M3 = 3)."""
    lib = ctypes.CDLL(str(pathlib.Path(qsgemm.__file__).parent / "libqsgemm.so.0"))
    choose = lib._ZN6qsgemm18w4a4_choose_configEllliii
    choose.restype = ctypes.c_int
    choose.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int] * 3
    dtype = lib._ZN6qsgemm13w4a4_x1_dtypeEi
    dtype.restype = ctypes.c_uint8
    dtype.argtypes = [ctypes.c_int]

    def pick(M, N, K, group, sm):  # (stages X1 as e4m3, the configuration)
        config = choose(M, N, K, 64, sm, group)
        return dtype(config) == 3, config

    return pick


def test_x1_staging_matches_the_library():
    library_pick = _library_x1_e4m3()
    # The wgmma rows the library runs for e4m3 X1: up to 112 tokens the narrowest band tile that holds
    # them (kW4A4BandTiles, mirrored in _W4A4_BAND_TILES), above that the 128-token tile, its last tile
    # clamped or not.
    band_tiles = _ops_w4a4._W4A4_BAND_TILES
    wgmma_rows = {}  # ("band", tile) / clamped last token tile or not -> the library's configurations

    def library(M, N, K, group, sm):
        e4m3, config = library_pick(M, N, K, group, sm)
        if e4m3:
            if M <= band_tiles[-1]:
                key = ("band", next(t for t in band_tiles if M <= t))
            else:
                key = _ops_w4a4._wgmma_clamp_pays(M)
            wgmma_rows.setdefault(key, set()).add(config)
        return e4m3

    layers = [(4096, 4096), (28672, 4096), (4096, 14336), (10240, 8192), (57344, 8192), (8192, 28672),
              (3584, 18944), (14336, 4096), (256, 4096), (6144, 4096)]
    ms = list(range(1, 300)) + [384, 511, 512, 1000, 2048, 8192]
    picks = set()
    for group in (64, 128):
        for sm in (132, 114, 78):
            for N, K in layers:
                for M in ms:
                    e4m3 = ops.w4a4_x1_e4m3(M, N, K, group, sm)
                    assert e4m3 == library(M, N, K, group, sm), (M, N, K, group, sm)
                    picks.add(e4m3)
    assert picks == {True, False}
    # The wgmma kernel with its last token tile clamped where the mirror says so (one row each way),
    # one band row per band tile met, every row a different configuration.
    assert True in wgmma_rows and False in wgmma_rows and ("band", 80) in wgmma_rows
    assert all(len(rows) == 1 for rows in wgmma_rows.values()), wgmma_rows
    assert len(set.union(*wgmma_rows.values())) == len(wgmma_rows), wgmma_rows
    # The model's shape: a weight stream up to 16 tokens; the wgmma kernel on a wide layer from 33
    # tokens at group 64 (its 64-token band tile), a narrow one keeps the decode row to 175; every
    # layer e4m3 above 256.
    assert not ops.w4a4_x1_e4m3(16, 57344, 8192) and not ops.w4a4_x1_e4m3(32, 57344, 8192)
    assert ops.w4a4_x1_e4m3(33, 57344, 8192) and ops.w4a4_x1_e4m3(64, 57344, 8192)
    assert ops.w4a4_x1_e4m3(80, 57344, 8192) and not ops.w4a4_x1_e4m3(175, 3584, 18944)
    assert all(ops.w4a4_x1_e4m3(257, N, K) for N, K in layers)
    assert ops.w4a4_sm_count(torch.device("cpu")) == 132
    with pytest.raises(ValueError, match="group=96"):
        ops.w4a4_x1_e4m3(64, 4096, 4096, 96)
    with pytest.raises(ValueError, match="sm_count=0"):
        ops.w4a4_x1_e4m3(64, 4096, 4096, 64, 0)
