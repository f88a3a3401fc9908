#!/usr/bin/env bash
# Builds the library and the CLI on the device machine itself, for a session whose own build is not
# ready: a fresh checkout takes ~45 min to build on this 2-core machine, and a GPU lent at the start
# of a session may be gone by then. The device has 16 cores and cmake, ninja, nvcc 13.0, but no
# network, so this machine stages what the build downloads (the CUTLASS headers, the cuSPARSELt
# header), ~2.5 MB:
#   scripts/device_build.sh --stage [BIN_DIR=.carry]    here, after scripts/setup.sh --bench
# and the device builds into build-device/ (git-ignored; kept between calls while the machine stays
# warm) and copies libqsgemm.so.0, qsgemm and COMMIT into BIN_DIR, as scripts/stage_device.sh does:
#   scripts/device_build.sh [BIN_DIR=.carry]            on the device, ~5 min (4200 s of one core here)
# No test binaries: GoogleTest is not on the device (the GPU suite waits for this machine's build).
# JOBS / HEAVY override the job counts (default 16 / 10: the 128 GiB kind's memory, read off its
# page, not off MemAvailable, which starts low on those machines and grows).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--stage" ]; then
  B="${2:-.carry}"
  src=.deps/cutlass/cutlass_library/source
  lt=.deps/cusparselt/nvidia/cusparselt/include/cusparseLt.h
  [ -f "$src/include/cutlass/version.h" ] && [ -f "$lt" ] || { echo "device_build: run scripts/setup.sh --bench first" >&2; exit 2; }
  mkdir -p "$B/deps"
  # CMakeLists.txt's CUTLASS_INCLUDE_DIRS: include/ and tools/util/include/ of CUTLASS_DIR
  tar czf "$B/deps/cutlass_include.tgz" -C "$src" include tools/util/include
  cp "$lt" "$B/deps/"
  git rev-parse --short HEAD > "$B/COMMIT" 2>/dev/null || echo unknown > "$B/COMMIT"
  git diff --quiet HEAD 2>/dev/null || echo "device_build: uncommitted changes are built but COMMIT names HEAD" >&2
  du -sh "$B/deps"
  exit 0
fi
B="${1:-.carry}"
[ -f "$B/deps/cutlass_include.tgz" ] || { echo "device_build: $B/deps/cutlass_include.tgz missing (--stage here first)" >&2; exit 2; }
export PATH="/usr/local/cuda/bin:$PATH"
start=$(date +%s)
d=build-device/deps
mkdir -p "$d/cutlass" "$d/cusparselt/nvidia/cusparselt/include"
tar xzf "$B/deps/cutlass_include.tgz" -C "$d/cutlass"
cp "$B/deps/cusparseLt.h" "$d/cusparselt/nvidia/cusparselt/include/"
# The CMake project finds the cuSPARSELt header under .deps/ (CMakeLists.txt); point it there.
mkdir -p .deps && [ -e .deps/cusparselt ] || ln -s "$PWD/$d/cusparselt" .deps/cusparselt
[ -f build-device/CMakeCache.txt ] || cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCUTLASS_DIR="$PWD/$d/cutlass" -DQSGEMM_BUILD_TESTS=OFF -DQSGEMM_HEAVY_COMPILE_JOBS="${HEAVY:-10}" >/dev/null
cmake --build build-device -j "${JOBS:-16}" --target qsgemm qsgemm_cli
cp -L build-device/libqsgemm.so.0 build-device/qsgemm "$B/"
echo "device_build: $(( $(date +%s) - start )) s"
