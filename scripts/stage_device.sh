#!/usr/bin/env bash
# Copies what a device run needs (the shared library, the CLI, the test binaries, the Python wheel
# and the wheels its pytest step installs; a few MB) into .carry/ (git-ignored), so that one device call can carry just that
# folder: carry=[".carry"].
# The wheel (.carry/whl/qsgemm-*.whl) is built from the library in build/ (no second kernel build)
# with the .venv of scripts/python_env.sh, under the machine's build lock (/tmp/qsgemm-build.lock;
# QSGEMM_NO_LOCK=1 when the caller holds it already).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/whl
cp -L build/libqsgemm.so.0 .carry/
cp build/qsgemm build/tests/qsgemm_gpu_tests build/tests/qsgemm_cpu_tests .carry/
git rev-parse --short HEAD > .carry/COMMIT 2>/dev/null || echo unknown > .carry/COMMIT
scripts/python_env.sh
export PATH="/usr/local/cuda/bin:$PATH"
cmake --install build --prefix build/python-prefix >/dev/null
lock=()
if [ -z "${QSGEMM_NO_LOCK:-}" ] && command -v flock >/dev/null; then lock=(flock /tmp/qsgemm-build.lock); fi
QSGEMM_ROOT="$PWD/build/python-prefix" "${lock[@]}" .venv/bin/python -m pip wheel --quiet --disable-pip-version-check \
  --no-build-isolation --no-deps ./python -w .carry/whl
# pytest (and safetensors, for the package's serialization tests) for a device machine whose python
# has torch but no network: pure-Python / abi3 wheels, installed by device_check.sh only if missing.
.venv/bin/python -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
  --dest .carry/whl/deps pytest safetensors
# torchao for the tests of the torchao integration (installed by device_check.sh when missing).
.venv/bin/python -m pip download --quiet --disable-pip-version-check --only-binary=:all: --no-deps \
  --dest .carry/whl/torchao torchao==0.18.0
du -sh .carry
