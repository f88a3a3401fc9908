// The W4A4 heuristic (src/w4a4_heuristic.h): the measured fastest row per staging.
#include "w4a4_heuristic.h"

namespace qsgemm::kernels {

int w4a4_choose_for_x1(int64_t L, int64_t /*D*/, int64_t /*D1*/, int /*rank*/, int /*sm_count*/, DType x1) {
  if (x1 == DType::kI8) return w4a4_detail::kWgmma;
  return L <= kW4A4DecodeMaxL ? w4a4_detail::kDecode : w4a4_detail::kSmall;
}

int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count) {
  return w4a4_choose_for_x1(L, D, D1, rank, sm_count, DType::kI4x2);
}

}  // namespace qsgemm::kernels
