// The expanded copy of x scales in 128x128 blocks (sm90_blockwise_expand_x_scales.h).
#include "kernels/sm90/blockwise/sm90_blockwise_expand_x_scales.h"

#include <algorithm>

#include "validate.h"

namespace qsgemm::kernels {
namespace {

// A thread per output element, consecutive threads along m: the stores are coalesced, and the 128
// tokens of a block read one scale (a broadcast from L1).
__global__ void expand_x_scales(const float* __restrict__ blocks, int64_t M, int64_t ld, int64_t k_groups,
                                float* __restrict__ groups) {
  const int64_t total = ld * k_groups;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t g = i / ld, m = i - g * ld;
    if (m < M) groups[i] = blocks[(m >> 7) * k_groups + g];
  }
}

}  // namespace

void run_blockwise_expand_x_scales(const float* blocks, int64_t M, int64_t k_groups, float* groups,
                                   cudaStream_t stream, const char* fn) {
  const int64_t ld = m_major_scale_ld(M);
  const int64_t total = ld * k_groups;
  if (total <= 0) return;
  constexpr int kThreads = 256;
  // At most 1024 CTAs: the copy is at most a few MB (M x K/128 floats); the loop covers the rest.
  const auto ctas = static_cast<unsigned>(std::min<int64_t>((total + kThreads - 1) / kThreads, 1024));
  expand_x_scales<<<ctas, kThreads, 0, stream>>>(blocks, M, ld, k_groups, groups);
  detail::check_launch(fn, "blockwise x-scale expansion");
}

}  // namespace qsgemm::kernels
