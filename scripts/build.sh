#!/usr/bin/env bash
# Configures and builds qsgemm (library, CLI, tests) into build/. Usage: scripts/build.sh [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "$@"
export PATH="/usr/local/cuda/bin:$PATH"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
[ -f build/CMakeCache.txt ] || cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release
cmake -S . -B build >/dev/null
# One job per core, but no more than memory allows: a 2:4 sparse kernel translation unit peaks at
# ~10 GB in cicc (docs/build.md), so each job gets 11 GB of the available memory.
jobs=$(nproc)
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
if [ "${avail_kb:-0}" -gt 0 ]; then
  by_mem=$(( avail_kb / (11 * 1024 * 1024) ))
  [ "$by_mem" -lt 1 ] && by_mem=1
  [ "$by_mem" -lt "$jobs" ] && jobs=$by_mem
fi
start=$(date +%s)
cmake --build build -j "${QSGEMM_BUILD_JOBS:-$jobs}"
echo "build: $(( $(date +%s) - start )) s"
