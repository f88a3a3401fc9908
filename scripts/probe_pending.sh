#!/usr/bin/env bash
# One device call for docs/experiments/pending.md (main's build, staged with scripts/stage_device.sh):
# the whole GPU suite, compute-sanitizer on the newest tests, then the probes of the last token
# tile's rows, the band tiles and the x-block copy that the refits there need, each bounded in time.
#   usage: scripts/probe_pending.sh OUT_DIR [BIN_DIR=.carry]      (about 590 s; 8 files)
# Then, here: scripts/tune_ab.py OUT_DIR/tune_*_rows.jsonl (the last token tile's rows against its
# whole box, log §32), scripts/tune_regret.py on every tune_*.jsonl (the heuristic's picks), and
# scripts/tune_compare.py for the band tiles against the 128-token tile (log §30, §31) and the
# copy's tiles against the 128-row one (§29).
set -uo pipefail
out="${1:?usage: probe_pending.sh OUT_DIR [BIN_DIR]}"
B="${2:-.carry}"
t0=$(date +%s)  # the probes stop starting new runs at fixed times from here, whatever the checks took
# The checks first, by the device script: `qsgemm verify`, the CPU suite, the whole GPU suite in 4
# shards and compute-sanitizer on the new tests (summary.txt, tests.txt, sanitizer.txt).
san='BlockwiseGpu.LastTileRowsSameBitsAsWholeBox:Sparse24Gpu.LastColumnRowsSameBitsAsWholeBox:BlockwiseGpu.SplitKBeyondTheReach'
STEPS=info,tests,sanitizer TEST_TIMEOUT=200 SAN_TIMEOUT=120 \
  SAN_FILTER="$san:BlockwiseGpu.XBlocksThroughTheExpandedCopy:W4A4Gpu.WgmmaBandTiles" \
  "$(dirname "$0")/device_check.sh" "$out" "$B"
checks=$?
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
q=$B/qsgemm; tmp=$(mktemp -d)
el() { echo $(( $(date +%s) - t0 )); }
left() { [ "$(el)" -lt "$1" ]; }
# A family whose token-row test did not pass (failed or out of time) is probed with the whole box
# only, so the other probes still return figures.
rows_flag() {
  if grep -q "^\[       OK \] $1 (" "$out/tests.txt" 2>/dev/null; then echo --whole-last-tile
  else echo "$1 did not pass: its family's probes time the whole box only" >> "$out/summary.txt"
    echo --whole-last-tile-only; fi
}
bw_rows=$(rows_flag BlockwiseGpu.LastTileRowsSameBitsAsWholeBox)
sp_rows=$(rows_flag Sparse24Gpu.LastColumnRowsSameBitsAsWholeBox)
# Blockwise: the last token tile's rows against its whole box (and the decode kernel, the clamped rows).
for m in 1 16 48 96 160 8 32 200; do
  for nk in 10240x8192 57344x8192 8192x28672 2112x7168 28672x4096; do left 230 || break
    timeout 40 "$q" tune blockwise --m $m --n "${nk%x*}" --k "${nk#*x}" $bw_rows --interleave \
      --configs 64x128x128_c1x1_pingpong,128x128x128_c1x1_coop,skinny_m32_splitk,64x128x128_c1x1_pingpong_clamped,128x128x128_c1x1_coop_clamped \
      --json "$out/tune_blockwise_rows.jsonl" >> "$tmp/probe.txt" 2>&1
  done; done
echo "blockwise rows probe $(el) s" | tee -a "$out/summary.txt"
# Sparse: the last token column's rows against its whole box, the narrow, band and between tiles.
for m in 1 48 67 100 288 9 16 74 118 40; do
  for nk in 57344x8192 10240x8192 8192x28672 6144x4096; do left 380 || break
    timeout 40 "$q" tune sparse24 --m $m --n "${nk%x*}" --k "${nk#*x}" $sp_rows --interleave \
      --configs 64x8x256_c1x1_pingpong,64x16x256_c1x1_pingpong,64x32x256_c1x1_pingpong,64x64x256_c1x1_pingpong,64x72x256_c1x1_pingpong,64x80x256_c1x1_pingpong,64x96x256_c1x1_pingpong,64x112x256_c1x1_pingpong,64x128x256_c1x1_pingpong,128x128x256_c1x2_coop,128x128x256_c1x1_coop_streamk,skinny_m32_splitk \
      --json "$out/tune_sparse24_rows.jsonl" >> "$tmp/probe.txt" 2>&1
  done; done
echo "sparse rows probe $(el) s" | tee -a "$out/summary.txt"
# W4A4: the band tiles (log §31) against the 128-token tile and the decode kernels (33-64 tokens:
# where the heuristic still runs the decode kernels, which the 64-token band tile beat on the H100).
for nk in 59136x8192 27648x5120 14336x4096; do for g in 64 128; do
  for m in 64 80 96 112 128 40 56; do left 470 || break
    timeout 30 "$q" tune w4a4 --m $m --n "${nk%x*}" --k "${nk#*x}" --rank 64 --group $g --interleave \
      --configs decode_32x32_k8,32x64x128_w1x4,128x128x128_wgmma_coop,64x128x128_wgmma_coop,80x128x128_wgmma_coop,96x128x128_wgmma_coop,112x128x128_wgmma_coop \
      --json "$out/tune_w4a4_band_tiles.jsonl" >> "$tmp/probe.txt" 2>&1
  done; done; done
echo "w4a4 probe $(el) s" | tee -a "$out/summary.txt"
# Blockwise x blocks beyond 128 tokens: the 128-row tile (rows only and whole) against the copy's tiles (log §29).
for nk in 14336x4096 27648x5120 59136x8192; do for m in 160 230 300; do left 540 || break
  timeout 30 "$q" tune blockwise --m $m --n "${nk%x*}" --k "${nk#*x}" --gx block_128x128 --gw block_128x128 --split-k 1 \
    $bw_rows --configs 128x128x128_c1x1_coop,64x128x128_c1x1_pingpong,64x128x128_c1x1_pingpong_clamped \
    --interleave --json "$out/tune_blockwise_xblock_copy.jsonl" >> "$tmp/probe.txt" 2>&1
done; done
echo "xblock probe $(el) s" | tee -a "$out/summary.txt"
tail -c 80000 "$tmp/probe.txt" > "$out/probe.txt"
exit "$checks"
