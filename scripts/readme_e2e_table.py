#!/usr/bin/env python3
"""Print the model-level table of docs/performance.md (issue #25) from the end-to-end JSON (bench/e2e.py).

    python3 scripts/readme_e2e_table.py                                  # bench/results/h200/e2e.json
    python3 scripts/readme_e2e_table.py FILE [FILE ...] --mode graphs|eager|both    # default both

With several files, a later file's quantized variants replace an earlier file's rows of the same
variant (a re-run of one variant, e.g. `e2e_w4a4.json`); every ratio stays within one run, since each
row carries the torch baselines timed with it. The torch rows of the table come from the first file.

One markdown table per timing mode (CUDA-graphed, eager). Rows: the model states (bf16, torch FP8
row-wise and qsgemm blockwise on the dense weights; bf16, torch FP8 row-wise and qsgemm 2:4 sparse
on the 2:4-pruned weights). Columns: prefill tokens/s at each prompt length, decode ms per token
(= per step: every sequence of the batch gets one token) at each batch, and the SQNR of the final
hidden states vs the bf16 model on the same weights. Each time cell carries, in parentheses, the
speed ratio against torch FP8 row-wise on the same weights (time of torch FP8 / time of the row;
> 1: faster). Below the tables: the issue #25 goals, met or missed, from the CUDA-graphed rows.
Reads only `rows` (the shape of shared/BENCH_RESULTS.md). Standard library only.
"""
import argparse
import json
import sys

QS_LABEL = {"sparse24": "qsgemm 2:4 sparse FP8", "blockwise": "qsgemm blockwise FP8 (1x128 · 128x128)",
            "w4a4": "qsgemm W4A4 + rank-32 bf16 (SVDQuant)"}
BASE_LABEL = {"torch_bf16": "torch bf16", "torch_fp8_rowwise": "torch FP8 row-wise (`_scaled_mm`)"}
ORDER = [("blockwise", "dense"), ("w4a4", "dense"), ("sparse24", "pruned")]  # bf16, torch fp8 once per weights

GOALS = {  # (variant, family): minimum speed-up vs torch FP8 row-wise, CUDA-graphed
    ("sparse24", "e2e_prefill"): 1.25,
    ("sparse24", "e2e_decode"): 1.6,
    ("blockwise", "e2e_prefill"): 1.0,
}
SQNR_GOAL_DB = 1.0  # each quantized model within 1 dB of torch FP8 row-wise on the same weights


