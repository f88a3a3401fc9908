// The pure heuristic that picks a 2:4 sparse FP8 configuration (an index of
// QSGEMM_SPARSE24_CONFIGS) from the problem shape. Kept apart from the kernels so that retuning it
// recompiles only host code. Unit-tested in tests/cpu/test_sparse24_validation.cpp.
#pragma once

#include <cstdint>

namespace qsgemm::kernels {

// Tokens (the kernel's N) decide the tile: at decode sizes the kernel streams the weight once and
// the narrowest token tile wastes the least work; at prefill sizes big tiles reuse operands.
// Measured on the H200 with `qsgemm tune` (docs/performance.md).
inline int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum) {
  (void)K;
  (void)sm_count;
  (void)N_out;
  const int base = fast_accum ? 4 : 0;
  if (M_tokens <= 32) return base + 0;
  if (M_tokens <= 64) return base + 1;
  if (M_tokens <= 256) return base + 2;
  return base + 3;
}

}  // namespace qsgemm::kernels
