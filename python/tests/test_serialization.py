"""save_quantized / load_quantized (safetensors + versioned JSON), torch.load(weights_only=True)."""

import io
import json

import pytest
import torch
import torch.nn as nn

import qsgemm
from qsgemm import BlockwiseFp8Tensor, Sparse24Fp8Tensor
from qsgemm.serialization import FORMAT_VERSION, METADATA_KEY, load_quantized_state_dict
from qsgemm_test_util import DEVICES, on_device


def build(device=None):
    torch.manual_seed(0)
    m = nn.ModuleDict({
        "a": nn.Linear(128, 64),
        "b": nn.Linear(128, 64, bias=False),
        "c": nn.Linear(64, 20),               # stays plain (N % 8)
        "norm": nn.BatchNorm1d(64),           # buffers, including an int64 one
    }).to(torch.bfloat16)
    return m.to(device) if device is not None else m


def quantized(device):
    m = build(device)
    qsgemm.quantize_(nn.ModuleDict({"a": m["a"]}), qsgemm.Sparse24Fp8Config())
    qsgemm.quantize_(nn.ModuleDict({"b": m["b"], "c": m["c"]}),
                     qsgemm.BlockwiseFp8Config(weight="block_128x128"))
    # A non-default logical dtype and a shard must survive the trip too.
    m["b"].weight = nn.Parameter(m["b"].weight.to(torch.float16), requires_grad=False)
    return m


def assert_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (Sparse24Fp8Tensor, BlockwiseFp8Tensor)):
        assert a._attributes() == b._attributes() and a.shape == b.shape
        for x, y in zip(a._data(), b._data()):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert torch.equal(x.cpu().view(torch.uint8), y.cpu().view(torch.uint8))  # bit-exact
    else:
        assert a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu())


@pytest.mark.filterwarnings("ignore:qsgemm.quantize_")
@pytest.mark.parametrize("device", DEVICES)
def test_safetensors_round_trip_bit_exact(tmp_path, device):
    dev = on_device(device)
    m = quantized(dev)
    path = tmp_path / "model.safetensors"
    qsgemm.save_quantized(m, path, metadata={"note": "test"})

    # The header: versioned JSON describing each quantized tensor.
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        keys = set(f.keys())
    assert meta["note"] == "test"
    header = json.loads(meta[METADATA_KEY])
    assert header["format_version"] == FORMAT_VERSION == 1
    a = header["tensors"]["a.weight"]
    assert a["type"] == "Sparse24Fp8Tensor" and a["shape"] == [64, 128]
    assert a["granularity"] == "per_channel" and a["attributes"]["dtype"] == "bfloat16"
    assert a["data"] == {"qdata": "a.weight.qdata", "sparse_metadata": "a.weight.sparse_metadata",
                         "scale": "a.weight.scale"}
    assert header["tensors"]["b.weight"]["granularity"] == "block_128x128"
    assert {"a.weight.qdata", "b.weight.scale", "c.weight", "norm.num_batches_tracked"} <= keys

    sd = load_quantized_state_dict(path, device=dev)
    for k, v in m.state_dict().items():
        assert_same(sd[k], v)

    # Into a freshly built, unquantized model.
    fresh = build(dev)
    result = qsgemm.load_quantized(fresh, path)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in m.state_dict().items():
        assert_same(fresh.state_dict()[k], v)
    assert fresh["a"].weight.device.type == dev.type
    x = torch.randn(3, 128, device=dev, dtype=torch.bfloat16)
    assert torch.equal(fresh["a"](x), m["a"](x))
    assert torch.equal(fresh["b"](x), m["b"](x))
    # Into a model that is already quantized the same way.
    again = quantized(dev)
    qsgemm.load_quantized(again, path)
    assert torch.equal(again["a"](x), m["a"](x))


@pytest.mark.filterwarnings("ignore:qsgemm.quantize_")
def test_load_into_a_model_built_on_meta(tmp_path):
    m = quantized("cpu")
    path = tmp_path / "m.safetensors"
    qsgemm.save_quantized(m, path)
    with torch.device("meta"):
        empty = build()
    qsgemm.load_quantized(empty, path)
    for k, v in m.state_dict().items():
        assert_same(empty.state_dict()[k], v)
    x = torch.randn(3, 128, dtype=torch.bfloat16)
    assert torch.equal(empty["a"](x), m["a"](x))


@pytest.mark.filterwarnings("ignore:qsgemm.quantize_")
def test_strict_keys(tmp_path):
    path = tmp_path / "m.safetensors"
    qsgemm.save_quantized(quantized("cpu"), path)
    other = nn.ModuleDict({"a": nn.Linear(128, 64)})
    with pytest.raises(KeyError, match="unexpected keys"):
        qsgemm.load_quantized(other, path)
    result = qsgemm.load_quantized(other, path, strict=False)
    assert "b.weight" in result.unexpected_keys and isinstance(other["a"].weight, Sparse24Fp8Tensor)


def _write_with_header(path, header):
    from safetensors.torch import save_file

    save_file({"w.qdata": torch.zeros(8, 16, dtype=torch.float8_e4m3fn),
               "w.scale": torch.ones(1, 1)},
              str(path), metadata={METADATA_KEY: json.dumps(header)})


def test_newer_format_version_is_a_clear_error(tmp_path):
    entry = {"type": "BlockwiseFp8Tensor", "shape": [8, 16],
             "attributes": {"granularity": "block_128x128", "dtype": "bfloat16", "transposed": False},
             "data": {"qdata": "w.qdata", "scale": "w.scale"}}
    ok = tmp_path / "ok.safetensors"
    _write_with_header(ok, {"format_version": FORMAT_VERSION, "tensors": {"w": entry}})
    assert isinstance(load_quantized_state_dict(ok)["w"], BlockwiseFp8Tensor)
    newer = tmp_path / "newer.safetensors"
    _write_with_header(newer, {"format_version": FORMAT_VERSION + 1, "tensors": {"w": entry}})
    with pytest.raises(ValueError, match=f"version {FORMAT_VERSION + 1} is newer"):
        load_quantized_state_dict(newer)
    unknown = tmp_path / "unknown.safetensors"
    _write_with_header(unknown, {"format_version": 1, "tensors": {"w": {**entry, "type": "Nope"}}})
    with pytest.raises(ValueError, match="unknown type 'Nope'"):
        load_quantized_state_dict(unknown)


def test_plain_state_dict_and_tied_weights(tmp_path):
    emb = nn.Embedding(16, 32)
    head = nn.Linear(32, 16, bias=False)
    head.weight = emb.weight  # tied: shared storage
    m = nn.ModuleDict({"emb": emb, "head": head})
    path = tmp_path / "plain.safetensors"
    qsgemm.save_quantized(m.state_dict(), path)
    sd = load_quantized_state_dict(path)
    assert torch.equal(sd["emb.weight"], emb.weight.detach()) and torch.equal(sd["head.weight"], emb.weight.detach())


@pytest.mark.filterwarnings("ignore:qsgemm.quantize_")
@pytest.mark.parametrize("device", DEVICES)
def test_torch_load_weights_only(device):
    dev = on_device(device)
    m = quantized(dev)
    m["a"].weight = nn.Parameter(m["a"].weight.t(), requires_grad=False)  # an attribute other than dtype
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, weights_only=True)
    for k, v in m.state_dict().items():
        assert_same(sd[k], v)
    assert sd["a.weight"].transposed and sd["b.weight"].dtype == torch.float16
