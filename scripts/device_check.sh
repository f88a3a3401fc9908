#!/usr/bin/env bash
# One call on the H200 does everything: device info and the self-check, the CPU and GPU test
# suites, compute-sanitizer (memcheck) on the GPU suite, a tuning sweep and the benchmarks; results
# go to OUT_DIR (8 files at most come back from a device call: this script writes 8).
#   usage: scripts/device_check.sh OUT_DIR [BIN_DIR=.carry]
#   env:   STEPS       comma list of info,pytest,tests,sanitizer,tune,bench (default: all)
#          PYTEST_ARGS extra pytest arguments for the pytest step (e.g. -k compile); PYTEST_TIMEOUT (300 s)
#          SHARDS      GPU test shards run in parallel (default 4; the CPU reference dominates)
#          SAN_FILTER  gtest filter for the sanitizer run (default: every GPU test)
#          BENCH       sparse24 | blockwise | all (default all), BENCH_ARGS options for both (default
#                      --graph, as the committed results),
#          BW_ARGS     options for the blockwise bench only (default --all-combos: the 1d1d, 2d1d,
#                      2d2d families too: about 2.5x the blockwise bench's ~100 s)
#          TUNE        "M,N,K;M,N,K;..." shapes for `qsgemm tune sparse24`
#          CLIFFS_FAIL 1 (default): a bench JSON that breaks issue #24's rules (scripts/check_cliffs.py,
#                      its report in summary.txt, CLIFFS_LIST violations listed) counts as a failure; 0:
#                      report only
#          TEST_TIMEOUT, SAN_TIMEOUT  seconds for each test / sanitizer shard (default 480: a device
#                      call ends at 600 s; a shard that runs out of time counts as failed)
# The pytest step installs BIN_DIR/whl/qsgemm-*.whl (scripts/stage_device.sh) with
# `pip install --no-deps --no-index --target` into a temporary folder (pytest / safetensors from
# BIN_DIR/whl/deps when the python lacks them) and runs python/tests of this tree with the
# machine's python3 and torch; its output is appended to OUT_DIR/tests.txt (no extra file).
# QSGEMM_REQUIRE_GPU=1 is set: a GPU test that finds no usable GPU fails instead of skipping. The
# script keeps going after a failure (every output and the summary are written), then exits 1 when
# anything failed: the self-check (`qsgemm verify`), a test binary, a sanitizer shard, a bench step,
# the cliff check on a bench's JSON.
# Binaries are built on the CPU machine (scripts/build.sh) and staged with scripts/stage_device.sh.
set -uo pipefail
out="${1:?usage: device_check.sh OUT_DIR [BIN_DIR]}"
bin="${2:-.carry}"
steps="${STEPS:-info,pytest,tests,sanitizer,tune,bench}"
shards="${SHARDS:-4}"
mkdir -p "$out"
ld_orig="${LD_LIBRARY_PATH:-}"  # the pytest step: the wheel's own libqsgemm.so.0 (RUNPATH $ORIGIN), not BIN_DIR's
"$(dirname "$0")/unpack_lib.sh" "$bin"
export LD_LIBRARY_PATH="$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if [ -z "${QSGEMM_CUSPARSELT_LIB:-}" ]; then
  QSGEMM_CUSPARSELT_LIB="$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)/lib"
  export QSGEMM_CUSPARSELT_LIB
fi
export QSGEMM_GIT_COMMIT="$(cat "$bin/COMMIT" 2>/dev/null || echo unknown)"
export QSGEMM_REQUIRE_GPU=1
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
failed=()
fail() { failed+=("$*"); }
has() { case ",$steps," in *",$1,"*) return 0;; esac; return 1; }
tmp="$(mktemp -d)"

if has info; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; "$bin/qsgemm" info;
    "$bin/qsgemm" verify; } >> "$summary" 2>&1
  rc=$?
  note "verify rc=$rc"
  [ "$rc" -eq 0 ] || fail "info/verify (rc=$rc)"
