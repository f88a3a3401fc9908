// The W4A4 heuristic (src/w4a4_heuristic.h). A first rule, not yet tuned on the device: `qsgemm tune
// w4a4` sweeps every configuration.
#include "w4a4_heuristic.h"

namespace qsgemm::kernels {

int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t /*D1*/, int /*rank*/, int sm_count, DType x1) {
  if (x1 == DType::kI8) return w4a4_detail::kWgmma;
  if (L <= kW4A4DecodeMaxL) return w4a4_detail::kDecode;
  for (const int c : {w4a4_detail::kSquare, w4a4_detail::kNarrow, w4a4_detail::kSmall}) {
    const int64_t tm = kW4A4Configs[c].tile_m, tn = kW4A4Configs[c].tile_n;
    const int64_t ctas = ((L + tm - 1) / tm) * ((D + tn - 1) / tn);
    if (4 * ctas >= 3 * static_cast<int64_t>(sm_count)) return c;
  }
  return w4a4_detail::kDecode;
}

int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count) {
  return w4a4_choose_for_x1(L, D, D1, rank, sm_count, L <= kW4A4DecodeMaxL ? DType::kI4x2 : DType::kI8);
}

}  // namespace qsgemm::kernels
