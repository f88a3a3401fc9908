#!/usr/bin/env bash
# Creates (once) the git-ignored .venv/ the Python package is built and tested with: torch==2.11.0
# (PyPI's +cu130 build, the H200 machine's), pytest, scikit-build-core, ninja, safetensors, numpy, and
# torchao (optional for users; here so that the tests of the torchao integration run).
# Idempotent: a second run only checks the torch version.   env: PYTHON (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.11.0
TORCHAO_VERSION=0.18.0
if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  .venv/bin/python -c "import torchao" 2>/dev/null ||
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "torchao==$TORCHAO_VERSION"
  exit 0
fi
start=$(date +%s)
echo "python_env: creating .venv with torch==$TORCH_VERSION from PyPI"
rm -rf .venv
"${PYTHON:-python3}" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  "torch==$TORCH_VERSION" pytest "scikit-build-core>=0.10" ninja safetensors numpy
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "torchao==$TORCHAO_VERSION"
echo "python_env: .venv ready ($(( $(date +%s) - start )) s)"
