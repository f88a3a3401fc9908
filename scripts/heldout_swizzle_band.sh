#!/usr/bin/env bash
# The held-out check of 99427f8 (log §50: the swizzle band's padded tiles in the H100 profile's
# model), on an H100: at the 30 committed random shapes whose default-mode plan moved (128x192 tile
# -> its 2x1 cluster row), both configurations timed interleaved with af9756c's library marking the
# old plan; then the sparse GPU tests and `qsgemm verify` at the new build, and the bench and sweep
# points whose plan moved (for scripts/splice_bench.py). About 150 s; 7 files.
#   usage: scripts/heldout_swizzle_band.sh OUT_DIR [BIN_DIR=.carry]
# BIN_DIR: the build (libqsgemm.so.0[.gz], qsgemm, qsgemm_gpu_tests) and BIN_DIR/old/libqsgemm.so.0[.gz]
# from `scripts/heuristic_lib_at.sh af9756c BIN_DIR/old`.
set -u
o=${1:?usage: heldout_swizzle_band.sh OUT_DIR [BIN_DIR]}; B=${2:-.carry}; mkdir -p $o; S=$o/summary.txt
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
for l in $B $B/old; do [ -f $l/libqsgemm.so.0.gz ] && gzip -dkf $l/libqsgemm.so.0.gz; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $S
export QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
while read -r m n k; do
  LD_LIBRARY_PATH=$B/old:/usr/local/cuda/lib64 timeout 30 $B/qsgemm tune sparse24 --m $m --n $n --k $k --interleave \
    --configs 128x192x256_c1x1_coop,128x192x256_c2x1_coop --json $o/tune_sparse24_swizzle_band_heldout.jsonl >> $o/log.txt 2>&1
done < bench/results/h100/tuning/tune_sparse24_swizzle_band_heldout_points.txt
echo "heldout: $(grep -c . $o/tune_sparse24_swizzle_band_heldout.jsonl) lines ($(el) s)" >> $S
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64
rc=0
QSGEMM_REQUIRE_GPU=1 timeout 200 $B/qsgemm_gpu_tests --gtest_filter='Sparse24*' > $o/gpu_tests.txt 2>&1 || rc=1
echo "sparse GPU tests rc=$rc: $(grep -c '^\[       OK \]' $o/gpu_tests.txt) passed, $(tail -1 $o/gpu_tests.txt) ($(el) s)" >> $S
$B/qsgemm verify > $o/verify.txt 2>&1 || rc=1; echo "verify: $(tail -1 $o/verify.txt)" >> $S
timeout 150 $B/qsgemm bench sparse24 --graph --ms 2048,2560 --layers l3-70b-tp8.down,l3-70b-tp8.gate_up,l3-70b-tp8.o,l3-70b.down,l3-70b.o,l3-70b.qkv,l3-8b.qkv --json $o/sparse24_moved.json >> $o/log.txt 2>&1
echo "grid points rc=$? ($(el) s)" >> $S
timeout 100 $B/qsgemm bench sparse24 --graph --ms 2074,2509,3340 --layers l3-70b.qkv --json $o/sparse24_sweep_moved.json >> $o/log.txt 2>&1
echo "sweep points rc=$? ($(el) s)" >> $S
cat $S
exit $rc
