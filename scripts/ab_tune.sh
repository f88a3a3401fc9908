#!/usr/bin/env bash
# Same-run A/B of two builds (e.g. main and a branch): `qsgemm tune` on each shape with build A, then
# build B, alternating twice, and a table of B's time over A's per configuration (the better of the
# two runs of each). Runs on the GPU machine. Each build is a folder with libqsgemm.so.0 and qsgemm:
# scripts/stage_device.sh writes .carry/; move it to .carry2/ (git-ignored) before staging the other.
#   usage: scripts/ab_tune.sh OUT_DIR BIN_A BIN_B FAMILY "M,N,K;M,N,K;..." [extra qsgemm tune options]
#   e.g.   scripts/ab_tune.sh out .carry .carry2 blockwise "1,57344,8192;16,4096,14336" --skinny-clusters
set -uo pipefail
out="${1:?usage: ab_tune.sh OUT_DIR BIN_A BIN_B FAMILY SHAPES [tune options]}"
a="${2:?BIN_A}"
b="${3:?BIN_B}"
family="${4:?FAMILY (sparse24 or blockwise)}"
shapes="${5:?SHAPES: \"M,N,K;M,N,K\"}"
shift 5
mkdir -p "$out"
"$(dirname "$0")/unpack_lib.sh" "$a" "$b"
log="$out/ab_$family.txt"
: > "$log"
IFS=';' read -ra list <<< "$shapes"
for s in "${list[@]}"; do
  IFS=',' read -r m n k <<< "$s"
  for bin in "$a" "$b" "$a" "$b"; do
    echo "== $bin $m $n $k" >> "$log"
    LD_LIBRARY_PATH="$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" timeout 120 "$bin/qsgemm" tune "$family" \
      --m "$m" --n "$n" --k "$k" "$@" 2>&1 | grep -E '^\s+\[' >> "$log"
  done
done
python3 - "$log" "$a" "$b" <<'EOF'
import re, sys
log, a, b = sys.argv[1:]
best = {}  # (build, M, N, K, config) -> fastest of its runs
cur = None
for line in open(log):
    if line.startswith("== "):
        cur = line.split()[1:]
        continue
    m = re.match(r"\s+\[\d+\]\s+(\S+)\s+([-\d.]+) us", line)
    if m and cur and float(m.group(2)) > 0:
        key = (cur[0], *cur[1:4], m.group(1))
        best[key] = min(best.get(key, 1e30), float(m.group(2)))
print(f"{'M':>6} {'N':>6} {'K':>6}  {'configuration':36} {'A us':>9} {'B us':>9}  B/A")
for (bin_, M, N, K, cfg), ta in sorted(best.items(), key=lambda kv: (int(kv[0][1]), int(kv[0][2]), kv[0][4])):
    if bin_ != a:
        continue
    tb = best.get((b, M, N, K, cfg))
    if tb:
        print(f"{M:>6} {N:>6} {K:>6}  {cfg:36} {ta:9.1f} {tb:9.1f}  {tb / ta:.3f}")
EOF
