#!/usr/bin/env bash
# The Python package's part of the test command (scripts/test.sh runs it after the CTest suite):
# the .venv of scripts/python_env.sh (torch==2.11.0 from PyPI), the package built against the
# library already in build/ (installed into build/python-prefix: no kernel is compiled a second
# time), then its pytest suite. GPU tests skip with the reason without an sm_90 device
# (QSGEMM_REQUIRE_GPU=1 makes them fail instead).
#   usage: scripts/test_python.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
start=$(date +%s)
scripts/python_env.sh
cmake --install build --prefix build/python-prefix >/dev/null
QSGEMM_ROOT="$PWD/build/python-prefix" .venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation --no-deps --force-reinstall ./python
echo "test_python: venv + package build $(( $(date +%s) - start )) s"
# From python/tests, so that the installed package (not the source folder) is imported.
cd python/tests
../../.venv/bin/python -m pytest -q -rfEs -p no:cacheprovider "$@"
echo "test_python: $(( $(date +%s) - start )) s in all"
