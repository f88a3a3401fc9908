#!/usr/bin/env python3
"""Replay committed 2:4 sparse tuning probes through the current heuristic, without a GPU.

usage: scripts/replay_regret.py FILE.jsonl [FILE.jsonl ...] [--card h100|h200] [--fast-accum]
                                [--qsgemm PATH] [--baseline PATH] [--worst N]

Each FILE holds `qsgemm tune sparse24 ... --json` lines (tools/tune.cpp); a point is one (file, M,
N, K): the configurations timed there in one run. For every point this asks `qsgemm plan sparse24
--stdin` (tools/plan.cpp, the build's heuristic on the card's profile) which plan the library runs
now and, where that plan was timed, prints its time over the fastest line of the point: the
heuristic's regret on data it may not have been fitted on. Without --fast-accum the fastest is taken
over the promoted configurations only (no `fastaccum` in the name), as a default-mode call can run
only those; lines of `--whole-last-tile` runs (`_wholelast`) are never candidates. A plan with a tail
launch counts as timed where the point has its line (`config+tail@rows`).

--baseline PATH replays the points through a second build's `qsgemm` (e.g. the commit before a
heuristic change) too and prints, at the points whose plan differs and both plans were timed, the new
plan's time over the old one's: the offline A/B of a change, before its held-out check on a GPU.

Exit status 0; 2 on bad usage or when `qsgemm plan` fails. Standard library only.
"""
import collections
import json
import math
import os
import subprocess
import sys


def load_points(paths):
    """{(file, M, N, K): {line name: us}} of the sparse24 lines that ran (us > 0)."""
    points = collections.OrderedDict()
    for path in paths:
        with open(path) as f:
            for raw in f:
                raw = raw.strip()
                if not raw:
                    continue
                r = json.loads(raw)
                if r.get("family") != "sparse24" or r.get("us", -1) <= 0 or "N" not in r:
                    continue
                key = (os.path.basename(path), int(r["M"]), int(r["N"]), int(r["K"]))
                points.setdefault(key, {})[r["config"]] = float(r["us"])
    return points


def plan_name(config, tail, tail_rows):
    return config if tail == "-" else "%s+%s@%d" % (config, tail, tail_rows)


def plans(qsgemm, shapes, card, fast_accum):
    """{(M, N, K): plan name} from `qsgemm plan sparse24 --stdin`."""
    cmd = [qsgemm, "plan", "sparse24", "--stdin", "--card", card] + (["--fast-accum"] if fast_accum else [])
    text = "".join("%d %d %d\n" % s for s in shapes)
    res = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), res.returncode, res.stderr.strip()))
    out = {}
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) != 8:
            raise RuntimeError("unexpected `qsgemm plan` line: %r" % line)
        out[(int(f[0]), int(f[1]), int(f[2]))] = plan_name(f[3], f[5], int(f[6]))
    return out


def candidates(timed, fast_accum):
    return {c: us for c, us in timed.items() if "_wholelast" not in c and (fast_accum or "fastaccum" not in c)}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    args = argv[1:]
    opts = {"--card": "h200", "--qsgemm": None, "--baseline": None, "--worst": "15"}
    files, fast_accum = [], False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--fast-accum":
            fast_accum = True
        elif a in opts:
            if i + 1 >= len(args):
                print("replay_regret: %s needs a value" % a, file=sys.stderr)
                return 2
            opts[a] = args[i + 1]
            i += 1
        elif a.startswith("--"):
            print("replay_regret: unknown option %s" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    if not files or opts["--card"] not in ("h100", "h200") or not opts["--worst"].isdigit():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    qsgemm = opts["--qsgemm"] or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "qsgemm")
    points = load_points(files)
    shapes = sorted({k[1:] for k in points})
    try:
        now = plans(qsgemm, shapes, opts["--card"], fast_accum)
        old = plans(opts["--baseline"], shapes, opts["--card"], fast_accum) if opts["--baseline"] else None
    except (OSError, RuntimeError) as e:
        print("replay_regret: %s" % e, file=sys.stderr)
        return 2

    mode = "fast_accum" if fast_accum else "default"
    regrets, untimed = [], 0
    for key, timed in points.items():
        cand = candidates(timed, fast_accum)
        p = now[key[1:]]
        if not cand or p not in timed:
            untimed += 1
            continue
        best = min(cand, key=cand.get)
        regrets.append((timed[p] / cand[best], key, p, best))
    regrets.sort(key=lambda r: -r[0])
    print("replay_regret: %d points in %d files, card %s, %s mode" % (len(points), len(files), opts["--card"], mode))
    if regrets:
        print("the plan over the fastest line: geomean %.4f, worst %.3f, over %d points (%d with the plan untimed)"
              % (geomean([r[0] for r in regrets]), regrets[0][0], len(regrets), untimed))
        for r, key, p, best in regrets[: int(opts["--worst"])]:
            print("  %.3f  %s M=%d N=%d K=%d  plan %s, fastest %s" % (r, key[0], key[1], key[2], key[3], p, best))
    else:
        print("no point has its plan timed (%d untimed)" % untimed)
    if old is not None:
        moved, moved_untimed = [], 0
        for key, timed in points.items():
            a, b = old[key[1:]], now[key[1:]]
            if a == b:
                continue
            if a in timed and b in timed:
                moved.append((timed[b] / timed[a], key, a, b))
            else:
                moved_untimed += 1
        print("against the baseline: %d points moved, %d with both plans timed" % (len(moved) + moved_untimed, len(moved)))
        if moved:
            print("  new plan / old plan: geomean %.4f, %.3f-%.3f, slower at %d"
                  % (geomean([m[0] for m in moved]), min(m[0] for m in moved), max(m[0] for m in moved),
                     sum(1 for m in moved if m[0] > 1.0)))
            for r, key, a, b in sorted(moved, key=lambda m: -m[0])[: int(opts["--worst"])]:
                print("  %.3f  %s M=%d N=%d K=%d  %s -> %s" % (r, key[0], key[1], key[2], key[3], a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
