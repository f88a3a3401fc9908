"""CPU-runnable tests of the qsgemm ops: schemas, fake kernels, opcheck and torch.compile on the CPU
kernels (the float64 reference), errors, and the CPU kernels against float64 torch references."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import qsgemm
from qsgemm import ops

import reference as ref

E4M3 = torch.float8_e4m3fn
OPS = [
    "sparse24_compress",
    "sparse24_decompress",
    "sparse24_linear",
    "quantize_fp8_per_token",
    "quantize_fp8_per_token_group",
    "quantize_fp8_weight",
    "blockwise_linear",
]


def sparse_weight(N, K, dtype=torch.bfloat16, scale="per_channel"):
    w = ref.prune_24_magnitude(torch.randn(N, K, dtype=dtype))
    values, meta, s = ops.sparse24_compress(w, "require", scale)
    return w, values, meta, s


def fp8_activation(M, K):
    return ops.quantize_fp8_per_token(torch.randn(M, K, dtype=torch.bfloat16))


# ---- import and schemas ---------------------------------------------------------------------------------


def test_import_and_version():
    assert qsgemm.__version__ == "0.1.0"
    for name in OPS:
        assert hasattr(torch.ops.qsgemm, name), name
        assert callable(getattr(ops, name))


def test_schemas():
    s = {name: str(getattr(torch.ops.qsgemm, name).default._schema) for name in OPS}
    assert s["sparse24_linear"] == (
        "qsgemm::sparse24_linear(Tensor x, Tensor x_scale, Tensor values, Tensor meta, Tensor w_scale, "
        "Tensor? bias=None, ScalarType? out_dtype=None, bool fast_accum=False) -> Tensor"
    )
    assert s["sparse24_compress"].endswith("-> (Tensor values, Tensor meta, Tensor scale)")
    assert "str x_granularity" in s["blockwise_linear"] and "str w_granularity" in s["blockwise_linear"]
    for name in ("sparse24_decompress", "sparse24_linear", "blockwise_linear"):
        out = str(getattr(torch.ops.qsgemm, name).out._schema)
        assert "*, Tensor(a!) out) -> ()" in out, out


# ---- fake kernels ------------------------------------------------------------------------------------------


def test_fake_shapes():
    with FakeTensorMode():
        w = torch.empty(256, 512, dtype=torch.bfloat16)
        values, meta, s = torch.ops.qsgemm.sparse24_compress(w)
        assert values.shape == (256, 256) and values.dtype == E4M3
        assert meta.shape == (ops.sparse24_meta_bytes(256, 512),) and meta.dtype == torch.uint8
        assert s.shape == (256,) and s.dtype == torch.float32
        _, _, s1 = torch.ops.qsgemm.sparse24_compress(w, scale="per_tensor")
        assert s1.shape == (1,)
        d = torch.ops.qsgemm.sparse24_decompress(values, meta, s, 256, 512, torch.float32)
        assert d.shape == (256, 512) and d.dtype == torch.float32
        x = torch.empty(77, 512, dtype=torch.bfloat16)
        q, sx = torch.ops.qsgemm.quantize_fp8_per_token(x)
        assert q.shape == (77, 512) and q.dtype == E4M3 and sx.shape == (77,)
        y = torch.ops.qsgemm.sparse24_linear(q, sx, values, meta, s)
        assert y.shape == (77, 256) and y.dtype == torch.bfloat16
        y = torch.ops.qsgemm.sparse24_linear(q, sx, values, meta, s, out_dtype=torch.float16)
        assert y.dtype == torch.float16
        x = torch.empty(77, 400, dtype=torch.bfloat16)
        q, sg = torch.ops.qsgemm.quantize_fp8_per_token_group(x)
        assert sg.shape == (77, 4) and sg.stride() == (1, 77)
        wq, sw = torch.ops.qsgemm.quantize_fp8_weight(torch.empty(200, 400, dtype=torch.float32))
        assert wq.shape == (200, 400) and sw.shape == (2, 4)
        _, sw_g = torch.ops.qsgemm.quantize_fp8_weight(torch.empty(200, 400), "group_1x128")
        assert sw_g.shape == (200, 4)
        _, sw_r = torch.ops.qsgemm.quantize_fp8_weight(torch.empty(200, 400, dtype=torch.bfloat16), "per_row")
        assert sw_r.shape == (200,)
        y = torch.ops.qsgemm.blockwise_linear(q, sg, "group_1x128", wq, sw, "block_128x128", out_dtype=torch.float32)
        assert y.shape == (77, 200) and y.dtype == torch.float32


@pytest.mark.parametrize("M", [0, 1, 77])
@pytest.mark.parametrize("K", [256, 400])
def test_fake_matches_real_cpu(M, K):
    """The fake kernels give the real kernels' shapes, dtypes and strides (K = 400: the FP8 outputs'
    rows padded to fp8_row_ld(K) = 512)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(64, K, dtype=torch.bfloat16)
    cases = [
        (torch.ops.qsgemm.quantize_fp8_per_token.default, (x,)),
        (torch.ops.qsgemm.quantize_fp8_per_token_group.default, (x,)),
        (torch.ops.qsgemm.quantize_fp8_weight.default, (w, "group_1x128")),
        (torch.ops.qsgemm.quantize_fp8_weight.default, (w, "per_row")),
    ]
    if M > 1:
        assert ops.quantize_fp8_per_token_group(x)[0].stride() == (ops.fp8_row_ld(K), 1)
    for op, args in cases:
        real = op(*args)
        with FakeTensorMode() as mode:
            fake = op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args])
        for r, f in zip(real, fake):
            assert (r.shape, r.dtype, r.stride()) == (f.shape, f.dtype, f.stride()), op


