// The W4A4 + low-rank wgmma prefill kernel for f32 output (sm90_w4a4_wgmma.cuh): the kWgmma rows of
// kW4A4Configs. One output dtype per translation unit, so that two cores build them in parallel.
#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace qsgemm::kernels {

static_assert(kW4A4Configs[w4a4_named("128x128x128_wgmma_coop")].kernel == W4A4Kernel::kWgmma &&
                  kW4A4Configs[w4a4_named("128x128x128_wgmma_coop")].tile_m == 128 &&
                  kW4A4Configs[w4a4_named("128x128x128_wgmma_coop")].tile_n == 128,
              "the one wgmma row is the 128x128 tile instantiated here");

void run_w4a4_wgmma_f32(const W4A4GemmArgs& a, int config, cudaStream_t stream) {
  sm90_w4a4_wgmma::W4A4WgmmaGemm<float>::run(a, kW4A4Configs[config].label, stream);
}

}  // namespace qsgemm::kernels
