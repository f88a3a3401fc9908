#!/usr/bin/env python3
"""Same-run A/B of `qsgemm tune ... --whole-last-tile`: each configuration against its `_wholelast` twin.

usage: scripts/tune_ab.py FILE.jsonl [FILE.jsonl ...]

`--whole-last-tile` times every configuration a second time (name suffix `_wholelast`) with the last
token tile loading X's whole TMA box, as the library did before it loaded only the tile's rows
(docs/experiments/log.md §32). For every point (tune_regret.point_key) and configuration timed
both ways it prints time(whole box) / time(rows only) (> 1: loading only the rows is faster), then
per family the geometric mean, the lowest and the highest, and, per point, the fastest time of
each side (the old library's choice of configuration is not known here: compare the picks with
scripts/tune_regret.py). Exit status 0; 2 on bad usage. Standard library only.
"""
import collections
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_regret import point_key  # noqa: E402

SUFFIX = "_wholelast"


def pairs(lines):
    """{point key: [(config, rows us, whole us)]} over the configurations timed both ways."""
    points = collections.OrderedDict()
    for r in lines:
        if r.get("us", -1) > 0:
            points.setdefault(point_key(r), {})[r["config"]] = r["us"]
    out = collections.OrderedDict()
    for key, times in points.items():
        both = [(c, t, times[c + SUFFIX]) for c, t in times.items() if not c.endswith(SUFFIX) and c + SUFFIX in times]
        if both:
            out[key] = both
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    lines = []
    for path in argv:
        with open(path) as f:
            lines += [json.loads(line) for line in f if line.strip()]
    per_family = collections.defaultdict(list)
    for key, both in pairs(lines).items():
        family, scales, rank, group, m, n, k = key
        where = f"{family} {scales} M={m} N={n} K={k}".replace("  ", " ")
        for config, rows_us, whole_us in both:
            per_family[family].append(whole_us / rows_us)
            print(f"{where} {config}: rows {rows_us:.1f} us, whole {whole_us:.1f} us, {whole_us / rows_us:.3f}x")
        print(f"{where} fastest: rows {min(b[1] for b in both):.1f} us, whole {min(b[2] for b in both):.1f} us")
    for family, ratios in per_family.items():
        print(f"{family}: whole / rows geomean {geomean(ratios):.3f} over {len(ratios)}, "
              f"lowest {min(ratios):.3f}, highest {max(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
