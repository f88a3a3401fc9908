"""Host time per eager call of qsgemm's ops and of torch's own GEMM ops at a small shape (M=16,
N=K=1024), the way the package's pytest measures it: 10 chunks of 100 calls, a sync between chunks
(not timed), best of 3. Torch's ops are the context: what a user's thread already pays per call.

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
    res = {}
    for name, fn in rows.items():
        res[name] = host_us(fn)
        print(f"{name:45s} {res[name]:7.2f} us/call")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"git_commit": args.git_commit, "torch": torch.__version__, "shape": [M, N, K], "host_us_per_call": res, "device": torch.cuda.get_device_name()}, f, indent=1)


if __name__ == "__main__":
    main()
