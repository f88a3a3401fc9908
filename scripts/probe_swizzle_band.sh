#!/usr/bin/env bash
# The device check of the band-fitting tile order (log §51; pending 10), on an H100 or an H200:
# 1. the sparse GPU tests and `qsgemm verify`;
# 2. 99427f8's held-out check: the 128x192 tile against its cluster row at the 30 shapes of
#    h100/tuning/tune_sparse24_swizzle_band_heldout_points.txt (~20 s);
# 3. at the 70 random shapes of h100/tuning/tune_sparse24_band_fit_points.txt (MODE M N K CONFIGS,
#    from `scripts/band_fit_points.py --qsgemm build/qsgemm`), where the plan's launch runs bands of
#    4 tiles that pad it into more waves than a narrower band: the plan's configuration and its
#    cluster twin in the library's order and in bands of 4, 2 and 1 (`qsgemm tune sparse24
#    --swizzles 0,4,2,1 --interleave`); no tune starts after CAP (default 420 s);
# 4. the sweep points of the fast_accum breaks at 4445 and 5379 tokens and their neighbours.
# About 520 s; 6 files. Its JSON decides Sparse24CardTraits::fits_swizzle_band per card.
# PART=blockwise instead (~400 s): the blockwise band tests, the 24 shapes of
# h100/tuning/tune_blockwise_band_fit_points.txt (the 128x128 tile and its 1x2 cluster, 1x128
# activations x 128x128 weight blocks, in the library's order and in bands of 4, 2 and 1), and the
# blockwise sweep's breaks on l3-70b.down at 2074-3036 tokens.
# PART=heldout (~200 s), for a build that runs the fitted band: `qsgemm verify`; each plan's
# configuration in the library's order and in bands of 4 and 2 (on a card whose profile does not fit
# the band, the library runs bands of 4) at the held-out shapes whose launch runs
# bands of 2 (h100/tuning/tune_{sparse24,blockwise}_band_fit_heldout_points.txt, from
# `scripts/band_fit_points.py --runs 2`); the 128x192 tile (now in its fitted band) against its
# cluster row at 99427f8's 30 held-out shapes, where the model keeps the cluster row; the sweep
# points of the breaks.
#   usage: [PART=blockwise|heldout] scripts/probe_swizzle_band.sh OUT_DIR [BIN_DIR=.carry]
# BIN_DIR: the build (libqsgemm.so.0[.gz], qsgemm, qsgemm_gpu_tests).
set -u
o=${1:?usage: probe_swizzle_band.sh OUT_DIR [BIN_DIR]}; B=${2:-.carry}; mkdir -p $o; S=$o/summary.txt
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
"$(dirname "$0")/unpack_lib.sh" $B
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $S
export QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64
rc=0
if [ "${PART:-}" = heldout ]; then
  $B/qsgemm verify > $o/verify.txt 2>&1 || rc=1; echo "verify: $(tail -1 $o/verify.txt) ($(el) s)" >> $S
  T=bench/results/h100/tuning
  while read -r mode m n k c; do
    [ $(el) -lt ${CAP:-240} ] || break
    fam=sparse24; fa=; [ $mode = fast ] && fa=--fast-accum; [ $mode = blockwise ] && fam=blockwise
    timeout 40 $B/qsgemm tune $fam --m $m --n $n --k $k $fa --interleave --configs ${c%%,*} --swizzles 0,4,2 \
      --json $o/tune_${fam}_band_fit_heldout.jsonl >> $o/log.txt 2>&1
  done < <(paste -d '\n' $T/tune_sparse24_band_fit_heldout_points.txt $T/tune_blockwise_band_fit_heldout_points.txt | grep .)
  while read -r m n k; do
    [ $(el) -lt ${CAP:-240} ] || break
    timeout 40 $B/qsgemm tune sparse24 --m $m --n $n --k $k --interleave --swizzles 0,4 \
      --configs 128x192x256_c2x1_coop,128x192x256_c1x1_coop --json $o/tune_sparse24_band_fit_tile_vs_cluster.jsonl \
      >> $o/log.txt 2>&1
  done < $T/tune_sparse24_swizzle_band_heldout_points.txt
  echo "tune: $(cat $o/*.jsonl | grep -c .) lines ($(el) s)" >> $S
  timeout 60 $B/qsgemm bench sparse24 --graph --ms 4041,4445,4890,5379,5917 --layers l3-70b.qkv \
    --json $o/sparse24_band_sweep_points.json >> $o/log.txt 2>&1
  timeout 60 $B/qsgemm bench blockwise --graph --ms 2074,2281,2509,2760,3036 --layers l3-70b.down \
    --json $o/blockwise_band_sweep_points.json >> $o/log.txt 2>&1
  echo "sweep points ($(el) s)" >> $S
  cat $S
  exit $rc
