#!/usr/bin/env python3
"""Read back scripts/probe_swizzle_band.sh's band-fit JSON: which band of tiles is fastest where a
band of 4 pads the launch into more waves, and what each candidate rule would have run.

usage: scripts/band_report.py FILE.jsonl [--sms 132]

FILE holds `qsgemm tune sparse24|blockwise --swizzles 0,4,2[,1]` lines: each configuration's name
with the suffix _swB for bands of B (none for the library's order). For every point and configuration
timed in bands of 4 and 2 (and 1, where timed) it prints the waves each band runs (CUTLASS's rounding of both tile counts to
a whole band times the cluster, as src/tile_order.h's scheduled_ctas), the
times of bands 2 and 1 over band 4's, and the fastest band. Then, over all points, the geometric mean
and the range of time(rule's band) / time(band 4) for the rules:
  library         bands of 2 where they run at least 5 % fewer waves than bands of 4, else 4
                  (src/tile_order.h's fitted_band, kFittedBandMinSaving)
  fewest-waves    the widest of 4, 2, 1 with the fewest waves (the first candidate, log §51)
  fewest-waves-2  the same over 4 and 2 only
  oracle          the fastest band measured (the best any rule could do)
and how many points each rule made more than 2 % slower. Exit status 0; 2 on bad usage or no
usable point. Standard library only.
"""
import collections
import json
import math
import sys

RULES = ("library", "fewest-waves", "fewest-waves-2", "oracle")
MIN_SAVING = 0.05  # src/tile_order.h's kFittedBandMinSaving


def parse_config(name):
    """'128x192x256_c2x1_coop' -> (tile_m, tile_n, cluster_m, cluster_n)."""
    dims = name.split("_")[0].split("x")
    cl = name.split("_c")[1].split("_")[0].split("x")
    return int(dims[0]), int(dims[1]), int(cl[0]), int(cl[1])


def scheduled_tiles(name, tokens, n_out, max_swizzle, family="sparse24"):
    """CUTLASS's persistent scheduler's tile count (tile_scheduler_params.h; src/tile_order.h's
    scheduled_ctas): both counts, the cluster's padding included, rounded up to a whole band
    (get_log_swizzle_size) times the cluster. CUTLASS's M is the weight rows for sparse24 (the
    swap-and-transpose), the tokens for blockwise."""
    tm, tn, cm, cn = parse_config(name)
    up = lambda x, t: -(-x // t) * t  # noqa: E731
    if family == "blockwise":
        ctas_m, ctas_n = up(-(-tokens // tm), cm), up(-(-n_out // tn), cn)
    else:
        ctas_m, ctas_n = up(-(-n_out // tm), cm), -(-tokens // (tn * cn)) * cn
    short = min(ctas_m, ctas_n)
    band = 8 if max_swizzle >= 8 and short >= 6 else 4 if max_swizzle >= 4 and short >= 3 else \
        2 if max_swizzle >= 2 and short >= 2 else 1
    return up(ctas_m, band * cm) * up(ctas_n, band * cn)


def waves(name, tokens, n_out, band, sms, family="sparse24"):
    return -(-scheduled_tiles(name, tokens, n_out, band, family) // sms)


def fewest_waves(name, tokens, n_out, sms, bands, family="sparse24"):
    best = bands[0]
    for b in bands[1:]:
        if waves(name, tokens, n_out, b, sms, family) < waves(name, tokens, n_out, best, sms, family):
            best = b
    return best


def library_band(name, tokens, n_out, sms, family="sparse24"):
    w4, w2 = waves(name, tokens, n_out, 4, sms, family), waves(name, tokens, n_out, 2, sms, family)
    return 2 if w2 <= (1 - MIN_SAVING) * w4 else 4


def points(lines):
    """{(family, M, N, K, config): {band: us}} (band 0: the library's order)."""
    out = collections.OrderedDict()
    for r in lines:
        if r.get("family") not in ("sparse24", "blockwise") or r.get("us", -1) <= 0:
            continue
        name, band = r["config"], 0
        if "_sw" in name:
            name, b = name.rsplit("_sw", 1)
            band = int(b)
        out.setdefault((r["family"], r["M"], r["N"], r["K"], name), {})[band] = r["us"]
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv):
    args = argv[1:]
    sms = 132
    if "--sms" in args:
        i = args.index("--sms")
        try:
            sms = int(args[i + 1])
        except (IndexError, ValueError):
            print("band_report: --sms needs a number", file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    try:
        with open(args[0]) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print("band_report: %s" % e, file=sys.stderr)
        return 2
    ratios = {r: [] for r in RULES}
    n = 0
    for (family, m, n_out, k, name), t in points(lines).items():
        if not all(b in t for b in (4, 2)):
            continue
        n += 1
        timed = [b for b in (4, 2, 1) if b in t]
        w = {b: waves(name, m, n_out, b, sms, family) for b in (4, 2, 1)}
        pick = {"library": library_band(name, m, n_out, sms, family),
                "fewest-waves": fewest_waves(name, m, n_out, sms, (4, 2, 1), family),
                "fewest-waves-2": fewest_waves(name, m, n_out, sms, (4, 2), family),
                "oracle": min(timed, key=lambda b: t[b])}
        for r in RULES:
            if pick[r] in t:  # a rule whose band was not timed here (bands of 1) is left out
                ratios[r].append(t[pick[r]] / t[4])
        print("%6d %6d %6d %-34s waves %3d/%3d/%3d  band2 %.3f  band1 %s  fastest %d  library %d" % (
            m, n_out, k, name, w[4], w[2], w[1], t[2] / t[4], "%.3f" % (t[1] / t[4]) if 1 in t else "  -  ",
            pick["oracle"], pick["library"]))
    if not n:
        print("band_report: no point timed in bands of 4 and 2", file=sys.stderr)
        return 2
    print("%d points; time(rule's band) / time(band 4):" % n)
    for r in RULES:
        xs = ratios[r]
        if xs:
            print("  %-15s geomean %.3f, %.3f-%.3f, %d more than 2 %% slower (%d points)" % (
                r, geomean(xs), min(xs), max(xs), sum(x > 1.02 for x in xs), len(xs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