# ---- opcheck on the CPU kernels -------------------------------------------------------------------------------


def opcheck_cases(device="cpu"):
    w, values, meta, s = sparse_weight(64, 128)
    q, sx = fp8_activation(5, 128)
    xb = torch.randn(5, 400, dtype=torch.bfloat16)
    qg, sg = ops.quantize_fp8_per_token_group(xb)
    wq, sw = ops.quantize_fp8_weight(torch.randn(64, 400, dtype=torch.bfloat16))
    bias = torch.randn(64)
    d = device
    cases = [
        (torch.ops.qsgemm.sparse24_compress.default, (w.to(d),), {}),
        (torch.ops.qsgemm.sparse24_compress.default, (w.to(d), "magnitude", "per_tensor"), {}),
        (torch.ops.qsgemm.sparse24_decompress.default, (values.to(d), meta.to(d), s.to(d), 64, 128, torch.bfloat16), {}),
        (
            torch.ops.qsgemm.sparse24_decompress.out,
            (values.to(d), meta.to(d), s.to(d), 64, 128),
            {"out": torch.empty(64, 128, device=d)},
        ),
        (torch.ops.qsgemm.sparse24_linear.default, (q.to(d), sx.to(d), values.to(d), meta.to(d), s.to(d)), {}),
        (
            torch.ops.qsgemm.sparse24_linear.default,
            (q.to(d), sx.to(d), values.to(d), meta.to(d), s.to(d), bias.to(d), torch.float32),
            {},
        ),
        (
            torch.ops.qsgemm.sparse24_linear.out,
            (q.to(d), sx.to(d), values.to(d), meta.to(d), s.to(d)),
            {"out": torch.empty(5, 64, dtype=torch.float16, device=d)},
        ),
        (torch.ops.qsgemm.quantize_fp8_per_token.default, (xb.to(d),), {}),
        (torch.ops.qsgemm.quantize_fp8_per_token_group.default, (xb.to(d), True), {}),
        (torch.ops.qsgemm.quantize_fp8_weight.default, (torch.randn(64, 400, device=d), "block_128x128"), {}),
        (torch.ops.qsgemm.quantize_fp8_weight.default, (xb.to(d), "per_row"), {}),
        (
            torch.ops.qsgemm.blockwise_linear.default,
            (qg.to(d), sg.to(d), "group_1x128", wq.to(d), sw.to(d), "block_128x128", bias.to(d)),
            {},
        ),
        (
            torch.ops.qsgemm.blockwise_linear.out,
            (qg.to(d), sg.to(d), "group_1x128", wq.to(d), sw.to(d), "block_128x128"),
            {"out": torch.empty(5, 64, dtype=torch.bfloat16, device=d)},
        ),
    ]
    return cases


def test_opcheck_cpu():
    for op, args, kwargs in opcheck_cases("cpu"):
        ref.run_opcheck(op, args, kwargs)


# ---- torch.compile -------------------------------------------------------------------------------------------


def test_compile_fullgraph_cpu():
    w, values, meta, s = sparse_weight(64, 128)
    wq, sw = ops.quantize_fp8_weight(torch.randn(64, 128, dtype=torch.bfloat16))

    def f(x):
        q, sx = ops.quantize_fp8_per_token(x)
        y = ops.sparse24_linear(q, sx, values, meta, s)
        qg, sg = ops.quantize_fp8_per_token_group(x)
        return y + ops.blockwise_linear(qg, sg, "group_1x128", wq, sw, "block_128x128")

    # Dynamic M: the fake kernels' shapes and strides (the M-major group scales) are symbolic.
    compiled = torch.compile(f, fullgraph=True, dynamic=True)
    for M in (3, 7, 1):
        x = torch.randn(M, 128, dtype=torch.bfloat16)
        torch.testing.assert_close(compiled(x), f(x), rtol=0, atol=0)


