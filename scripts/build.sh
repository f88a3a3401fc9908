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
start=$(date +%s)
cmake --build build -j "$(nproc)"
echo "build: $(( $(date +%s) - start )) s"
