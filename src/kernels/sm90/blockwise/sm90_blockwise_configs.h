// The one table of blockwise / groupwise FP8 kernel configurations, the pure heuristic that picks
// one, and the launch arguments shared by the host code (src/blockwise.cpp) and the kernels
// (sm90_blockwise_gemm.cuh). Host-only: no CUTLASS, no device code.
//
// Coordinates: the kernel computes D[M,N] = X[M,K] · W[N,K]ᵀ with X as CUTLASS's A operand (row-major,
// K-major) and W as B ("column-major", K-major); D is Y row-major. No operand swap.
//
// Why these tiles (and not others):
//  * tile_k is 128 in every configuration. The sm90 blockwise mainloop applies the scales once per
//    K tile, so the K tile must equal the scale group (128, docs/formats.md §2); it also promotes
//    the wgmma partial sums into float32 every 128 of K (4 k32 MMAs), the accuracy DeepSeek-V3 asks for.
//  * A 128x128 scale block must cover whole tiles: CUTLASS requires tile_m % granularity_m == 0, so
//    the 64-row tile cannot serve x_scale kBlock128x128 (blockwise_config_supports says which can).
//  * Every configuration runs on the default persistent tile scheduler, which needs no workspace
//    (blockwise_linear allocates nothing).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"
#include "tile_order.h"

namespace qsgemm::kernels {

enum class BlockwiseSchedule : uint8_t {
  kCooperative,  // two consumer warpgroups split one tile along M (tile_m >= 128)
  kPingpong,     // two consumer warpgroups alternate whole tiles (epilogue of one overlaps the other's MMAs)
  kSkinny,       // not CUTLASS: the split-K mma.sync kernel for M <= kSkinnyMaxM (sm90_blockwise_skinny.cu)
};

struct BlockwiseConfig {
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  BlockwiseSchedule schedule;
  // Instantiated for per-token x per-channel scales (kPerRow x kPerRow) only.
  bool per_row_only = false;
  // The mainloop with two partial accumulator tiles (sm90_blockwise_two_partials.cuh) instead of
  // CUTLASS's blockwise one.
  bool two_partials = false;

