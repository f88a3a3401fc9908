// The order in which CUTLASS's persistent tile scheduler walks the output tiles, as the host code
// chooses it per problem (sparse24_tile_order, blockwise_tile_order) and passes it to the launchers
// (Sparse24GemmArgs / BlockwiseGemmArgs::swizzle, raster), and the tiles that order runs. Host-only.
#pragma once

#include <algorithm>
#include <cstdint>

namespace qsgemm::kernels {

struct TileOrder {
  int swizzle = 1;  // output tiles per swizzle band: 1, 2, 4 or 8
  int raster = 0;   // 0: CUTLASS's heuristic, 1: along CUTLASS's M, 2: along its N
};

// The band CUTLASS's persistent schedulers use for `max_swizzle` (TileOrder::swizzle) on ctas_m x
// ctas_n CTA tiles (get_log_swizzle_size: narrower where the shorter side has few tiles).
inline int64_t swizzle_band(int64_t ctas_m, int64_t ctas_n, int max_swizzle) {
  const int64_t shorter = std::min(ctas_m, ctas_n);
  if (max_swizzle >= 8 && shorter >= 6) return 8;
  if (max_swizzle >= 4 && shorter >= 3) return 4;
  if (max_swizzle >= 2 && shorter >= 2) return 2;
  return 1;
}

// The CTA tiles those schedulers run (tile_scheduler_params.h, initialize): both counts, each already
// a multiple of its cluster side, rounded up to a whole band times the cluster. The padded tiles run
// in full (the work tile's is_valid() checks only the linear index): a band of 4 on 18 columns runs 20.
inline int64_t scheduled_ctas(int64_t ctas_m, int64_t ctas_n, int cluster_m, int cluster_n, int max_swizzle) {
  const auto round_up = [](int64_t x, int64_t to) { return (x + to - 1) / to * to; };
  const int64_t band = swizzle_band(ctas_m, ctas_n, max_swizzle);
  return round_up(ctas_m, band * cluster_m) * round_up(ctas_n, band * cluster_n);
}

// The band for a launch that CUTLASS would run in bands of 4: bands of 2 where they run at least
// kFittedBandMinSaving fewer waves on sm_count SMs (bands of 4 pad a count that bands of 2 do not),
// else 4. Measured on an H100 (log §51, same run, h100/tuning/tune_*_band_fit.jsonl): where bands of
// 2 saved 5-25 % of the waves they took 0.75-0.99x the time of bands of 4 (sparse24, 43 points) and
// 0.83-1.01x (blockwise, 20); where they saved 2-5 %, 0.87-1.09x: reading the weight from DRAM
// twice as often can cost more than the waves save. Bands of 1 were slower than bands of 2 at 44 of
// the 106 sparse points and faster at 20 (by 2 %), so they are not used.
inline constexpr double kFittedBandMinSaving = 0.05;
inline int fitted_band(int64_t ctas_m, int64_t ctas_n, int cluster_m, int cluster_n, int sm_count) {
  if (sm_count <= 0) return 4;
  const auto waves = [&](int band) {
    return (scheduled_ctas(ctas_m, ctas_n, cluster_m, cluster_n, band) + sm_count - 1) / sm_count;
  };
  return static_cast<double>(waves(2)) <= (1.0 - kFittedBandMinSaving) * static_cast<double>(waves(4)) ? 2 : 4;
}

}  // namespace qsgemm::kernels
