// The W4A4 + low-rank wgmma prefill kernel for f32 output (sm90_w4a4_wgmma.cuh): the 128-token kWgmma
// rows of kW4A4Configs; the band rows go to sm90_w4a4_wgmma_band_f32.cu. One output dtype per
// translation unit, so that two cores build them in parallel.
#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace qsgemm::kernels {

void run_w4a4_wgmma_f32(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  if (kW4A4Configs[config].tile_m != 128) return run_w4a4_wgmma_band_f32(a, config, stream);
  sm90_w4a4_wgmma::run_wgmma<float>(a, config, stream);
}

}  // namespace qsgemm::kernels
