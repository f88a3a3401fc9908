#!/usr/bin/env bash
# Builds libqsgemm.so.0 with the 2:4 sparse heuristic of an older commit (src/sparse24_heuristic.cpp
# and .h as they were at REV, everything else as in the working tree) into DIR, then restores the
# working tree's heuristic and relinks build/. For held-out checks: `qsgemm tune` run against DIR's
# library marks the old plan (its "heuristic" line) next to the new plan's configurations.
# Host code only (the heuristic recompiles one unit), so it takes about a minute after a build.
#   usage: scripts/heuristic_lib_at.sh REV DIR      (needs build/ from scripts/build.sh)
#   e.g.   scripts/heuristic_lib_at.sh 8e4eff2 .carry/old && gzip -9 .carry/old/libqsgemm.so.0
set -euo pipefail
rev="${1:?usage: heuristic_lib_at.sh REV DIR}"
dir="${2:?usage: heuristic_lib_at.sh REV DIR}"
cd "$(dirname "$0")/.."
files=(src/sparse24_heuristic.cpp src/sparse24_heuristic.h)
git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "heuristic_lib_at: unknown commit $rev" >&2; exit 2; }
[ -f build/build.ninja ] || [ -f build/Makefile ] || { echo "heuristic_lib_at: no build/ (scripts/build.sh)" >&2; exit 2; }
saved="$(mktemp -d)"
cp "${files[@]}" "$saved/"
restore() {
  cp "$saved/sparse24_heuristic.cpp" src/sparse24_heuristic.cpp
  cp "$saved/sparse24_heuristic.h" src/sparse24_heuristic.h
  cmake --build build --target qsgemm > /dev/null
  rm -rf "$saved"
}
trap restore EXIT
git show "$rev:src/sparse24_heuristic.cpp" > src/sparse24_heuristic.cpp
git show "$rev:src/sparse24_heuristic.h" > src/sparse24_heuristic.h
cmake --build build --target qsgemm > /dev/null
mkdir -p "$dir"
cp -L build/libqsgemm.so.0 "$dir/libqsgemm.so.0"
echo "heuristic_lib_at: $dir/libqsgemm.so.0 has the sparse heuristic of $(git rev-parse --short "$rev")"
