#!/usr/bin/env bash
# The test command: set-up, build, the whole CTest suite (labels cpu and gpu), then the Python
# package's pytest suite (scripts/test_python.sh: torch==2.11.0 from PyPI in .venv/). GPU tests skip,
# saying why, when there is no sm_90 device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/test_python.sh
