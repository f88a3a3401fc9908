#!/usr/bin/env bash
# Builds libqsgemm.so.0 with the 2:4 sparse heuristic of an older commit (src/sparse24_heuristic.cpp
# and .h as they were at REV, everything else as in the working tree) into DIR, then restores the
# working tree's heuristic and relinks build/. For held-out checks: `qsgemm tune` run against DIR's
# library marks the old plan (its "heuristic" line) next to the new plan's configurations.
# Host code only (the heuristic recompiles one unit), so it takes about a minute after a build.
#   usage: scripts/heuristic_lib_at.sh REV DIR      (needs build/ from scripts/build.sh)
#   e.g.   scripts/heuristic_lib_at.sh 8e4eff2 .carry/old && gzip -9 .carry/old/libqsgemm.so.0
set -euo pipefail
rev="${1:?usage: heuristic_lib_at.sh REV DIR}"
dir="${2:?usage: heuristic_lib_at.sh REV DIR}"
cd "$(dirname "$0")/.."
files=(src/sparse24_heuristic.cpp src/sparse24_heuristic.h)
# The library's own build target: under Ninja the name `qsgemm` is the CLI's output file.
lib_target=qsgemm
[ -f build/build.ninja ] && lib_target=libqsgemm.so
git rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "heuristic_lib_at: unknown commit $rev" >&2; exit 2; }
[ -f build/build.ninja ] || [ -f build/Makefile ] || { echo "heuristic_lib_at: no build/ (scripts/build.sh)" >&2; exit 2; }
saved="$(mktemp -d)"
cp "${files[@]}" "$saved/"
restore() {
  cp "$saved/sparse24_heuristic.cpp" src/sparse24_heuristic.cpp
  cp "$saved/sparse24_heuristic.h" src/sparse24_heuristic.h
  cmake --build build --target "$lib_target" > /dev/null
  rm -rf "$saved"
}
trap restore EXIT
git show "$rev:src/sparse24_heuristic.cpp" > src/sparse24_heuristic.cpp
git show "$rev:src/sparse24_heuristic.h" > src/sparse24_heuristic.h
# Before the tile order took the SM count (log §51), the current src/sparse24.cpp's call of it needs
# an overload that forwards to the old one.
if ! grep -q sparse24_scheduled_tiles src/sparse24_heuristic.h; then
  cat >> src/sparse24_heuristic.h <<'H'
namespace qsgemm::kernels {
TileOrder sparse24_tile_order(int64_t M_tokens, int64_t N_out, int config, int sm_count, Sparse24Profile profile);
}  // namespace qsgemm::kernels
H
  cat >> src/sparse24_heuristic.cpp <<'C'
namespace qsgemm::kernels {
TileOrder sparse24_tile_order(int64_t M_tokens, int64_t N_out, int config, int, Sparse24Profile profile) {
  return sparse24_tile_order(M_tokens, N_out, config, profile);
}
}  // namespace qsgemm::kernels
C
fi
# Before e6c8c00 the heuristic had no sparse24_choice_model_us, which the current CLI's `qsgemm plan`
# calls: give such a library the current definition (the sum of its launches' modelled times).
if ! grep -q sparse24_choice_model_us src/sparse24_heuristic.h; then
  cat >> src/sparse24_heuristic.h <<'H'
namespace qsgemm::kernels {
double sparse24_choice_model_us(const Sparse24Choice& plan, int64_t M_tokens, int64_t N_out, int64_t K, int sm_count,
                                Sparse24Profile profile = Sparse24Profile::kH200);
}  // namespace qsgemm::kernels
H
  cat >> src/sparse24_heuristic.cpp <<'C'
namespace qsgemm::kernels {
double sparse24_choice_model_us(const Sparse24Choice& p, int64_t M, int64_t N, int64_t K, int sm_count,
                                Sparse24Profile profile) {
  if (p.tail_config < 0) return sparse24_model_us(p.config, M, N, K, sm_count, profile);
  return sparse24_model_us(p.config, p.main_rows, N, K, sm_count, profile) +
         sparse24_model_us(p.tail_config, p.tail_rows, N, K, sm_count, profile);
}
}  // namespace qsgemm::kernels
C
fi
cmake --build build --target "$lib_target" > /dev/null
mkdir -p "$dir"
cp -L build/libqsgemm.so.0 "$dir/libqsgemm.so.0"
echo "heuristic_lib_at: $dir/libqsgemm.so.0 has the sparse heuristic of $(git rev-parse --short "$rev")"
