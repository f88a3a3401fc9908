#!/usr/bin/env bash
# Copies what a device run needs (the shared library, the CLI, the test binaries; a few MB) into
# .carry/ (git-ignored), so that one device call can carry just that folder: carry=[".carry"].
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry
cp -L build/libqsgemm.so.0 .carry/
cp build/qsgemm build/tests/qsgemm_gpu_tests build/tests/qsgemm_cpu_tests .carry/
git rev-parse --short HEAD > .carry/COMMIT 2>/dev/null || echo unknown > .carry/COMMIT
du -sh .carry
