#!/usr/bin/env bash
# One device call for docs/experiments/pending.md: the newest change's GPU tests (GPU_FILTER); then on
# an H200 the benchmark: the sparse users grid (through scripts/device_check.sh: info, `qsgemm
# verify`, the bench, the cliff check), the sparse and blockwise sweeps and the partial-K sweep (PART=2:
# the blockwise grid and the W4A4 rows). On another card only the GPU tests (and PROBES=1's probes).
# Each step starts only while its estimate fits CAP (default 585 s) from the start.
#   usage: scripts/bench_pending.sh OUT_DIR [BIN_DIR=.carry]        (about 560 s; 8 files)
#   env:   GPU_FILTER  a gtest filter of GPU tests to run first (QSGEMM_REQUIRE_GPU=1)
#          CAP         seconds from the start after which no step starts or runs on (default 585)
#          PART=2      the second call instead: the blockwise users grid (--all-combos) and the W4A4
#                      rows at 24-128 tokens on the bench's layers (about 560 s; 5 files)
#          PROBES=1    also the probes of a18afde (W4A4 scale ld and band share, blockwise rows); on
#                      another card than an H200 only the GPU tests run without it
#          CLUSTER=1   also the 2x1 cluster rows against their twins (log §43's probe: 8 weights, 7 M
#                      from 1536 to 16384 tokens, both modes; about 100 s), before the benchmark
#          ANY_CARD=1  run the benchmark on any card as on the H200 (its JSON then belongs in
#                      bench/results/<that card>/: scripts/splice_bench.py keeps the cards apart)
# Then, here: scripts/splice_bench.py / scripts/check_cliffs.py on the JSON files, scripts/tune_ab.py
# on tune_blockwise_rows.jsonl (the rows against their `_wholelast` twins), scripts/tune_regret.py.
set -uo pipefail
out="${1:?usage: bench_pending.sh OUT_DIR [BIN_DIR]}"
B="${2:-.carry}"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
# fits EST: true while EST more seconds end before CAP (default 585) s from the start.
fits() { [ $(( $(el) + $1 )) -lt "${CAP:-585}" ]; }
"$(dirname "$0")/unpack_lib.sh" "$B"
export LD_LIBRARY_PATH="$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export QSGEMM_GIT_COMMIT="$(cat "$B/COMMIT" 2>/dev/null || echo unknown)"
# cuSPARSELt (the sparse sweep's baseline) from the machine's Python package, as device_check.sh finds it.
if [ -z "${QSGEMM_CUSPARSELT_LIB:-}" ]; then
  QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
  export QSGEMM_CUSPARSELT_LIB
fi
q=$B/qsgemm
mkdir -p "$out"
log="$out/log.txt"
# A CLI built without cusparseLt.h (scripts/build.sh without --bench) times no cuSPARSELt baseline.
if grep -q "built without cusparseLt.h" "$q" 2>/dev/null; then
  echo "WARNING: $q was built without cusparseLt.h (scripts/build.sh --bench): no cuSPARSELt baseline" | tee -a "$log" >&2
fi
if [ "${PART:-1}" = 2 ]; then
  # Part 2: the blockwise users grid (every scale family), then the W4A4 rows at 24-128 tokens on
  # the bench's layers (the band tiles and the staging rule, against the fit's layers of part 1).
  STEPS=info,bench BENCH=blockwise CLIFFS_FAIL=0 BENCH_TIMEOUT=480 "$(dirname "$0")/device_check.sh" "$out" "$B"
  checks=$?
  cat "$out/bench_blockwise.txt" >> "$log" 2>/dev/null && rm -f "$out/bench_blockwise.txt"
  fits 40 && timeout $(( ${CAP:-585} - $(el) )) "$q" bench w4a4 --graph --ranks 64 --ms 24,32,33,36,40,48,56,64,72,80,96,112,128 \
    --layers seed,l3-8b.gate_up,l3-8b.down,l3-70b.qkv,l3-70b.gate_up,l3-70b.down --json "$out/w4a4_band.json" >> "$log" 2>&1
  echo "w4a4 band bench: rc=$? ($(el) s)" | tee -a "$out/summary.txt"
  exit "$checks"