fi
if has pytest; then
  start=$(date +%s)
  site="$tmp/site"
  py="${PYTHON:-python3}"
  whl="$(ls "$bin"/whl/qsgemm-*.whl 2>/dev/null | head -1)"
  if [ -z "$whl" ]; then
    note "pytest: no wheel in $bin/whl (run scripts/stage_device.sh)"
    fail "pytest (no wheel)"
  else
    # pip when the python has it, else the wheel unpacked (a wheel is a zip of site-packages files).
    install_whl() { "$py" -m pip install --quiet --no-deps --no-index --target "$site" "$1" || "$py" -m zipfile -e "$1" "$site"; }
    {
      install_whl "$whl"
      for m in pytest safetensors; do
        "$py" -c "import $m" 2>/dev/null && continue
        for w in "$bin"/whl/deps/*.whl; do install_whl "$w"; done
        break
      done
      "$py" -c "import torchao" 2>/dev/null || for w in "$bin"/whl/torchao/*.whl; do install_whl "$w"; done
    } > "$tmp/pytest_install.txt" 2>&1
    # shellcheck disable=SC2086
    (cd python/tests && LD_LIBRARY_PATH="$ld_orig" PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timeout "${PYTEST_TIMEOUT:-300}" \
       "$py" -m pytest -q -rfEs -p no:cacheprovider ${PYTEST_ARGS:-}) > "$tmp/pytest.txt" 2>&1
    rc=$?
    cat "$tmp/pytest_install.txt" "$tmp/pytest.txt" >> "$out/tests.txt"
    note "pytest: rc=$rc ($(( $(date +%s) - start )) s): $(tail -1 "$tmp/pytest.txt")"
    grep -E "^(FAILED|ERROR) |host overhead" "$tmp/pytest.txt" | tee -a "$summary"
    [ "$rc" -eq 0 ] || fail "pytest (rc=$rc)"
  fi
fi
# GPU tests and the sanitizer run as parallel gtest shards (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX).
start=$(date +%s)
# Each job's exit status is collected (name -> pid), so that a failure is not lost in the parallel run.
jobs_name=()
jobs_pid=()
if has tests; then
  "$bin/qsgemm_cpu_tests" > "$tmp/cpu.txt" 2>&1 &
  jobs_name+=("cpu tests"); jobs_pid+=($!)
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${TEST_TIMEOUT:-480}" "$bin/qsgemm_gpu_tests" > "$tmp/gpu.$i.txt" 2>&1 &
    jobs_name+=("gpu tests shard $i"); jobs_pid+=($!)
  done
fi
if has sanitizer; then
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${SAN_TIMEOUT:-480}" compute-sanitizer --tool memcheck --error-exitcode 97 \
      "$bin/qsgemm_gpu_tests" --gtest_filter="${SAN_FILTER:-*}" > "$tmp/san.$i.txt" 2>&1 &
    jobs_name+=("sanitizer shard $i"); jobs_pid+=($!)
  done
fi
for j in "${!jobs_pid[@]}"; do
  wait "${jobs_pid[$j]}"
  rc=$?
  # A sanitizer shard that SAN_FILTER leaves without tests makes no CUDA call, and
  # compute-sanitizer exits 255 for that ("terminated before first instrumented API call").
  case "${jobs_name[$j]}" in
    "sanitizer shard "*) grep -q '^\[==========\] Running 0 tests' "$tmp/san.${jobs_name[$j]#sanitizer shard }.txt" && rc=0 ;;
  esac
  [ "$rc" -eq 0 ] || fail "${jobs_name[$j]} (rc=$rc)"
done
if has tests; then
  cat "$tmp/cpu.txt" "$tmp"/gpu.*.txt >> "$out/tests.txt"
  note "cpu tests: $(grep -E '^\[  (PASSED|FAILED) ' "$tmp/cpu.txt" | tr '\n' ' ')"
  note "gpu tests: passed $(grep -hE '^\[       OK \]' "$tmp"/gpu.*.txt | wc -l), failed $(grep -hE '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+ \(' "$tmp"/gpu.*.txt | wc -l), skipped $(grep -hE '^\[  SKIPPED \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+ \(' "$tmp"/gpu.*.txt | wc -l)"
  grep -hE '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+ \(' "$tmp"/gpu.*.txt | tee -a "$summary"
fi
if has sanitizer; then
  cat "$tmp"/san.*.txt > "$out/sanitizer.txt"
  note "compute-sanitizer memcheck: $(grep -hE 'ERROR SUMMARY' "$tmp"/san.*.txt | tr '\n' ' ')"
fi
note "tests + sanitizer: $(( $(date +%s) - start )) s"
if has tune; then
  IFS=';' read -ra shapes <<< "${TUNE:-16,8192,28672;4096,8192,8192}"
  for s in "${shapes[@]}"; do
    IFS=',' read -r m n k <<< "$s"
    timeout 60 "$bin/qsgemm" tune sparse24 --m "$m" --n "$n" --k "$k" >> "$out/tune.txt" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || note "tune $s: rc=$rc (a tuning sweep, not a check: not counted as a failure)"
  done
  grep -E "winner" "$out/tune.txt" | tee -a "$summary"
fi
if has bench; then
  for b in sparse24 blockwise; do
    case "${BENCH:-all}" in all|"$b") ;; *) continue;; esac
    start=$(date +%s)
    extra="${BENCH_ARGS---graph}"
    [ "$b" = blockwise ] && extra="$extra ${BW_ARGS---all-combos}"
    # shellcheck disable=SC2086
    timeout "${BENCH_TIMEOUT:-300}" "$bin/qsgemm" bench "$b" --out "$out" $extra > "$out/bench_$b.txt" 2>&1
    rc=$?
    note "bench $b: rc=$rc ($(( $(date +%s) - start )) s)"
    [ "$rc" -eq 0 ] || fail "bench $b (rc=$rc)"
    sed -n '/== summary/,$p' "$out/bench_$b.txt" | tee -a "$summary"
    # Issue #24's rules on what the bench wrote (its report into the summary: 8 files come back).
    for j in "$out/$b"*.json; do
      [ -f "$j" ] || continue
      "${PYTHON:-python3}" scripts/check_cliffs.py "$j" --max-list "${CLIFFS_LIST:-20}" >> "$summary" 2>&1
      rc=$?
      note "cliff check $(basename "$j"): rc=$rc"
      [ "$rc" -eq 0 ] || [ "${CLIFFS_FAIL:-1}" = 0 ] || fail "cliff check $(basename "$j") (rc=$rc)"
    done
  done
fi
rm -rf "$tmp"
if [ "${#failed[@]}" -gt 0 ]; then
  note "FAILED: $(IFS=';'; echo "${failed[*]}")"
  exit 1
fi
note "all steps passed"
