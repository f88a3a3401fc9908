#!/usr/bin/env python3
"""Plot qsgemm's speedup over one baseline against M, from a `qsgemm bench` JSON file.

    python3 scripts/plot_bench.py bench/results/h200/sparse24.json sparse24.png
    python3 scripts/plot_bench.py blockwise.json bw.png --baseline cublaslt_fp8_block128 --family blockwise_1d2d

One line per layer (per family and layer when several families have the baseline): speedup =
baseline time / qsgemm time, both measured in the same run; M on a log2 axis; the geometric mean
over the layers at each M in black; 1.0 (parity) dashed. Points where qsgemm or the baseline did
not run are left out. The JSON shape is shared/BENCH_RESULTS.md. Needs matplotlib only.
The README's speedup table comes from the same files through scripts/readme_table.py.
"""
import argparse
import json
import math
import sys
from collections import defaultdict


def load_points(report, baseline, families, rank=None):
    """{(family, layer): {M: speedup}} for GEMM rows that have both times (with `rank`: only the rows
    of that low-rank dimension, W4A4's `rank` field; one row per layer and M)."""
    lines = defaultdict(dict)
    for row in report.get("rows", []):
        if families and row.get("family") not in families:
            continue
        if rank is not None and row.get("rank") != rank:
            continue
        q = row.get("qsgemm_us")
        b = (row.get("baselines_us") or {}).get(baseline)
        if q is None or b is None or q <= 0 or b <= 0 or row.get("M", 0) < 1:
            continue
        lines[(row["family"], row["layer"])][int(row["M"])] = b / q
    return lines


def geomean_by_m(lines):
    by_m = defaultdict(list)
    for points in lines.values():
        for m, s in points.items():
            by_m[m].append(s)
    return {m: math.exp(sum(math.log(s) for s in v) / len(v)) for m, v in sorted(by_m.items())}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="a bench JSON file (shared/BENCH_RESULTS.md shape)")
    ap.add_argument("png", help="the PNG to write")
    ap.add_argument("--baseline", default="cublaslt_fp8_rowwise",
                    help="baseline name in baselines_us (default: %(default)s)")
    ap.add_argument("--family", action="append", default=[],
                    help="only this family (repeatable; default: every family that has the baseline)")
    ap.add_argument("--rank", type=int, default=None,
                    help="only rows with this low-rank dimension (W4A4 rows carry one per rank)")
    ap.add_argument("--title", default=None, help="plot title (default: from the file)")
    args = ap.parse_args(argv)

    with open(args.json) as f:
        report = json.load(f)
    lines = load_points(report, args.baseline, set(args.family), args.rank)
    if not lines:
        names = sorted({n for r in report.get("rows", []) for n in (r.get("baselines_us") or {})})
        print(f"plot_bench: no row of {args.json} has both qsgemm_us and {args.baseline}"
              f" (baselines in the file: {', '.join(names) or 'none'})", file=sys.stderr)
        return 1

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    several_families = len({fam for fam, _ in lines}) > 1
    fig, ax = plt.subplots(figsize=(10, 6), dpi=120)
    for (family, layer), points in sorted(lines.items()):
        ms = sorted(points)
        label = f"{family}:{layer}" if several_families else layer
        ax.plot(ms, [points[m] for m in ms], marker="o", markersize=3, linewidth=1, alpha=0.75, label=label)
    gm = geomean_by_m(lines)
    ax.plot(list(gm), list(gm.values()), color="black", linewidth=2.5, marker="s", markersize=5, label="geomean")
    ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)

    ax.set_xscale("log", base=2)
    all_m = sorted({m for p in lines.values() for m in p})
    ax.set_xticks(all_m)
    ax.set_xticklabels([str(m) for m in all_m], rotation=45)
    ax.set_xlabel("M (tokens)")
    ax.set_ylabel(f"speedup vs {args.baseline} (baseline time / qsgemm time)")
    ax.grid(True, which="major", alpha=0.3)
    title = args.title or (f"qsgemm vs {args.baseline} — {report.get('device', '?')}, "
                           f"commit {report.get('git_commit', '?')}, {report.get('date', '?')}")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="best")
    fig.tight_layout()
    fig.savefig(args.png)
    print(f"wrote {args.png} ({len(lines)} lines, geomean over {len(gm)} values of M)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
