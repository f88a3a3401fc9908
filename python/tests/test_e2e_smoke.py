"""CPU smoke test of the end-to-end benchmark (bench/e2e.py) and its table script.

The benchmark times CUDA only; here its model construction, the six model states (bf16, torch FP8
row-wise, qsgemm blockwise; and the same on 2:4-pruned weights with qsgemm 2:4 sparse), the SQNR
measurement, the decode step against a static cache and the JSON rows run at a tiny config through
the CPU kernels (the qsgemm ops' float64 reference). A meta-device run checks that the calls the
benchmark captures into CUDA graphs read no device data on the host (a host read would break the
capture). Skipped without transformers; the qsgemm states are skipped without a built qsgemm.
"""

import importlib.util
import io
import json
import math
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the end-to-end model is transformers' Llama")
if int(transformers.__version__.split(".")[0]) < 5:
    pytest.skip(f"bench/e2e.py needs transformers >= 5, found {transformers.__version__}", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


e2e = _load("qsgemm_bench_e2e", ROOT / "bench" / "e2e.py")
table = _load("qsgemm_readme_e2e_table", ROOT / "scripts" / "readme_e2e_table.py")


def _qsgemm_or_skip():
    try:
        import qsgemm
    except ImportError as e:
        pytest.skip(f"qsgemm is not importable ({e})")
    missing = [n for n in ("quantize_", "Sparse24Fp8Config", "BlockwiseFp8Config",
                           "Sparse24Fp8Tensor", "BlockwiseFp8Tensor") if not hasattr(qsgemm, n)]
    if missing:
        pytest.skip(f"qsgemm does not export {missing} (the pkg-py API)")
    return qsgemm


def _tiny_model(layers=2):
    return e2e.build_model(e2e.llama_config(layers, tiny=True), "cpu")


BASELINE_STATES = [s for s in e2e.STATES if s[0] in e2e.BASELINES]


def test_tiny_config_is_llama3_shaped_and_fits_every_format():
    cfg = e2e.llama_config(3, tiny=True)
    assert cfg.num_hidden_layers == 3 and cfg.num_key_value_heads * 2 == cfg.num_attention_heads
    big = e2e.llama_config(4)
    assert (big.hidden_size, big.intermediate_size, big.num_attention_heads, big.num_key_value_heads,
            big.vocab_size) == (4096, 14336, 32, 8, 128256)
    for c in (cfg, big):
        head = c.head_dim
        for n, k in [(c.num_attention_heads * head, c.hidden_size), (c.num_key_value_heads * head, c.hidden_size),
                     (c.intermediate_size, c.hidden_size), (c.hidden_size, c.intermediate_size)]:
            assert n % 128 == 0 and k % 128 == 0, (n, k)


def test_prune_24_keeps_the_two_largest_of_four():
    w = torch.tensor([[1.0, -4.0, 3.0, 2.0, 0.0, 0.5, -0.25, 0.0]], dtype=torch.bfloat16)
    p = e2e.prune_24_magnitude(w)
    assert p.tolist() == [[0.0, -4.0, 3.0, 0.0, 0.0, 0.5, -0.25, 0.0]]
    w = torch.randn(64, 256, dtype=torch.bfloat16)
    p = e2e.prune_24_magnitude(w).reshape(64, 64, 4)
    assert ((p != 0).sum(-1) <= 2).all()
    kept = p.abs().float().sum(-1)
    best2 = w.reshape(64, 64, 4).abs().float().topk(2, dim=-1).values.sum(-1)
    assert torch.equal(kept, best2)


def test_torch_fp8_rowwise_linear_matches_a_float64_reference():
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 128, bias=True).to(torch.bfloat16)
    m = e2e.TorchFp8RowwiseLinear(lin, e2e.TorchQuantizer("eager"))
    x = torch.randn(2, 5, 256, dtype=torch.bfloat16)
    y = m(x)
    assert y.shape == (2, 5, 128) and y.dtype == torch.bfloat16
    xq, xs = e2e.quantize_per_token_fp8_torch(x.reshape(-1, 256))
    ref = (xq.double() * xs.double()) @ (m.weight_t.double() * m.weight_scale.double()) + lin.bias.double()
    assert torch.allclose(y.reshape(-1, 128).double(), ref, rtol=2e-2, atol=2e-2)
    # the FP8 layer stays close to the bf16 one
    assert e2e.sqnr_db(lin(x).float(), y.float()) > 20


