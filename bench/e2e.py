#!/usr/bin/env python3
"""End-to-end benchmark: a Llama-architecture model in bf16, torch FP8 and qsgemm FP8 (issue #25 item 6).

    PYTHONPATH=<qsgemm install> python3 bench/e2e.py --out bench/results/h200/e2e.json
    python3 bench/e2e.py --quick            # fewer repetitions, 2 layers (about a minute)

The model: `transformers.LlamaForCausalLM` built from a `LlamaConfig` with Llama-3-8B dimensions
(hidden 4096, intermediate 14336, 32 heads, 8 KV heads, head 128, vocab 128256) and only a few
layers (default 4), random init (seeded), bf16, on one GPU. Nothing is downloaded.

Model states, all sharing the embedding, the final norm and the LM head (bf16 in every one):
    torch_bf16@dense           the bf16 model
    torch_fp8_rowwise@dense    nn.Linear -> TorchFp8RowwiseLinear: activations quantized per token
                               with torch ops (torch.compile'd into one kernel unless
                               --torch-quant eager), `torch._scaled_mm` row-wise with per-channel
                               weight scales, use_fast_accum=True: what a user has today, at its best
    blockwise@dense            qsgemm.BlockwiseFp8Config(): 1x128 activation groups x 128x128 blocks
    w4a4@dense                 qsgemm.W4A4LowRankConfig(rank=32, group=64): SVDQuant's INT4 weights and
                               activations + a bf16 rank-32 branch (weight-only smoothing)
    torch_bf16@pruned          the bf16 model with every decoder linear magnitude-pruned to 2:4
    torch_fp8_rowwise@pruned   the torch FP8 model on those same pruned weights
    sparse24@pruned            qsgemm.Sparse24Fp8Config(prune="require") on those same pruned weights
Only the decoder layers' linears are converted (q, k, v, o, gate, up, down).

What is timed (CUDA events, median over repetitions, variants interleaved in rounds):
    e2e_prefill  one forward of a batch-1 prompt of L tokens (L = 2048, 8192), no KV cache
    e2e_decode   one decode step (1 new token per sequence) at batch B (1, 16, 64) against a static
                 KV cache (transformers' StaticCache) holding --kv-len tokens (512)
each eager and CUDA-graphed (torch.cuda.CUDAGraph around the same call; every variant of a point
is timed the same way). Attention (the same in every variant): transformers' SDPA function run
without a mask (--attention flash, see `sdpa_unmasked`), so that SDPA's flash kernel does the GQA
itself; transformers' stock decode path (--attention transformers) copies K and V to all 32 heads
and takes a masked kernel, which at batch 64 costs more than all the linears of the step.
The timed call is the decoder stack (`model.model`: embedding, layers, final norm); the LM head
is left out (--with-lm-head adds it, last token only in prefill): it is the same bf16 GEMM in
every variant, and at 128256 x 4096 in bf16 a decode step reads about as many bytes of it as of
four FP8 decoder layers, where the 32-layer model's layers are eight times that.

Accuracy: SQNR (dB) of the final hidden states of a batch-1 prefill of --sqnr-len tokens, each
model against the bf16 model on the same weights (pruned for sparse24), the torch FP8 model
likewise, so sparse24's SQNR is compared with dense FP8 on the same pruned weights.

Output: the JSON of shared/BENCH_RESULTS.md ("Model-level rows"), one row per
(family, M, graphs, qsgemm variant), and `all_variants` with every model state's time.
`python3 scripts/readme_e2e_table.py FILE` prints the README table.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

import torch
import torch.nn as nn

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0

# Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json), with num_hidden_layers set per run.
LLAMA3_8B_DIMS = dict(
    hidden_size=4096,
    intermediate_size=14336,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    max_position_embeddings=8192,
    tie_word_embeddings=False,
    attention_bias=False,
    mlp_bias=False,
)
# A config every format accepts (K % 128 == 0, N % 128 == 0) that runs in a second on a CPU
# through the ops' float64 reference implementations: the smoke test's.
TINY_DIMS = dict(LLAMA3_8B_DIMS, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=64, vocab_size=512)

STATES = [  # (variant, weights); the key of a state is "variant@weights"
    ("torch_bf16", "dense"),
    ("torch_fp8_rowwise", "dense"),
    ("blockwise", "dense"),
    ("w4a4", "dense"),
    ("torch_bf16", "pruned"),
    ("torch_fp8_rowwise", "pruned"),
    ("sparse24", "pruned"),
]
QSGEMM_VARIANTS = {"sparse24": "pruned", "blockwise": "dense", "w4a4": "dense"}  # the variant -> its weights
BASELINES = ("torch_fp8_rowwise", "torch_bf16")
W4A4_RANK = 32  # SVDQuant's default rank


def key(variant: str, weights: str) -> str:
    return f"{variant}@{weights}"


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
def llama_config(layers: int, tiny: bool = False):
    """A LlamaConfig of Llama-3-8B dimensions (or TINY_DIMS) with `layers` decoder layers."""
    from transformers import LlamaConfig

    dims = TINY_DIMS if tiny else LLAMA3_8B_DIMS
    config = LlamaConfig(num_hidden_layers=layers, **dims)
    config._attn_implementation = "sdpa"
    return config


@contextlib.contextmanager
def _default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_model(config, device, dtype=torch.bfloat16, seed: int = 0):
    """LlamaForCausalLM(config), random init (transformers' own, seeded), on `device`, eval mode."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    # Built in `dtype` directly (no fp32 copy, no cast): model.to(dtype) would also round the
    # rotary embedding's float32 inv_freq buffer.
    with torch.device(device), _default_dtype(dtype):
        model = LlamaForCausalLM(config)
    model.eval().requires_grad_(False)
    bad = {p.dtype for p in model.parameters()} - {dtype}
    if bad:
        raise RuntimeError(f"LlamaForCausalLM built with parameters of {bad}, expected {dtype}")
    return model


def decoder_linears(module: nn.Module):
    return [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Linear)]


