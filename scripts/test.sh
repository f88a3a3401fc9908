#!/usr/bin/env bash
# The test command: set-up, build, and the whole CTest suite (labels cpu and gpu). GPU tests skip,
# saying why, when there is no sm_90 device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd build && ctest --output-on-failure -j "$(nproc)" "$@"
