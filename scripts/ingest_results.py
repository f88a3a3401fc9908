#!/usr/bin/env python3
"""Take a device run's bench JSON files into bench/results/<card>/ and regenerate what is made from them.

usage: scripts/ingest_results.py FILE.json [FILE.json ...] [--card h200] [--no-plots] [--dry-run]

Each FILE is named as the committed file it replaces (sparse24.json, sparse24_sweep.json,
blockwise.json, blockwise_sweep.json, blockwise_sweep_partialk.json; what
`scripts/device_session.sh bench` and `grid2` bring back, once untarred) and must come from that card
(its `device` field) and from another commit than the committed file. For each: the committed file
moves to tuning/NAME_<its commit>.json and its cliff report (tuning/check_cliffs_<report>.txt) to
tuning/check_cliffs_<report>_<its commit>.txt, both with `git mv`; the new file takes its place and
`scripts/check_cliffs.py` writes its report. Then, for the H200 (the README's card): the README's
table (`scripts/readme_table.py`), performance.md's results table (`scripts/perf_results_table.py`)
and sweep table (`scripts/readme_sweep_table.py`), and the plots (`scripts/plot_bench.py`, which
needs matplotlib: --no-plots leaves them and prints their commands). Prints each file's commit and
cliff-check violations before and after. The sentences around the tables are not rewritten: read
them against the new numbers.

--dry-run prints what it would do and changes nothing. Exit 0; 2 (before any change) on bad usage,
an unknown name, a file from another card or from the committed file's own commit, or an archive
name in tuning/ that exists already; 1 when a step failed. Standard
library only (the plots excepted).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# committed name -> the cliff report's name in tuning/
REPORTS = {
    "sparse24.json": "grid",
    "sparse24_sweep.json": "sweep",
    "blockwise.json": "blockwise_grid",
    "blockwise_sweep.json": "blockwise_sweep",
    "blockwise_sweep_partialk.json": "blockwise_sweep_partialk",
}
CARDS = {"h200": "H200", "h100": "H100"}
README_MS = "1,16,32,64,96,160,288,512,1024,2048,3072,4096,16384"
# plot -> (source file, plot_bench.py options)
PLOTS = {
    "docs/img/sparse24_vs_cublaslt.png": ("sparse24.json", []),
    "docs/img/sparse24_vs_cusparselt.png": ("sparse24.json", ["--baseline", "cusparselt_fp8"]),
    "docs/img/sparse24_sweep.png": ("sparse24_sweep.json", []),
    "docs/img/blockwise_vs_cublaslt.png": ("blockwise.json", ["--baseline", "cublaslt_fp8_block128"]),
    "docs/img/blockwise_sweep.png": ("blockwise_sweep.json", ["--baseline", "cublaslt_fp8_block128"]),
}


def commit_of(path):
    with open(path) as f:
        return json.load(f).get("git_commit") or "unknown"


def device_of(path):
    with open(path) as f:
        return json.load(f).get("device", "")


def cliff_counts(report_path):
    """'N violation(s)' of a check_cliffs report, or '-' when there is none."""
    if not os.path.exists(report_path):
        return "-"
    with open(report_path) as f:
        m = re.search(r"(PASS|FAIL): (\d+) violation", f.read())
    return m.group(2) if m else "?"


class Run:
    def __init__(self, dry, root):
        self.dry = dry
        self.root = root
        self.failed = []

    def cmd(self, args, out=None):
        shown = " ".join(args) + (" > " + os.path.relpath(out, self.root) if out else "")
        print("  $ " + shown)
        if self.dry:
            return
        if out:
            with open(out, "w") as f:
                rc = subprocess.run(args, cwd=self.root, stdout=f, stderr=subprocess.STDOUT).returncode
        else:
            rc = subprocess.run(args, cwd=self.root).returncode
        # check_cliffs exits 1 on violations: a finding, not a failed step
        if rc != 0 and not (out and "check_cliffs.py" in shown and rc == 1):
            self.failed.append("%s (rc=%d)" % (shown, rc))

    def move(self, src, dst):
        print("  git mv %s %s" % (os.path.relpath(src, self.root), os.path.relpath(dst, self.root)))
        if not self.dry:
            rc = subprocess.run(["git", "mv", "-f", src, dst], cwd=self.root).returncode
            if rc != 0:
                self.failed.append("git mv %s (rc=%d)" % (src, rc))

    def copy(self, src, dst):
        print("  cp %s %s" % (src, os.path.relpath(dst, self.root)))
        if not self.dry:
            shutil.copyfile(src, dst)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--card", default="h200", choices=sorted(CARDS))
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # the repository (tests use a copy)
    try:
        a = ap.parse_args(argv)
    except SystemExit:
        return 2
    results = os.path.join(a.root, "bench", "results", a.card)
    tuning = os.path.join(results, "tuning")
    todo = []
    for path in a.files:
        name = os.path.basename(path)
        if name not in REPORTS:
            print("ingest_results: %s: not one of %s" % (path, ", ".join(sorted(REPORTS))), file=sys.stderr)
            return 2
        if CARDS[a.card] not in device_of(path):
            print("ingest_results: %s was timed on '%s', not an %s" % (path, device_of(path), CARDS[a.card]),
                  file=sys.stderr)
            return 2
        old = os.path.join(results, name)
        if os.path.exists(old) and commit_of(old) == commit_of(path):
            print("ingest_results: %s is from commit %s, as the committed file (splice_bench.py merges re-timed rows)"
                  % (path, commit_of(path)), file=sys.stderr)
            return 2
        if os.path.exists(old):
            taken = [t for t in (os.path.join(tuning, "%s_%s.json" % (name[:-len(".json")], commit_of(old))),
                                 os.path.join(tuning, "check_cliffs_%s_%s.txt" % (REPORTS[name], commit_of(old))))
                     if os.path.exists(t)]
            if taken:
                print("ingest_results: %s exists already" % taken[0], file=sys.stderr)
                return 2
        todo.append((path, name))
    run = Run(a.dry_run, a.root)
    summary = []
    for path, name in todo:
        old, report = os.path.join(results, name), REPORTS[name]
        rep = os.path.join(tuning, "check_cliffs_%s.txt" % report)
        before = (commit_of(old), cliff_counts(rep)) if os.path.exists(old) else ("-", "-")
        print("%s: %s -> %s" % (name, before[0], commit_of(path)))
        if os.path.exists(old):
            stem = name[:-len(".json")]
            run.move(old, os.path.join(tuning, "%s_%s.json" % (stem, before[0])))
            if os.path.exists(rep):
                run.move(rep, os.path.join(tuning, "check_cliffs_%s_%s.txt" % (report, before[0])))
        run.copy(path, old)
        run.cmd([sys.executable, "scripts/check_cliffs.py", os.path.relpath(old, a.root)], out=rep)
        summary.append((name, before, commit_of(path), "?" if a.dry_run else cliff_counts(rep)))
    names = {n for _, n in todo}
    if a.card == "h200":
        if names & {"sparse24.json", "blockwise.json"}:
            run.cmd([sys.executable, "scripts/readme_table.py", "--ms-columns", README_MS])
            run.cmd([sys.executable, "scripts/perf_results_table.py"])
        if "sparse24_sweep.json" in names:
            run.cmd([sys.executable, "scripts/readme_sweep_table.py"])
        for png, (src, opts) in PLOTS.items():
            if src not in names:
                continue
            args = [sys.executable, "scripts/plot_bench.py", "bench/results/h200/" + src, png] + opts
            if a.no_plots:
                print("  (--no-plots) " + " ".join(args))
            else:
                run.cmd(args)
    print("\nfile                            commit (old -> new)    cliff violations (old -> new)")
    for name, before, new, after in summary:
        print("%-31s %-9s -> %-9s  %s -> %s" % (name, before[0], new, before[1], after))
    if run.failed:
        print("ingest_results: failed: " + "; ".join(run.failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
