#!/usr/bin/env python3
"""How far the heuristic's pick is from the fastest configuration timed, per point of a probe.

usage: scripts/tune_regret.py FILE.jsonl [FILE.jsonl ...] [--worst N]

Reads `qsgemm tune ... --json` lines (tools/tune.cpp). A point is one (family, scales, rank, group,
M, N, K); its lines are the configurations timed there, the heuristic's pick marked
"heuristic": true. For every point whose pick was timed it prints time(pick) / time(fastest)
(1.000: the pick was the fastest), then the geometric mean and the worst per family, and how
many points had no timed pick (the pick was not among --configs). Exit status 0; 2 on bad usage.
Standard library only.
"""
import collections
import json
import math
import sys


def point_key(r):
    return (r.get("family", ""), r.get("scales", ""), r.get("rank", ""), r.get("group", ""), r["M"], r["N"], r["K"])


def regrets(lines):
    """[(key, pick config, pick us, best config, best us)] per point with a timed pick; and the
    number of points without one."""
    points = collections.OrderedDict()
    for r in lines:
        if r.get("us", -1) <= 0:
            continue  # a configuration that failed to run
        points.setdefault(point_key(r), []).append(r)
    out, no_pick = [], 0
    for key, rows in points.items():
        best = min(rows, key=lambda r: r["us"])
        pick = [r for r in rows if r.get("heuristic")]
        if not pick:
            no_pick += 1
            continue
        out.append((key, pick[0]["config"], pick[0]["us"], best["config"], best["us"]))
    return out, no_pick


def main(argv):
    args = argv[1:]
    worst_n = 10
    if "--worst" in args:
        i = args.index("--worst")
        try:
            worst_n = int(args[i + 1])
        except (IndexError, ValueError):
            print(__doc__)
            return 2
        del args[i:i + 2]
    if not args:
        print(__doc__)
        return 2
    lines = []
    for path in args:
        with open(path) as f:
            lines += [json.loads(l) for l in f if l.strip()]
    res, no_pick = regrets(lines)
    fams = collections.defaultdict(list)
    for key, pc, pu, bc, bu in res:
        fam, scales, rank, group, m, n, k = key
        extra = " ".join(str(x) for x in (scales, f"r{rank}" if rank != "" else "", f"g{group}" if group != "" else "") if x)
        print(f"{fam:9s} {extra:28s} M={m:6d} {n:6d}x{k:<6d} pick {pc:40s} {pu:9.2f} us  best {bc:40s} {bu:9.2f} us  "
              f"{pu / bu:.3f}")
        fams[fam].append((pu / bu, key))
    for fam, rs in sorted(fams.items()):
        g = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
        print(f"{fam}: pick / fastest geomean {g:.3f}, worst {max(r for r, _ in rs):.3f}, over {len(rs)} points")
        for r, key in sorted(rs, reverse=True)[:worst_n]:
            if r > 1.0:
                print(f"  {r:.3f}  M={key[4]} {key[5]}x{key[6]} {key[1]} {key[2]} {key[3]}".rstrip())
    if no_pick:
        print(f"{no_pick} point(s) without a timed pick (the heuristic's configuration was not among --configs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
