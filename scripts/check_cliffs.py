#!/usr/bin/env python3
"""Check `qsgemm bench` results for performance cliffs (issue #24: every M, every K).

    python3 scripts/check_cliffs.py bench/results/h200/sparse24_sweep.json [more.json ...]
    python3 scripts/check_cliffs.py --rules monotone,sparse-vs-rowwise sparse24.json
    python3 scripts/check_cliffs.py --families sparse24,blockwise_1d2d,rowwise bench/results/h200/*.json
    python3 scripts/check_cliffs.py --list-rules

Reads sweep or bench JSON (shared/BENCH_RESULTS.md: `qsgemm bench ... [--sweep]`) and checks every
GEMM row (M >= 1, N >= 1) against the rules below. Each file is checked on its own (a rule compares
points of the same run). Exit status: 0 when no point breaks a rule, 1 when one does (every
violating point is listed), 2 on bad input. Speedup = baseline time / qsgemm time, same row.

  sparse-vs-rowwise      sparse24 vs cublaslt_fp8_rowwise >= 1.0x at every point
  sparse-vs-rowwise-m64  sparse24 vs cublaslt_fp8_rowwise geomean >= 1.3x over M >= 64
  sparse-vs-cusparselt   vs cusparselt_fp8: geomean >= 0.95x (sparse24) and >= 1.0x
                         (sparse24_fastaccum); no point below 0.85x (both)
  monotone               on each family and layer, no M takes more than 1.05x the qsgemm time of a
                         larger M
  blockwise-vs-lt        blockwise_1d2d vs cublaslt_fp8_block128 >= 1.0x wherever cuBLASLt ran
  partial-k              a row with K % 128 != 0 reaches >= 0.90x the TFLOP/s of the row of the same
                         family, N and M whose K is the nearest multiple of 128 (when both exist)
  rowwise                rowwise vs cublaslt_fp8_rowwise >= 0.98x at every point, and geomean >= 1.0x
                         in each M band: 1-32, 33-1024, 1025+

A rule with no points in a file is reported as n/a (not a failure). Standard library only.
"""
import argparse
import json
import math
import sys
from collections import defaultdict

GEMM_FAMILIES_MONOTONE = None  # every family with a qsgemm time (GEMM rows only)
M_BANDS = [(1, 32), (33, 1024), (1025, None)]
RULES = ["sparse-vs-rowwise", "sparse-vs-rowwise-m64", "sparse-vs-cusparselt", "monotone", "blockwise-vs-lt",
         "partial-k", "rowwise"]


def gemm_rows(report):
    out = []
    for r in report.get("rows", []):
        try:
            if int(r.get("M", 0)) >= 1 and int(r.get("N", 0)) >= 1:
                out.append(r)
        except (TypeError, ValueError):
            continue
    return out


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def speedup(r, baseline):
    q, b = r.get("qsgemm_us"), (r.get("baselines_us") or {}).get(baseline)
    return b / q if positive(q) and positive(b) else None


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def where(r):
    return f"{r.get('family')} {r.get('layer')} M={r.get('M')} N={r.get('N')} K={r.get('K')}"


class Result:
    """One rule on one file: how many points it looked at, the violations (text, badness), the worst value."""

    def __init__(self, rule, text):
        self.rule, self.text = rule, text
        self.checked = 0
        self.violations = []  # (message, value)
        self.worst = None  # (value, where), lower = worse
        self.lower_is_worse = True

    def see(self, value, at):
        self.checked += 1
        worse = self.worst is None or (value < self.worst[0] if self.lower_is_worse else value > self.worst[0])
        if worse:
            self.worst = (value, at)

    def violate(self, message, value):
        self.violations.append((message, value))


def rule_point_floor(rows, rule, family, baseline, floor):
    res = Result(rule, f"{family} vs {baseline} >= {floor:.2f}x every point")
    for r in rows:
        if r.get("family") != family:
            continue
        s = speedup(r, baseline)
        if s is None:
            continue
        res.see(s, where(r))
        if s < floor:
            res.violate(f"{where(r)}: {s:.3f}x (qsgemm {r['qsgemm_us']:.1f} us, {baseline} "
                        f"{r['baselines_us'][baseline]:.1f} us) < {floor:.2f}x", s)
    return res


