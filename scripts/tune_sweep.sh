#!/usr/bin/env bash
# Sweeps `qsgemm tune` over the benchmark layers and token counts; one JSON line per configuration
# goes to OUT_DIR/tune_<family>.jsonl (the data behind the heuristics). Runs on the GPU machine.
# The committed sweeps are in bench/results/h200/tuning/ (copy a new one there to keep it).
#   usage: scripts/tune_sweep.sh OUT_DIR [BIN_DIR=.carry]
#   env:   SPARSE_MS / BLOCKWISE_MS / SKINNY_MS  token counts (comma lists); empty skips that sweep
#          (SKINNY_MS: the table and the skinny decode kernel with each cluster size, side by side in
#          tune_skinny.jsonl)
#          TUNE_ARGS  extra `qsgemm tune` options for every call, e.g. "--configs 0,1,5 --interleave"
#          BW_ARGS    extra options for the blockwise sweep, e.g. "--gx per_row --gw per_row"
#          TAG        suffix of the blockwise file names (tune_blockwise$TAG.jsonl), to keep pairs apart
#          SPARSE_LAYERS  NxK list (space-separated) in place of the 12 sparse benchmark layers
set -uo pipefail
out="${1:?usage: tune_sweep.sh OUT_DIR [BIN_DIR]}"
bin="${2:-.carry}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
sparse_layers="${SPARSE_LAYERS:-6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 1280x8192 8192x1024 7168x8192 8192x3584}"
blockwise_layers="6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048"
IFS=',' read -ra sms <<< "${SPARSE_MS-64,128,256,512,1024,2048}"
for m in "${sms[@]}"; do for l in $sparse_layers; do
  # shellcheck disable=SC2086
  timeout 60 "$bin/qsgemm" tune sparse24 --m "$m" --n "${l%x*}" --k "${l#*x}" ${TUNE_ARGS:-} --json "$out/tune_sparse24.jsonl" > /dev/null 2>&1 || echo "tune sparse24 M=$m $l failed"
done; done
IFS=',' read -ra bms <<< "${BLOCKWISE_MS-1,8,16,32,64,128,256,512,1024,2048}"
for m in "${bms[@]}"; do for l in $blockwise_layers; do
  # shellcheck disable=SC2086
  timeout 60 "$bin/qsgemm" tune blockwise --m "$m" --n "${l%x*}" --k "${l#*x}" ${TUNE_ARGS:-} ${BW_ARGS:-} --json "$out/tune_blockwise${TAG:-}.jsonl" > /dev/null 2>&1 || echo "tune blockwise M=$m $l failed"
done; done
IFS=',' read -ra kms <<< "${SKINNY_MS-1,8,16,32}"
for m in "${kms[@]}"; do for l in $blockwise_layers; do
  timeout 60 "$bin/qsgemm" tune blockwise --m "$m" --n "${l%x*}" --k "${l#*x}" --json "$out/tune_skinny.jsonl" > /dev/null 2>&1 || echo "tune blockwise M=$m $l failed"
  timeout 60 "$bin/qsgemm" tune blockwise --m "$m" --n "${l%x*}" --k "${l#*x}" --skinny-clusters --json "$out/tune_skinny.jsonl" > /dev/null 2>&1 || echo "tune blockwise --skinny-clusters M=$m $l failed"
done; done
wc -l "$out"/*.jsonl