def test_baseline_states_sqnr_and_decode_on_cpu():
    model = _tiny_model()
    states = e2e.make_states(model, BASELINE_STATES, e2e.TorchQuantizer("eager"))
    assert list(states) == ["torch_bf16@dense", "torch_fp8_rowwise@dense", "torch_bf16@pruned",
                            "torch_fp8_rowwise@pruned"]
    for _, lin in e2e.decoder_linears(states["torch_bf16@pruned"]):
        assert ((lin.weight.reshape(lin.out_features, -1, 4) != 0).sum(-1) <= 2).all()
    ids = torch.randint(0, model.config.vocab_size, (1, 48))
    sq = e2e.measure_sqnr(model, states, ids)
    assert sq["torch_bf16@dense"]["vs_same_weights_bf16"] == math.inf
    for name in ("torch_fp8_rowwise@dense", "torch_fp8_rowwise@pruned"):
        assert 15 < sq[name]["vs_same_weights_bf16"] < 60, (name, sq[name])
    assert sq["torch_bf16@pruned"]["vs_dense_bf16"] < sq["torch_fp8_rowwise@dense"]["vs_same_weights_bf16"]

    with torch.no_grad():
        for name, layers in states.items():
            e2e.use_state(model, layers)
            step = e2e.DecodeStep(model, batch=3, kv_len=16)
            step.reset()
            step()  # allocates the cache (the benchmark's warm-up does this before any timing)
            step.reset()
            first = step()
            step.reset()
            again = step()  # reset() makes the step repeatable (what the timing loop relies on)
            assert first.shape == (3, 1, model.config.hidden_size)
            assert torch.equal(first, again), name
            lens = [int(layer.cumulative_length) for layer in step.cache.layers]
            assert lens == [17] * model.config.num_hidden_layers


def test_qsgemm_states_on_cpu():
    qsgemm = _qsgemm_or_skip()
    model = _tiny_model()
    states = e2e.make_states(model, e2e.STATES, e2e.TorchQuantizer("eager"))
    for _, lin in e2e.decoder_linears(states["sparse24@pruned"]):
        assert isinstance(lin.weight, qsgemm.Sparse24Fp8Tensor)
    for _, lin in e2e.decoder_linears(states["blockwise@dense"]):
        assert isinstance(lin.weight, qsgemm.BlockwiseFp8Tensor)
    for _, lin in e2e.decoder_linears(states["w4a4@dense"]):
        assert isinstance(lin.weight, qsgemm.W4A4LowRankTensor)
    ids = torch.randint(0, model.config.vocab_size, (1, 40))
    sq = e2e.measure_sqnr(model, states, ids)
    for variant, weights in e2e.QSGEMM_VARIANTS.items():
        mine = sq[e2e.key(variant, weights)]["vs_same_weights_bf16"]
        fp8 = sq[e2e.key("torch_fp8_rowwise", weights)]["vs_same_weights_bf16"]
        if variant == "w4a4":  # 4-bit weights and activations: well below FP8, well above noise
            assert 5 < mine < fp8, (variant, mine, fp8)
        else:
            assert mine > 15 and abs(mine - fp8) < 3, (variant, mine, fp8)
    with torch.no_grad():
        for name in ("sparse24@pruned", "blockwise@dense"):
            e2e.use_state(model, states[name])
            step = e2e.DecodeStep(model, batch=2, kv_len=8)
            step.reset()
            out = step()
            assert out.shape == (2, 1, model.config.hidden_size) and torch.isfinite(out).all()


