// The one table of 2:4 sparse FP8 kernel configurations (the heuristic that picks one lives in
// src/sparse24_heuristic.h, so that retuning it does not recompile the kernels).
//
// Kernel coordinates: the weight is the sparse A operand, so the kernel's M is the weight's N
// (output channels) and the kernel's N is the token count M. Every configuration keeps
// tile_k >= 128 so that one compressed weight serves all of them (docs/formats.md §4.3).
//
// To add a configuration: append a row to one of the tables below (a new row of the first table
// grows five ~10 GB translation units: prefer the wide table, which has units of its own); the
// instantiations in sm90_sparse24_gemm_<out>.cu (sm90_sparse24_gemm_wide_*.cu,
// sm90_sparse24_gemm_streamk_*.cu) are generated from the same X-macros, and the indices of later
// tables shift.
#pragma once

#include <cstdint>

// X(index, tile_m, tile_n, tile_k, cluster_m, cluster_n, cooperative, fast_accum, two_partials)
// fast_accum = false: the FP8 mainloop promotes partial sums to float32 every 4 MMAs (256 of K);
// fast_accum = true: the tensor core accumulates the whole K (faster; error in docs/performance.md).
// two_partials (promoted accumulation only): our mainloop (sm90_sparse24_two_partials.cuh), which
// keeps two partial tiles in flight instead of waiting for every K tile's MMAs; same output bits.
// Measured on the H200 against CUTLASS's mainloop, same run (bench/results/h200/
// tune_sparse_two_partials.txt, 12 layers): 64x32 1.02-1.22x at M <= 32; 64x64 1.0-1.25x at M = 64;
// 64x128 1.0-1.25x at M = 128; 128x128 1x2 1.03-1.09x from M = 256; stream-K 128x128 0.98-1.02x
// at M = 128 and 1.02-1.09x at M >= 4096; stream-K 128x32 0.97-1.06x at M <= 64. Not on the
// 128x192 tile (three of its accumulator tiles need 288 registers).
#define QSGEMM_SPARSE24_CONFIGS(X)             \
  X(0, 64, 32, 256, 1, 1, false, false, true)   \
  X(1, 64, 64, 256, 1, 1, false, false, true)   \
  X(2, 64, 128, 256, 1, 1, false, false, true)  \
  X(3, 128, 128, 256, 1, 2, true, false, true)  \
  X(4, 64, 32, 256, 1, 1, false, true, false)   \
  X(5, 64, 64, 256, 1, 1, false, true, false)   \
  X(6, 64, 128, 256, 1, 1, false, true, false)  \
  X(7, 128, 128, 256, 1, 2, true, true, false)  \
  X(8, 128, 256, 128, 1, 2, true, true, false)

// More data-parallel configurations, kept in translation units of their own (sm90_sparse24_gemm_wide_*.cu)
// so that the units of the table above do not grow (each peaks at ~10 GB in cicc, docs/build.md).
// Same columns. 9: 128x192 with promoted accumulation: 192 token columns keep the accumulators and
// their promoted copy at 192 registers a thread (128x256 would need 256); from 8192 tokens
// (src/sparse24_heuristic.h).
#define QSGEMM_SPARSE24_WIDE_CONFIGS(X)        \
  X(9, 128, 192, 256, 1, 1, true, false, false)

// Stream-K configurations (indices follow the tables above): cooperative tiles on CUTLASS's stream-K
// tile scheduler with its heuristic decomposition (data-parallel waves plus K split over the SMs a
// partial last wave would leave idle) and its deterministic reduction (the partial tiles are added
// in K order, so the result does not depend on timing). They need a caller workspace
// (Sparse24LinearOptions::workspace); promoted accumulation (fast_accum = false). Same columns.
#define QSGEMM_SPARSE24_STREAMK_CONFIGS(X)     \
  X(10, 128, 32, 256, 1, 1, true, false, true)  \
  X(11, 128, 128, 256, 1, 1, true, false, true)

namespace qsgemm::kernels {

inline constexpr int kSparse24FirstWide = 9;      // QSGEMM_SPARSE24_WIDE_CONFIGS from here on
inline constexpr int kSparse24FirstStreamK = 10;  // QSGEMM_SPARSE24_STREAMK_CONFIGS from here on
// After the CUTLASS tables, configuration 12 is the split-K decode kernel (not CUTLASS, not in the
// tables above: kSparse24SkinnyConfig in sparse24_skinny.h); src/sparse24.cpp runs it directly.
inline constexpr int kSparse24NumConfigs = 13;

}  // namespace qsgemm::kernels
