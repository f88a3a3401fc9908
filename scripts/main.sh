#!/usr/bin/env bash
# The main job. On an sm_90 GPU: device info, the self-check (GPU kernels vs the CPU reference) and
# the benchmark against cuBLASLt / cuSPARSELt, JSON into bench/results/<device>/ (or $1).
# Without one: the CPU reference self-check, and a plain statement that the kernels need sm_90a.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --bench
out="${1:-}"
build/qsgemm info
if build/qsgemm info | grep -q "kernels: supported"; then
  build/qsgemm verify
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  if [ -z "${QSGEMM_CUSPARSELT_LIB:-}" ]; then
    QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib" || true
    export QSGEMM_CUSPARSELT_LIB
  fi
  dev=$(build/qsgemm info | sed -n 's/^device [0-9]*: NVIDIA //p' | tr 'A-Z ' 'a-z_')
  QSGEMM_GIT_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
    build/qsgemm bench all --graph --all-combos --out "${out:-bench/results/${dev:-gpu}}"
else
  build/qsgemm verify
  echo "main: no sm_90 GPU here: ran the CPU reference self-check only. qsgemm's kernels need sm_90a (H100/H200);"
  echo "main: on such a machine this command also runs the GPU self-check and 'qsgemm bench all'."
fi
