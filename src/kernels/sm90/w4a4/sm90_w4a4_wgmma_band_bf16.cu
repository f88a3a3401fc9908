// The W4A4 + low-rank wgmma kernel's band rows (64, 80, 96, 112 tokens: kW4A4BandTiles) for bf16
// output (sm90_w4a4_wgmma.cuh). A translation unit of their own, apart from the 128-token rows, so
// that two cores build them in parallel.
#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace qsgemm::kernels {

void run_w4a4_wgmma_band_bf16(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  sm90_w4a4_wgmma::run_wgmma_band<__nv_bfloat16>(a, config, stream);
}

}  // namespace qsgemm::kernels
