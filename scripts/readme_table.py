#!/usr/bin/env python3
"""Write the README's performance table from the committed `qsgemm bench` JSON files.

    python3 scripts/readme_table.py            # rewrites README.md between the perf-table markers
    python3 scripts/readme_table.py --print    # prints the table only, changes nothing
    python3 scripts/readme_table.py --sparse S.json --blockwise B.json --readme README.md
    python3 scripts/readme_table.py --print --ms-columns 1,16,288,4096   # only these M columns

Each cell is the geometric mean over the benchmark's layers of (baseline time / qsgemm time) at
that M, both measured in the same run (> 1: qsgemm is faster). Columns: every M that the JSON
files have (GEMM rows, M >= 1; any M list: the powers-of-two grid, the users grid with its
in-between values, or a --sweep), or only those given with --ms-columns. Rows:

    2:4 sparse vs cuBLASLt FP8 row-wise        sparse24            / cublaslt_fp8_rowwise
    2:4 sparse vs cuBLASLt FP8 per-tensor      sparse24            / cublaslt_fp8_tensor
    2:4 sparse vs cuSPARSELt FP8 2:4           sparse24            / cusparselt_fp8
    2:4 sparse fast_accum vs cuSPARSELt        sparse24_fastaccum  / cusparselt_fp8
    blockwise 1x128.128x128 vs cuBLASLt block  blockwise_1d2d      / cublaslt_fp8_block128
    per-token x per-channel vs cuBLASLt row    rowwise             / cublaslt_fp8_rowwise

A cell with no point (the baseline refused that M, or is not in the file) shows a footnote with the
reason taken from the rows' notes; a cell over fewer layers than the others says so in a footnote.
The README must hold the two markers below (on lines of their own); the script fails, changing
nothing, when they are missing. The JSON shape is shared/BENCH_RESULTS.md. Standard library only.
"""
import argparse
import json
import math
import os
import re
import sys
from collections import defaultdict

BEGIN = "<!-- perf-table:begin -->"
END = "<!-- perf-table:end -->"

# (label, which file, family, baseline)
ROWS = [
    ("2:4 sparse vs cuBLASLt FP8 row-wise", "sparse", "sparse24", "cublaslt_fp8_rowwise"),
    ("2:4 sparse vs cuBLASLt FP8 per-tensor", "sparse", "sparse24", "cublaslt_fp8_tensor"),
    ("2:4 sparse vs cuSPARSELt FP8 2:4", "sparse", "sparse24", "cusparselt_fp8"),
    ("2:4 sparse, fast accumulation, vs cuSPARSELt", "sparse", "sparse24_fastaccum", "cusparselt_fp8"),
    ("blockwise 1x128·128x128 vs cuBLASLt block-scaled", "blockwise", "blockwise_1d2d", "cublaslt_fp8_block128"),
    ("per-token x per-channel vs cuBLASLt FP8 row-wise", "blockwise", "rowwise", "cublaslt_fp8_rowwise"),
]
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def gemm_rows(report):
    return [r for r in report.get("rows", []) if int(r.get("M", 0)) >= 1 and int(r.get("N", 0)) >= 1]


def unavailable_reason(rows, baseline):
    """The first reason the rows' notes give for `baseline` missing, with per-point details removed."""
    for r in rows:
        for part in (r.get("notes") or "").split("; "):
            if part.startswith(baseline + " unavailable: ") or part.startswith(baseline + ": "):
                reason = part.split(": ", 1)[1]
                reason = re.sub(r"^unavailable: ", "", reason)
                return re.sub(r"\s*\(M=\d+\)", "", reason).strip()
    return None


