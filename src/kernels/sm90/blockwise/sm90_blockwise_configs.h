// The one table of blockwise / groupwise FP8 kernel configurations and the launch arguments shared
// by the host code (src/blockwise.cpp) and the kernels (sm90_blockwise_gemm.cuh). Host-only: no
// CUTLASS, no device code. The heuristic that picks a row is src/blockwise_heuristic.{h,cpp}.
//
// Coordinates: the kernel computes D[M,N] = X[M,K] · W[N,K]ᵀ with X as CUTLASS's A operand (row-major,
// K-major) and W as B ("column-major", K-major); D is Y row-major. No operand swap.
//
// Why these tiles (and not others):
//  * tile_k is 128 in every configuration. The sm90 blockwise mainloop applies the scales once per
//    K tile, so the K tile must equal the scale group (128, docs/formats.md §2); it also promotes
//    the wgmma partial sums into float32 every 128 of K (4 k32 MMAs), the accuracy DeepSeek-V3 asks for.
//  * A 128x128 scale block must cover whole tiles: CUTLASS requires tile_m % granularity_m == 0, so
//    the 64-row tile cannot read x_scale kBlock128x128, except up to 128 tokens, where those scales
//    are one row of blocks that it reads as 1x128 groups; beyond, blockwise_linear gives it (and the
//    clamped rows) a copy of them as 1x128 groups (sm90_blockwise_expand_x_scales.h;
//    blockwise_config_reads and blockwise_config_supports in src/blockwise_heuristic.h).
//  * Every configuration runs on the default persistent tile scheduler, which needs no workspace
//    (blockwise_linear allocates nothing).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "qsgemm/quant.h"
#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

enum class BlockwiseSchedule : uint8_t {
  kCooperative,  // two consumer warpgroups split one tile along M (tile_m >= 128)
  kPingpong,     // two consumer warpgroups alternate whole tiles (epilogue of one overlaps the other's MMAs)
  kSkinny,       // not CUTLASS: the split-K mma.sync kernel for M <= kSkinnyMaxM (sm90_blockwise_skinny.cu)
};

struct BlockwiseConfig {
  const char* label;  // the public name (blockwise_config_name, the CLI's --configs): see name()
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  BlockwiseSchedule schedule;
  // Instantiated for per-token x per-channel scales (kPerRow x kPerRow) only.
  bool per_row_only = false;
  // The mainloop with two partial accumulator tiles (sm90_blockwise_two_partials.cuh) instead of
  // CUTLASS's blockwise one.
  bool two_partials = false;
  // The last token tile moved back inside M (sm90_blockwise_clamped_rows.cuh): not for x_scale
  // kBlock128x128 beyond 128 tokens, whose blocks a shifted tile would straddle.
  bool clamped = false;

  // <tile_m>x<tile_n>x<tile_k>_c<cluster_m>x<cluster_n>_<coop|pingpong>[_clamped], e.g. "128x128x128_c1x1_coop";
  // "skinny_m32_splitk" for the skinny kernel (tests/cpu/test_blockwise_heuristic.cpp checks the format).
  std::string name() const { return label; }
};

