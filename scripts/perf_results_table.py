#!/usr/bin/env python3
"""Write docs/performance.md's results table (between `<!-- results:begin ... -->` and
`<!-- results:end -->`) from the committed `qsgemm bench` JSON files of the users grid.

usage: scripts/perf_results_table.py [--sparse FILE] [--blockwise FILE] [--doc FILE] [--print]
                                     [--ms 1,8,16,...]

Per M (default: 1 and the powers of two from 8 to 16384), the geometric mean over the layers of baseline time
/ qsgemm time, both from the same run: 2:4 sparse (default and `fast_accum`) against cuBLASLt FP8
row-wise and per-tensor and cuSPARSELt; blockwise 1x128 . 128x128 against cuBLASLt block-scaled (the
layers whose K is a multiple of 128, and the partial-K layers apart) and per-tensor; per-token x
per-channel against cuBLASLt row-wise. A cell is `-` where the baseline ran on none of the layers
(cuBLASLt refuses some shapes). Then the other blockwise scale pairs' time against 1x128 . 128x128's
over every point. Exit 0; 2 on bad usage or missing markers. Standard library only.
"""
import argparse
import collections
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_cliffs  # noqa: E402  (the rows, speedups and geomean every table and check reads alike)
BEGIN = "<!-- results:begin"
END = "<!-- results:end -->"
DEFAULT_MS = "1,8,16,32,64,128,256,512,1024,2048,4096,8192,16384"


def load(path):
    with open(path) as f:
        return json.load(f)


def gemm_rows(doc, family):
    """The family's GEMM rows that ran (check_cliffs.py's reading of a bench file)."""
    return [r for r in check_cliffs.gemm_rows(doc) if r.get("family") == family and check_cliffs.positive(r.get("qsgemm_us"))]


def geomean(values):
    return check_cliffs.geomean(values) if values else None


def speedup(rows, baseline, m, keep=lambda r: True):
    """Geomean over the layers at M = m of baseline / qsgemm, or None where the baseline never ran."""
    vals = [check_cliffs.speedup(r, baseline) for r in rows if r["M"] == m and keep(r)]
    return geomean([v for v in vals if v is not None])


def partial_k(r):
    return r["K"] % 128 != 0


def words(n):
    return ("no", "one", "two", "three", "four")[n] if n < 5 else str(n)


def cell(v):
    return "–" if v is None else "%.2f×" % v


def table(sparse, blockwise, ms):
    sp = gemm_rows(sparse, "sparse24")
    fa = gemm_rows(sparse, "sparse24_fastaccum")
    bw = gemm_rows(blockwise, "blockwise_1d2d")
    pr = gemm_rows(blockwise, "rowwise")
    n_sparse = len({r["layer"] for r in sp})
    whole = len({r["layer"] for r in bw if not partial_k(r)})
    n_bw = len({r["layer"] for r in bw})
    lines = [
        "Geometric mean per M over the layers (`sparse24.json`: %d; `blockwise.json`: the %d whose K is a" % (n_sparse, whole),
        "multiple of 128, the %s partial-K ones apart, whose rows start on 128-byte lines for both libraries;" % words(n_bw - whole),
        "\"per-row\": per-token × per-channel). –: refused.",
        "",
        "| M | sparse vs cuBLASLt row-wise | sparse vs cuBLASLt per-tensor | sparse vs cuSPARSELt | sparse `fast_accum` "
        "vs cuSPARSELt | 1×128·128×128 vs cuBLASLt blockwise (%d layers) | 1×128·128×128 vs cuBLASLt blockwise "
        "(partial K) | 1×128·128×128 vs cuBLASLt per-tensor (%d) | per-row vs cuBLASLt row-wise (%d) |" % (whole, whole, whole),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in ms:
        cells = [
            speedup(sp, "cublaslt_fp8_rowwise", m),
            speedup(sp, "cublaslt_fp8_tensor", m),
            speedup(sp, "cusparselt_fp8", m),
            speedup(fa, "cusparselt_fp8", m),
            speedup(bw, "cublaslt_fp8_block128", m, lambda r: not partial_k(r)),
            speedup(bw, "cublaslt_fp8_block128", m, partial_k),
            speedup(bw, "cublaslt_fp8_tensor", m, lambda r: not partial_k(r)),
            speedup(pr, "cublaslt_fp8_rowwise", m, lambda r: not partial_k(r)),
        ]
        lines.append("| %d | %s |" % (m, " | ".join(cell(v) for v in cells)))
    # The other scale pairs against 1x128 . 128x128 at the same point (layer, M), every point.
    ref = {(r["layer"], r["M"]): r["qsgemm_us"] for r in bw}
    names = (("blockwise_1d1d", "1×128·1×128"), ("blockwise_2d1d", "128×128·1×128"), ("blockwise_2d2d", "128×128·128×128"))
    parts, points = [], collections.Counter()
    for family, label in names:
        vals = [r["qsgemm_us"] / ref[(r["layer"], r["M"])] for r in gemm_rows(blockwise, family) if (r["layer"], r["M"]) in ref]
        if vals:
            parts.append("%s %.2f×" % (label, geomean(vals)))
            points[len(vals)] += 1
    if parts:
        n = points.most_common(1)[0][0]
        lines += ["", "Other pairs (no cuBLASLt counterpart), their time against 1×128·128×128's, %d points (the users "
                  "grid): %s." % (n, ", ".join(parts))]
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sparse", default=os.path.join(ROOT, "bench/results/h200/sparse24.json"))
    ap.add_argument("--blockwise", default=os.path.join(ROOT, "bench/results/h200/blockwise.json"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/performance.md"))
    ap.add_argument("--ms", default=DEFAULT_MS, help="comma-separated M values (default: %(default)s)")
    ap.add_argument("--print", action="store_true", help="print the block; do not touch the doc")
    try:
        a = ap.parse_args(argv)
        ms = [int(v) for v in a.ms.split(",")]
    except (SystemExit, ValueError):
        return 2
    text = table(load(a.sparse), load(a.blockwise), ms)
    if a.print:
        print(text)
        return 0
    with open(a.doc) as f:
        doc = f.read()
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i:
        print("perf_results_table: %s has no %s ... %s block" % (a.doc, BEGIN, END), file=sys.stderr)
        return 2
    head = doc[:doc.index("\n", i) + 1]  # the begin marker's line, kept as it is
    with open(a.doc, "w") as f:
        f.write(head + text + "\n" + doc[j:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