def test_compile_fullgraph_out_variants_cpu():
    _, values, meta, s = sparse_weight(64, 128)

    def f(x):
        q, sx = ops.quantize_fp8_per_token(x)
        out = torch.empty(x.shape[0], 64, dtype=torch.float32)
        ops.sparse24_linear_out(q, sx, values, meta, s, out=out)
        d = torch.empty(64, 128)
        ops.sparse24_decompress_out(values, meta, s, 64, 128, out=d)
        return out * 2, d

    x = torch.randn(5, 128, dtype=torch.bfloat16)
    got, expect = torch.compile(f, fullgraph=True)(x), f(x)
    assert torch.equal(got[0], expect[0]) and torch.equal(got[1], expect[1])


# ---- errors --------------------------------------------------------------------------------------------------


def test_errors_value_error():
    w, values, meta, s = sparse_weight(64, 128)
    q, sx = fp8_activation(4, 96)
    with pytest.raises(ValueError, match=r"^qsgemm::sparse24_linear: has 96 columns, expected K=128"):
        ops.sparse24_linear(q, sx, values, meta, s)
    with pytest.raises(ValueError, match=r"qsgemm::sparse24_compress: K=100 must be a multiple of 32 \(operand K\)"):
        ops.sparse24_compress(torch.randn(64, 100))
    dense = torch.ones(64, 128)
    with pytest.raises(ValueError, match=r"not 2:4 sparse: row 0, group 0 \(columns 0\.\.3\) has more than two non-zeros"):
        ops.sparse24_compress(dense, prune="require")
    bad = ref.prune_24_magnitude(torch.randn(64, 128))
    bad[3, 5] = float("nan")
    with pytest.raises(ValueError, match=r"non-finite value at row 3, column 5"):
        ops.sparse24_compress(bad)
    with pytest.raises(ValueError, match=r"'foo' is not a granularity"):
        ops.quantize_fp8_weight(torch.randn(64, 128), "foo")
    with pytest.raises(ValueError, match=r"dtype float32 is not accepted; expected one of \{bfloat16, float16\}"):
        ops.quantize_fp8_per_token(torch.randn(4, 128))
    with pytest.raises(ValueError, match=r"given scale of channel 0"):
        ops.sparse24_compress(bad.nan_to_num(), given_scale=torch.zeros(64))
    with pytest.raises(ValueError, match=r"must be torch.bfloat16, torch.float16 or torch.float32"):
        ops.sparse24_linear(*fp8_activation(4, 128), values, meta, s, out_dtype=torch.float64)
    with pytest.raises(ValueError, match=r"qsgemm::sparse24_decompress: must be torch.bfloat16 or torch.float32"):
        ops.sparse24_decompress(values, meta, s, 64, 128, torch.float16)
    with pytest.raises(NotImplementedError, match=r"per_tensor weights are not supported"):
        ops.quantize_fp8_weight(torch.randn(64, 128), "per_tensor")


def test_direct_op_error_is_tagged_runtime_error():
    with pytest.raises(RuntimeError, match=r"\[qsgemm:invalid_argument\] qsgemm::quantize_fp8_per_token: "):
        torch.ops.qsgemm.quantize_fp8_per_token(torch.randn(4, 128))
    try:
        torch.ops.qsgemm.quantize_fp8_per_token(torch.randn(4, 100, dtype=torch.bfloat16))
    except RuntimeError as exc:
        t = ops.translate_error(exc)
        assert isinstance(t, ValueError) and str(t).startswith("qsgemm::quantize_fp8_per_token: K=100")


# ---- CPU kernels vs float64 torch references -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_quantizers_vs_torch(dtype):
    x = torch.randn(33, 400, dtype=dtype) * 3
    x[5] = 0  # an all-zero row: scale 1
    q, s = ops.quantize_fp8_per_token(x)
    rq, rs = ref.quantize_per_token(x)
    assert torch.equal(s, rs)
    assert torch.equal(q.view(torch.uint8), rq.view(torch.uint8))
    qg, sg = ops.quantize_fp8_per_token_group(x)
    amax = torch.nn.functional.pad(x.float().abs(), (0, 512 - 400)).reshape(33, 4, 128).amax(-1)
    rsg = ref.fp8_scale(amax)
    assert torch.equal(sg, rsg)
    rqg = ref.quantize(x, ref.expand_groups(rsg, 33, 400, 1))
    assert torch.equal(qg.view(torch.uint8), rqg.view(torch.uint8))