def rule_geomean(rows, rule, family, baseline, floor, lo=1, hi=None, label=None):
    text = label or f"{family} vs {baseline} geomean >= {floor:.2f}x"
    res = Result(rule, text)
    v = []
    for r in rows:
        m = int(r["M"])
        if r.get("family") != family or m < lo or (hi is not None and m > hi):
            continue
        s = speedup(r, baseline)
        if s is not None:
            v.append(s)
    if v:
        g = geomean(v)
        res.checked = len(v)
        res.worst = (g, f"geomean of {len(v)} points")
        if g < floor:
            band = f"M {lo}-{hi}" if hi is not None else f"M >= {lo}"
            res.violate(f"{family} vs {baseline}, {band}: geomean {g:.3f}x over {len(v)} points < {floor:.2f}x", g)
    return res


def rule_monotone(rows, tolerance=1.05):
    res = Result("monotone", f"qsgemm time(M) <= {tolerance:.2f}x time(any larger M), per layer")
    res.lower_is_worse = False
    # One series per kernel problem: a layer's rows of one family, and of one rank, group and output
    # dtype where the rows carry them (W4A4 times every rank of a layer in one file).
    series = defaultdict(list)
    for r in rows:
        if positive(r.get("qsgemm_us")):
            key = (r.get("family"), r.get("layer"), r.get("N"), r.get("K"), r.get("rank"), r.get("group"),
                   r.get("out_dtype"))
            series[key].append((int(r["M"]), r["qsgemm_us"]))
    for (family, layer, _n, _k, rank, group, _dt), pts in sorted(series.items(),
                                                                 key=lambda kv: tuple(str(x) for x in kv[0])):
        if rank is not None or group is not None:
            layer = f"{layer} rank={rank} group={group}"
        pts.sort()
        # The fastest larger M, scanning from the largest M down.
        best_after = [None] * len(pts)
        best = None
        for i in range(len(pts) - 1, -1, -1):
            best_after[i] = best
            if best is None or pts[i][1] < best[1]:
                best = pts[i]
        for i, (m, t) in enumerate(pts):
            nxt = best_after[i]
            if nxt is None:
                continue
            ratio = t / nxt[1]
            res.see(ratio, f"{family} {layer} M={m} vs M={nxt[0]}")
            if ratio > tolerance:
                res.violate(f"{family} {layer}: M={m} takes {t:.1f} us, {ratio:.2f}x the {nxt[1]:.1f} us of "
                            f"M={nxt[0]}", ratio)
    return res


