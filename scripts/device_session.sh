#!/usr/bin/env bash
# The device calls of docs/experiments/pending.md, one script per call, in the order they pay:
#   scripts/device_session.sh CALL [BIN_DIR=.carry]      on the device; results in $OUT
#   bench    on an H200: scripts/bench_pending.sh (the sparse users grid, the sparse and blockwise
#            sweeps into bench/results/h200/); on another card the check owed by the newest rule
#            (scripts/probe_narrow_large_m.sh) and the blockwise sweeps (bench/results/<card>/)
#   grid2    on an H200: PART=2 scripts/bench_pending.sh (the blockwise users grid, the W4A4 rows)
#   heldout  the held-out checks owed (the narrow blockwise tile from 1024 tokens, the 32-token
#            stream-K tile up to 12 columns) and the probes of pending 11 and 12 (either card; the
#            band's and the sparse heuristic's H200-profile checks on an H200 only), while CAP allows
# Each call writes $OUT/summary.txt and one $OUT/CALL.tgz (a call returns at most 8 files).
# BIN_DIR: scripts/stage_device.sh's build (the library may be gzipped: libqsgemm.so.0.gz), or, when
# it holds no library, scripts/device_build.sh builds one there first (~5 min of the call) from what
# `scripts/device_build.sh --stage` put in BIN_DIR/deps. The heldout call wants the old libraries of
# scripts/heldout_pending.sh in BIN_DIR/old71, old72, old72b (gzipped; skipped when missing).
# CAP: seconds from the start after which no step starts (default 575; a call ends at 600).
set -uo pipefail
cd "$(dirname "$0")/.."
call="${1:?usage: device_session.sh bench|grid2|heldout [BIN_DIR]}"
case "$call" in bench|grid2|heldout) ;; *) echo "device_session: unknown call '$call'" >&2; exit 2 ;; esac
B="${2:-.carry}"
out="${OUT:?OUT: the output folder of the device call}"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cap=${CAP:-575}
scripts/unpack_lib.sh "$B" "$B/old71" "$B/old72" "$B/old72b"
if [ ! -f "$B/libqsgemm.so.0" ]; then
  scripts/device_build.sh "$B" > "$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 2; }
  tail -1 "$out/build.txt"
fi
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64"
export QSGEMM_GIT_COMMIT="$(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
export QSGEMM_CUSPARSELT_LIB
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$card; build $QSGEMM_GIT_COMMIT; $(el) s"
h200=0; case "$card" in *H200*) h200=1;; esac
o="$out/$call"; mkdir -p "$o"
rc=0
case "$call" in
  bench)
    if [ $h200 = 1 ]; then
      CAP=$(( cap - $(el) )) scripts/bench_pending.sh "$o" "$B"; rc=$?
    else
      scripts/probe_narrow_large_m.sh "$o" "$B" > "$o/summary.txt" 2>&1 || rc=1
      for layers in "" partialk.4096x14352,l3-8b.down,partialk.4096x4112,l3-8b.o; do
        [ $(( $(el) + 90 )) -lt "$cap" ] || break
        d=$(mktemp -d)
        timeout $(( cap - $(el) )) "$B/qsgemm" bench blockwise --sweep --sweep-step 1.1 --graph \
          ${layers:+--sweep-layers $layers} --out "$d" >> "$o/log.txt" 2>&1
        name=blockwise_sweep${layers:+_partialk}
        mv "$d"/*_sweep.json "$o/$name.json" 2>/dev/null
        echo "$name ($(el) s)" >> "$o/summary.txt"
        python3 scripts/check_cliffs.py "$o/$name.json" --max-list 20 >> "$o/summary.txt" 2>&1
      done
    fi ;;
  grid2)
    [ $h200 = 1 ] || { echo "not an H200: the users grid belongs to bench/results/h200"; exit 3; }
    PART=2 CAP=$(( cap - $(el) )) scripts/bench_pending.sh "$o" "$B"; rc=$? ;;
  heldout)
    p="$o/probes"; mkdir -p "$p"
    scripts/probe_narrow_large_m.sh "$o/narrow" "$B" > "$o/summary.txt" 2>&1 || rc=1
    echo "narrow 64-row tile: $(el) s" >> "$o/summary.txt"
    # The 32-token stream-K tile up to 12 columns (log §53): its held-out shapes (10 row tiles, K other
    # than the fit's 8192, 387-415 tokens), the old plan (sk32) against the new (64x128), both modes
    j="$p/tune_sparse24_sk32_12cols_heldout.jsonl"; n=0
    while read -r m nn k; do [ $(( $(el) + 40 )) -lt "$cap" ] || break
      modes=(""); [ $(( n % 2 )) = 0 ] && modes+=(--fast-accum); n=$(( n + 1 ))
      for fa in "${modes[@]}"; do
        timeout 20 "$B/qsgemm" tune sparse24 --m $m --n $nn --k $k ${fa:+$fa} --interleave \
          --configs 128x32x256_c1x1_coop_streamk,64x128x256_c1x1_pingpong --json "$j" >> "$p/log.txt" 2>&1
      done
    done < bench/results/h100/tuning/tune_sparse24_sk32_12cols_heldout_points.txt
    echo "sk32 held-out: $(el) s" >> "$o/summary.txt"
    # pending 12: l3-70b.down's tile orders at its low-TFLOP/s token counts and their neighbours
    for m in 6509 7160 10483 12684 15347; do [ $(( $(el) + 30 )) -lt "$cap" ] || break
      timeout 40 "$B/qsgemm" tune blockwise --m $m --n 8192 --k 28672 --interleave --swizzles 0,4,2,1 \
        --configs 128x128x128_c1x2_coop,128x128x128_c1x1_coop --json "$p/tune_blockwise_down_orders.jsonl" >> "$p/log.txt" 2>&1
    done
    echo "pending 12: $(el) s" >> "$o/summary.txt"
    # pending 11: split-K on weights of 32 row tiles at 55-128 tokens
    for nk in 4096x4096 4096x14336 4096x7168; do for m in 55 67 81 99 119 128; do
      [ $(( $(el) + 20 )) -lt "$cap" ] || break 2
      timeout 20 "$B/qsgemm" tune blockwise --m $m --n ${nk%x*} --k ${nk#*x} --interleave --split-k 1,2,4 \
        --configs 64x128x128_c1x1_pingpong,128x128x128_c1x1_coop --json "$p/tune_blockwise_splitk_32rows.jsonl" >> "$p/log.txt" 2>&1
    done; done
    echo "pending 11: $(el) s" >> "$o/summary.txt"
    if [ $h200 = 1 ] && [ $(( $(el) + 150 )) -lt "$cap" ]; then
      PART=heldout CAP=$(( cap - 70 - $(el) )) scripts/probe_swizzle_band.sh "$o/band" "$B" >> "$o/summary.txt" 2>&1 || rc=1
      echo "band: $(el) s" >> "$o/summary.txt"
    fi
    if [ $h200 = 1 ] && [ -d "$B/old72b" ] && [ $(( $(el) + 200 )) -lt "$cap" ]; then
      scripts/heldout_pending.sh "$o/sparse" "$B" >> "$o/summary.txt" 2>&1 || rc=1
      echo "sparse held-out: $(el) s" >> "$o/summary.txt"
    fi ;;
esac
cp "$o/summary.txt" "$out/summary.txt" 2>/dev/null
tar czf "$out/$call.tgz" -C "$out" "$call" && rm -rf "$o"
echo "$call: rc=$rc ($(el) s)"
cat "$out/summary.txt" 2>/dev/null | tail -40
exit $rc
