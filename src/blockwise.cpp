// Blockwise / groupwise FP8 GEMM host API (include/qsgemm/blockwise.h): validation, configuration
// choice (a pure heuristic), launch. Every rule is checked here, before anything touches the GPU,
// so that bad input is reported the same way on a machine without one.
#include "qsgemm/blockwise.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "kernels/sm90/splitk/splitk_reduce.h"
#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm {
namespace kernels {

bool blockwise_config_supports(int config, ScaleGranularity gx, ScaleGranularity gw) {
  using G = ScaleGranularity;
  if (config < 0 || config >= kBlockwiseNumConfigs) return false;
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  // Per-token x per-channel: the mainloop with unit scales (or the skinny kernel), any tile.
  if (gx == G::kPerRow || gw == G::kPerRow) return gx == gw;
  if (c.per_row_only) return false;
  if (gx != G::kGroup1x128 && gx != G::kBlock128x128) return false;
  if (gw != G::kGroup1x128 && gw != G::kBlock128x128) return false;
  // The skinny kernel reads any scale layout per 16-row warp tile (M <= 32 lies in one 128-row block).
  if (c.schedule == BlockwiseSchedule::kSkinny) return true;
  // CUTLASS needs whole scale blocks per tile (tile % granularity == 0).
  if (gx == G::kBlock128x128 && c.tile_m % kScaleGroupK != 0) return false;
  if (gw == G::kBlock128x128 && c.tile_n % kScaleGroupK != 0) return false;
  return true;
}

int blockwise_choose_config(int64_t M, int64_t N, int64_t K, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t n_tiles = ceil_div(N, 128);
  // Decode sizes: the split-K skinny kernel streams W from every SM, where the 64-row tile has one
  // CTA per 128 rows of W (32 CTAs for N = 4096). Measured on the H200 over the 14 benchmark layers
  // with the kernel's second version (docs/performance.md, bench/results/h200/tune_skinny.jsonl):
  //  * M <= 8: it wins on every layer with K >= 1536 (4096x4096: 11.2 against 15.4 us; 57344x8192:
  //    123 against 139), and loses at K = 512 (32768x512: 13.7 against 11.6, four K groups);
  //  * M = 9..16 (two n8 token tiles): it wins wherever K >= 4096 and the 64-row tile has at most
  //    half the SMs' worth of CTAs (2112x7168 by 1.55x, 8192x28672 by 1.18x, 6144x4096 within 1 %)
  //    and loses from 80 tiles on (10240x8192: 37.9 against 33.5 us) and at short K;
  //  * M = 17..32 (three or four token tiles): it wins only where the 64-row tile leaves five
  //    sixths of the SMs idle, with K >= 4096: 2112x7168 (17 tiles) 17.2 against 18.1 us at M = 32.
  //    Against the 64-row tile with the two-partials mainloop it no longer wins on the 4096-row
  //    layers (32 tiles; M = 32, interleaved, bench/results/h200/tune_blockwise_decode.jsonl):
  //    4096x4096 15.4 against 13.7 us, 4096x7168 21.1 against 18.8, 4096x14336 even (31.3);
  //    before that mainloop it had won there (4096x14336 by 1.16x, tune_skinny.jsonl).
  // Tiny problems (one or two N tiles, i.e. one or two CUTLASS CTAs) always take the skinny
  // kernel: it splits K over a cluster and sums each group exactly in float32 (the wgmma FP8
  // accumulation reaches 2.2e-4 relative error on 8-element fp32 outputs at K = 128).
  if (M <= kSkinnyMaxM && n_tiles <= 2) return kSkinnyConfig;
  if (M <= 8 && K >= 1536) return kSkinnyConfig;
  if (M <= 16 && K >= 4096 && n_tiles <= sms / 2) return kSkinnyConfig;
  if (M <= kSkinnyMaxM && K >= 4096 && n_tiles <= sms / 6) return kSkinnyConfig;
  // Short K (at most 4 K tiles): the epilogue is a large share of a tile's time, and the 64x128
  // ping-pong tile runs one warp group's epilogue under the other's MMAs, where the cooperative
  // tiles wait for theirs. Measured on 32768x512 with the kernels of 33b085e (qsgemm tune
  // --interleave, bench/results/h200/tune_blockwise_k512.txt): per-row 4-13 % faster than the
  // previous pick at M = 256-16384, 1x128.128x128 2-7 % up to M = 2048 and within 1.3 % above,
  // 1x128.1x128 10-15 %. (At K = 1024 the 128x128 tile still won: ab_1d1d_bias_nodes.txt,
  // ab_perrow_mainloop_scales.txt.)
  if (K <= kBlockwiseShortK) return 1;
  const int64_t waves_128 = ceil_div(ceil_div(M, 128) * n_tiles, sms);
  const int64_t waves_64 = ceil_div(ceil_div(M, 64) * n_tiles, sms);
  // Time per SM in units of one 64-row tile: a 128-row tile is two; a 64-row tile also reloads its
  // W tile for every 64 rows, which we charge 20%. Small M (decode) and shapes whose 128-row tiles
  // leave SMs idle in the last wave go to the 64-row tile.
  if (1.2 * static_cast<double>(waves_64) < 2.0 * static_cast<double>(waves_128)) return 1;
  // The 1x2 cluster (configuration 2, TMA multicast of the X tile) on large weights from M = 4096:
  // with the two-partials mainloop it measured 1.5-8 % faster than the 1x1 tile on 7168x16384,
  // 8192x28672 and 57344x8192 at M = 4096..16384 (one exception, 7168x16384 at M = 4096 in one of
  // two runs), and slower on the other layers, by up to 18 % on short K
  // (bench/results/h200/tune_blockwise_two_partials.jsonl). With CUTLASS's mainloop the 1x1 tile
  // had won nearly everywhere (tune_blockwise.jsonl, tune_tile_order.txt).
  if (M >= 4096 && (K >= 16384 || N * K >= (int64_t{1} << 28))) return 2;
  return 0;
}

bool blockwise_per_row_wide_tile(int64_t M, int64_t N, int config, int sm_count) {
  // Measured from M = 256 on; below, the 64x128 tile's partial waves were not compared with it.
  if (M < 256 || config == kSkinnyConfig || config == kPerRowWideConfig) return false;
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t n_tiles = ceil_div(N, 128);
  const int64_t waves_64 = ceil_div(ceil_div(M, 64) * n_tiles, sms);
  const int64_t waves_128 = ceil_div(ceil_div(M, 128) * n_tiles, sms);
  const int64_t waves_192 = ceil_div(ceil_div(M, 128) * ceil_div(N, 192), sms);
  const int64_t waste = ceil_div(N, 192) * 192 - N;
  if (200 * waste > 3 * N) return false;  // more than 1.5 % of N wasted
  // In tenths of a 64x128 tile: 12 per 64-row wave, 20 per 128x128 wave, 30 per 128x192 wave.
  const int64_t picked = config == 1 ? 12 * waves_64 : 20 * waves_128;
  return 30 * waves_192 < picked;
}

// Split-K on the CUTLASS tiles. At small M the tile count is ceil(N/128) per 64 or 128 tokens, and
// on a narrow weight most SMs idle while each busy one streams its W tile (plus the X tile) at
// about 90 GB/s, far below what the GPU can draw (e.g. 4096x14336 at M = 64: 32 CTAs, 30 us, 2 TB/s
// of weight). Cutting K into S slices runs tiles x S CTAs (S batches of the same kernel into a
// float32 workspace) and a second kernel adds the slices. That helps while one CTA per tile is
// slower than DRAM: a CTA streams (tile_m + tile_n)·K bytes at ~90 GB/s against N·K (+ M·K) bytes
// at ~3.8 TB/s for the whole weight, a ratio of about 42·(tile_m + tile_n) / (N + M) whatever M,
// so the rule asks for at least 1.5 of it, 28·(tile_m + tile_n) >= N + M (N + M <= 5376 on the
// 64x128 tile), and a long enough K (>= 4096: 32 groups) that the second kernel's fixed cost is
// small against the gain. S: the largest with S dividing the groups, at least 8 groups per slice
// and tiles x S <= SMs (one wave).
// Measured on the H200 (qsgemm tune blockwise --split-k 1,2,3,4,6,7,8 --configs 0,1 --interleave,
// 1x128 x 128x128, the 14 benchmark layers at M = 16..256, bench/results/h200/tune_blockwise_splitk.jsonl),
// best unsplit -> the rule's split, 64x128 tile: 2112x7168 at M = 16-64 17.7-18.0 -> 13.0-13.1 us
// (S = 7), at M = 128 18.1 -> 14.6 (S = 2); 4096x14336 at M = 16-64 29.7-30.7 -> 22.6-23.1 (S = 4),
// at 128 30.0 -> 23.8 (S = 2); 4096x7168 18.3-18.4 -> 15.8-16.3 (S = 4), at 128 18.4 -> 16.6;
// 4096x4096 13.3-13.5 -> 12.6-12.9 (S = 4), at 128 13.3 -> 13.4. Where one CTA per tile already
// draws the weight near DRAM speed it loses: 6144x4096 0.88-0.94x with S = 2, 8192x8192 at M = 64
// 0.91x, 7168x16384 0.96x, and every layer once tiles x S exceeds the SMs. Over the sweep's 66
// points where a CUTLASS tile is picked: 0.994 of the fastest configuration and split (geomean,
// worst 0.92), 0.952 (worst 0.70) without splits. (Two slices at 17..32 tokens on wider weights
// measured mixed in the benchmark, bench/results/h200/ab_splitk_m32.txt: not taken.)
// With a weight scale per channel and K group (the 1x128.1x128 and 128x128.1x128 pairs) the tiles
// run CUTLASS's mainloop, about half as fast per CTA at these sizes, so the bound is twice as
// wide: 56·(tile_m + tile_n) >= N + M. Measured the same way on those two pairs
// (tune_blockwise_splitk_1d1d.jsonl, tune_blockwise_splitk_2d1d.jsonl, 14 layers x M = 16..256):
// with 28 the rule's split reached 0.954 / 0.952 of each tile's best split (geomean; worst 0.66,
// 7168x16384 at M = 128 unsplit), with 56 0.992 / 0.994 (worst 0.83 / 0.91); e.g. 8192x28672 at
// M = 64: 90.9 -> 67.2 us (1x128.1x128, 64x128, S = 2), 7168x16384 at 128: 70.0 -> 45.2
// (128x128.1x128, 128x128, S = 2).
int blockwise_split_k(int64_t M, int64_t N, int64_t K, int config, ScaleGranularity gw, int sm_count) {
  constexpr int64_t kMinGroups = 32;          // K >= 4096
  constexpr int64_t kMinGroupsPerSlice = 8;
  if (config < 0 || config >= kBlockwiseNumConfigs || config == kSkinnyConfig) return 1;
  if (M <= 0 || N <= 0 || K <= 0 || K % kScaleGroupK != 0) return 1;
  const BlockwiseConfig& c = kBlockwiseConfigs[config];
  const int64_t reach = gw == ScaleGranularity::kGroup1x128 ? 56 : 28;  // CUTLASS's mainloop: twice
  if (reach * int64_t{c.tile_m + c.tile_n} < N + M) return 1;
  const int64_t kb = K / kScaleGroupK;
  if (kb < kMinGroups) return 1;
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t tiles = ceil_div(M, c.tile_m) * ceil_div(N, c.tile_n);
  int best = 1;
  for (int s = 2; s <= kBlockwiseMaxSplitK; ++s)
    if (kb % s == 0 && kb / s >= kMinGroupsPerSlice && tiles * s <= sms) best = s;
  return best;
}

void run_blockwise_gemm(const BlockwiseGemmArgs& a, int config, cudaStream_t stream) {
  if (config == kSkinnyConfig) return run_blockwise_skinny(a, stream);
  const bool bias = a.bias_f32 != nullptr || a.bias_out != nullptr ||
                    (a.gx == ScaleGranularity::kGroup1x128 && a.gw == ScaleGranularity::kGroup1x128 &&
                     blockwise_group_pair_keeps_bias_nodes(config));
  switch (a.y_dtype) {
    case DType::kBF16: return bias ? run_blockwise_gemm_bf16_bias(a, config, stream) : run_blockwise_gemm_bf16(a, config, stream);
    case DType::kF16: return bias ? run_blockwise_gemm_f16_bias(a, config, stream) : run_blockwise_gemm_f16(a, config, stream);
    case DType::kF32: return bias ? run_blockwise_gemm_f32_bias(a, config, stream) : run_blockwise_gemm_f32(a, config, stream);
    default: break;
  }
  detail::fail("blockwise_linear", Status::kInternal, "y", detail::cat("no kernel for output dtype ", dtype_name(a.y_dtype)));
}

}  // namespace kernels

namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();  // CUTLASS's problem shape is int

// The option rules every entry point shares: the config index and the split_k range.
void check_config_and_split(const char* fn, const BlockwiseOptions& o) {
  if (o.config < -1 || o.config >= kernels::kBlockwiseNumConfigs)
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", o.config, " is outside [-1, ", kernels::kBlockwiseNumConfigs, ")"));
  if (o.split_k < 0 || o.split_k > kernels::kBlockwiseMaxSplitK)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, " must be 0 (chosen by the library), 1 (no split) or 2..",
                             kernels::kBlockwiseMaxSplitK));
}

// blockwise_plan without its argument checks (blockwise_linear has made them).
BlockwisePlan plan_unchecked(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                             const BlockwiseOptions& options, int sm_count) {
  BlockwisePlan plan;
  plan.config = options.config >= 0 ? options.config : blockwise_choose_config(M, N, K, gx, gw, sm_count);
  if (options.split_k >= 1) {
    plan.split_k = plan.config == kernels::kSkinnyConfig ? 1 : options.split_k;
    return plan;
  }
  if (plan.config != kernels::kSkinnyConfig) {
    plan.split_k = kernels::blockwise_split_k(M, N, K, plan.config, gw, sm_count);
    return plan;
  }
  // The skinny kernel's pick at 9..32 tokens (not for one or two tiles of W, which it always takes):
  // the 64x128 tile split over K, where the rule splits it, measured faster (tune_blockwise_splitk.jsonl,
  // against the skinny kernel in blockwise.json): 2112x7168 at M = 32 16.8 -> 12.6 us, at 16
  // 13.6 -> 13.0; 4096x14336 at 16 24.1 -> 22.7; 4096x7168 at 16 17.1 -> 15.8; 4096x4096 at 16
  // even (12.5 / 12.7). At M <= 8 the skinny kernel stays ahead (2112x7168: 11.5 us).
  // With x in 128x128 blocks the 64-row tile cannot serve the pair; from 17 tokens (three or four
  // n8 token tiles in the skinny kernel) the split 128x128 tile takes its place. Measured on the
  // H200 at M = 17..32 on 7 weights of 512..2816 rows and K = 4096..16384, the rule's split against
  // the skinny kernel (bench/results/h200/tune_blockwise_decode_2d.jsonl): 128x128.1x128
  // 0.98-1.23x the skinny kernel's speed at 17..24 tokens and 1.03-1.23x at 25..32 (2112x7168 at
  // 32: 17.5 -> 15.1 us), 128x128.128x128 1.00-1.23x and 1.06-1.34x. At 16 tokens the skinny
  // kernel was ahead on all 14 layers of tune_blockwise_splitk_2d1d.jsonl (0.70-0.94x the time).
  constexpr int kNarrow = 1;  // the 64x128 ping-pong tile
  constexpr int kSquare = 0;  // the 128x128 cooperative tile
  if (options.config == -1 && M > 8 && ceil_div(N, int64_t{128}) > 2) {
    const int tile = kernels::blockwise_config_supports(kNarrow, gx, gw) ? kNarrow : M > 16 ? kSquare : -1;
    const int s = tile >= 0 ? kernels::blockwise_split_k(M, N, K, tile, gw, sm_count) : 1;
    if (s > 1) plan = {tile, s};
  }
  return plan;
}