def rule_partial_k(rows, floor=0.90):
    res = Result("partial-k", f"TFLOP/s with K % 128 != 0 >= {floor:.2f}x that of the nearest K = 128 j")
    full = {}
    for r in rows:
        k = int(r["K"])
        if k % 128 == 0 and positive(r.get("qsgemm_us")):
            full[(r.get("family"), int(r["N"]), int(r["M"]), k)] = r
    for r in rows:
        k = int(r["K"])
        if k % 128 == 0 or not positive(r.get("qsgemm_us")):
            continue
        lower, upper = (k // 128) * 128, (k // 128 + 1) * 128
        nearest = [x for x in sorted((lower, upper), key=lambda x: (abs(x - k), x)) if x > 0]
        ref = None
        for kk in nearest:
            ref = full.get((r.get("family"), int(r["N"]), int(r["M"]), kk))
            if ref is not None:
                break
        if ref is None:
            continue
        m, n = int(r["M"]), int(r["N"])
        tf = 2.0 * m * n * k / (r["qsgemm_us"] * 1e-6) / 1e12
        tf_ref = 2.0 * m * n * int(ref["K"]) / (ref["qsgemm_us"] * 1e-6) / 1e12
        ratio = tf / tf_ref
        res.see(ratio, where(r))
        if ratio < floor:
            res.violate(f"{where(r)}: {tf:.0f} TFLOP/s, {ratio:.2f}x the {tf_ref:.0f} TFLOP/s of K={ref['K']} "
                        f"({ref.get('layer')})", ratio)
    return res


def check(report, rules, families=None):
    rows = [r for r in gemm_rows(report) if not families or r.get("family") in families]
    out = []
    for rule in rules:
        if rule == "sparse-vs-rowwise":
            out.append(rule_point_floor(rows, rule, "sparse24", "cublaslt_fp8_rowwise", 1.0))
        elif rule == "sparse-vs-rowwise-m64":
            out.append(rule_geomean(rows, rule, "sparse24", "cublaslt_fp8_rowwise", 1.3, lo=64,
                                    label="sparse24 vs cublaslt_fp8_rowwise geomean >= 1.30x at M >= 64"))
        elif rule == "sparse-vs-cusparselt":
            out.append(rule_geomean(rows, rule, "sparse24", "cusparselt_fp8", 0.95))
            out.append(rule_geomean(rows, rule, "sparse24_fastaccum", "cusparselt_fp8", 1.0))
            out.append(rule_point_floor(rows, rule, "sparse24", "cusparselt_fp8", 0.85))
            out.append(rule_point_floor(rows, rule, "sparse24_fastaccum", "cusparselt_fp8", 0.85))
        elif rule == "monotone":
            out.append(rule_monotone(rows))
        elif rule == "blockwise-vs-lt":
            out.append(rule_point_floor(rows, rule, "blockwise_1d2d", "cublaslt_fp8_block128", 1.0))
        elif rule == "partial-k":
            out.append(rule_partial_k(rows))
        elif rule == "rowwise":
            out.append(rule_point_floor(rows, rule, "rowwise", "cublaslt_fp8_rowwise", 0.98))
            for lo, hi in M_BANDS:
                band = f"M {lo}-{hi}" if hi is not None else f"M >= {lo}"
                out.append(rule_geomean(rows, rule, "rowwise", "cublaslt_fp8_rowwise", 1.0, lo=lo, hi=hi,
                                        label=f"rowwise vs cublaslt_fp8_rowwise geomean >= 1.00x, {band}"))
    return rows, out


def fmt_worst(res):
    if res.worst is None:
        return "-"
    v, at = res.worst
    return f"{v:.3f}x ({at})"


def report_file(path, report, results, n_rows, max_list, out):
    print(f"check_cliffs: {path} ({report.get('device', '?')}, commit {report.get('git_commit', '?')}, "
          f"{n_rows} GEMM rows)", file=out)
    width = max([len(r.text) for r in results if r.checked] + [4])
    rw = max([len(r.rule) for r in results if r.checked] + [4])
    print(f"  {'rule':<{rw}}  {'check':<{width}}  {'points':>6}  {'violations':>10}  worst", file=out)
    for r in results:
        if r.checked:
            print(f"  {r.rule:<{rw}}  {r.text:<{width}}  {r.checked:>6}  {len(r.violations):>10}  {fmt_worst(r)}",
                  file=out)
    idle = sorted({r.rule for r in results if not r.checked} - {r.rule for r in results if r.checked})
    if idle:
        print(f"  n/a (no points in this file): {', '.join(idle)}", file=out)
    bad = [(r, v) for r in results for v in r.violations]
    if bad:
        print(f"  violations ({len(bad)}):", file=out)
        shown = bad if max_list <= 0 else bad[:max_list]
        for r, (message, _value) in shown:
            print(f"    [{r.rule}] {message}", file=out)
        if len(shown) < len(bad):
            print(f"    ... and {len(bad) - len(shown)} more (--max-list 0 lists all)", file=out)
    return len(bad)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("json", nargs="*", help="sweep or bench JSON files")
    ap.add_argument("--rules", default=",".join(RULES), help="comma-separated rules to check (default: all)")
    ap.add_argument("--families", default="",
                    help="only rows of these families, comma-separated (e.g. leave out --all-combos' "
                         "blockwise_1d1d,2d1d,2d2d, which have no baseline)")
    ap.add_argument("--max-list", type=int, default=0, help="list at most this many violations per file (0: all)")
    ap.add_argument("--list-rules", action="store_true", help="print the rule names and exit")
    args = ap.parse_args(argv)
    if args.list_rules:
        print("\n".join(RULES))
        return 0
    if not args.json:
        ap.error("give at least one JSON file")
    rules = [r for r in args.rules.split(",") if r]
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        print(f"check_cliffs: unknown rule(s) {', '.join(unknown)} (known: {', '.join(RULES)})", file=sys.stderr)
        return 2
    total = 0
    for path in args.json:
        try:
            with open(path) as f:
                report = json.load(f)
            rows, results = check(report, rules, {f for f in args.families.split(",") if f})
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"check_cliffs: cannot check {path}: {e}", file=sys.stderr)
            return 2
        total += report_file(path, report, results, len(rows), args.max_list, sys.stdout)
    print(f"check_cliffs: {'FAIL' if total else 'PASS'}: {total} violation(s) in {len(args.json)} file(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