// The table. Index = BlockwiseOptions::config (blockwise_config_index(name) finds a row; code refers
// to rows by name). Each row is instantiated for every output dtype and every scale-granularity pair
// it supports (sm90_blockwise_gemm_*.cu); keep it short: one CUTLASS kernel costs about a minute of
// compile time. The two-partials mainloop (sm90_blockwise_two_partials.cuh) issues K tile k's MMAs
// before tile k-1's partial sums are promoted: bit-identical to CUTLASS's mainloop and faster where
// the weight scales are one per tile (bench/results/h200/tuning/tune_two_partials.txt).
//   128x128 1x1: the general tile (M > 64 and enough tiles to fill the GPU); serves every pair.
//   64x128 ping-pong: small M and shapes whose 128-row tile count quantizes badly onto the SMs. Not
//      for x_scale kBlock128x128 beyond 128 tokens.
//   128x128 1x2: the X tile multicast to the two CTAs of a cluster, for large weights from M = 4096.
//   skinny_m32_splitk: decode sizes (M <= 32): W as the MMA's A operand in m16 tiles, tokens as n8
//      tiles, K split over warps and a cluster of up to 8 CTAs (reduced through distributed shared
//      memory, no workspace). tile_m is the largest M it serves, tile_n the rows of one MMA tile of
//      W. Not CUTLASS; see sm90_blockwise_skinny.cu.
//   128x192: per-token x per-channel scales only (a 192-wide tile cannot hold whole 128x128 weight
//      blocks); 192 registers of accumulators, where 128x256 spilled. Its three register tiles would
//      not fit the two-partials mainloop, so it keeps CUTLASS's (tuning/tune_perrow_192.txt).
//   *_clamped: rows 0 and 1 with their last token tile moved back inside M
//      (sm90_blockwise_clamped_rows.cuh): 1.1-1.6x faster where most of that tile lies past M, but
//      2-4 % slower on whole tiles (a longer kernel), so rows of their own, which
//      blockwise_clamp_pays (src/blockwise_heuristic.h) picks. Not for x_scale kBlock128x128
//      beyond 128 tokens. The 1x2 cluster measured 0.88-0.93x with the clamp even on partial tiles
//      and has no such row (bench/results/h200/tuning/tune_blockwise_clamp.txt).
inline constexpr BlockwiseConfig kBlockwiseConfigs[] = {
    {"128x128x128_c1x1_coop", 128, 128, 128, 1, 1, BlockwiseSchedule::kCooperative, false, true},
    {"64x128x128_c1x1_pingpong", 64, 128, 128, 1, 1, BlockwiseSchedule::kPingpong, false, true},
    {"128x128x128_c1x2_coop", 128, 128, 128, 1, 2, BlockwiseSchedule::kCooperative, false, true},
    {"skinny_m32_splitk", 32, 16, 128, 1, 1, BlockwiseSchedule::kSkinny},
    {"128x192x128_c1x1_coop", 128, 192, 128, 1, 1, BlockwiseSchedule::kCooperative, true},
    {"128x128x128_c1x1_coop_clamped", 128, 128, 128, 1, 1, BlockwiseSchedule::kCooperative, false, true, true},
    {"64x128x128_c1x1_pingpong_clamped", 64, 128, 128, 1, 1, BlockwiseSchedule::kPingpong, false, true, true},
};
inline constexpr int kBlockwiseNumConfigs = static_cast<int>(sizeof(kBlockwiseConfigs) / sizeof(kBlockwiseConfigs[0]));

namespace blockwise_table_detail {
constexpr bool same(const char* a, const char* b) {
  while (*a != 0 && *a == *b) ++a, ++b;
  return *a == *b;
}
}  // namespace blockwise_table_detail
// The index of the row named `name`, or -1 (constexpr: rows are referred to by name, not index).
constexpr int blockwise_row(const char* name) {
  for (int i = 0; i < kBlockwiseNumConfigs; ++i)
    if (blockwise_table_detail::same(kBlockwiseConfigs[i].label, name)) return i;
  return -1;
}
constexpr int blockwise_named(const char* name) {
  const int i = blockwise_row(name);
  return i >= 0 ? i : throw "no blockwise configuration of that name";
}

// The skinny configuration (index kSkinnyConfig) serves M <= kSkinnyMaxM only.
inline constexpr int kSkinnyConfig = blockwise_named("skinny_m32_splitk");
inline constexpr int kSkinnyMaxM = kBlockwiseConfigs[kSkinnyConfig].tile_m;
static_assert(kBlockwiseConfigs[kSkinnyConfig].schedule == BlockwiseSchedule::kSkinny, "kSkinnyConfig must name the skinny row");