def test_unmasked_attention_equals_transformers_sdpa():
    """--attention flash (no mask, exactly full decode cache) computes what the stock path does."""
    model = _tiny_model()
    ids = torch.randint(0, model.config.vocab_size, (1, 24))
    outs = {}
    with torch.no_grad():
        for mode in ("transformers", "flash"):
            e2e.set_attention(model, mode)
            prefill = e2e.prefill_call(model, ids)()
            step = e2e.DecodeStep(model, batch=2, kv_len=8)
            assert step.slots == (9 if mode == "flash" else 72)
            step.reset()
            step()
            step.reset()
            outs[mode] = (prefill, step())
    for a, b in zip(outs["transformers"], outs["flash"]):
        assert e2e.sqnr_db(a.float(), b.float()) > 40
    with pytest.raises(ValueError, match="attention mask"):
        e2e.sdpa_unmasked(None, None, None, None, torch.ones(1))


@pytest.mark.parametrize("attention", ["flash", "transformers"])
def test_captured_calls_read_no_device_data(monkeypatch, attention):
    """On the meta device a host read of tensor data raises: the prefill and decode calls (run as
    during a CUDA-graph capture) must not make one, and the prefill must keep SDPA's causal path
    (no mask); with --attention flash the decode step has no mask either and SDPA does the GQA."""
    import transformers.utils.import_utils as iu

    try:
        _qsgemm_or_skip()
        wanted = e2e.STATES
    except pytest.skip.Exception:
        wanted = BASELINE_STATES
    model = _tiny_model()
    e2e.set_attention(model, attention)
    states = e2e.make_states(model, wanted, e2e.TorchQuantizer("eager"))
    monkeypatch.setattr(iu, "is_cuda_stream_capturing", lambda: True)
    monkeypatch.setattr(e2e, "_stream_capturing", lambda: True)
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kw):
        seen.append((q.shape[2], attn_mask is None, is_causal, k.shape[2], kw.get("enable_gqa", False)))
        return sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    model.to("meta")
    with torch.no_grad():
        for name, layers in states.items():
            layers.to("meta")
            e2e.use_state(model, layers)
            seen.clear()
            ids = torch.zeros(1, 32, dtype=torch.long, device="meta")
            out = e2e.prefill_call(model, ids)()
            assert out.shape == (1, 32, model.config.hidden_size)
            assert seen and all(s == (32, True, True, 32, True) for s in seen), (name, seen)  # flash, GQA
            step = e2e.DecodeStep(model, batch=2, kv_len=8)
            step.ids, step.position_ids = step.ids.to("meta"), step.position_ids.to("meta")
            for _ in range(2):  # the first call initialises the cache (the warm-up does it on the GPU)
                step.reset()
                seen.clear()
                assert step().shape == (2, 1, model.config.hidden_size)
            if attention == "flash":
                assert all(s == (1, True, False, 9, True) for s in seen), (name, seen)
            else:
                assert all(s == (1, False, False, 72, False) for s in seen), (name, seen)


def _fake_report():
    sqnr = {
        "torch_bf16@dense": {"vs_same_weights_bf16": math.inf, "vs_dense_bf16": math.inf},
        "torch_fp8_rowwise@dense": {"vs_same_weights_bf16": 20.0, "vs_dense_bf16": 20.0},
        "blockwise@dense": {"vs_same_weights_bf16": 20.5, "vs_dense_bf16": 20.5},
        "torch_bf16@pruned": {"vs_same_weights_bf16": math.inf, "vs_dense_bf16": 2.0},
        "torch_fp8_rowwise@pruned": {"vs_same_weights_bf16": 21.0, "vs_dense_bf16": 2.0},
        "sparse24@pruned": {"vs_same_weights_bf16": 20.8, "vs_dense_bf16": 2.0},
    }
    rows = []
    for graphs in (False, True):
        for L in (2048, 8192):
            t = {"torch_bf16@dense": 30000.0, "torch_fp8_rowwise@dense": 20000.0, "blockwise@dense": 19000.0,
                 "torch_bf16@pruned": 29000.0, "torch_fp8_rowwise@pruned": 20000.0, "sparse24@pruned": 15000.0}
            rows += e2e.make_rows("llama3-8b-dims-4layers", "e2e_prefill", L, graphs, t, sqnr)
        for B in (1, 16, 64):
            t = {"torch_bf16@dense": 900.0, "torch_fp8_rowwise@dense": 500.0, "blockwise@dense": 480.0,
                 "torch_bf16@pruned": 900.0, "torch_fp8_rowwise@pruned": 500.0,
                 "sparse24@pruned": "capture failed: RuntimeError: x" if B == 64 else 290.0}
            rows += e2e.make_rows("llama3-8b-dims-4layers", "e2e_decode", B, graphs, t, sqnr, {"kv_len": 512})
    return {"device": "NVIDIA H200", "sms": 132, "git_commit": "abc1234", "date": "2026-12-02T03:00:00Z",
            "rows": rows}


