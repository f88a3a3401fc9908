#!/usr/bin/env bash
# One call on the H200 does everything: device info, the self-check, the CPU and GPU test suites,
# compute-sanitizer (memcheck) on the GPU suite, and the benchmark; results go to OUT_DIR.
#   usage: scripts/device_check.sh OUT_DIR [BIN_DIR=.carry]
#   env:   STEPS   comma list of info,tests,sanitizer,bench,tune   (default: all but tune)
#          BENCH   which benchmark (sparse24 | blockwise | all; default all), BENCH_ARGS extra options
#          SAN_FILTER  gtest filter for the sanitizer run (default: every GPU test)
#          TUNE    "M,N,K;M,N,K;..." shapes for `qsgemm tune sparse24`
# Binaries are built on the CPU machine (scripts/build.sh) and staged with scripts/stage_device.sh.
# At most 8 files come back from a device call: this script writes 7.
set -uo pipefail
out="${1:?usage: device_check.sh OUT_DIR [BIN_DIR]}"
bin="${2:-.carry}"
steps="${STEPS:-info,tests,sanitizer,bench}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if [ -z "${QSGEMM_CUSPARSELT_LIB:-}" ]; then
  QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
  export QSGEMM_CUSPARSELT_LIB
fi
export QSGEMM_GIT_COMMIT="$(cat "$bin/COMMIT" 2>/dev/null || echo unknown)"
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
has() { case ",$steps," in *",$1,"*) return 0;; esac; return 1; }

if has info; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; "$bin/qsgemm" info;
    "$bin/qsgemm" verify; } > "$out/info_verify.txt" 2>&1
  note "verify: $(tail -1 "$out/info_verify.txt")"
fi
if has tests; then
  start=$(date +%s)
  "$bin/qsgemm_cpu_tests" > "$out/tests.txt" 2>&1
  note "cpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/tests.txt" | tr '\n' ' ')"
  "$bin/qsgemm_gpu_tests" --gtest_output="json:$out/gpu_tests.json" >> "$out/tests.txt" 2>&1
  note "gpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/tests.txt" | tail -3 | tr '\n' ' ') ($(( $(date +%s) - start )) s)"
fi
if has sanitizer; then
  start=$(date +%s)
  compute-sanitizer --tool memcheck --error-exitcode 97 "$bin/qsgemm_gpu_tests" --gtest_filter="${SAN_FILTER:-*}" \
    > "$out/sanitizer.txt" 2>&1
  note "compute-sanitizer memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$out/sanitizer.txt" | tail -1) ($(( $(date +%s) - start )) s)"
fi
if has tune; then
  IFS=';' read -ra shapes <<< "${TUNE:-16,8192,28672;4096,8192,8192}"
  for s in "${shapes[@]}"; do
    IFS=',' read -r m n k <<< "$s"
    "$bin/qsgemm" tune sparse24 --m "$m" --n "$n" --k "$k" >> "$out/tune.txt" 2>&1
  done
  note "tune: $(grep -c winner "$out/tune.txt") shapes"; grep -E "winner|tune " "$out/tune.txt" | tee -a "$summary"
fi
if has bench; then
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$bin/qsgemm" bench "${BENCH:-all}" --out "$out" ${BENCH_ARGS:-} > "$out/bench.txt" 2>&1
  note "bench: rc=$? ($(( $(date +%s) - start )) s)"
  grep -E "geomean|geo-mean|below|copy bandwidth|DeepGEMM|summary" "$out/bench.txt" | head -40 | tee -a "$summary"
fi
cat "$summary"