def fmt_tok_s(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def cell(family, M, us, ref_us):
    if us is None:
        return "n/a"
    text = fmt_tok_s(M / (us * 1e-6)) if family == "e2e_prefill" else f"{us / 1000.0:.3f}"
    if ref_us:
        text += f" ({ref_us / us:.2f}×)"
    return text


def table(rows, graphs):
    rows = [r for r in rows if bool(r.get("graphs")) == graphs]
    if not rows:
        return None
    prefill = sorted({r["M"] for r in rows if r["family"] == "e2e_prefill"})
    decode = sorted({r["M"] for r in rows if r["family"] == "e2e_decode"})
    by = {(r["variant"], r["family"], r["M"]): r for r in rows}
    head = (["model"] + [f"prefill L={L} tok/s" for L in prefill] + [f"decode B={B} ms/token" for B in decode]
            + ["SQNR dB"])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    shown = set()  # (baseline, weights) rows already in the table
    for variant, weights in ORDER:
        points = [("e2e_prefill", L) for L in prefill] + [("e2e_decode", B) for B in decode]
        if not any((variant, f, M) in by for f, M in points):
            continue
        suffix = "" if weights == "dense" else ", 2:4-pruned weights"
        any_row = next(by[(variant, f, M)] for f, M in points if (variant, f, M) in by)
        for who in ("torch_bf16", "torch_fp8_rowwise", variant):
            if who != variant:
                if (who, weights) in shown:
                    continue
                shown.add((who, weights))
            cells = []
            for family, M in points:
                r = by.get((variant, family, M))
                if r is None:
                    cells.append("n/a")
                    continue
                ref = r.get("baselines_us", {}).get("torch_fp8_rowwise")
                us = r.get("qsgemm_us") if who == variant else r.get("baselines_us", {}).get(who)
                cells.append(cell(family, M, us, ref))
            if who == "torch_bf16":
                sq = "reference"
            elif who == "torch_fp8_rowwise":
                v = any_row.get("baselines_sqnr_db", {}).get("torch_fp8_rowwise")
                sq = f"{v:.2f}" if v is not None else "n/a"
            else:
                v = any_row.get("sqnr_db")
                sq = f"{v:.2f}" if v is not None else "n/a"
            label = (QS_LABEL[who] if who == variant else BASE_LABEL[who]) + suffix
            if who == variant:
                label = f"**{label}**"
            lines.append("| " + " | ".join([label] + cells + [sq]) + " |")
    return "\n".join(lines)


def goals(rows):
    out = []
    graphed = [r for r in rows if r.get("graphs")]
    for (variant, family), need in GOALS.items():
        pts = [r for r in graphed if r["variant"] == variant and r["family"] == family]
        got = [(r["M"], r.get("speedup_vs_torch_fp8_rowwise")) for r in pts]
        if not got:
            continue
        # a point with no time (a failed run or capture) leaves the goal unmet
        worst = None if any(s is None for _, s in got) else min(s for _, s in got)
        what = "prefill" if family == "e2e_prefill" else "decode"
        detail = ", ".join(f"{'L' if what == 'prefill' else 'B'}={M}: {s:.2f}×" if s is not None else f"M={M}: n/a"
                           for M, s in sorted(got))
        status = "met" if worst is not None and worst >= need else "MISSED"
        out.append(f"- {QS_LABEL[variant]} {what} ≥ {need:.2f}× torch FP8 row-wise: {status} ({detail})")
    for variant in ("sparse24", "blockwise"):  # the FP8 goals (W4A4 is 4-bit: its SQNR is shown)
        r = next((r for r in rows if r["variant"] == variant and r.get("sqnr_db") is not None), None)
        if r is None:
            continue
        base = r.get("baselines_sqnr_db", {}).get("torch_fp8_rowwise")
        if base is None:
            continue
        delta = r["sqnr_db"] - base
        status = "met" if delta >= -SQNR_GOAL_DB else "MISSED"
        out.append(f"- {QS_LABEL[variant]} SQNR within {SQNR_GOAL_DB:.0f} dB of torch FP8 row-wise on the same "
                   f"weights: {status} ({r['sqnr_db']:.2f} vs {base:.2f} dB, {delta:+.2f} dB)")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*", default=["bench/results/h200/e2e.json"])
    p.add_argument("--mode", choices=("graphs", "eager", "both"), default="both")
    args = p.parse_args(argv)
    rows, sources = [], []
    for path in args.files:
        with open(path) as f:
            rep = json.load(f)
        new_rows = [r for r in rep.get("rows", []) if r.get("family") in ("e2e_prefill", "e2e_decode")]
        if not new_rows:
            print(f"{path}: no e2e_prefill / e2e_decode rows", file=sys.stderr)
            return 1
        replaced = {r["variant"] for r in new_rows}
        rows = [r for r in rows if r["variant"] not in replaced] + [dict(r, _src=len(sources)) for r in new_rows]
        sources.append(rep)
    report = sources[0]
    layer = rows[0].get("layer", "?")
    kv = next((r.get("kv_len") for r in rows if r.get("kv_len")), None)
    runs = "; ".join(f"{', '.join(sorted({r['variant'] for r in rows if r['_src'] == i}))}: git "
                     f"{rep.get('git_commit', '?')}, {rep.get('date', '?')}" for i, rep in enumerate(sources))
    print(f"Model `{layer}` on {report.get('device', '?')} (torch {report.get('torch', '?')}; {runs}); decode "
          f"against a KV cache of {kv} tokens; {report.get('timed_call', '')}. In parentheses: speed vs torch FP8 "
          "row-wise on the same weights, timed in the same run.")
    modes = {"graphs": (True,), "eager": (False,), "both": (True, False)}[args.mode]
    for graphs in modes:
        t = table(rows, graphs)
        if t:
            print(f"\n{'CUDA-graphed' if graphs else 'Eager'}:\n\n{t}")
    g = goals(rows)
    if g:
        print(f"\nGoals (issue #25, CUDA-graphed):\n{g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
