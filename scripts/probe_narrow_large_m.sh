#!/usr/bin/env bash
# The device check of the 64-row tile's wave cost from 1024 tokens (blockwise_narrow_wave_cost,
# log §52): the 64x128 ping-pong tile against the 128x128 tile, interleaved, at the held-out shapes
# whose plan the cost moves (h100/tuning/tune_blockwise_narrow_large_m_heldout_points.txt: M N K gw,
# 1x128 activations) and at the sweep points it moves; then `qsgemm verify`.
#   usage: scripts/probe_narrow_large_m.sh OUT_DIR [BIN_DIR=.carry]        (about 120 s)
set -u
o=${1:?usage: probe_narrow_large_m.sh OUT_DIR [BIN_DIR]}; B=${2:-.carry}; mkdir -p $o
"$(dirname "$0")/unpack_lib.sh" $B
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64
j=$o/tune_blockwise_narrow_large_m_heldout.jsonl; c=64x128x128_c1x1_pingpong,128x128x128_c1x1_coop
while read -r m n k gw; do
  timeout 30 $B/qsgemm tune blockwise --m $m --n $n --k $k --gx group_1x128 --gw $gw --interleave --configs $c \
    --json $j >> $o/log.txt 2>&1
done < bench/results/h100/tuning/tune_blockwise_narrow_large_m_heldout_points.txt
for mnk in "2074 4096 14336" "2074 4096 4096" "2281 4096 14336" "1064 2112 7168" "1170 2112 7168" "1287 2112 7168" "1416 2112 7168"; do
  set -- $mnk
  timeout 30 $B/qsgemm tune blockwise --m $1 --n $2 --k $3 --interleave --configs $c \
    --json $o/tune_blockwise_narrow_large_m_sweep.jsonl >> $o/log.txt 2>&1
done
$B/qsgemm verify > $o/verify.txt 2>&1; echo "verify rc=$?: $(tail -1 $o/verify.txt)"
echo "lines: $(cat $o/*.jsonl | grep -c .)"
