#!/usr/bin/env python3
"""Compares configurations in a `qsgemm tune --json` file (scripts/tune_sweep.sh output).

usage: scripts/tune_compare.py FILE NEW BASE[,BASE...] [--scales S]
   e.g. scripts/tune_compare.py bench/results/h200/tuning/tune_sparse24_interleaved.jsonl ...

For every point (family, scales, rank, group, M, N, K: tune_regret.point_key) timed with NEW and at
least one BASE configuration (names as in the file, e.g. 128x256x128_c1x1_coop), prints
time(best BASE) / time(NEW), so > 1 means NEW is faster, and the geometric mean per M.
"""
import collections
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_regret import point_key  # noqa: E402  (one notion of a point: family, scales, rank, group, M, N, K)


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
        points[point_key(r)][r["config"]] = r["us"]
    per_m = collections.defaultdict(list)
    for key, t in sorted(points.items(), key=lambda kv: str(kv[0])):
        fam, sc, rank, group, m, n, k = key
        sc = " ".join(str(x) for x in (sc, f"r{rank}" if rank != "" else "", f"g{group}" if group != "" else "") if x)
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
