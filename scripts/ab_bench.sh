#!/usr/bin/env bash
# Same-session A/B of two builds with the benchmark: `qsgemm bench FAMILY` with build A, then B, then
# A and B again, and a table per point (family, layer, M) of each build's time (the better of its two
# runs), B/A, and each build's speedup over the point's first baseline in its own runs. Runs on the GPU
# machine; builds as in scripts/ab_tune.sh (folders with libqsgemm.so.0 and qsgemm). Committed A/B
# tables (ab_*.txt) are in bench/results/h200/tuning/.
#   usage: scripts/ab_bench.sh OUT_DIR BIN_A BIN_B FAMILY [qsgemm bench options]
#   e.g.   scripts/ab_bench.sh out .carry2 .carry sparse24 --graph --no-check --algo-search 1 --ms 1,8,16,32,64
#   (--algo-search 1 skips the cuBLASLt algorithm search: the A/B compares qsgemm builds)
set -uo pipefail
out="${1:?usage: ab_bench.sh OUT_DIR BIN_A BIN_B FAMILY [bench options]}"
a="${2:?BIN_A}"
b="${3:?BIN_B}"
family="${4:?FAMILY (sparse24 or blockwise)}"
shift 4
mkdir -p "$out"
"$(dirname "$0")/unpack_lib.sh" "$a" "$b"
: > "$out/ab_${family}.log"   # the four runs' tables; six files in all (a device call returns at most eight)
export QSGEMM_CUSPARSELT_LIB="${QSGEMM_CUSPARSELT_LIB:-$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib}"
runs=()
for r in a1 b1 a2 b2; do
  bin="$a"; [ "${r:0:1}" = b ] && bin="$b"
  LD_LIBRARY_PATH="$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" timeout "${AB_TIMEOUT:-200}" "$bin/qsgemm" bench "$family" \
    --json "$out/ab_${family}_$r.json" "$@" >> "$out/ab_${family}.log" 2>&1 || echo "bench $r ($bin) rc=$?"
  runs+=("$out/ab_${family}_$r.json")
done
python3 - "${runs[@]}" <<'PY' | tee "$out/ab_${family}.txt"
import json, math, sys, collections
def load(p):
    try: return json.load(open(p))["rows"]
    except Exception as e: print("unreadable", p, e); return []
best = {}  # (build, family, layer, M, out) -> (us, config, baseline name, baseline us)
for path in sys.argv[1:]:
    build = path.rsplit("_", 1)[1][0]
    for r in load(path):
        if not r.get("qsgemm_us") or "layer" not in r: continue
        key = (build, r["family"], r["layer"], r["M"], r.get("out_dtype"))
        base = next(iter(r.get("baselines_us", {}).items()), (None, None))
        if key not in best or r["qsgemm_us"] < best[key][0]:
            best[key] = (r["qsgemm_us"], r.get("config", ""), base[0], base[1])
ratios = collections.defaultdict(list)
print(f"{'family':22} {'layer':18} {'M':>6}  {'A us':>8} {'B us':>8}  B/A    A/base B/base  B config")
for (build, fam, layer, M, od), (ta, ca, bn, ba) in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][3], kv[0][2])):
    if build != "a": continue
    other = best.get(("b", fam, layer, M, od))
    if not other: continue
    tb, cb, _, bb = other
    sa = f"{ba / ta:6.2f}" if ba else "     -"
    sb = f"{bb / tb:6.2f}" if bb else "     -"
    print(f"{fam:22} {layer:18} {M:>6}  {ta:8.2f} {tb:8.2f}  {tb / ta:.3f}  {sa} {sb}  {cb}")
    ratios[(fam, M)].append(tb / ta)
print("geomean B/A by family and M:")
for (fam, M), v in sorted(ratios.items()):
    print(f"  {fam:22} M={M:<6} {math.exp(sum(map(math.log, v)) / len(v)):.3f}  (min {min(v):.3f}, max {max(v):.3f}, {len(v)} points)")
PY
