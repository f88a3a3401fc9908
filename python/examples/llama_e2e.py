#!/usr/bin/env python3
"""A Llama-3-8B-shaped model (a few layers, random weights) in bf16, then in qsgemm FP8.

    python3 python/examples/llama_e2e.py                       # 2:4 sparse FP8, on the GPU
    python3 python/examples/llama_e2e.py --format blockwise    # blockwise FP8 (1x128 x 128x128)
    python3 python/examples/llama_e2e.py --format w4a4         # W4A4 + rank-32 low rank (SVDQuant)
    python3 python/examples/llama_e2e.py --tiny                # small dims, runs on a CPU too

Builds `transformers.LlamaForCausalLM` from a LlamaConfig (Llama-3-8B: hidden 4096, intermediate
14336, 32 heads, 8 KV heads, vocab 128256; here --layers decoder layers), random init: nothing is
downloaded, so there is no tokenizer either and the prompt's UTF-8 bytes stand in for token ids.
`qsgemm.quantize_` converts the decoder layers' nn.Linear weights in place; the model is then used
as before (forward, generate): F.linear on the quantized weights runs the qsgemm ops.
The timed comparison with bf16 and torch's FP8 is bench/e2e.py.
"""
import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import qsgemm


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--format", choices=("sparse24", "blockwise", "w4a4"), default="sparse24")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="hidden 256, intermediate 512, vocab 512")
    p.add_argument("--prompt", default="The capital of France is")
    p.add_argument("--new-tokens", type=int, default=8)
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tiny = args.tiny or device == "cpu"  # the CPU kernels are a float64 reference: small dims only

    dims = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                head_dim=128, vocab_size=128256, rope_theta=500000.0, max_position_embeddings=8192)
    if tiny:
        dims.update(hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=64, vocab_size=512)
    config = LlamaConfig(num_hidden_layers=args.layers, **dims)

    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = LlamaForCausalLM(config).eval()
    torch.set_default_dtype(torch.float32)

    ids = torch.tensor([list(args.prompt.encode())], device=device) % config.vocab_size
    with torch.no_grad():
        ref = model(ids).logits.float()

    # Convert the decoder layers (the embedding and the LM head stay bf16). Sparse24Fp8Config
    # magnitude-prunes every weight to 2:4 (2 of each 4 along K): that changes the model, so its
    # output differs from the dense bf16 one by the pruning as well as the FP8 rounding.
    # W4A4LowRankConfig: SVDQuant's smoothing (weight-only here: no calibration data) + rank-32 SVD
    # + INT4 residual; activations INT4 in groups of 64.
    cfg = {"sparse24": qsgemm.Sparse24Fp8Config, "blockwise": qsgemm.BlockwiseFp8Config,
           "w4a4": qsgemm.W4A4LowRankConfig}[args.format]()
    skipped = qsgemm.quantize_(model.model.layers, cfg)
    print(f"converted with {cfg}; skipped: {skipped or 'none'}")
    print("q_proj weight:", repr(model.model.layers[0].self_attn.q_proj.weight)[:200])

    with torch.no_grad():
        out = model(ids).logits.float()
        sqnr = 10 * torch.log10(ref.pow(2).sum() / (out - ref).pow(2).sum()).item()
        same = (out.argmax(-1) == ref.argmax(-1)).float().mean().item()
        print(f"logits vs the bf16 model: SQNR {sqnr:.1f} dB, same top-1 token at {same:.0%} of positions")
        gen = model.generate(ids, max_new_tokens=args.new_tokens, do_sample=False, pad_token_id=0)
    print("generated token ids:", gen[0, ids.shape[1]:].tolist())


if __name__ == "__main__":
    main()
