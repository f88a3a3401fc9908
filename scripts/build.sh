#!/usr/bin/env bash
# Configures and builds qsgemm (library, CLI, tests) into build/. Usage: scripts/build.sh [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "$@"
export PATH="/usr/local/cuda/bin:$PATH"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# One job per core, but no more than memory allows (docs/build.md): a 2:4 sparse kernel unit peaks at
# ~10 GB in cicc, every other unit at <= ~7 GB. So at most one sparse unit per 11 GB, leaving 7 GB
# for a lighter unit beside them (the Ninja pool qsgemm_heavy, CMakeLists.txt), and one lighter job
# per 7 GB of what is left. QSGEMM_BUILD_JOBS overrides the total.
cores=$(nproc)
avail_gb=$(( $(awk '/MemAvailable/ {print $2}' /proc/meminfo 2>/dev/null || echo 0) / (1024 * 1024) ))
heavy=$(( (avail_gb - 7) / 11 ))
[ "$heavy" -lt 1 ] && heavy=1
[ "$heavy" -gt "$cores" ] && heavy=$cores
light=$(( (avail_gb - 11 * heavy) / 7 ))
[ "$light" -lt 0 ] && light=0
jobs=$(( heavy + light ))
# Without Ninja there is no pool: one job per 11 GB.
[ ${#gen[@]} -eq 0 ] && jobs=$(( avail_gb / 11 > 1 ? avail_gb / 11 : 1 ))
[ "$jobs" -gt "$cores" ] && jobs=$cores
[ -f build/CMakeCache.txt ] || cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release
cmake -S . -B build -DQSGEMM_HEAVY_COMPILE_JOBS="$heavy" >/dev/null
echo "build: $jobs jobs, at most $heavy sparse kernel unit(s) at once (${avail_gb} GB available)"
start=$(date +%s)
cmake --build build -j "${QSGEMM_BUILD_JOBS:-$jobs}"
echo "build: $(( $(date +%s) - start )) s"
