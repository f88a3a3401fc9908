"""Host time per eager call of qsgemm's ops and of torch's own GEMM ops at a small shape (M=16,
N=K=1024), the way the package's pytest measures it: 10 chunks of 100 calls, a sync between chunks
(not timed), best of 3. Torch's ops are the context: what a user's thread already pays per call. The W4A4 rows (one
token, 28672x4096) time the decode ring, which encodes TMA maps per call, against the register
stream, which encodes none.

    PYTHONPATH=<site with the wheel> python3 bench/host_overhead.py [--out FILE] [--git-commit C]
"""

import argparse
import json
import time

import torch

from qsgemm import ops


def host_us(fn):
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        total = 0.0
        for _ in range(10):
            t0 = time.perf_counter()
            for _ in range(100):
                fn()
            total += time.perf_counter() - t0
            torch.cuda.synchronize()
        best = min(best, total / 1000 * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--git-commit", default="unknown")
    args = ap.parse_args()
    M, N, K = 16, 1024, 1024
    dev = "cuda"
    x = torch.randn(M, K, dtype=torch.bfloat16, device=dev)
    w = torch.randn(N, K, dtype=torch.bfloat16, device=dev)
    values, meta, sw = ops.sparse24_compress(w, "magnitude", "per_channel")
    q, sx = ops.quantize_fp8_per_token(x)
    wq, wsc = ops.quantize_fp8_weight(w, "per_row")
    wq_t = wq.t()
    sx_col = sx.reshape(M, 1)
    sw_row = wsc.reshape(1, N)
    y = torch.empty(M, N, dtype=torch.bfloat16, device=dev)
    op = torch.ops.qsgemm.sparse24_linear.default
    rows = {
        "torch.mm bf16": lambda: torch.mm(x, w.t()),
        "torch._scaled_mm fp8 row-wise": lambda: torch._scaled_mm(q, wq_t, scale_a=sx_col, scale_b=sw_row,
                                                                   out_dtype=torch.bfloat16),
        "torch.empty_like": lambda: torch.empty_like(y),
        "torch.ops.qsgemm.sparse24_linear": lambda: op(q, sx, values, meta, sw),
        "torch.ops.qsgemm.sparse24_linear.out": lambda: torch.ops.qsgemm.sparse24_linear.out(
            q, sx, values, meta, sw, out=y),
        "qsgemm.ops.sparse24_linear": lambda: ops.sparse24_linear(q, sx, values, meta, sw),
        "torch.ops.qsgemm.quantize_fp8_per_token": lambda: torch.ops.qsgemm.quantize_fp8_per_token.default(x),
    }
    # W4A4 at one token on 28672x4096: at group 64 the heuristic runs the decode ring, whose two to four
    # TMA maps are encoded on the host per call; at group 128 the register stream, which has none.
    # The two rows differ only in that.
    wM, wN, wK = 1, 28672, 4096
    wx = torch.randn(wM, wK, dtype=torch.bfloat16, device=dev)
    ww = torch.randn(wN, wK, dtype=torch.bfloat16, device=dev)
    w4 = {}
    for g in (64, 128):
        w1, wsc4 = ops.w4a4_pack_weight(ww, g)
        x1, xs4, _ = ops.w4a4_quantize_activations(wx, g)
        w4[g] = (x1, xs4, w1, wsc4, g)
    wl = torch.ops.qsgemm.w4a4_linear.default
    rows["torch.ops.qsgemm.w4a4_linear M=1 g64 (decode ring: TMA maps)"] = lambda: wl(*w4[64])
    rows["torch.ops.qsgemm.w4a4_linear M=1 g128 (register stream)"] = lambda: wl(*w4[128])
    res = {}
    for name, fn in rows.items():
        res[name] = host_us(fn)
        print(f"{name:45s} {res[name]:7.2f} us/call")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"git_commit": args.git_commit, "torch": torch.__version__, "shape": [M, N, K], "w4a4_shape": [wM, wN, wK], "host_us_per_call": res, "device": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main()