fi
if [ "${PART:-}" = blockwise ]; then
  QSGEMM_REQUIRE_GPU=1 timeout 200 $B/qsgemm_gpu_tests --gtest_filter='BlockwiseGpu.TileBandsSameBits:BlockwiseGpu.LastTile*' \
    > $o/gpu_tests.txt 2>&1 || rc=1
  echo "blockwise GPU tests rc=$rc: $(grep -c '^\[       OK \]' $o/gpu_tests.txt) passed, $(tail -1 $o/gpu_tests.txt) ($(el) s)" >> $S
  j=$o/tune_blockwise_band_fit.jsonl
  while read -r mode m n k c; do
    [ $(el) -lt ${CAP:-360} ] || break
    timeout 40 $B/qsgemm tune blockwise --m $m --n $n --k $k --interleave --configs $c --swizzles 0,4,2,1 \
      --json $j >> $o/log.txt 2>&1
  done < bench/results/h100/tuning/tune_blockwise_band_fit_points.txt
  echo "tune: $(grep -c . $j) lines ($(el) s)" >> $S
  timeout 120 $B/qsgemm bench blockwise --graph --ms 2074,2281,2509,2760,3036 --layers l3-70b.down \
    --json $o/blockwise_band_sweep_points.json >> $o/log.txt 2>&1
  echo "sweep points rc=$? ($(el) s)" >> $S
  cat $S
  exit $rc
fi
QSGEMM_REQUIRE_GPU=1 timeout 200 $B/qsgemm_gpu_tests --gtest_filter='Sparse24*:GemmExact.Sparse24*' > $o/gpu_tests.txt 2>&1 || rc=1
echo "sparse GPU tests rc=$rc: $(grep -c '^\[       OK \]' $o/gpu_tests.txt) passed, $(tail -1 $o/gpu_tests.txt) ($(el) s)" >> $S
$B/qsgemm verify > $o/verify.txt 2>&1 || rc=1; echo "verify: $(tail -1 $o/verify.txt) ($(el) s)" >> $S
# 99427f8's held-out check (log §50): at 30 random shapes of 2451-4077 tokens its plan moved from
# the 128x192 tile (bands of 4) to its 2x1 cluster row (CUTLASS's default order); both timed.
h=$o/tune_sparse24_swizzle_band_heldout.jsonl
while read -r m n k; do
  timeout 30 $B/qsgemm tune sparse24 --m $m --n $n --k $k --interleave \
    --configs 128x192x256_c1x1_coop,128x192x256_c2x1_coop --json $h >> $o/log.txt 2>&1
done < bench/results/h100/tuning/tune_sparse24_swizzle_band_heldout_points.txt
echo "heldout: $(grep -c . $h) lines ($(el) s)" >> $S
# One list, both modes alternating in a random order, so that a run cut short by CAP is a sample.
j=$o/tune_sparse24_band_fit.jsonl
while read -r mode m n k c; do
  [ $(el) -lt ${CAP:-420} ] || break
  fa=; [ $mode = fast ] && fa=--fast-accum
  timeout 40 $B/qsgemm tune sparse24 --m $m --n $n --k $k $fa --interleave --configs $c --swizzles 0,4,2,1 \
    --json $j >> $o/log.txt 2>&1
done < bench/results/h100/tuning/tune_sparse24_band_fit_points.txt
echo "tune: $(grep -c . $j) lines ($(el) s)" >> $S
timeout 90 $B/qsgemm bench sparse24 --graph --ms 4041,4445,4890,5379,5917 --layers l3-70b.qkv,l3-8b.gate_up \
  --json $o/sparse24_band_sweep_points.json >> $o/log.txt 2>&1
echo "sweep points rc=$? ($(el) s)" >> $S
cat $S
exit $rc