// Warps per CTA of the skinny kernel, each a K split (KW = min(4, ceil(K/128))). How it covers a
// problem (SkinnyShape, skinny_shape) is host arithmetic in src/blockwise_heuristic.h.
inline constexpr int kSkinnyMaxWarps = 4;

// The 128x192 per-row configuration (index kPerRowWideConfig).
inline constexpr int kPerRowWideConfig = blockwise_named("128x192x128_c1x1_coop");
static_assert(kBlockwiseConfigs[kPerRowWideConfig].per_row_only && kBlockwiseConfigs[kPerRowWideConfig].tile_n == 192,
              "kPerRowWideConfig must name the 128x192 per-row row");

// Everything one launch needs (validated by src/blockwise.cpp). Scale layouts are those of
// include/qsgemm/blockwise.h; per-row scales (gx == gw == kPerRow) are applied after the K loop
// (two-partials tiles) or in the epilogue (the 128x192 tile).
struct BlockwiseGemmArgs {
  int M = 0, N = 0, K = 0;
  const void* x = nullptr;  int64_t ldx = 0;  // e4m3 [M,K] row-major
  const void* w = nullptr;  int64_t ldw = 0;  // e4m3 [N,K] row-major
  const float* x_scale = nullptr;  int64_t ld_x_scale = 0;  ScaleGranularity gx = ScaleGranularity::kGroup1x128;
  // x kGroup1x128: the stride between token rows (1: M-major; 0: one row of x blocks read as 1x128
  // groups for M <= 128, ld_x_scale = 1; blockwise_tile_gx in src/blockwise_heuristic.h).
  int32_t x_scale_row_stride = 1;
  const float* w_scale = nullptr;  ScaleGranularity gw = ScaleGranularity::kBlock128x128;
  const float* bias_f32 = nullptr;  // [N] fp32 bias, or null
  const void* bias_out = nullptr;   // [N] bias in the output dtype, or null (at most one of the two is set)
  void* y = nullptr;  DType y_dtype = DType::kBF16;  int64_t ldy = 0;
  int device = 0, sm_count = 0;  // the stream's device and its SM count (> 0)
  int skinny_cluster = 0;  // the skinny kernel's cluster size; 0: skinny_shape chooses
  int swizzle = 1, raster = 0;  // CUTLASS's tile order (src/tile_order.h); the skinny kernel ignores it
  // Split-K (CUTLASS configurations only): > 1 runs the GEMM as `splits` batches over K slices of
  // floor(K / 128) / splits whole 128-wide groups (floor(K / 128) % splits == 0) into y = float32
  // [splits][M][ldy], unbiased; run_splitk_reduce (kernels/sm90/common/splitk_reduce.h) then adds
  // them, the partial last group (K % 128 columns) and the bias. src/blockwise.cpp sets it up.
  int splits = 1;
  // Tuning (BlockwiseOptions::whole_last_tile): a last token tile partly past M loads X's whole box,
  // rows past M included, instead of its own rows only.
  bool whole_last_tile = false;
};

// Largest split blockwise_linear accepts.
inline constexpr int kBlockwiseMaxSplitK = 16;

// The device address of a float that holds 1.0 on `device` (sm90_blockwise_unit_scale.cu): the
// scale every tile of the per-row family's mainloop reads on the 128x192 tile. Looked up once per device; throws
// qsgemm::Error if the lookup fails.
const float* blockwise_unit_scale(int device);

// x_scale kGroup1x128 with w_scale kGroup1x128 (CUTLASS's mainloop) on `config` has only the kernel
// with bias nodes, which calls without a bias run with null bias pointers: on the 128x128 tile the
// kernel without them measured 0.85-0.86x the speed at K = 8192-16384 (1.02-1.06x at K = 1024;
// bench/results/h200/tuning/ab_1d1d_bias_nodes.txt). The other kernels have a no-bias variant.
constexpr bool blockwise_group_pair_keeps_bias_nodes(int config) {
  return config == blockwise_named("128x128x128_c1x1_coop") || config == blockwise_named("128x128x128_c1x1_coop_clamped");
}

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
