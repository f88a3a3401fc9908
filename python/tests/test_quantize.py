"""qsgemm.quantize_: conversion, skipped layers, filter_fn, require mode, torchao's quantize_."""

import warnings

import pytest
import torch
import torch.nn as nn

import qsgemm
from qsgemm import BlockwiseFp8Config, BlockwiseFp8Tensor, Sparse24Fp8Config, Sparse24Fp8Tensor
from qsgemm_test_util import DEVICES, on_device, two_four_weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 128)
        self.odd_n = nn.Linear(64, 20)       # N % 8 != 0: skipped by both configs
        self.odd_k = nn.Linear(48, 64)       # K % 32 != 0: sparse skips, blockwise takes
        self.down = nn.Linear(128, 64, bias=False)
        self.norm = nn.LayerNorm(64)


def make_model(device):
    torch.manual_seed(0)
    return nn.Sequential(Block(), Block()).to(device=device, dtype=torch.bfloat16)


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_skips_and_lists_bad_shapes(device):
    dev = on_device(device)
    m = make_model(dev)
    bias_before = m[0].up.bias.detach().clone()
    with pytest.warns(UserWarning, match="left 4 linear layer") as rec:
        skipped = qsgemm.quantize_(m, Sparse24Fp8Config())
    assert [s.name for s in skipped] == ["0.odd_n", "0.odd_k", "1.odd_n", "1.odd_k"]
    assert "N % 8" in skipped[0].reason and "K=48" in skipped[1].reason
    assert "0.odd_k" in str(rec[0].message)
    assert m.qsgemm_skipped_layers == skipped
    for blk in m:
        assert isinstance(blk.up.weight, Sparse24Fp8Tensor) and isinstance(blk.down.weight, Sparse24Fp8Tensor)
        assert type(blk.odd_n.weight) is nn.Parameter and type(blk.odd_k.weight) is nn.Parameter
        assert blk.up.weight.dtype == torch.bfloat16 and not blk.up.weight.requires_grad
    assert torch.equal(m[0].up.bias, bias_before)
    y = m[0].up(torch.randn(3, 64, device=dev, dtype=torch.bfloat16))
    assert y.shape == (3, 128)
    # A second call skips what is already quantized (and lists it) instead of failing.
    with pytest.warns(UserWarning):
        again = qsgemm.quantize_(m, Sparse24Fp8Config())
    assert any("already quantized" in s.reason for s in again)


@pytest.mark.parametrize("device", DEVICES)
def test_blockwise_and_filter_fn(device):
    dev = on_device(device)
    m = make_model(dev)
    seen = []

    def only_first_block(module, name):
        seen.append(name)
        return name.startswith("0.")

    with pytest.warns(UserWarning, match="0.odd_n"):
        skipped = qsgemm.quantize_(m, BlockwiseFp8Config(weight="group_1x128"), filter_fn=only_first_block)
    assert [s.name for s in skipped] == ["0.odd_n"]
    assert "1.up" in seen and "0.norm" not in seen  # filter_fn sees only nn.Linear modules
    assert isinstance(m[0].odd_k.weight, BlockwiseFp8Tensor)
    assert m[0].up.weight.granularity == "group_1x128"
    assert type(m[1].up.weight) is nn.Parameter


def test_no_warning_when_nothing_is_skipped():
    m = nn.Sequential(nn.Linear(128, 64), nn.Linear(64, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert qsgemm.quantize_(m, BlockwiseFp8Config()) == []
    assert m[0].weight.dtype == torch.float32  # the logical dtype is the original one


@pytest.mark.parametrize("device", DEVICES)
def test_require_mode_skips_weights_that_are_not_2_4(device):
    dev = on_device(device)
    m = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 64)).to(dev, torch.bfloat16)
    with torch.no_grad():
        m[0].weight.copy_(two_four_weight(32, 64).to(dev))
    with pytest.warns(UserWarning, match="2:4"):
        skipped = qsgemm.quantize_(m, Sparse24Fp8Config(prune="require", scale="per_tensor"))
    assert [s.name for s in skipped] == ["1"]
    assert isinstance(m[0].weight, Sparse24Fp8Tensor) and m[0].weight.scale.shape == (1,)
    assert type(m[1].weight) is nn.Parameter


def test_config_validation():
    with pytest.raises(ValueError, match="prune"):
        Sparse24Fp8Config(prune="random")
    with pytest.raises(ValueError, match="scale"):
        Sparse24Fp8Config(scale="per_group")
    with pytest.raises(ValueError, match="weight"):
        BlockwiseFp8Config(weight="block_64x64")
    with pytest.raises(TypeError, match="config"):
        qsgemm.quantize_(nn.Linear(64, 64), object())


def test_root_linear():
    lin = nn.Linear(64, 32)
    assert qsgemm.quantize_(lin, Sparse24Fp8Config()) == []
    assert isinstance(lin.weight, Sparse24Fp8Tensor)


def test_torchao_quantize_accepts_qsgemm_configs():
    pytest.importorskip("torchao")
    from qsgemm.configs import TORCHAO_AVAILABLE
    from qsgemm.quantize import TORCHAO_HANDLERS_REGISTERED

    if not (TORCHAO_AVAILABLE and TORCHAO_HANDLERS_REGISTERED):
        pytest.skip("torchao is installed but does not import against this torch")
    from torchao.quantization import quantize_ as torchao_quantize_

    m = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 20)).to(torch.bfloat16)
    with pytest.warns(UserWarning, match="unquantized"):
        torchao_quantize_(m, Sparse24Fp8Config())
    assert isinstance(m[0].weight, Sparse24Fp8Tensor)
    assert type(m[1].weight) is nn.Parameter
    m2 = nn.Sequential(nn.Linear(128, 64)).to(torch.bfloat16)
    torchao_quantize_(m2, BlockwiseFp8Config(weight="per_row"))
    assert isinstance(m2[0].weight, BlockwiseFp8Tensor)
