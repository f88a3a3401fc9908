#!/usr/bin/env bash
# Installs what qsgemm builds against into the project-local, git-ignored .deps/ folder:
#   .deps/cutlass    CUTLASS 4.2 headers      (PyPI nvidia-cutlass==4.2.0.0, pinned)
#   .deps/cusparselt cuSPARSELt header        (PyPI nvidia-cusparselt-cu13==0.8.1; only with --bench:
#                                              the benchmark's cuSPARSELt baseline, loaded at run time)
# and GoogleTest from Debian's packages when the system lacks it. Idempotent: a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
CUTLASS_VERSION=4.2.0.0
CUSPARSELT_VERSION=0.8.1
PIP="${PYTHON:-python3} -m pip"

if [ ! -f .deps/cutlass/.installed-$CUTLASS_VERSION ]; then
  echo "setup: installing nvidia-cutlass==$CUTLASS_VERSION headers into .deps/cutlass"
  rm -rf .deps/cutlass
  $PIP install --quiet --disable-pip-version-check --no-deps --target .deps/cutlass "nvidia-cutlass==$CUTLASS_VERSION"
  touch .deps/cutlass/.installed-$CUTLASS_VERSION
fi

if [ "${1:-}" = "--bench" ] && [ ! -f .deps/cusparselt/.installed-$CUSPARSELT_VERSION ]; then
  echo "setup: installing nvidia-cusparselt-cu13==$CUSPARSELT_VERSION (header for the bench baseline) into .deps/cusparselt"
  rm -rf .deps/cusparselt
  if $PIP install --quiet --disable-pip-version-check --no-deps --target .deps/cusparselt "nvidia-cusparselt-cu13==$CUSPARSELT_VERSION"; then
    touch .deps/cusparselt/.installed-$CUSPARSELT_VERSION
  else
    echo "setup: cuSPARSELt header not installed; the bench will report its baseline as unavailable"
  fi
fi

if [ ! -f /usr/include/gtest/gtest.h ] && ! ls /usr/lib/*/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  echo "setup: installing GoogleTest (libgtest-dev)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libgtest-dev >/dev/null
fi
command -v cmake >/dev/null || { echo "setup: cmake is required (apt-get install cmake)"; exit 1; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "setup: the CUDA 13 toolkit (nvcc) is required"; exit 1; }
