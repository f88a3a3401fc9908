// The W4A4 heuristic (src/w4a4_heuristic.h): the measured fastest row per staging and L band.
#include "w4a4_heuristic.h"

namespace qsgemm::kernels {

int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int /*rank*/, int sm_count, DType x1, int /*group*/) {
  if (x1 == DType::kE4M3) return w4a4_detail::kWgmma;
  if (L > kW4A4DecodeMaxL) return w4a4_detail::kSmall;
  if (L <= 8) {
    // D · D1 / 2 packed bytes against the per-SM threshold (double: no overflow at any valid shape).
    const double bytes_per_sm = static_cast<double>(D) * static_cast<double>(D1) / 2.0 / sm_count;
    return bytes_per_sm >= static_cast<double>(kW4A4DecodeRingMinBytesPerSm) ? w4a4_detail::kDecode8Ring
                                                                              : w4a4_detail::kDecode8;
  }
  if (L <= 16) return w4a4_detail::kDecode16;
  return w4a4_detail::kDecode32;
}

int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group) {
  return w4a4_choose_for_x1(L, D, D1, rank, sm_count, L >= kW4A4WgmmaMinL ? DType::kE4M3 : DType::kI4x2, group);
}

}  // namespace qsgemm::kernels