const char* accepted_x_granularities() { return "group_1x128, block_128x128 or per_row"; }
const char* accepted_w_granularities() { return "block_128x128, group_1x128 or per_row"; }

// Rows of 16 bytes for TMA (x, w: ld % 16 elements; y: ld * element size % 16), also for one row:
// check_matrix only checks ld when there is a second row, TMA needs it always.
void check_ld_16_bytes(const char* fn, const char* name, const MatrixView& m) {
  const int64_t ld_bytes = m.ld * dtype_size(m.dtype);
  if (ld_bytes % 16 != 0)
    detail::fail(fn, Status::kMisaligned, name,
                 detail::cat("ld=", m.ld, " (", ld_bytes, " bytes) must be a multiple of 16 bytes"));
}

}  // namespace

void blockwise_linear(const MatrixView& x, const ScaleView& x_scale, const MatrixView& w, const ScaleView& w_scale,
                      const VectorView& bias, const MatrixView& y, const BlockwiseOptions& options,
                      cudaStream_t stream) {
  using G = ScaleGranularity;
  const char* fn = "blockwise_linear";

  // ---- operands: dtypes, shapes, alignment -----------------------------------------------------
  detail::check_matrix(fn, "x", x, {DType::kE4M3}, -1, -1, 16);
  const int64_t M = x.rows, K = x.cols;
  detail::check_matrix(fn, "w", w, {DType::kE4M3}, -1, K, 16);
  const int64_t N = w.rows;
  detail::check_matrix(fn, "y", y, {DType::kBF16, DType::kF16, DType::kF32}, M, N, 16);
  if (K <= 0) detail::fail(fn, Status::kInvalidArgument, "K", detail::cat("K=", K, " must be positive"));
  if (N <= 0) detail::fail(fn, Status::kInvalidArgument, "N", detail::cat("N=", N, " must be positive"));
  if (K % 16 != 0)
    detail::fail(fn, Status::kInvalidArgument, "K", detail::cat("K=", K, " must be a multiple of 16 (16-byte rows of e4m3)"));
  const int out_align = 16 / dtype_size(y.dtype);  // elements in a 16-byte row chunk of y
  if (N % out_align != 0)
    detail::fail(fn, Status::kInvalidArgument, "N",
                 detail::cat("N=", N, " must be a multiple of ", out_align, " (16-byte rows of ", dtype_name(y.dtype),
                             " output)"));
  if (M > kMaxExtent || N > kMaxExtent || K > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "x",
                 detail::cat("problem [M=", M, ", N=", N, ", K=", K, "] exceeds ", kMaxExtent, " in one dimension"));
  check_ld_16_bytes(fn, "x", x);
  check_ld_16_bytes(fn, "w", w);
  check_ld_16_bytes(fn, "y", y);

  // ---- scales ------------------------------------------------------------------------------------
  const G gx = x_scale.granularity, gw = w_scale.granularity;
  if (gx != G::kGroup1x128 && gx != G::kBlock128x128 && gx != G::kPerRow)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("granularity ", granularity_name(gx), " is not accepted; use ", accepted_x_granularities()));
  if (gw != G::kBlock128x128 && gw != G::kGroup1x128 && gw != G::kPerRow)
    detail::fail(fn, Status::kInvalidArgument, "w_scale",
                 detail::cat("granularity ", granularity_name(gw), " is not accepted; use ", accepted_w_granularities()));
  if ((gx == G::kPerRow) != (gw == G::kPerRow))
    detail::fail(fn, Status::kInvalidArgument, gx == G::kPerRow ? "x_scale" : "w_scale",
                 detail::cat("per_row scales pair only with per_row scales: got x_scale ", granularity_name(gx),
                             " with w_scale ", granularity_name(gw)));
  const int64_t k_groups = ceil_div(K, kScaleGroupK);
  if (gx == G::kGroup1x128) {
    if (x_scale.ld < M)
      detail::fail(fn, Status::kInvalidArgument, "x_scale",
                   detail::cat("ld=", x_scale.ld, " must be >= M=", M, " (group_1x128 scales are M-major)"));
    if (x_scale.ld * k_groups > kMaxExtent)
      detail::fail(fn, Status::kInvalidArgument, "x_scale",
                   detail::cat("ld=", x_scale.ld, " x ", k_groups, " K groups exceeds ", kMaxExtent, " scales"));
  }
  if (gw == G::kGroup1x128 && N * k_groups > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "w_scale",
                 detail::cat("N=", N, " x ", k_groups, " K groups exceeds ", kMaxExtent, " scales"));

  // ---- bias ----------------------------------------------------------------------------------------
  if (!bias.empty()) {
    if (bias.size != N)
      detail::fail(fn, Status::kInvalidArgument, "bias", detail::cat("bias has ", bias.size, " elements, expected N=", N));
    if (bias.dtype != y.dtype && bias.dtype != DType::kF32)
      detail::fail(fn, Status::kInvalidArgument, "bias",
                   detail::cat("bias dtype ", dtype_name(bias.dtype), " must be fp32 or the output dtype ",
                               dtype_name(y.dtype)));
    detail::check_ptr(fn, "bias", bias.data, dtype_size(bias.dtype));
  }

  // ---- configuration ---------------------------------------------------------------------------
  check_config_and_split(fn, options);
  if (options.config >= 0 && !kernels::blockwise_config_supports(options.config, gx, gw)) {
    const kernels::BlockwiseConfig& c = kernels::kBlockwiseConfigs[options.config];
    const std::string why = c.per_row_only
                                ? std::string("serves x_scale per_row with w_scale per_row only")
                                : detail::cat("a 128x128 scale block must cover whole ", c.tile_m, "x", c.tile_n, " tiles");
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", options.config, " (", c.name(), ") cannot serve x_scale ", granularity_name(gx),
                             " with w_scale ", granularity_name(gw), ": ", why));
  }
  if (options.config == kernels::kSkinnyConfig && M > kernels::kSkinnyMaxM)
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", options.config, " (", kernels::kBlockwiseConfigs[options.config].name(),
                             ") serves M <= ", kernels::kSkinnyMaxM, "; got M=", M));
  const int sc = options.skinny_cluster;
  if (sc != 0) {
    if (sc != 1 && sc != 2 && sc != 4 && sc != 8)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " must be 0 (chosen by the library), 1, 2, 4 or 8"));
    if (options.config != kernels::kSkinnyConfig)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " applies to the skinny configuration only: set options.config=",
                               kernels::kSkinnyConfig, " (got config ", options.config, ")"));
    const int64_t warps = std::min<int64_t>(kernels::kSkinnyMaxWarps, k_groups);  // K splits per CTA
    if (sc * warps > k_groups)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " x ", warps, " warps leaves a warp without a 128-wide K group: K=",
                               K, " has ", k_groups));
  }

  // ---- split-K -----------------------------------------------------------------------------------
  const int sk = options.split_k;  // range checked with the config
  if (sk >= 2) {
    if (K % (int64_t{kScaleGroupK} * sk) != 0)
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", sk, " needs K to be a multiple of 128 x ", sk, " = ", kScaleGroupK * sk,
                               " (whole 128-wide groups per slice): K=", K));
    if (options.config == kernels::kSkinnyConfig)
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", sk, " applies to the CUTLASS configurations, not config ", options.config,
                               " (", kernels::kBlockwiseConfigs[options.config].name(), ")"));
    kernels::check_splitk_workspace(fn, sk, M, N, options.workspace, options.workspace_bytes);
  }
  if (options.workspace != nullptr) detail::check_ptr(fn, "options.workspace", options.workspace, 16);

  if (M == 0) return;
  detail::check_ptr(fn, "x_scale", x_scale.data, 4);
  detail::check_ptr(fn, "w_scale", w_scale.data, 4);
  detail::require_sm90(fn);

  const DeviceInfo dev = device_info(-1);
  kernels::BlockwiseGemmArgs a;
  a.M = static_cast<int>(M);
  a.N = static_cast<int>(N);
  a.K = static_cast<int>(K);
  a.x = x.data;
  a.ldx = x.ld;
  a.w = w.data;
  a.ldw = w.ld;
  a.x_scale = x_scale.data;
  a.ld_x_scale = x_scale.ld;
  a.gx = gx;
  a.w_scale = w_scale.data;
  a.gw = gw;
  if (!bias.empty()) {
    if (bias.dtype == DType::kF32)
      a.bias_f32 = static_cast<const float*>(bias.data);
    else
      a.bias_out = bias.data;
  }
  a.y = y.data;
  a.y_dtype = y.dtype;
  a.ldy = y.ld;
  a.device = dev.device;
  a.sm_count = dev.sm_count;
  a.skinny_cluster = options.skinny_cluster;
  const int config = options.config >= 0 ? options.config : blockwise_choose_config(M, N, K, gx, gw, dev.sm_count);
  const kernels::TileOrder order = kernels::blockwise_tile_order(M, N);
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  if (sk >= 2 && config == kernels::kSkinnyConfig)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", sk, " applies to the CUTLASS configurations; for M=", M,
                             " the heuristic chose config ", config, " (", kernels::kBlockwiseConfigs[config].name(),
                             "): force a configuration with options.config"));
  // The plan splits where it is forced to or chooses to, when the workspace holds its slices (a
  // forced split's workspace was checked above).
  BlockwisePlan run{config, 1};
  if (options.workspace != nullptr && sk != 1) {
    const BlockwisePlan plan = plan_unchecked(M, N, K, gx, gw, options, dev.sm_count);
    if (plan.split_k > 1 && options.workspace_bytes >= kernels::splitk_workspace_bytes(M, N, plan.split_k)) run = plan;
  }
  if (run.split_k == 1) return kernels::run_blockwise_gemm(a, config, stream);
  // The GEMM writes S unbiased float32 slices into the workspace; the reduction writes y.
  kernels::BlockwiseGemmArgs g = a;
  g.splits = run.split_k;
  g.y = options.workspace;
  g.y_dtype = DType::kF32;
  g.ldy = N;
  g.bias_f32 = nullptr;
  g.bias_out = nullptr;
  kernels::run_blockwise_gemm(g, run.config, stream);
  kernels::run_splitk_reduce({static_cast<const float*>(options.workspace), run.split_k, a.M, a.N, bias.data, bias.dtype,
                              a.y, a.y_dtype, a.ldy, a.sm_count, fn},
                             stream);
}

