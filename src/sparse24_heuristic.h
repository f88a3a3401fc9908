// The pure heuristic that picks a 2:4 sparse FP8 configuration (an index of
// QSGEMM_SPARSE24_CONFIGS) from the problem shape. Kept apart from the kernels so that retuning it
// recompiles only host code. Unit-tested in tests/cpu/test_sparse24_validation.cpp.
#pragma once

#include <cstdint>

namespace qsgemm::kernels {

// Tokens (the kernel's N) decide the tile. At decode sizes the kernel streams the weight once and
// the narrowest token tile wastes the least work; past ~128 tokens the 128-row cooperative tile with
// a 1x2 cluster wins, and with fast accumulation the 128x256x128 tile (its accumulators fit only
// without promotion) wins from 512 to 8192 tokens. Thresholds from `qsgemm tune sparse24` on the H200
// (N = 8192, K = 8192 and 28672; docs/performance.md has the sweep).
inline int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count, bool fast_accum) {
  (void)K;
  (void)sm_count;
  (void)N_out;
  if (!fast_accum) {
    if (M_tokens <= 32) return 0;   // 64x32x256 ping-pong
    if (M_tokens <= 64) return 1;   // 64x64x256 ping-pong
    if (M_tokens <= 128) return 2;  // 64x128x256 ping-pong
    return 3;                       // 128x128x256 cooperative, cluster 1x2
  }
  if (M_tokens <= 32) return 4;
  if (M_tokens <= 64) return 5;
  if (M_tokens <= 128) return 6;
  if (M_tokens <= 256 || M_tokens > 8192) return 7;
  return 8;                         // 128x256x128 cooperative, cluster 1x2
}

}  // namespace qsgemm::kernels