def build_table(reports, sources, ms_columns=None):
    """Returns the markdown lines of the table and its footnotes. ms_columns: the M columns to show
    (each must be in some file), default every M present."""
    all_m = sorted({int(r["M"]) for rep in reports.values() for r in gemm_rows(rep)})
    if not all_m:
        raise SystemExit("readme_table: no GEMM rows in " + ", ".join(sources.values()))
    if ms_columns:
        missing = [m for m in ms_columns if m not in all_m]
        if missing:
            raise SystemExit(f"readme_table: --ms-columns {','.join(map(str, missing))}: no GEMM rows at that M in "
                             + ", ".join(sources.values()) + f" (present: {','.join(map(str, all_m))})")
        all_m = sorted(set(ms_columns))
    footnotes = []  # texts, numbered from 1

    def note(text):
        if text not in footnotes:
            footnotes.append(text)
        return str(footnotes.index(text) + 1).translate(SUPERSCRIPT)

    lines = ["| baseline time / qsgemm time | " + " | ".join(f"M={m}" for m in all_m) + " |",
             "|---|" + "---:|" * len(all_m)]
    for label, which, family, baseline in ROWS:
        rep = reports.get(which)
        cells = []
        if rep is None:
            mark = note(f"`{which}` JSON not given.")
            lines.append(f"| {label} | " + " | ".join("–" + mark for _ in all_m) + " |")
            continue
        rows = [r for r in gemm_rows(rep) if r.get("family") == family]
        layers = {r["layer"] for r in rows}
        in_file = any(baseline in (r.get("baselines_us") or {}) for r in rows)
        by_m = defaultdict(list)
        rows_at = defaultdict(list)
        for r in rows:
            m = int(r["M"])
            rows_at[m].append(r)
            q, b = r.get("qsgemm_us"), (r.get("baselines_us") or {}).get(baseline)
            if q and b and q > 0 and b > 0:
                by_m[m].append(b / q)
        for m in all_m:
            v = by_m.get(m)
            if not rows_at.get(m):
                cells.append("–" + note(f"no `{family}` rows at this M in {sources[which]}."))
            elif not v:
                if not in_file:
                    reason = f"`{baseline}` is not in {sources[which]} (measured before it was added)."
                else:
                    # The fast-accumulation rows share their baselines with the default rows,
                    # whose notes say why one is missing: look at every row of this M.
                    why = unavailable_reason(rows_at[m], baseline) or unavailable_reason(
                        [r for r in gemm_rows(rep) if int(r["M"]) == m], baseline)
                    reason = f"`{baseline}`: {why}." if why else f"`{baseline}` did not run (see the rows' notes)."
                cells.append("–" + note(reason))
            else:
                g = math.exp(sum(math.log(x) for x in v) / len(v))
                cell = f"{g:.2f}×"
                if len(v) < len(layers):
                    cell += note_partial(note, baseline, len(v), len(layers))
                cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    for i, text in enumerate(footnotes, 1):
        lines.append(f"{str(i).translate(SUPERSCRIPT)} {text}  ")
    if footnotes:
        lines[-1] = lines[-1].rstrip()
    return lines


def note_partial(note, baseline, have, total):
    return note(f"geomean over the {have} of {total} layers where `{baseline}` ran.")


def header(reports, sources):
    parts = []
    for which, rep in reports.items():
        n_layers = len({r["layer"] for r in gemm_rows(rep)})
        parts.append(f"`{sources[which]}` ({rep.get('device', '?')}, commit {rep.get('git_commit', '?')}, "
                     f"{n_layers} layers)")
    return ("Speedup of qsgemm over each baseline, the geometric mean over the layers of baseline time / "
            "qsgemm time (> 1: qsgemm is faster), both measured in the same run; generated by "
            "`scripts/readme_table.py` from " + " and ".join(parts) + ".")


def main(argv=None):
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sparse", default=os.path.join(root, "bench/results/h200/sparse24.json"))
    ap.add_argument("--blockwise", default=os.path.join(root, "bench/results/h200/blockwise.json"))
    ap.add_argument("--readme", default=os.path.join(root, "README.md"))
    ap.add_argument("--print", action="store_true", help="print the table to stdout; do not touch the README")
    ap.add_argument("--ms-columns", default="",
                    help="comma-separated M values to show as columns (default: every M in the files)")
    args = ap.parse_args(argv)
    try:
        ms_columns = [int(x) for x in args.ms_columns.split(",") if x.strip()]
    except ValueError:
        print(f"readme_table: --ms-columns '{args.ms_columns}' is not a list of integers", file=sys.stderr)
        return 2

    reports, sources = {}, {}
    for which, path in (("sparse", args.sparse), ("blockwise", args.blockwise)):
        try:
            with open(path) as f:
                reports[which] = json.load(f)
        except (OSError, ValueError) as e:
            print(f"readme_table: cannot read {path}: {e}", file=sys.stderr)
            return 1
        sources[which] = os.path.relpath(path, root) if os.path.isabs(path) else path

    block = [BEGIN, "", header(reports, sources), ""] + build_table(reports, sources, ms_columns) + ["", END]
    if args.print:
        print("\n".join(block[2:-2]))
        return 0

    try:
        with open(args.readme) as f:
            text = f.read()
    except OSError as e:
        print(f"readme_table: cannot read {args.readme}: {e}", file=sys.stderr)
        return 1
    lines = text.split("\n")
    starts = [i for i, l in enumerate(lines) if l.strip() == BEGIN]
    ends = [i for i, l in enumerate(lines) if l.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        print(f"readme_table: {args.readme} must hold exactly one line '{BEGIN}' followed later by one line "
              f"'{END}' (found {len(starts)} and {len(ends)}); nothing written. Add the markers where the "
              f"table goes, or use --print.", file=sys.stderr)
        return 1
    new = "\n".join(lines[:starts[0]] + block + lines[ends[0] + 1:])
    if new != text:
        with open(args.readme, "w") as f:
            f.write(new)
        print(f"readme_table: wrote the table into {args.readme}")
    else:
        print(f"readme_table: {args.readme} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
