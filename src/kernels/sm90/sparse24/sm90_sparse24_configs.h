// The one table of 2:4 sparse FP8 kernel configurations, and the pure heuristic that picks one.
//
// Kernel coordinates: the weight is the sparse A operand, so the kernel's M is the weight's N
// (output channels) and the kernel's N is the token count M. Every configuration keeps
// tile_k >= 128 so that one compressed weight serves all of them (docs/formats.md §4.3).
//
// To add a configuration: append a row to QSGEMM_SPARSE24_CONFIGS and an instantiation line in
// sm90_sparse24_gemm_<out>.cu is generated from the same X-macro, so the table is the only edit.
#pragma once

#include <cstdint>

// X(index, tile_m, tile_n, tile_k, cluster_m, cluster_n, cooperative)
#define QSGEMM_SPARSE24_CONFIGS(X)        \
  X(0, 64, 32, 256, 1, 1, false)          \
  X(1, 64, 64, 256, 1, 1, false)          \
  X(2, 64, 128, 256, 1, 1, false)         \
  X(3, 128, 128, 256, 1, 2, true)         \
  X(4, 128, 256, 128, 1, 1, true)

namespace qsgemm::kernels {

inline constexpr int kSparse24NumConfigs = 5;

// Tokens (the kernel's N) decide the tile: at decode sizes the kernel streams the weight once and
// the narrowest token tile wastes the least work; at prefill sizes big tiles reuse operands.
inline int sparse24_heuristic(int64_t M_tokens, int64_t N_out, int64_t K, int sm_count) {
  (void)K;
  (void)sm_count;
  (void)N_out;
  if (M_tokens <= 32) return 0;
  if (M_tokens <= 64) return 1;
  if (M_tokens <= 128) return 2;
  if (M_tokens <= 1024) return 3;
  return 4;
}

}  // namespace qsgemm::kernels
