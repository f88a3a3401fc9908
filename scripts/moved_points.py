#!/usr/bin/env python3
"""Draw the points of a held-out check: random 2:4 sparse shapes whose plan a heuristic change moves.

usage: scripts/moved_points.py --old QSGEMM --new QSGEMM --m A-B[,C-D...] --n N1,N2,... --k K1,K2,...
                               [--card h100|h200] [--fast-accum] [--whole COLUMN] [--no-tail]
                               [--count 30] [--draw 3000] [--seed 1]

Draws --draw distinct shapes (M uniform in one of the --m ranges, each range as likely; with --whole,
M rounded down to a multiple of COLUMN; N and K from the lists), asks both builds' `qsgemm plan
sparse24 --stdin` (tools/plan.cpp; e.g. --old the build before the change, or a folder made by
scripts/heuristic_lib_at.sh with the current `qsgemm`) which plan each shape gets, and keeps the
shapes whose plan differs; with --no-tail only those where neither plan has a tail launch (so that
`qsgemm tune --configs` times both). Prints --count of them, drawn at random and sorted, as "M N K"
lines on stdout: the points file of a held-out `qsgemm tune` run, whose JSON
`scripts/replay_regret.py --baseline OLD` reads back. On stderr: how many moved, and from which plan
to which.

A --old that is a folder (what scripts/heuristic_lib_at.sh leaves: a libqsgemm.so.0) runs the
--new `qsgemm` against the library in it (LD_LIBRARY_PATH).

Exit status 0; 2 on bad usage or when `qsgemm plan` fails. Standard library only.
"""
import collections
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import replay_regret  # noqa: E402


def parse_ranges(text):
    """'512-767,1024-2047' -> [(512, 767), (1024, 2047)]; ValueError on a bad range."""
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        lo, hi = int(lo), int(hi if sep else lo)
        if lo < 1 or hi < lo:
            raise ValueError("bad M range %r" % part)
        out.append((lo, hi))
    return out


def parse_list(text):
    out = [int(v) for v in text.split(",")]
    if not out or min(out) < 1:
        raise ValueError("bad list %r" % text)
    return out


def draw_shapes(rng, ranges, ns, ks, whole, draw):
    """Up to `draw` distinct (M, N, K), sorted."""
    shapes = set()
    for _ in range(20 * draw):
        if len(shapes) >= draw:
            break
        lo, hi = rng.choice(ranges)
        m = rng.randint(lo, hi)
        if whole:
            m = m // whole * whole
            if m < lo:
                continue
        shapes.add((m, rng.choice(ns), rng.choice(ks)))
    return sorted(shapes)


def plans_of(path, new_qsgemm, shapes, card, fast_accum):
    """The plans of the `qsgemm` at `path`; where `path` is a folder, of `new_qsgemm` run against the
    libqsgemm.so.0 in it (found first on LD_LIBRARY_PATH)."""
    if not os.path.isdir(path):
        return replay_regret.plans(path, shapes, card, fast_accum)
    saved = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = path + (":" + saved if saved else "")
    try:
        return replay_regret.plans(new_qsgemm, shapes, card, fast_accum)
    finally:
        if saved is None:
            del os.environ["LD_LIBRARY_PATH"]
        else:
            os.environ["LD_LIBRARY_PATH"] = saved


def main(argv):
    opts = {"--old": None, "--new": None, "--m": None, "--n": None, "--k": None, "--card": "h200",
            "--whole": "0", "--count": "30", "--draw": "3000", "--seed": "1"}
    flags = {"--fast-accum": False, "--no-tail": False}
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a in flags:
            flags[a] = True
        elif a in opts and i + 1 < len(args):
            opts[a] = args[i + 1]
            i += 1
        else:
            print("moved_points: unknown option or missing value: %s" % a, file=sys.stderr)
            return 2
        i += 1
    usage = __doc__.strip().splitlines()[2]
    if None in (opts["--old"], opts["--new"], opts["--m"], opts["--n"], opts["--k"]) or opts["--card"] not in ("h100", "h200"):
        print(usage, file=sys.stderr)
        return 2
    try:
        ranges = parse_ranges(opts["--m"])
        ns, ks = parse_list(opts["--n"]), parse_list(opts["--k"])
        whole, count, draw, seed = (int(opts[o]) for o in ("--whole", "--count", "--draw", "--seed"))
        if whole < 0 or count < 1 or draw < 1:
            raise ValueError("--whole >= 0, --count and --draw >= 1")
    except ValueError as e:
        print("moved_points: %s" % e, file=sys.stderr)
        return 2
    rng = random.Random(seed)
    shapes = draw_shapes(rng, ranges, ns, ks, whole, draw)
    try:
        new = plans_of(opts["--new"], opts["--new"], shapes, opts["--card"], flags["--fast-accum"])
        old = plans_of(opts["--old"], opts["--new"], shapes, opts["--card"], flags["--fast-accum"])
    except (OSError, RuntimeError) as e:
        print("moved_points: %s" % e, file=sys.stderr)
        return 2
    moved = [s for s in shapes if old[s] != new[s]]
    if flags["--no-tail"]:
        moved = [s for s in moved if "+" not in old[s] and "+" not in new[s]]
    print("moved_points: %d of %d shapes move (%s mode, card %s)%s"
          % (len(moved), len(shapes), "fast_accum" if flags["--fast-accum"] else "default", opts["--card"],
             ", neither plan with a tail" if flags["--no-tail"] else ""), file=sys.stderr)
    for (a, b), n in collections.Counter((old[s], new[s]) for s in moved).most_common(8):
        print("  %5d  %s -> %s" % (n, a, b), file=sys.stderr)
    for s in sorted(rng.sample(moved, min(count, len(moved)))):
        print("%d %d %d" % s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