def test_rows_follow_bench_results_md():
    report = _fake_report()
    rows = report["rows"]
    assert len(rows) == 2 * (2 + 3) * 2
    r = next(r for r in rows if r["variant"] == "sparse24" and r["family"] == "e2e_prefill" and r["M"] == 2048)
    for field in ("family", "layer", "variant", "M", "graphs", "qsgemm_us", "baselines_us", "sqnr_db",
                  "baselines_sqnr_db"):
        assert field in r
    assert r["baselines_us"] == {"torch_fp8_rowwise": 20000.0, "torch_bf16": 29000.0}
    assert r["speedup_vs_torch_fp8_rowwise"] == pytest.approx(20000 / 15000, abs=1e-3)
    assert r["tokens_per_s"] == pytest.approx(2048 / 0.015, rel=1e-6)
    assert r["sqnr_db"] == 20.8 and r["baselines_sqnr_db"] == {"torch_fp8_rowwise": 21.0}
    assert r["sqnr_vs_dense_bf16_db"] == 2.0
    b = next(r for r in rows if r["variant"] == "blockwise" and r["family"] == "e2e_decode" and r["M"] == 16)
    assert b["kv_len"] == 512 and b["ms_per_token"] == 0.48 and b["baselines_us"]["torch_fp8_rowwise"] == 500.0
    failed = next(r for r in rows if r["variant"] == "sparse24" and r["M"] == 64)
    assert failed["qsgemm_us"] is None and "capture failed" in failed["notes"]
    json.dumps(report, allow_nan=False)  # plain JSON (no inf / nan)


def test_readme_table(tmp_path):
    path = tmp_path / "e2e.json"
    path.write_text(json.dumps(_fake_report()))
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert table.main([str(path)]) == 0
    text = buf.getvalue()
    assert "CUDA-graphed" in text and "Eager" in text
    assert "**qsgemm 2:4 sparse FP8, 2:4-pruned weights**" in text
    assert "136,533 (1.33×)" in text  # 2048 tokens / 15 ms, 20 / 15
    assert "0.290 (1.72×)" in text
    assert "sparse FP8 decode ≥ 1.60× torch FP8 row-wise: MISSED" in text  # B=64 has no time
    assert "blockwise FP8 (1x128 · 128x128) prefill ≥ 1.00× torch FP8 row-wise: met" in text
    assert "SQNR within 1 dB of torch FP8 row-wise on the same weights: met (20.80 vs 21.00 dB" in text


def test_readme_table_second_file_replaces_its_variants(tmp_path):
    """A re-run of one variant (a second file) replaces that variant's rows; the others stay."""
    first, second = _fake_report(), _fake_report()
    second["git_commit"] = "fedcba9"
    second["rows"] = [dict(r, qsgemm_us=r["qsgemm_us"] / 2 if r["qsgemm_us"] else None)
                      for r in second["rows"] if r["variant"] == "blockwise"]
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert table.main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--mode", "graphs"]) == 0
    text = buf.getvalue()
    assert "blockwise: git fedcba9" in text and "sparse24: git" in text
    one = io.StringIO()
    with redirect_stdout(one):
        assert table.main([str(tmp_path / "a.json"), "--mode", "graphs"]) == 0
    row = lambda t, name: next(line for line in t.splitlines() if name in line)  # noqa: E731
    name = "**qsgemm blockwise FP8 (1x128 · 128x128)**"
    assert row(text, name) != row(one.getvalue(), name)  # the second file's (halved) times
    name = "**qsgemm 2:4 sparse FP8, 2:4-pruned weights**"
    assert row(text, name) == row(one.getvalue(), name)  # untouched


