#!/usr/bin/env python3
# Accuracy of the baselines on the H200 (run with the machine's python3: PyTorch 2.11 carries
# cuBLASLt and cuSPARSELt): cuBLASLt FP8 through torch._scaled_mm, precise and fast accumulation, and
# cuSPARSELt FP8 2:4 through torch._cslt_sparse_mm, against a float64 reference on the same e4m3
# operands. Output: bench/results/h200/baseline_accuracy.txt. Usage: python3 scripts/baseline_accuracy.py
import sys

import torch

torch.manual_seed(0)
dev = 'cuda'
print('torch', torch.__version__, torch.cuda.get_device_name(0))
try:
    print('cusparselt version', torch.backends.cusparselt.version())
except Exception as e:
    print('cusparselt version ?', e)
def rel(a, ref):
    a = a.double(); return ((a - ref).norm() / ref.norm()).item()
for (M, N, K) in [(512, 2048, 4096), (512, 2048, 28672), (4096, 4096, 8192)]:
    W = torch.randn(N, K, device=dev)
    g = W.abs().view(N, K // 4, 4)
    idx = g.topk(2, dim=-1).indices
    mask = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True).view(N, K)
    W = (W * mask * 64).to(torch.float8_e4m3fn)
    X = (torch.randn(M, K, device=dev) * 64).to(torch.float8_e4m3fn)
    ref = X.double() @ W.double().t()  # [M, N]
    one = torch.ones((), device=dev)
    out = {}
    for fast in (False, True):
        for od in (torch.float32, torch.bfloat16):
            try:
                y = torch._scaled_mm(X, W.t(), scale_a=one, scale_b=one, out_dtype=od, use_fast_accum=fast)
                out['cublaslt_%s_%s' % ('fast' if fast else 'precise', str(od)[6:])] = rel(y, ref)
            except Exception as e:
                out['cublaslt_%s_%s' % (fast, od)] = 'ERR ' + str(e)[:120]
    try:
        comp = torch._cslt_compress(W)
        for od in (torch.float32, torch.bfloat16, torch.float16):
            try:
                # Y^T = W · X^T: sparse W [N,K] times dense X^T [K,M]
                yt = torch._cslt_sparse_mm(comp, X.t(), out_dtype=od)
                out['cusparselt_%s' % str(od)[6:]] = rel(yt.t(), ref)
            except Exception as e:
                out['cusparselt_%s' % str(od)[6:]] = 'ERR ' + str(e)[:160]
    except Exception as e:
        out['cusparselt'] = 'ERR compress ' + str(e)[:160]
    print('M=%d N=%d K=%d' % (M, N, K), out)
    sys.stdout.flush()
