// The W4A4 + low-rank wgmma kernel's band rows (64, 80, 96, 112 tokens: kW4A4BandTiles) for f16
// output (sm90_w4a4_wgmma.cuh). A translation unit of their own, apart from the 128-token rows, so
// that two cores build them in parallel. CuTe's wgmma selectors offer N = 80 and 112 (not powers of
// two, nor multiples of 32) only with its extended shapes, defined before any CuTe header.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace qsgemm::kernels {

void run_w4a4_wgmma_band_f16(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  sm90_w4a4_wgmma::run_wgmma_band<__half>(a, config, stream);
}

}  // namespace qsgemm::kernels
