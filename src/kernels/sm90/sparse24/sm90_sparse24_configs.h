// The one table of 2:4 sparse FP8 kernel configurations (the heuristic that picks one lives in
// src/sparse24_heuristic.h, so that retuning it does not recompile the kernels).
//
// Kernel coordinates: the weight is the sparse A operand, so the kernel's M is the weight's N
// (output channels) and the kernel's N is the token count M. Every configuration keeps
// tile_k >= 128 so that one compressed weight serves all of them (docs/formats.md §4.3).
//
// To add a configuration: append a row to QSGEMM_SPARSE24_CONFIGS (or to the stream-K table below);
// the instantiations in sm90_sparse24_gemm_<out>.cu (sm90_sparse24_gemm_streamk_*.cu) are generated
// from the same X-macro, so the table is the only edit.
#pragma once

#include <cstdint>

// X(index, tile_m, tile_n, tile_k, cluster_m, cluster_n, cooperative, fast_accum)
// fast_accum = false: the FP8 mainloop promotes partial sums to float32 every 4 MMAs (256 of K);
// fast_accum = true: the tensor core accumulates the whole K (faster; error in docs/performance.md).
#define QSGEMM_SPARSE24_CONFIGS(X)             \
  X(0, 64, 32, 256, 1, 1, false, false)        \
  X(1, 64, 64, 256, 1, 1, false, false)        \
  X(2, 64, 128, 256, 1, 1, false, false)       \
  X(3, 128, 128, 256, 1, 2, true, false)       \
  X(4, 64, 32, 256, 1, 1, false, true)         \
  X(5, 64, 64, 256, 1, 1, false, true)         \
  X(6, 64, 128, 256, 1, 1, false, true)        \
  X(7, 128, 128, 256, 1, 2, true, true)        \
  X(8, 128, 256, 128, 1, 2, true, true)

// Stream-K configurations (indices follow the table above): cooperative tiles on CUTLASS's stream-K
// tile scheduler with its heuristic decomposition (data-parallel waves plus K split over the SMs a
// partial last wave would leave idle) and its deterministic reduction (the partial tiles are added
// in K order, so the result does not depend on timing). They need a caller workspace
// (Sparse24LinearOptions::workspace); promoted accumulation (fast_accum = false). Same columns.
#define QSGEMM_SPARSE24_STREAMK_CONFIGS(X)     \
  X(9, 128, 32, 256, 1, 1, true, false)        \
  X(10, 128, 128, 256, 1, 1, true, false)

namespace qsgemm::kernels {

inline constexpr int kSparse24FirstStreamK = 9;  // configurations from here on are stream-K
inline constexpr int kSparse24NumConfigs = 11;

}  // namespace qsgemm::kernels