def test_main_refuses_without_cuda(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert e2e.main(["--quick", "--out", "/nonexistent/e2e.json"]) == 2
    assert "no GPU" in capsys.readouterr().err


def test_main_cpu_smoke_run_writes_the_json(tmp_path, capfd):
    """The benchmark's whole flow (all states, SQNR, rows, JSON, table) at a tiny config on the CPU."""
    _qsgemm_or_skip()
    out = tmp_path / "e2e.json"
    rc = e2e.main(["--cpu-smoke", "--torch-quant", "eager", "--layers", "1", "--prefill", "32", "--decode", "1,2",
                   "--kv-len", "8", "--sqnr-len", "16", "--reps-prefill", "1", "--reps-decode", "1", "--warmup", "1",
                   "--rounds", "1", "--out", str(out), "--git-commit", "abc1234"])
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["complete"] and report["git_commit"] == "abc1234" and not report["state_errors"]
    rows = report["rows"]
    assert sorted((r["family"], r["M"], r["variant"]) for r in rows) == sorted(
        [("e2e_prefill", 32, v) for v in ("sparse24", "blockwise")]
        + [("e2e_decode", b, v) for b in (1, 2) for v in ("sparse24", "blockwise")])
    for r in rows:
        assert r["graphs"] is False and r["qsgemm_us"] > 0 and set(r["baselines_us"]) == set(e2e.BASELINES)
        assert r["sqnr_db"] > 15 and r["baselines_sqnr_db"]["torch_fp8_rowwise"] > 15
    assert len(report["all_variants"]) == 3 * 6
    assert "**qsgemm 2:4 sparse FP8, 2:4-pruned weights**" in capfd.readouterr().out  # the table (a subprocess)


def test_quick_arguments():
    a = e2e.parse_args(["--quick"])
    assert (a.layers, a.reps_prefill, a.reps_decode, a.warmup) == (2, 4, 20, 1)
    assert a.prefill == [2048, 8192] and a.decode == [1, 16, 64] and a.variants == ["sparse24", "blockwise"]
    assert e2e.selected_states(["blockwise"]) == [("torch_bf16", "dense"), ("torch_fp8_rowwise", "dense"),
                                                  ("blockwise", "dense")]
    with pytest.raises(SystemExit):
        e2e.parse_args(["--variants", "nope"])


def test_bench_on_gpu_at_a_tiny_config(tmp_path):
    """The benchmark's CUDA path (events, CUDA graphs of every state, the qsgemm ops inside a
    captured model) at a tiny config, in seconds: a check before the full run."""
    _qsgemm_or_skip()
    from qsgemm_test_util import require_gpu

    require_gpu()
    out = tmp_path / "e2e.json"
    rc = e2e.main(["--tiny", "--layers", "1", "--prefill", "256", "--decode", "1,16", "--kv-len", "64",
                   "--sqnr-len", "128", "--reps-prefill", "2", "--reps-decode", "4", "--warmup", "1",
                   "--rounds", "1", "--torch-quant", "eager", "--out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["complete"] and not report["state_errors"]
    assert len(report["rows"]) == 3 * 2 * 2  # 3 points x eager/graphs x 2 variants
    for r in report["rows"]:
        assert "notes" not in r, r
        assert r["qsgemm_us"] > 0 and set(r["baselines_us"]) == set(e2e.BASELINES), r
        assert r["sqnr_db"] > 15 and abs(r["sqnr_db"] - r["baselines_sqnr_db"]["torch_fp8_rowwise"]) < 3, r


def test_example_runs():
    """python/examples/llama_e2e.py --tiny: on the GPU when there is one, else on the CPU ops."""
    _qsgemm_or_skip()
    r = subprocess.run([sys.executable, str(ROOT / "python" / "examples" / "llama_e2e.py"), "--tiny",
                        "--layers", "1", "--new-tokens", "2", "--format", "blockwise"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "logits vs the bf16 model: SQNR" in r.stdout and "generated token ids" in r.stdout
