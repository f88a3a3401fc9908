#!/usr/bin/env bash
# Copies what a device run needs (the shared library, gzipped, the CLI, the test binaries, the
# Python wheel and the wheels its pytest step installs; ~25 MB) into .carry/ (git-ignored), so that
# one device call can carry just that folder: carry=[".carry"]. A call carries the tracked files
# too, 64 MiB in all: the library goes gzipped (33 -> 6 MB; scripts/unpack_lib.sh unpacks it there)
# and the last line says what the call will carry.
# The wheel (.carry/whl/qsgemm-*.whl) is built from the library in build/ (no second kernel build)
# with the .venv of scripts/python_env.sh, under the machine's build lock (/tmp/qsgemm-build.lock;
# QSGEMM_NO_LOCK=1 when the caller holds it already).
#   usage: scripts/stage_device.sh [--no-wheels]    (--no-wheels: no .carry/whl, 11 MB less, for calls
#          that run no pytest step, e.g. scripts/device_session.sh's; device_check.sh's pytest fails without)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/whl
cp -L build/libqsgemm.so.0 .carry/
cp build/qsgemm build/tests/qsgemm_gpu_tests build/tests/qsgemm_cpu_tests .carry/
git rev-parse --short HEAD > .carry/COMMIT 2>/dev/null || echo unknown > .carry/COMMIT
report() {
  gzip -9f .carry/libqsgemm.so.0
  local tracked carry
  tracked=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  carry=$(du -sb .carry | cut -f1)
  echo "stage_device: .carry $(( carry >> 20 )) MiB + tracked files $(( tracked >> 20 )) MiB of the call's 64 MiB"
  [ $(( (carry + tracked) >> 20 )) -lt 64 ] || echo "stage_device: over 64 MiB: a call would be refused (--no-wheels?)" >&2
}
if [ "${1:-}" = "--no-wheels" ]; then rmdir .carry/whl; report; exit 0; fi
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
report
