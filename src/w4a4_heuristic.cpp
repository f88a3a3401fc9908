// The W4A4 heuristic (src/w4a4_heuristic.h). A first rule from the wave count, not yet tuned on the
// device: `qsgemm tune w4a4` sweeps every configuration.
#include "w4a4_heuristic.h"

namespace qsgemm::kernels {

int w4a4_choose(int64_t L, int64_t D, int64_t /*D1*/, int /*rank*/, int sm_count) {
  if (L <= kW4A4DecodeMaxL) return w4a4_detail::kDecode;
  const int64_t square_tiles = ((L + 127) / 128) * ((D + 127) / 128);
  return square_tiles >= sm_count ? w4a4_detail::kSquare : w4a4_detail::kNarrow;
}

}  // namespace qsgemm::kernels