int blockwise_num_configs() { return kernels::kBlockwiseNumConfigs; }

std::string blockwise_config_name(int index) {
  if (index < 0 || index >= kernels::kBlockwiseNumConfigs)
    detail::fail("blockwise_config_name", Status::kInvalidArgument, "index",
                 detail::cat("config index ", index, " is outside [0, ", kernels::kBlockwiseNumConfigs, ")"));
  return kernels::kBlockwiseConfigs[index].name();
}

bool blockwise_config_supports(int index, ScaleGranularity gx, ScaleGranularity gw) {
  return kernels::blockwise_config_supports(index, gx, gw);
}

int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                            int sm_count) {
  const int config = kernels::blockwise_choose_config(M, N, K, sm_count);
  if (gx == ScaleGranularity::kPerRow && gw == ScaleGranularity::kPerRow && K > kernels::kBlockwiseShortK &&
      kernels::blockwise_per_row_wide_tile(M, N, config, sm_count))
    return kernels::kPerRowWideConfig;
  return kernels::blockwise_config_supports(config, gx, gw) ? config : 0;  // 0 serves every pair
}

BlockwisePlan blockwise_plan(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                             const BlockwiseOptions& options, int sm_count) {
  const char* fn = "blockwise_plan";
  if (M < 0 || N <= 0 || K <= 0 || M > kMaxExtent || N > kMaxExtent || K > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "M", detail::cat("shape M=", M, " N=", N, " K=", K, " is not a problem"));
  check_config_and_split(fn, options);
  return plan_unchecked(M, N, K, gx, gw, options, sm_count);
}

size_t blockwise_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                                        const BlockwiseOptions& options, int sm_count) {
  if (sm_count <= 0) sm_count = device_info(-1).sm_count;
  const int s = blockwise_plan(M, N, K, gx, gw, options, sm_count).split_k;  // checks the arguments
  return s > 1 ? kernels::splitk_workspace_bytes(M, N, s) : 0;
}

}  // namespace qsgemm