def test_weight_quantizer_vs_torch():
    w = torch.randn(200, 400) * 0.02
    q, s = ops.quantize_fp8_weight(w, "block_128x128")
    amax = torch.nn.functional.pad(w.abs(), (0, 112, 0, 56)).reshape(2, 128, 4, 128).amax(dim=(1, 3))
    assert torch.equal(s, ref.fp8_scale(amax))
    rq = ref.quantize(w, ref.expand_groups(s, 200, 400, 128))
    assert torch.equal(q.view(torch.uint8), rq.view(torch.uint8))
    q, s = ops.quantize_fp8_weight(w, "group_1x128")
    rq = ref.quantize(w, ref.expand_groups(s, 200, 400, 1))
    assert torch.equal(q.view(torch.uint8), rq.view(torch.uint8))


@pytest.mark.parametrize("scale", ["per_channel", "per_tensor"])
def test_compress_decompress_vs_torch(scale):
    N, K = 72, 160
    w = torch.randn(N, K, dtype=torch.bfloat16)
    values, meta, s = ops.sparse24_compress(w, "magnitude", scale)
    pruned = ref.prune_24_magnitude(w)
    amax = pruned.float().abs().amax(dim=1) if scale == "per_channel" else pruned.float().abs().amax().reshape(1)
    assert torch.equal(s, ref.fp8_scale(amax))
    expect = ref.quantize(pruned, s.reshape(-1, 1)).float() * s.reshape(-1, 1)
    d32 = ops.sparse24_decompress(values, meta, s, N, K, torch.float32)
    assert torch.equal(d32, expect)
    d16 = ops.sparse24_decompress(values, meta, s, N, K, torch.bfloat16)
    assert torch.equal(d16, expect.to(torch.bfloat16))
    out = torch.full((N, K), float("nan"))
    ops.sparse24_decompress_out(values, meta, s, N, K, out=out)
    assert torch.equal(out, d32)
    # Round trip of a weight that is already 2:4 and quantized: "require" with its own scales.
    v2, m2, s2 = ops.sparse24_compress(d32, "require", scale, given_scale=s)
    assert torch.equal(v2.view(torch.uint8), values.view(torch.uint8)) and torch.equal(m2, meta)


@pytest.mark.parametrize("M", [1, 77])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_sparse24_linear_cpu_vs_torch(M, out_dtype):
    N, K = 64, 256
    w, values, meta, s = sparse_weight(N, K)
    q, sx = fp8_activation(M, K)
    bias = torch.randn(N)
    y = ops.sparse24_linear(q, sx, values, meta, s, bias, out_dtype)
    wd = ops.sparse24_decompress(values, meta, s, N, K, torch.float32)
    r = ref.sparse24_linear_ref(q.float(), sx, wd, bias)
    ref.check_gemm(y, r, "sparse24")
    out = torch.full((M, N), float("nan"), dtype=out_dtype)
    ops.sparse24_linear_out(q, sx, values, meta, s, bias, out=out)
    assert torch.equal(out, y)


@pytest.mark.parametrize(
    "gx,gw,K",
    [("group_1x128", "block_128x128", 400), ("group_1x128", "group_1x128", 256), ("block_128x128", "block_128x128", 384),
     ("per_row", "per_row", 272)],
)
def test_blockwise_linear_cpu_vs_torch(gx, gw, K):
    M, N = 77, 64
    x = torch.randn(M, K, dtype=torch.bfloat16)
    if gx == "group_1x128":
        q, sx = ops.quantize_fp8_per_token_group(x)
    elif gx == "per_row":
        q, sx = ops.quantize_fp8_per_token(x)
    else:
        q, sx = ops.quantize_fp8_weight(x, "block_128x128")
    wq, sw = ops.quantize_fp8_weight(torch.randn(N, K, dtype=torch.bfloat16), gw)
    bias = torch.randn(N, dtype=torch.bfloat16)
    y = ops.blockwise_linear(q, sx, gx, wq, sw, gw, bias)
    r = ref.blockwise_linear_ref(q.float(), sx, gx, wq.float(), sw, gw, bias)
    ref.check_gemm(y, r, "blockwise")
    y32 = ops.blockwise_linear(q, sx, gx, wq, sw, gw, bias.float(), torch.float32)
    assert ref.rel_frobenius(y32, r) < 1e-6
