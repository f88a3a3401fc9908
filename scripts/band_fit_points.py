#!/usr/bin/env python3
"""Draw the points of the band-fitting probe (scripts/probe_swizzle_band.sh, log §51): random 2:4
sparse shapes where the plan's launch runs bands of tiles that pad it into more waves than a
narrower band would (CUTLASS rounds both tile counts up to a whole band; sparse24_fitted_band).

usage: scripts/band_fit_points.py --qsgemm QSGEMM [--family sparse24|blockwise] [--card h100|h200]
                                  [--count 35] [--draw 3000] [--seed 7501] [--m A-B] [--n N1,...]
                                  [--k K1,...] [--runs 2]

sparse24: for each accumulation mode, draws --draw shapes (M uniform in A-B, default 2048-16383; N
and K from the lists), asks `qsgemm plan sparse24 --stdin --order` (tools/plan.cpp) for the plan,
the band it runs and the fitted band, and keeps the plans without a tail launch whose two bands
differ. Prints --count of each mode, alternating between the modes in a random order (so that a run
cut short is a sample of both), as "MODE M N K CONFIGS" lines: MODE default or fast, CONFIGS the
plan's configuration and, where it has one, its cluster twin (the same tile over a 2x1 or 1x1
cluster). blockwise: the same with `qsgemm plan blockwise --order` (one call a shape; 1x128
activations, 128x128 weight blocks), MODE blockwise, the twin the 1x2 cluster of the 128x128 tile.
With --runs 2, the shapes whose main launch runs bands of 2 instead (the held-out points of a build
that runs the fitted band). On stderr: how many shapes qualified per mode, by configuration and
fitted band.

Exit status 0; 2 on bad usage or when `qsgemm plan` fails. Standard library only.
"""
import collections
import random
import subprocess
import sys

NS = [1280, 2560, 3584, 4608, 5120, 6400, 7168, 8192, 9728, 10240, 11264, 13312, 14336, 15360, 20480, 28672, 57344]
KS = [2560, 3328, 4096, 6656, 8192, 9728, 12288, 20480]


def plan_lines(qsgemm, shapes, card, fast):
    cmd = [qsgemm, "plan", "sparse24", "--stdin", "--order", "--card", card] + (["--fast-accum"] if fast else [])
    res = subprocess.run(cmd, input="".join("%d %d %d\n" % s for s in shapes), capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), res.returncode, res.stderr.strip()))
    out = []
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) != 10:
            raise RuntimeError("unexpected `qsgemm plan --order` line: %r" % line)
        out.append(f)
    return out


# The blockwise table's one cluster row and its twin (src/kernels/sm90/blockwise/sm90_blockwise_configs.h).
BLOCKWISE_TWINS = {"128x128x128_c1x1_coop": "128x128x128_c1x2_coop", "128x128x128_c1x2_coop": "128x128x128_c1x1_coop"}


def twin(name, names):
    for a, b in (("_c2x1_", "_c1x1_"), ("_c1x1_", "_c2x1_")):
        if a in name and name.replace(a, b) in names:
            return name.replace(a, b)
    return None


def blockwise_lines(qsgemm, shapes):
    out = []
    for m, n, k in shapes:
        cmd = [qsgemm, "plan", "blockwise", "--m", str(m), "--n", str(n), "--k", str(k), "--order"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), res.returncode, res.stderr.strip()))
        f = res.stdout.split()
        if len(f) != 10:
            raise RuntimeError("unexpected `qsgemm plan blockwise --order` line: %r" % res.stdout)
        out.append(f)
    return out


def config_names(qsgemm):
    res = subprocess.run([qsgemm, "plan", "sparse24", "--m", "4096", "--n", "8192", "--k", "8192", "--models"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError("qsgemm plan --models: exit %d: %s" % (res.returncode, res.stderr.strip()))
    return {line.split()[0] for line in res.stdout.splitlines()[1:] if line.strip()}


def main(argv):
    opts = {"--qsgemm": None, "--family": "sparse24", "--card": "h100", "--count": "35", "--draw": "3000",
            "--seed": "7501", "--m": "2048-16383", "--n": ",".join(map(str, NS)), "--k": ",".join(map(str, KS)),
            "--runs": ""}
    args = argv[1:]
    for i in range(0, len(args), 2):
        if args[i] not in opts or i + 1 >= len(args):
            print("band_fit_points: unknown option or missing value: %s" % args[i], file=sys.stderr)
            return 2
        opts[args[i]] = args[i + 1]
    if not opts["--qsgemm"] or opts["--family"] not in ("sparse24", "blockwise"):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    blockwise = opts["--family"] == "blockwise"
    try:
        lo, hi = (int(v) for v in opts["--m"].split("-"))
        ns = [int(v) for v in opts["--n"].split(",")]
        ks = [int(v) for v in opts["--k"].split(",")]
        count, draw, seed = int(opts["--count"]), int(opts["--draw"]), int(opts["--seed"])
    except ValueError as e:
        print("band_fit_points: %s" % e, file=sys.stderr)
        return 2
    rng = random.Random(seed)
    try:
        names = set(BLOCKWISE_TWINS) if blockwise else config_names(opts["--qsgemm"])
        picked = []
        for mode in ("blockwise",) if blockwise else ("default", "fast"):
            shapes = sorted({(rng.randint(lo, hi), rng.choice(ns), rng.choice(ks)) for _ in range(draw)})
            lines = blockwise_lines(opts["--qsgemm"], shapes) if blockwise else \
                plan_lines(opts["--qsgemm"], shapes, opts["--card"], mode == "fast")
            kept = [f for f in lines if f[5] == "-" and (f[8] == opts["--runs"] if opts["--runs"] else f[8] != f[9])]
            print("%s: %d of %d shapes; %s" % (mode, len(kept), len(shapes), dict(collections.Counter(
                (f[3], f[9]) for f in kept).most_common())), file=sys.stderr)
            rng.shuffle(kept)
            picked.append([(mode, f) for f in kept[:count]])
    except RuntimeError as e:
        print("band_fit_points: %s" % e, file=sys.stderr)
        return 2
    order = [p for pair in zip(*picked) for p in pair] + [p for side in picked for p in side[min(map(len, picked)):]]
    for mode, f in order:
        t = BLOCKWISE_TWINS.get(f[3]) if blockwise else twin(f[3], names)
        print(mode, f[0], f[1], f[2], f[3] + ("," + t if t else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
