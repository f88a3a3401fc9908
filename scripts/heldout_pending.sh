#!/usr/bin/env bash
# The first call of docs/experiments/pending.md's H200 session: the held-out checks of the sparse
# heuristic's changes since the last H200 run, on the H200's profile, then `qsgemm verify` and the
# sparse GPU tests (QSGEMM_REQUIRE_GPU=1). On another card it exits at once (status 3): a held-out
# check on the H200's profile means nothing elsewhere. About 220 s; 5 files.
#   usage: scripts/heldout_pending.sh OUT_DIR [BIN_DIR=.carry]
# BIN_DIR holds the build (scripts/stage_device.sh) and the libraries with older sparse heuristics
# that mark the old plan in `qsgemm tune` (each libqsgemm.so.0, or .gz), made here with
#   scripts/heuristic_lib_at.sh fe135e6 BIN_DIR/old71   (0 (f): 128x160 over more columns)
#   scripts/heuristic_lib_at.sh 8e4eff2 BIN_DIR/old72   (0 (g): fast plans from 512 tokens)
#   scripts/heuristic_lib_at.sh 3251d5e BIN_DIR/old72b  (2d21dd6: the fast 128x192 cluster row's cap)
# The points were drawn for the H200's profile (scripts/moved_points.py --card h200) and are committed.
set -u
out="${1:?usage: heldout_pending.sh OUT_DIR [BIN_DIR]}"
B="${2:-.carry}"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
mkdir -p "$out"; S=$out/summary.txt; q=$B/qsgemm
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > "$S"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run" >> "$S"; exit 3; }
"$(dirname "$0")/unpack_lib.sh" "$B" "$B/old71" "$B/old72" "$B/old72b"
for l in "$B" "$B/old71" "$B/old72" "$B/old72b"; do
  [ -f "$l/libqsgemm.so.0" ] || { echo "missing $l/libqsgemm.so.0" >> "$S"; exit 2; }
done
T=bench/results/h100/tuning
tune() {  # tune LIB_DIR POINTS JSON SECONDS CONFIGS [--fast-accum]: one interleaved tune per point
  local lib=$1 pts=$2 js=$3 cap=$4 c=$5; shift 5; local s; s=$(el)
  while read -r m n k; do [ $(( $(el) - s )) -lt "$cap" ] || break
    LD_LIBRARY_PATH=$lib:/usr/local/cuda/lib64 timeout 20 "$q" tune sparse24 --m "$m" --n "$n" --k "$k" --interleave \
      --configs "$c" "$@" --json "$out/$js" >> "$out/log.txt" 2>&1
  done < "$pts"
  echo "$js: $(grep -c . "$out/$js" 2>/dev/null) lines ($(el) s)" >> "$S"
}
tune "$B/old71" $T/stop71_h200_points.txt tune_sparse24_stop71_heldout.jsonl 75 \
  128x160x256_c1x1_coop,128x192x256_c1x1_coop,128x128x256_c1x2_coop,128x128x256_c1x1_coop_streamk
tune "$B/old72" $T/stop73_h200_fast_low_points.txt tune_sparse24_fast_low_heldout.jsonl 65 \
  128x256x128_c2x1_coop_fastaccum,128x256x128_c1x2_coop_fastaccum,128x192x256_c1x1_coop_fastaccum,128x128x256_c1x2_coop_fastaccum,128x128x256_c1x2_coop --fast-accum
tune "$B/old72b" $T/stop73_h200_fast192_narrow_points.txt tune_sparse24_fast192_narrow_heldout.jsonl 40 \
  128x192x256_c1x1_coop_fastaccum,128x192x256_c2x1_coop_fastaccum,128x128x256_c1x1_coop_streamk,128x256x128_c2x1_coop_fastaccum --fast-accum
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64
rc=0
"$q" verify > "$out/verify.txt" 2>&1 || rc=1; echo "verify rc=$rc: $(tail -1 "$out/verify.txt")" >> "$S"
QSGEMM_REQUIRE_GPU=1 timeout 150 "$B/qsgemm_gpu_tests" --gtest_filter='Sparse24*' > "$out/gpu_tests.txt" 2>&1 || rc=1
echo "sparse GPU tests: $(grep -c '^\[       OK \]' "$out/gpu_tests.txt") passed, $(tail -1 "$out/gpu_tests.txt") ($(el) s)" >> "$S"
cat "$S"
exit $rc
