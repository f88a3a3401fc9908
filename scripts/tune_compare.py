#!/usr/bin/env python3
"""Compares configurations in a `qsgemm tune --json` file (scripts/tune_sweep.sh output).

usage: scripts/tune_compare.py FILE NEW BASE[,BASE...] [--scales S]
   e.g. scripts/tune_compare.py bench/results/h200/tuning/tune_sparse24_interleaved.jsonl ...

For every (scales, M, N, K) point timed with NEW and at least one BASE configuration (names as in
the file, e.g. 128x256x128_c1x1_coop), prints time(best BASE) / time(NEW), so > 1 means NEW is
faster, and the geometric mean per M.
"""
import collections
import json
import math
import sys


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    path, new, bases = argv[1], argv[2], argv[3].split(",")
    scales = argv[argv.index("--scales") + 1] if "--scales" in argv else None
    points = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        if r.get("us", -1) <= 0 or (scales and r.get("scales") != scales):
            continue
        points[(r.get("scales", ""), r["M"], r["N"], r["K"])][r["config"]] = r["us"]
    per_m = collections.defaultdict(list)
    for (sc, m, n, k), t in sorted(points.items()):
        base = [t[b] for b in bases if b in t]
        if new not in t or not base:
            continue
        ratio = min(base) / t[new]
        per_m[(sc, m)].append(ratio)
        print(f"{sc:18s} M={m:6d} {n:6d}x{k:<6d} new {t[new]:10.2f} us  best base {min(base):10.2f} us  {ratio:.3f}x")
    for (sc, m), rs in sorted(per_m.items()):
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"geomean {sc:18s} M={m:6d}: {g:.3f}x over {len(rs)} layers (min {min(rs):.3f}, max {max(rs):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