fi
sweep() {  # sweep NAME EST ARGS...: one `bench --sweep` into OUT/NAME.json, when EST seconds fit
  local name=$1 est=$2; shift 2
  fits "$est" || { echo "skipped $name ($(el) s)" | tee -a "$out/summary.txt"; return; }
  local d; d=$(mktemp -d)
  timeout $(( ${CAP:-585} - $(el) )) "$q" bench "$@" --sweep --sweep-step 1.1 --graph --out "$d" >> "$log" 2>&1
  echo "$name: rc=$? ($(el) s)" | tee -a "$out/summary.txt"
  mv "$d"/*_sweep.json "$out/$name.json" 2>/dev/null
  python3 scripts/check_cliffs.py "$out/$name.json" --max-list 20 >> "$out/summary.txt" 2>&1
}
grid() {  # the sparse users grid through the device script (info, verify, bench, cliff check)
  local before; before=$(cat "$out/summary.txt" 2>/dev/null)  # the device script starts its summary anew
  STEPS=info,bench BENCH=sparse24 CLIFFS_FAIL=0 BENCH_TIMEOUT=$(( ${CAP:-585} - $(el) )) \
    "$(dirname "$0")/device_check.sh" "$out" "$B"
  checks=$?
  [ -z "$before" ] || { echo "$before"; cat "$out/summary.txt"; } > "$out/summary.t" && mv "$out/summary.t" "$out/summary.txt"
  cat "$out/bench_sparse24.txt" >> "$log" 2>/dev/null && rm -f "$out/bench_sparse24.txt"
}
gpu_tests() {  # GPU_FILTER: GPU tests of the build's newest change (QSGEMM_REQUIRE_GPU=1: a skip fails)
  [ -n "${GPU_FILTER:-}" ] || return 0
  local t; t=$(mktemp)
  QSGEMM_REQUIRE_GPU=1 timeout 120 "$B/qsgemm_gpu_tests" --gtest_filter="$GPU_FILTER" > "$t" 2>&1
  local rc=$? ok; ok=$(grep -c '^\[       OK \]' "$t")
  cat "$t" >> "$log"
  echo "gpu tests $GPU_FILTER: rc=$rc, $ok passed ($(el) s)" | tee -a "$out/summary.txt"
  [ "$rc" -eq 0 ] && [ "$ok" -gt 0 ] || gpu_failed=1  # a filter that matches nothing is a failure too
}
probe_blockwise() {
  # Blockwise at 1-200 tokens: the last token tile's rows against its whole box (twins `_wholelast`).
  for m in 1 16 48 96 160 8 32 200; do
    for nk in 10240x8192 57344x8192 8192x28672 2112x7168 28672x4096; do fits 70 || break
      timeout 30 "$q" tune blockwise --m $m --n "${nk%x*}" --k "${nk#*x}" --whole-last-tile --interleave \
        --configs 64x128x128_c1x1_pingpong,128x128x128_c1x1_coop,skinny_m32_splitk,64x128x128_c1x1_pingpong_clamped,128x128x128_c1x1_coop_clamped \
        --json "$out/tune_blockwise_rows.jsonl" >> "$log" 2>&1
    done; done
  echo "blockwise rows probe ($(el) s)" | tee -a "$out/summary.txt"
}
probe_w4a4() {
  # W4A4 at 33-64 tokens: the 64-token band tile against the int4 kernels, on layers of other models
  # than the bench's (the band share's fit); the heuristic's line checks the staging rule.
  for nk in 27648x5120 14336x4096 18944x3584 5120x13824; do for g in 64 128; do
    for m in 36 40 48 56 64; do fits 65 || break
      timeout 20 "$q" tune w4a4 --m $m --n "${nk%x*}" --k "${nk#*x}" --rank 64 --group $g --interleave \
        --configs decode_16x16_k8,decode_32x32_k8,32x64x128_w1x4,64x128x128_wgmma_coop,128x128x128_wgmma_coop \
        --json "$out/tune_w4a4.jsonl" >> "$log" 2>&1
    done; done; done
  echo "w4a4 probe ($(el) s)" | tee -a "$out/summary.txt"
}
probe_w4a4_ld() {
  # W4A4 decode rows at token counts that are not a multiple of 4: the activation scales with ld = M
  # (4-byte copies) against ld = w4a4_x_scale_ld(M) (TMA boxes), alternated twice.
  for nk in 4096x14336 8192x28672 10240x8192; do for m in 33 37 45; do for rep in 1 2; do
    for ld in $m $(( (m + 3) / 4 * 4 )); do fits 30 || break
      timeout 20 "$q" tune w4a4 --m $m --n "${nk%x*}" --k "${nk#*x}" --rank 64 --group 64 --x-scale-ld $ld \
        --configs decode_16x16_k8,decode_32x32_k8 --interleave --json "$out/tune_w4a4.jsonl" >> "$log" 2>&1
    done; done; done; done
  echo "w4a4 scale-ld probe ($(el) s)" | tee -a "$out/summary.txt"
}
probe_cluster() {
  # The 2x1 cluster rows against their twins, as h100/tuning/tune_sparse24_cluster_*.jsonl (log §43).
  local d=128x192x256_c1x1_coop,128x192x256_c2x1_coop,128x128x256_c1x2_coop
  local f=128x256x128_c1x2_coop_fastaccum,128x192x256_c1x1_coop_fastaccum,128x192x256_c2x1_coop_fastaccum,128x256x128_c2x1_coop_fastaccum
  for nk in 57344x8192 8192x28672 28672x4096 10240x8192 8192x8192 27648x5120 5120x27648 14336x4096; do
    for m in 1536 2300 3340 4445 6509 9530 16384; do fits 40 || break 2
      timeout 25 "$q" tune sparse24 --m $m --n "${nk%x*}" --k "${nk#*x}" --interleave --configs $d \
        --json "$out/tune_sparse24_cluster_default.jsonl" >> "$log" 2>&1
      timeout 25 "$q" tune sparse24 --m $m --n "${nk%x*}" --k "${nk#*x}" --fast-accum --interleave --configs $f \
        --json "$out/tune_sparse24_cluster_fast.jsonl" >> "$log" 2>&1
    done; done
  echo "cluster probe ($(el) s)" | tee -a "$out/summary.txt"
}
checks=0
gpu_failed=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/summary.txt" 2>&1
# The newest change's checks first (its GPU tests, the W4A4 probe); then on the H200 the benchmark
# (bench/results/h200 takes no other card), elsewhere the blockwise probe, the benchmark as time allows.
if [ "${ANY_CARD:-0}" = 1 ] || nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H200; then
  gpu_tests
  [ "${PROBES:-0}" = 1 ] && { probe_w4a4_ld; probe_w4a4; }
  [ "${CLUSTER:-0}" = 1 ] && probe_cluster
  fits 200 && grid
  sweep sparse24_sweep 290 sparse24  # both modes: 210-290 s on an H100 (log §43)
  sweep blockwise_sweep 90 blockwise
  [ "${PROBES:-0}" = 1 ] && probe_blockwise
  sweep blockwise_sweep_partialk 62 blockwise --sweep-layers partialk.4096x14352,l3-8b.down,partialk.4096x4112,l3-8b.o
else
  # The benchmark takes no other card (bench/results/h200); the probes of a18afde with PROBES=1.
  STEPS=info "$(dirname "$0")/device_check.sh" "$out" "$B" > /dev/null; checks=$?
  gpu_tests
  [ "${PROBES:-0}" = 1 ] && { probe_w4a4_ld; probe_w4a4; probe_blockwise; fits 250 && grid; sweep sparse24_sweep 290 sparse24; }
fi
[ "$gpu_failed" -eq 0 ] || checks=1
tail -c 4000000 "$log" > "$log.t" && mv "$log.t" "$log"
exit "$checks"