  // e.g. "128x128x128_c1x1_coop"; "skinny_m32_splitk" for the skinny kernel.
  std::string name() const {
    if (schedule == BlockwiseSchedule::kSkinny) return "skinny_m" + std::to_string(tile_m) + "_splitk";
    return std::to_string(tile_m) + "x" + std::to_string(tile_n) + "x" + std::to_string(tile_k) + "_c" +
           std::to_string(cluster_m) + "x" + std::to_string(cluster_n) +
           (schedule == BlockwiseSchedule::kCooperative ? "_coop" : "_pingpong");
  }
};

// The table. Index = BlockwiseOptions::config. Each row is instantiated for every output dtype and
// every scale-granularity pair it supports (sm90_blockwise_gemm_*.cu); keep it short: one CUTLASS
// kernel costs about a minute of compile time.
// Rows 0-2 run the two-partials mainloop (sm90_blockwise_two_partials.cuh) where the weight scales
// are one per tile (128x128 blocks, per-row): K tile k's MMAs are issued before tile k-1's partial
// sums are promoted. Bit-identical to CUTLASS's mainloop; measured on the H200 against it in one
// run (same kernels otherwise, 1x128 x 128x128 scales, M = 256..8192 on the Llama and DeepSeek-V3
// layers, bench/results/h200/tune_two_partials.txt): 64x128 ping-pong 1.12-1.25x faster, 128x128
// 1x2 cluster 0.99-1.13x, 128x128 1x1 0.95-1.04x (slower only at K >= 14336 with M >= 1024, where
// the 1x2 cluster is then the faster of the two); per-row scales on 128x128 0.97-1.08x.
//   0: the general tile (M > 64 and enough tiles to fill the GPU).
//   1: 64-row tiles for small M (decode-sized batches) and for shapes whose 128-row tile count
//      quantizes badly onto the SMs. Not for x_scale kBlock128x128.
//   2: 128x128 with a 1x2 cluster: the X tile is multicast to the two CTAs of a cluster (half the
//      L2->SM traffic of X), for large weights from M = 4096 (blockwise_choose_config).
//   3: decode sizes (M <= 32): W as the MMA's A operand in m16 tiles (1 or 2 per warp), tokens as
//      n8 tiles, K split over warps and over a cluster of up to 8 CTAs (reduced through distributed
//      shared memory, no workspace). tile_m is the largest M it serves, tile_n the rows of one MMA
//      tile of W. Not CUTLASS; see sm90_blockwise_skinny.cu and SkinnyShape below.
//   4: 128x192 for per-token x per-channel scales only (a 192-wide tile cannot hold whole 128x128
//      weight-scale blocks). Each consumer warpgroup holds a 64x192 float32 tile plus the 64x192
//      wgmma tile being promoted: 192 registers of accumulators, 168 per thread after ptxas with
//      no spills; 128x256 needs 256 and spilled (560 bytes), running at a third of the speed.
//      1.5x the work per tile for 1.25x the operand bytes: measured on the H200 against
//      configuration 0 (same run, bit-identical output), 2-10 % faster on weights of 6144, 24576,
//      28672, 32768 and 57344 rows from M = 512, up to 1.39x where the 192-wide tiles need fewer
//      waves (2112 rows at M = 1024), and 3-25 % slower on 4096, 7168 and (below M = 4096) 8192
//      rows (with CUTLASS's mainloop in configuration 0, tune_perrow_192.txt). Its three register
//      tiles would not fit, so it keeps CUTLASS's mainloop, and the two-partials 128x128 tile now
//      beats it on more shapes; blockwise_per_row_wide_tile says where.
inline constexpr BlockwiseConfig kBlockwiseConfigs[] = {
    {128, 128, 128, 1, 1, BlockwiseSchedule::kCooperative, false, true},
    {64, 128, 128, 1, 1, BlockwiseSchedule::kPingpong, false, true},
    {128, 128, 128, 1, 2, BlockwiseSchedule::kCooperative, false, true},
    {32, 16, 128, 1, 1, BlockwiseSchedule::kSkinny},
    {128, 192, 128, 1, 1, BlockwiseSchedule::kCooperative, true},
};
inline constexpr int kBlockwiseNumConfigs = static_cast<int>(sizeof(kBlockwiseConfigs) / sizeof(kBlockwiseConfigs[0]));

// The skinny configuration (index kSkinnyConfig) serves M <= kSkinnyMaxM only.
inline constexpr int kSkinnyConfig = 3;
inline constexpr int kSkinnyMaxM = kBlockwiseConfigs[kSkinnyConfig].tile_m;
static_assert(kBlockwiseConfigs[kSkinnyConfig].schedule == BlockwiseSchedule::kSkinny, "kSkinnyConfig must name the skinny row");

// How the skinny kernel covers a problem: T token tiles of 8 (M <= 8T); CTAs of KW warps (each a
// K split) over 16·R rows of W (R m16 tiles per warp); row_ctas CTAs along N; clusters of C CTAs
// along K (reduced through distributed shared memory).
inline constexpr int kSkinnyMaxWarps = 4;  // warps per CTA, each a K split (KW = min(4, ceil(K/128)))
struct SkinnyShape {
  int T = 1, R = 1, KW = 1, row_ctas = 1, C = 1;
};
// cluster > 0 forces C (the caller checks C x KW <= ceil(K/128)); 0 chooses it.
SkinnyShape skinny_shape(int M, int N, int K, int sm_count, int cluster = 0);

// The 128x192 per-row configuration (index kPerRowWideConfig).
inline constexpr int kPerRowWideConfig = 4;
static_assert(kBlockwiseConfigs[kPerRowWideConfig].per_row_only && kBlockwiseConfigs[kPerRowWideConfig].tile_n == 192,
              "kPerRowWideConfig must name the 128x192 per-row row");

// Whether configuration `config` is instantiated for the scale granularities (gx, gw) — a valid
// pair of include/qsgemm/blockwise.h. A 128-row scale block must cover whole tiles along M.
bool blockwise_config_supports(int config, ScaleGranularity gx, ScaleGranularity gw);

// Pure heuristic: the configuration index for Y[M,N] = X[M,K]·W[N,K]ᵀ on a GPU with `sm_count` SMs
// (sm_count <= 0: assume an H100/H200 with 132). It does not look at the scale granularities:
// qsgemm::blockwise_choose_config (blockwise.h) refines it for per-row scales
// (blockwise_per_row_wide_tile) and falls back to configuration 0 where the choice does not support
// the pair.
int blockwise_choose_config(int64_t M, int64_t N, int64_t K, int sm_count);
// K up to which blockwise_choose_config takes the 64x128 ping-pong tile above the decode sizes
// (and per-row scales keep it rather than the 128x192 tile).
inline constexpr int64_t kBlockwiseShortK = 512;

// Pure: whether per-row scales should take the 128x192 tile (kPerRowWideConfig) instead of
// `config`, blockwise_choose_config's pick (0, 1 or 2; never the skinny kernel). A wave model fitted
// to the H200 measurements: the tile's time is charged in units of one 64x128 tile, a 64-row wave
// 1.2 (it reloads W for every 64 rows), a 128x128 wave 2 and a 128x192 wave 3; the wide tile is
// taken when it comes to strictly less, from M = 256, and only on weights whose last 192-row tile
// is nearly full (at most 1.5 % of N wasted: 4096 rows waste 3.1 % and measured 8-13 % slower even
// at M = 8192, 7168 rows 1.8 % and 2-3 % slower at M = 8192). Fitted on `qsgemm tune blockwise
// --gx per_row --gw per_row` over the 14 benchmark layers at M = 256..16384 with the two-partials
// mainloop in the 128x128 and 64x128 tiles (bench/results/h200/tune_blockwise_two_partials.jsonl):
// with it the heuristic reaches 0.991 of the fastest configuration (geometric mean over the 84
// points, worst 0.91); without the wide tile 0.983, with the rule fitted before the two-partials
// mainloop (a 128x192 wave charged 2.85, only against the 128x128 tile) 0.978, and the 128x128
// tile alone 0.967.
bool blockwise_per_row_wide_tile(int64_t M, int64_t N, int config, int sm_count);

// Everything one launch needs (validated by src/blockwise.cpp). Scale layouts are those of
// include/qsgemm/blockwise.h; per-row scales (gx == gw == kPerRow) are applied after the K loop
// (two-partials tiles) or in the epilogue (the 128x192 tile).
struct BlockwiseGemmArgs {
  int M = 0, N = 0, K = 0;
  const void* x = nullptr;  int64_t ldx = 0;  // e4m3 [M,K] row-major
  const void* w = nullptr;  int64_t ldw = 0;  // e4m3 [N,K] row-major
  const float* x_scale = nullptr;  int64_t ld_x_scale = 0;  ScaleGranularity gx = ScaleGranularity::kGroup1x128;
  const float* w_scale = nullptr;  ScaleGranularity gw = ScaleGranularity::kBlock128x128;
  const float* bias_f32 = nullptr;  // [N] fp32 bias, or null
  const void* bias_out = nullptr;   // [N] bias in the output dtype, or null (at most one of the two is set)
  void* y = nullptr;  DType y_dtype = DType::kBF16;  int64_t ldy = 0;
  int device = 0, sm_count = 0;
  int skinny_cluster = 0;  // the skinny kernel's cluster size; 0: skinny_shape chooses
  int swizzle = 1, raster = 0;  // CUTLASS's tile order (tile_order.h); the skinny kernel ignores it
  // Split-K (CUTLASS configurations only): > 1 runs the GEMM as `splits` batches over K slices of
  // K / splits (whole 128-wide groups; K % (128 * splits) == 0) into y = float32 [splits][M][ldy],
  // unbiased; run_splitk_reduce (kernels/sm90/splitk/splitk_reduce.h) then writes the real output.
  // src/blockwise.cpp sets it up.
  int splits = 1;
};

// Pure heuristic: the number of K slices for configuration `config` (a CUTLASS tile) on a problem
// with weight scales `gw`, or 1 for none. See src/blockwise.cpp for the rule and its measurements.
int blockwise_split_k(int64_t M, int64_t N, int64_t K, int config, ScaleGranularity gw, int sm_count);
// Largest split blockwise_linear accepts.
inline constexpr int kBlockwiseMaxSplitK = 16;

// CUTLASS's persistent tile scheduler order for the CUTLASS configurations (BlockwiseGemmArgs::
// swizzle / raster; the skinny kernel ignores it). From M = 2048: bands of 4 tiles rastered along M
// (the tokens); measured on the H200 against CUTLASS's default (no swizzle, its raster heuristic)
// on the 128x128 tile: 0-3 % faster at M = 4096, 8 % at 8192 (8192x8192), 1-18 % at 16384; at 2048
// within 0.4 % but one 9 % gain (57344x8192); at 256-1024 up to 2 % slower, hence the threshold
// (bench/results/h200/tune_tile_order.txt). Not for narrow weights: on 2112x7168 (17 tiles along N)
// the benchmark measured it 7-30 % slower at M = 2048-16384 (bench/results/h200/blockwise.json at
// 0a72af7 against 7b32013), so it needs N >= 4096.
inline TileOrder blockwise_tile_order(int64_t M, int64_t N) {
  return M >= 2048 && N >= 4096 ? TileOrder{4, 1} : TileOrder{};
}

// The device address of a float that holds 1.0 on `device` (sm90_blockwise_unit_scale.cu): the
// scale every tile of the per-row family's mainloop reads on the 128x192 tile. Looked up once per device; throws
// qsgemm::Error if the lookup fails.
const float* blockwise_unit_scale(int device);

// x_scale kGroup1x128 with w_scale kGroup1x128 (CUTLASS's mainloop) on `config` has only the kernel
// with bias nodes, which calls without a bias run with null bias pointers: on the 128x128 tile the
// kernel without them measured 0.85-0.86x the speed at K = 8192-16384 (1.02-1.06x at K = 1024;
// bench/results/h200/ab_1d1d_bias_nodes.txt). The other kernels have a no-bias variant.
constexpr bool blockwise_group_pair_keeps_bias_nodes(int config) { return config == 0; }

// Runs configuration `config` (which must support a.gx, a.gw). Throws qsgemm::Error when CUTLASS
// refuses the problem (can_implement, naming its status), would need a workspace, or the launch fails.
void run_blockwise_gemm(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
// One per output dtype without a bias (sm90_blockwise_gemm_<dtype>.cu) and with one
// (sm90_blockwise_gemm_<dtype>_bias.cu); run_blockwise_gemm dispatches to them.
void run_blockwise_gemm_bf16(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
void run_blockwise_gemm_f16(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
void run_blockwise_gemm_f32(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
void run_blockwise_gemm_bf16_bias(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
void run_blockwise_gemm_f16_bias(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
void run_blockwise_gemm_f32_bias(const BlockwiseGemmArgs& a, int config, cudaStream_t stream);
// The skinny kernel (configuration kSkinnyConfig), every output dtype; throws kInvalidArgument for M > kSkinnyMaxM.
void run_blockwise_skinny(const BlockwiseGemmArgs& a, cudaStream_t stream);

}  // namespace qsgemm::kernels