def prune_24_magnitude(w: torch.Tensor) -> torch.Tensor:
    """Keep the two largest |w| of every 4 consecutive elements along K (w is [N, K])."""
    N, K = w.shape
    if K % 4:
        raise ValueError(f"2:4 pruning needs K % 4 == 0, got K={K}")
    groups = w.reshape(N, K // 4, 4)
    keep = groups.abs().float().topk(2, dim=-1).indices
    mask = torch.zeros(groups.shape, dtype=torch.bool, device=w.device).scatter_(-1, keep, True)
    return (groups * mask).reshape(N, K)


def prune_24_(module: nn.Module) -> nn.Module:
    """Magnitude-prune every nn.Linear weight of `module` to 2:4 along K, in place."""
    with torch.no_grad():
        for _, lin in decoder_linears(module):
            lin.weight.copy_(prune_24_magnitude(lin.weight))
    return module


# ---------------------------------------------------------------------------------------------
# The torch FP8 baseline: per-token activations x per-channel weights through torch._scaled_mm
# ---------------------------------------------------------------------------------------------
def quantize_per_token_fp8_torch(x2: torch.Tensor):
    """x2 [M, K] -> (q [M, K] e4m3, scale [M, 1] f32), x2 ~= q * scale; plain torch ops."""
    amax = x2.abs().amax(dim=-1, keepdim=True).float().clamp_min(1e-12)
    scale = amax / FP8_MAX
    q = (x2.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q, scale


class TorchQuantizer:
    """The baseline's activation quantizer: `quantize_per_token_fp8_torch`, eager or compiled.

    mode "compile": torch.compile (Inductor) fuses the amax, the division and the cast into one
    kernel (eager runs about six), with M dynamic and K static, so a model compiles it four times
    (K = hidden, K = intermediate; M = 1 specialised, M > 1) at `warm_up`, outside any timing or
    CUDA-graph capture. If compiling fails the baseline falls back to eager and says so in `note`.
    """

    def __init__(self, mode: str = "compile"):
        if mode not in ("compile", "eager"):
            raise ValueError(f"--torch-quant {mode!r}: expected 'compile' or 'eager'")
        self.mode = mode
        self.note = ""
        self._fn = quantize_per_token_fp8_torch
        if mode == "compile":
            self._fn = torch.compile(quantize_per_token_fp8_torch, fullgraph=True)

    def __call__(self, x2: torch.Tensor):
        if self.mode == "compile":
            torch._dynamo.maybe_mark_dynamic(x2, 0)
        return self._fn(x2)

    def warm_up(self, ks, device, dtype=torch.bfloat16):
        """Compile for every K (M = 1 and M > 1), check against eager; fall back on failure."""
        if self.mode != "compile":
            return
        try:
            # no_grad as in the benchmark: dynamo guards on the grad mode (else every shape compiles twice)
            with torch.no_grad():
                self._warm_up(ks, device, dtype)
        except Exception as e:  # noqa: BLE001 - any compile failure: measure the eager baseline
            self.mode, self._fn = "eager", quantize_per_token_fp8_torch
            self.note = f"torch.compile of the activation quantizer failed ({type(e).__name__}: {e}); eager used"
            print(f"[e2e] {self.note}", file=sys.stderr)

    def _warm_up(self, ks, device, dtype):
        for k in sorted(set(ks)):
            for m in (64, 1):
                x = torch.randn(m, k, device=device, dtype=dtype)
                q, s = self(x)
                # e4m3 rounds to within 2^-4 relatively (normals), 2^-10 * scale absolutely (subnormals)
                xf, deq = x.float(), q.float() * s
                if s.shape != (m, 1) or not bool(((deq - xf).abs() <= xf.abs() / 16 + s * 2**-10 + 1e-30).all()):
                    raise RuntimeError(f"the compiled quantizer is wrong at M={m}, K={k}")


def scaled_mm_rowwise(xq, x_scale, w_t, w_scale, out_dtype, use_fast_accum):
    """xq [M, K] e4m3 row-major, x_scale [M, 1], w_t [K, N] e4m3 column-major, w_scale [1, N]."""
    if xq.is_cuda:
        return torch._scaled_mm(xq, w_t, scale_a=x_scale, scale_b=w_scale, out_dtype=out_dtype,
                                use_fast_accum=use_fast_accum)
    # torch's CPU _scaled_mm takes per-tensor scales only: the same product in float32 (CPU tests).
    return ((xq.float() * x_scale) @ (w_t.float() * w_scale)).to(out_dtype)


class TorchFp8RowwiseLinear(nn.Module):
    """nn.Linear with an e4m3 weight and a float32 scale per output channel; y = x W^T (+ b)."""

    def __init__(self, linear: nn.Linear, quantizer: TorchQuantizer, use_fast_accum: bool = True):
        super().__init__()
        w = linear.weight.detach().float()
        w_scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / FP8_MAX  # [N, 1]
        wq = (w / w_scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # _scaled_mm wants the second operand column-major: the transpose of the row-major [N, K].
        self.register_buffer("weight_t", wq.t(), persistent=False)
        self.register_buffer("weight_scale", w_scale.t().contiguous(), persistent=False)  # [1, N]
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone(),
                             persistent=False)
        self.quantizer = quantizer
        self.use_fast_accum = use_fast_accum

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        xq, x_scale = self.quantizer(x2)
        y = scaled_mm_rowwise(xq, x_scale, self.weight_t, self.weight_scale, x.dtype, self.use_fast_accum)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, fp8 row-wise (torch._scaled_mm)"


def to_torch_fp8_rowwise_(module: nn.Module, quantizer: TorchQuantizer, use_fast_accum: bool = True) -> nn.Module:
    """Replace every nn.Linear under `module` by a TorchFp8RowwiseLinear, in place."""
    for name, lin in decoder_linears(module):
        parent_name, _, child = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, child, TorchFp8RowwiseLinear(lin, quantizer, use_fast_accum))
    return module


# ---------------------------------------------------------------------------------------------
# The model states
# ---------------------------------------------------------------------------------------------
def qsgemm_convert_(layers: nn.Module, variant: str, sparse_fast_accum: bool = False) -> nn.Module:
    """qsgemm.quantize_ every decoder linear; any layer left unconverted is an error here."""
    import qsgemm

    if variant == "sparse24":
        # The weights are pruned already (prune_24_): "require" takes them exactly as they are, so
        # the sparse model and its references (bf16 and torch FP8 on the pruned weights) agree.
        config = qsgemm.Sparse24Fp8Config(prune="require", fast_accum=sparse_fast_accum)
        tensor_type = qsgemm.Sparse24Fp8Tensor
    elif variant == "blockwise":
        config = qsgemm.BlockwiseFp8Config()  # weights 128x128 blocks, activations 1x128 groups
        tensor_type = qsgemm.BlockwiseFp8Tensor
    elif variant == "w4a4":
        config = qsgemm.W4A4LowRankConfig(rank=W4A4_RANK, group=64)
        tensor_type = qsgemm.W4A4LowRankTensor
    else:
        raise ValueError(f"not a qsgemm variant: {variant!r}")
    skipped = qsgemm.quantize_(layers, config)
    if skipped:
        raise RuntimeError(f"qsgemm.quantize_({type(config).__name__}) skipped {len(skipped)} layer(s): "
                           + "; ".join(f"{s[0]}: {s[1]}" for s in skipped))
    for name, lin in decoder_linears(layers):
        if not isinstance(lin.weight, tensor_type):
            raise RuntimeError(f"{name}.weight is {type(lin.weight).__name__}, not {tensor_type.__name__}")
    return layers


def _copy_layers(model, layers: nn.ModuleList) -> nn.ModuleList:
    """A deep copy of `layers` that shares the model's config (one attention setting for all states)."""
    return copy.deepcopy(layers, memo={id(model.config): model.config})


def make_states(model, states=STATES, quantizer: Optional[TorchQuantizer] = None,
                sparse_fast_accum: bool = False, baseline_fast_accum: bool = True,
                errors: Optional[Dict[str, str]] = None) -> Dict[str, nn.ModuleList]:
    """One ModuleList of decoder layers per model state (copies of model.model.layers).

    Swap one in with `use_state(model, layers)`; the embedding, rotary embedding, final norm and LM
    head are shared. The bf16 layers of the model itself become "torch_bf16@dense".
    With `errors` (a dict), a qsgemm state whose conversion fails is left out and its error stored
    there under its key, so that the other states are still measured.
    """
    dense = model.model.layers
    out: Dict[str, nn.ModuleList] = {}
    pruned = None
    if any(w == "pruned" for _, w in states):
        pruned = prune_24_(_copy_layers(model, dense))
    for variant, weights in states:
        base = dense if weights == "dense" else pruned
        if variant == "torch_bf16":
            layers = base
        elif variant == "torch_fp8_rowwise":
            layers = to_torch_fp8_rowwise_(_copy_layers(model, base), quantizer or TorchQuantizer("eager"),
                                           baseline_fast_accum)
        else:
            try:
                layers = qsgemm_convert_(_copy_layers(model, base), variant, sparse_fast_accum)
            except Exception as e:  # noqa: BLE001
                if errors is None:
                    raise
                errors[key(variant, weights)] = f"conversion failed: {type(e).__name__}: {e}"
                print(f"[e2e] {key(variant, weights)}: {errors[key(variant, weights)]}", file=sys.stderr)
                continue
        out[key(variant, weights)] = layers
    return out


def use_state(model, layers: nn.ModuleList) -> None:
    model.model.layers = layers


UNMASKED_SDPA = "sdpa_unmasked"


def sdpa_unmasked(module, query, key, value, attention_mask, **kwargs):
    """transformers' SDPA attention, with no mask: what --attention flash runs.

    Registered under a name that transformers' mask code does not know, so it builds no mask
    (`_preprocess_mask_arguments` returns None for such names). That is exact for the calls here:
    a prefill is one unpadded causal prompt (SDPA's is_causal, as transformers' own sdpa path does
    eagerly), and a decode step runs against a static cache that is exactly full (DecodeStep with
    full_cache: the new token at position kv_len, the last slot), so every key is visible. Without
    a mask transformers' sdpa function lets SDPA do GQA itself (enable_gqa: the flash kernel,
    no K/V head copies); with one (its stock decode path) it first repeats K and V to all 32
    heads and SDPA takes a masked kernel: at batch 64 and 512 cached tokens those copies move
    more bytes than all the linears of the step.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if attention_mask is not None:
        raise ValueError(f"{UNMASKED_SDPA}: got an attention mask; this attention is for unmasked calls only")
    return sdpa_attention_forward(module, query, key, value, None, **kwargs)


def set_attention(model, mode: str) -> None:
    """--attention: "flash" (sdpa_unmasked, the default) or "transformers" (its stock "sdpa")."""
    if mode == "flash":
        from transformers import AttentionInterface

        AttentionInterface.register(UNMASKED_SDPA, sdpa_unmasked)
        model.config._attn_implementation = UNMASKED_SDPA
    elif mode == "transformers":
        model.config._attn_implementation = "sdpa"
    else:
        raise ValueError(f"--attention {mode!r}: expected 'flash' or 'transformers'")


# ---------------------------------------------------------------------------------------------
# The calls that are timed
# ---------------------------------------------------------------------------------------------
def prefill_call(model, ids: torch.Tensor, with_lm_head: bool = False) -> Callable[[], torch.Tensor]:
    """One forward of the prompt `ids` [1, L], no cache; returns the final hidden states (or logits).

    Runs inside `single_sequence_prefill()`: the same attention kernel eager and graphed.
    """
    def call():
        with single_sequence_prefill():
            if with_lm_head:
                return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits
            return model.model(input_ids=ids, use_cache=False).last_hidden_state

    return call


class DecodeStep:
    """One decode step at batch B against a static KV cache that holds `kv_len` tokens.

    transformers' StaticLayer keeps its fill level in a device tensor (`cumulative_length`) that each
    forward advances in place (also inside a CUDA graph), so `reset()` sets it back to kv_len
    before every timed step: each step writes position kv_len and attends to kv_len + 1 keys.
    The cache holds zeros (the attention's cost does not depend on the values).
    full_cache: the cache has exactly kv_len + 1 slots (what `sdpa_unmasked` needs); else kv_len + 64
    (transformers' masked decode path; 64 keeps the mask's length a multiple of 16 for SDPA).
    """

    def __init__(self, model, batch: int, kv_len: int, with_lm_head: bool = False, seed: int = 1,
                 full_cache: Optional[bool] = None):
        from transformers import StaticCache

        device = model.device
        g = torch.Generator(device="cpu").manual_seed(seed)
        self.model, self.kv_len, self.with_lm_head = model, kv_len, with_lm_head
        self.ids = torch.randint(0, model.config.vocab_size, (batch, 1), generator=g).to(device)
        self.position_ids = torch.full((batch, 1), kv_len, dtype=torch.long, device=device)
        if full_cache is None:
            full_cache = model.config._attn_implementation == UNMASKED_SDPA
        self.slots = kv_len + 1 if full_cache else kv_len + 64
        self.cache = StaticCache(config=model.config, max_cache_len=self.slots)

    def reset(self) -> None:
        for layer in getattr(self.cache, "layers", []):
            n = getattr(layer, "cumulative_length", None)
            if isinstance(n, torch.Tensor):
                n.fill_(self.kv_len)

    def __call__(self) -> torch.Tensor:
        kw = dict(input_ids=self.ids, position_ids=self.position_ids, past_key_values=self.cache, use_cache=True)
        if self.with_lm_head:
            return self.model(**kw).logits
        return self.model.model(**kw).last_hidden_state


def _stream_capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


@contextlib.contextmanager
def single_sequence_prefill():
    """transformers' mask logic for a batch of one unpadded prompt, the same eager and in a capture.

    LlamaModel always makes position ids, and with no cache and no attention mask
    transformers.masking_utils then checks whether the ids hold several packed sequences, reading
    device data (a host sync) unless it is "tracing", where a CUDA-graph capture counts as tracing:
    then it cannot rule packing out and builds a materialised [L, L] mask, and it also refuses to
    skip the plain causal mask, sending SDPA from the flash kernel (is_causal=True, eager) to a
    masked kernel. The graphed prefill would run another attention than the eager one. The prompts
    here are one sequence at positions 0..L-1, so inside this context:
      - the packed-sequence check answers "not packed" without reading the ids (what eager finds);
      - during a capture, `is_tracing(None)` (asked about an absent padding mask: no device data)
        answers False, so the causal mask is skipped as in eager; asked about a tensor it is unchanged.
    Used around the prefill calls only (no attention mask, no cache), eager and graphed alike.
    """
    try:
        from transformers import masking_utils
    except ImportError:
        yield
        return
    saved = {n: getattr(masking_utils, n) for n in ("is_tracing", "find_packed_sequence_indices")
             if hasattr(masking_utils, n)}
    original_is_tracing = saved.get("is_tracing")

    def is_tracing_but_not_capturing(tensor=None):
        if tensor is None and _stream_capturing():
            return torch.compiler.is_compiling()
        return original_is_tracing(tensor)

    if original_is_tracing is not None:
        masking_utils.is_tracing = is_tracing_but_not_capturing
    if "find_packed_sequence_indices" in saved:
        masking_utils.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(masking_utils, n, f)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------
def _time_samples(run, reset, reps: int, cuda: bool = True) -> List[float]:
    """`reps` times (us) of run(), reset() before each, outside the timed span: CUDA events (on the
    CPU, for the smoke run only, the wall clock)."""
    if not cuda:
        out = []
        for _ in range(reps):
            reset()
            t0 = time.perf_counter()
            run()
            out.append((time.perf_counter() - t0) * 1e6)
        return out
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        reset()
        starts[i].record()
        run()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]


def _sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def time_point(model, states: Dict[str, nn.ModuleList], call: Callable[[], torch.Tensor],
               reset: Callable[[], None], graphs: bool, reps: int, warmup: int, rounds: int,
               cuda: bool = True) -> Dict[str, object]:
    """Median time (us) of `call` under every model state, or an error string for a state that failed.

    Eager: warm-up calls, then `rounds` rounds over the states of reps/rounds timed calls each.
    Graphs: each state's call is warmed up on a side stream and captured into its own CUDA graph;
    the replays are timed in the same interleaved rounds. The graphs are freed at the end.
    """
    if graphs and not cuda:
        raise ValueError("CUDA graphs need CUDA")
    result: Dict[str, object] = {}
    runners: Dict[str, Callable[[], object]] = {}
    graphs_held = []
    for name, layers in states.items():
        use_state(model, layers)
        try:
            side = torch.cuda.Stream() if cuda else None
            if cuda:
                side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side) if cuda else contextlib.nullcontext():
                for _ in range(max(warmup, 1)):
                    reset()
                    call()
            if cuda:
                torch.cuda.current_stream().wait_stream(side)
            _sync(cuda)
            if graphs:
                g = torch.cuda.CUDAGraph()
                reset()
                with torch.cuda.graph(g):
                    call()
                torch.cuda.synchronize()
                graphs_held.append(g)
                runners[name] = g.replay
                for _ in range(max(warmup, 1)):
                    reset()
                    g.replay()
                torch.cuda.synchronize()
            else:
                runners[name] = call
        except Exception as e:  # noqa: BLE001 - one state failing must not lose the others
            with contextlib.suppress(Exception):
                _sync(cuda)
            result[name] = f"{'capture' if graphs else 'run'} failed: {type(e).__name__}: {e}"
            print(f"[e2e] {name}: {result[name]}", file=sys.stderr)
    samples: Dict[str, List[float]] = {n: [] for n in runners}
    per_round = max(1, math.ceil(reps / rounds))
    for _ in range(rounds):
        for name, run in runners.items():
            use_state(model, states[name])  # eager calls read the swapped-in layers
            samples[name] += _time_samples(run, reset, per_round, cuda)
    for name, s in samples.items():
        result[name] = statistics.median(s)
    del graphs_held
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return result


def sqnr_db(ref: torch.Tensor, out: torch.Tensor) -> float:
    """10 log10(|ref|^2 / |out - ref|^2) in float64; inf when equal."""
    ref, out = ref.double(), out.double()
    noise = (out - ref).pow(2).sum().item()
    signal = ref.pow(2).sum().item()
    if noise == 0.0:
        return float("inf")
    return 10.0 * math.log10(signal / noise)


@torch.no_grad()
def measure_sqnr(model, states: Dict[str, nn.ModuleList], ids: torch.Tensor) -> Dict[str, Dict[str, float]]:
    """SQNR of each state's final hidden states vs the bf16 model on the same weights.

    Returns {state: {"vs_same_weights_bf16": dB, "vs_dense_bf16": dB}}.
    """
    outs = {}
    for name, layers in states.items():
        use_state(model, layers)
        try:
            with single_sequence_prefill():
                outs[name] = model.model(input_ids=ids, use_cache=False).last_hidden_state.float()
        except Exception as e:  # noqa: BLE001 - the timing still runs (and reports the same failure)
            print(f"[e2e] SQNR of {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
    res = {}
    for name, out in outs.items():
        weights = name.split("@")[1]
        r = {}
        ref_same = outs.get(key("torch_bf16", weights))
        ref_dense = outs.get(key("torch_bf16", "dense"))
        if ref_same is not None:
            r["vs_same_weights_bf16"] = sqnr_db(ref_same, out)
        if ref_dense is not None:
            r["vs_dense_bf16"] = sqnr_db(ref_dense, out)
        res[name] = r
    return res


# ---------------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------------
def _num(x) -> Optional[float]:
    return round(float(x), 3) if isinstance(x, (int, float)) and math.isfinite(x) else None


def make_rows(layer_name: str, family: str, M: int, graphs: bool, times: Dict[str, object],
              sqnr: Dict[str, Dict[str, float]], extra: Optional[dict] = None) -> List[dict]:
    """The BENCH_RESULTS.md rows of one point: one per qsgemm variant, baselines on its weights."""
    rows = []
    for variant, weights in QSGEMM_VARIANTS.items():
        name = key(variant, weights)
        if name not in times:
            continue
        row = {"family": family, "layer": layer_name, "variant": variant, "M": M}
        row.update(extra or {})
        row["graphs"] = graphs
        row["weights"] = "2:4-pruned (magnitude)" if weights == "pruned" else "dense"
        notes = []
        t = times[name]
        row["qsgemm_us"] = _num(t) if not isinstance(t, str) else None
        if isinstance(t, str):
            notes.append(f"qsgemm: {t}")
        row["baselines_us"] = {}
        for b in BASELINES:
            tb = times.get(key(b, weights))
            if isinstance(tb, str):
                notes.append(f"{b} unavailable: {tb}")
            elif tb is not None:
                row["baselines_us"][b] = _num(tb)
        if isinstance(t, (int, float)) and row["baselines_us"].get("torch_fp8_rowwise"):
            row["speedup_vs_torch_fp8_rowwise"] = round(row["baselines_us"]["torch_fp8_rowwise"] / t, 3)
        if isinstance(t, (int, float)):
            step_s = t * 1e-6
            if family == "e2e_prefill":
                row["tokens_per_s"] = round(M / step_s, 1)
            else:
                row["ms_per_token"] = round(t / 1000.0, 4)
                row["tokens_per_s"] = round(M / step_s, 1)
        s = sqnr.get(name, {})
        row["sqnr_db"] = _num(s.get("vs_same_weights_bf16"))
        row["baselines_sqnr_db"] = {}
        fp8 = sqnr.get(key("torch_fp8_rowwise", weights), {})
        if "vs_same_weights_bf16" in fp8:
            row["baselines_sqnr_db"]["torch_fp8_rowwise"] = _num(fp8["vs_same_weights_bf16"])
        if weights == "pruned" and "vs_dense_bf16" in s:
            row["sqnr_vs_dense_bf16_db"] = _num(s["vs_dense_bf16"])  # pruning + quantization
        if notes:
            row["notes"] = "; ".join(notes)
        rows.append(row)
    return rows


def git_commit(given: Optional[str]) -> str:
    if given:
        return given
    if os.environ.get("QSGEMM_GIT_COMMIT"):
        return os.environ["QSGEMM_GIT_COMMIT"]
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip() or "unknown"
    except Exception:  # noqa: BLE001 - a copied tree without .git
        return "unknown"


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="bench/results/h200/e2e.json", help="JSON output path")
    p.add_argument("--layers", type=int, default=None, help="decoder layers (default 4; --quick: 2)")
    p.add_argument("--prefill", default="2048,8192", help="prompt lengths, batch 1")
    p.add_argument("--decode", default="1,16,64", help="decode batch sizes")
    p.add_argument("--kv-len", type=int, default=512, help="tokens in the KV cache at a decode step")
    p.add_argument("--sqnr-len", type=int, default=2048, help="prompt length of the SQNR prefill")
    p.add_argument("--graphs", default="both", choices=("both", "eager", "graphs"))
    p.add_argument("--reps-prefill", type=int, default=None, help="timed calls per state (default 10; quick 4)")
    p.add_argument("--reps-decode", type=int, default=None, help="timed calls per state (default 60; quick 20)")
    p.add_argument("--warmup", type=int, default=None, help="default 3; quick 1")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds over the states")
    p.add_argument("--variants", default="sparse24,blockwise", help="qsgemm variants to run (also: w4a4)")
    p.add_argument("--torch-quant", default="compile", choices=("compile", "eager"),
                   help="the torch baseline's activation quantizer")
    p.add_argument("--sparse-fast-accum", action="store_true",
                   help="qsgemm 2:4 with FP8 fast accumulation (default: the library's promoted sums)")
    p.add_argument("--attention", default="flash", choices=("flash", "transformers"),
                   help="flash: transformers' sdpa without a mask (GQA in the flash kernel; see sdpa_unmasked); "
                        "transformers: its stock sdpa path")
    p.add_argument("--with-lm-head", action="store_true", help="time the LM head too (bf16 in all states)")
    p.add_argument("--quick", action="store_true", help="2 layers, fewer repetitions")
    p.add_argument("--no-kernel-breakdown", dest="kernel_breakdown", action="store_false",
                   help="skip the per-state GEMM / other kernel time of each decode step (torch.profiler)")
    p.add_argument("--tiny", action="store_true", help="TINY_DIMS instead of Llama-3-8B's (a test)")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="the whole flow on the CPU at a tiny config, eager, wall clock (a test; timings meaningless)")
    p.add_argument("--git-commit", default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    q = args.quick
    args.layers = args.layers or (2 if q else 4)
    args.reps_prefill = args.reps_prefill or (4 if q else 10)
    args.reps_decode = args.reps_decode or (20 if q else 60)
    args.warmup = args.warmup if args.warmup is not None else (1 if q else 3)
    args.prefill = [int(v) for v in args.prefill.split(",") if v]
    args.decode = [int(v) for v in args.decode.split(",") if v]
    args.variants = [v for v in args.variants.split(",") if v]
    if args.cpu_smoke:
        args.graphs = "eager"
    for v in args.variants:
        if v not in QSGEMM_VARIANTS:
            p.error(f"--variants: {v!r} is not one of {sorted(QSGEMM_VARIANTS)}")
    return args


def selected_states(variants) -> list:
    want_weights = {QSGEMM_VARIANTS[v] for v in variants}
    return [(v, w) for v, w in STATES if w in want_weights and (v in BASELINES or v in variants)]


GEMM_KERNEL_WORDS = ("gemm", "cutlass", "nvjet", "xmma", "sm90_", "qsgemm", "scaled_mm", "w4a4")


def kernel_breakdown(model, states: Dict[str, nn.ModuleList], call: Callable[[], torch.Tensor],
                     reset: Callable[[], None], reps: int = 5) -> Dict[str, Dict[str, float]]:
    """Per state: the GPU time (us per call) of its kernels, split into the GEMMs (names with one of
    GEMM_KERNEL_WORDS: CUTLASS / cuBLAS / qsgemm kernels) and everything else (attention, norms,
    RoPE, activation quantizers, elementwise), from torch.profiler's CUDA activity over `reps` eager
    calls. It says how much of a step a faster GEMM can remove at all."""
    from torch.profiler import ProfilerActivity, profile

    out: Dict[str, Dict[str, float]] = {}
    for name, layers in states.items():
        use_state(model, layers)
        reset()
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                reset()
                call()
            torch.cuda.synchronize()
        gemm = other = 0.0
        kernels = 0
        for e in prof.events():
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            lname = e.name.lower()
            if "memcpy" in lname or "memset" in lname:
                continue
            kernels += 1
            us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            if any(w in lname for w in GEMM_KERNEL_WORDS):
                gemm += us
            else:
                other += us
        out[name] = {"gemm_us": round(gemm / reps, 1), "other_us": round(other / reps, 1),
                     "kernels_per_call": round(kernels / reps, 1)}
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    cuda = not args.cpu_smoke
    if cuda and not torch.cuda.is_available():
        print("bench/e2e.py times CUDA: no GPU here (--cpu-smoke runs the whole flow at a tiny config on "
              "the CPU, timings meaningless)", file=sys.stderr)
        return 2
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        print(f"bench/e2e.py needs transformers >= 5 (StaticCache API), found {transformers.__version__}; "
              "install one: scripts/install_e2e_deps.sh", file=sys.stderr)
        return 2
    import qsgemm  # noqa: F401 - fail early, before building the model

    t_start = time.time()
    device = torch.device("cuda" if cuda else "cpu")
    if cuda:
        props = torch.cuda.get_device_properties(device)
        device_name, sms = props.name, props.multi_processor_count
    else:
        device_name, sms = "cpu (smoke run: timings meaningless)", 0
    tiny = args.tiny or not cuda
    layer_name = f"tiny-{args.layers}layers" if tiny else f"llama3-8b-dims-{args.layers}layers"
    config = llama_config(args.layers, tiny=tiny)

    model = build_model(config, device, seed=args.seed)
    set_attention(model, args.attention)
    quantizer = TorchQuantizer(args.torch_quant)
    quantizer.warm_up([config.hidden_size, config.intermediate_size], device)
    state_errors: Dict[str, str] = {}
    with torch.no_grad():
        states = make_states(model, selected_states(args.variants), quantizer,
                             sparse_fast_accum=args.sparse_fast_accum, baseline_fast_accum=True,
                             errors=state_errors)
    print(f"[e2e] model and {len(states)} states ready in {time.time() - t_start:.1f} s"
          + (f" ({torch.cuda.memory_allocated() / 2**30:.1f} GiB)" if cuda else ""), file=sys.stderr)

    gen = torch.Generator(device="cpu").manual_seed(args.seed + 7)
    sqnr_ids = torch.randint(0, config.vocab_size, (1, args.sqnr_len), generator=gen).to(device)
    sqnr = measure_sqnr(model, states, sqnr_ids)
    for name, s in sqnr.items():
        print(f"[e2e] SQNR {name:26s} " + "  ".join(f"{k} {v:6.2f} dB" for k, v in s.items()), file=sys.stderr)

    modes = {"both": (False, True), "eager": (False,), "graphs": (True,)}[args.graphs]
    rows, all_variants = [], []
    report = {
        "device": device_name,
        "sms": sms,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "git_commit": git_commit(args.git_commit),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "complete": False,
        "model": {
            "name": layer_name,
            "config": {k: getattr(config, k) for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                        "num_key_value_heads", "head_dim", "vocab_size",
                                                        "num_hidden_layers")},
            "init": f"transformers' random init, seed {args.seed}, bf16",
            "converted": "the decoder layers' linears (q, k, v, o, gate, up, down); embedding, "
                         "final norm and LM head bf16 in every variant",
            "attention": ("transformers' sdpa function without a mask (bench/e2e.py sdpa_unmasked): "
                          "SDPA flash with enable_gqa, causal prefill, decode against an exactly full cache"
                          if args.attention == "flash" else
                          "transformers' stock 'sdpa' (decode: K/V repeated to all heads, masked kernel)"),
        },
        "timed_call": ("model(...) with logits of the last token only" if args.with_lm_head else
                       "model.model(...): embedding, decoder layers, final norm; LM head not timed"),
        "prefill": {"batch": 1, "lengths": args.prefill, "kv_cache": "none"},
        "decode": {"batches": args.decode, "kv_len": args.kv_len, "cache": "transformers StaticCache, "
                   f"{args.kv_len + 1 if args.attention == 'flash' else args.kv_len + 64} slots, "
                   "one new token per sequence per step (at position kv_len)"},
        "timing": {"clock": "CUDA events", "statistic": "median", "reps_prefill": args.reps_prefill,
                   "reps_decode": args.reps_decode, "warmup": args.warmup, "rounds": args.rounds,
                   "graphs": "torch.cuda.CUDAGraph of the same call, one per state and point"},
        "sqnr": {"what": f"final hidden states of a batch-1 prefill of {args.sqnr_len} random tokens",
                 "reference": "the bf16 model on the same weights (2:4-pruned for sparse24)"},
        "variants": {
            "torch_bf16": "nn.Linear, bf16 (cuBLAS)",
            "torch_fp8_rowwise": {"activation_quant": quantizer.mode + (" (Inductor, one kernel)"
                                                                        if quantizer.mode == "compile" else
                                                                        " (torch ops)"),
                                  "gemm": "torch._scaled_mm, per-token x per-channel scales",
                                  "use_fast_accum": True, "note": quantizer.note},
            "sparse24": f"qsgemm.Sparse24Fp8Config(prune='require', fast_accum={args.sparse_fast_accum}) "
                        "on 2:4 magnitude-pruned weights; activations per token",
            "blockwise": "qsgemm.BlockwiseFp8Config(weight='block_128x128'); activations 1x128 groups",
            "w4a4": f"qsgemm.W4A4LowRankConfig(rank={W4A4_RANK}, group=64): INT4 weights and activations "
                    "(groups of 64), bf16 low-rank branch, weight-only smoothing (no calibration data)",
        },
        "state_errors": state_errors,
        "sqnr_db": {n: {k: _num(v) for k, v in s.items()} for n, s in sqnr.items()},
        "rows": rows,
        "all_variants": all_variants,
    }

    def write():  # after every point: a run cut short still leaves its rows
        report["wall_s"] = round(time.time() - t_start, 1)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(report, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    def record(family, M, graphs, times, extra):
        times.update(state_errors)
        rows.extend(make_rows(layer_name, family, M, graphs, times, sqnr, extra))
        for name, t in times.items():
            variant, weights = name.split("@")
            entry = {"family": family, "M": M, "graphs": graphs, "variant": variant, "weights": weights}
            entry.update(extra)
            entry["us"] = _num(t) if not isinstance(t, str) else None
            if isinstance(t, str):
                entry["error"] = t
            all_variants.append(entry)
        line = "  ".join(f"{n} {t:9.1f}" if not isinstance(t, str) else f"{n} FAILED" for n, t in times.items())
        print(f"[e2e] {family} M={M} graphs={graphs}: {line} (us)", file=sys.stderr)
        write()

    with torch.no_grad():
        for L in args.prefill:
            ids = torch.randint(0, config.vocab_size, (1, L), generator=gen).to(device)
            call = prefill_call(model, ids, args.with_lm_head)
            for graphs in modes:
                times = time_point(model, states, call, lambda: None, graphs, args.reps_prefill, args.warmup,
                                   args.rounds, cuda)
                record("e2e_prefill", L, graphs, times, {})
            del ids, call
            if cuda:
                torch.cuda.empty_cache()
        for B in args.decode:
            step = DecodeStep(model, B, args.kv_len, args.with_lm_head, seed=args.seed + B)
            for graphs in modes:
                times = time_point(model, states, step, step.reset, graphs, args.reps_decode, args.warmup,
                                   args.rounds, cuda)
                record("e2e_decode", B, graphs, times, {"kv_len": args.kv_len})
            if cuda and args.kernel_breakdown:
                try:
                    report.setdefault("decode_kernel_breakdown", {})[f"B={B}"] = kernel_breakdown(
                        model, states, step, step.reset)
                except Exception as e:  # a profiler problem must not lose the timed rows
                    report.setdefault("decode_kernel_breakdown", {})[f"B={B}"] = {"error": repr(e)}
                print(f"[e2e] decode B={B} kernel time: {report['decode_kernel_breakdown'][f'B={B}']}",
                      file=sys.stderr)
                write()
            del step
            if cuda:
                torch.cuda.empty_cache()
    report["complete"] = True
    write()
    print(f"[e2e] wrote {args.out} ({len(rows)} rows) in {report['wall_s']} s", file=sys.stderr)
    table_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "readme_e2e_table.py")
    if os.path.exists(table_script):
        subprocess.run([sys.executable, table_script, args.out, "--mode", "both"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
