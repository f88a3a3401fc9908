// Blockwise / groupwise FP8 host API (include/qsgemm/blockwise.h): validation and launch. The
// configuration table is src/kernels/sm90/blockwise/sm90_blockwise_configs.h, the heuristic
// src/blockwise_heuristic.h, the rules every family shares src/linear_common.h. Every rule is
// checked before anything touches the GPU, so that bad input is reported the same way on a machine
// without one.
#include "qsgemm/blockwise.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "blockwise_heuristic.h"
#include "kernels/sm90/blockwise/sm90_blockwise_configs.h"
#include "kernels/sm90/blockwise/sm90_blockwise_expand_x_scales.h"
#include "kernels/sm90/common/splitk_reduce.h"
#include "linear_common.h"
#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm {
namespace kernels {

static_assert(kBlockwiseMaxSplitK == detail::kMaxSplitK, "one split-K limit for every family");

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

using G = ScaleGranularity;
constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();  // CUTLASS's problem shape is int

std::string describe(int config) { return kernels::kBlockwiseConfigs[config].name(); }

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

// The option and shape rules of every entry point that do not depend on the device: the shape
// limits, the config index and split range, a forced configuration's scale pair and M, the skinny
// cluster, a forced split's K and configuration.
void check_problem(const char* fn, int64_t M, int64_t N, int64_t K, G gx, G gw, const BlockwiseOptions& o) {
  if (M < 0 || N <= 0 || K <= 0 || M > kMaxExtent || N > kMaxExtent || K > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "M",
                 detail::cat("shape M=", M, " N=", N, " K=", K, " is not a problem (M >= 0, N, K > 0, each < 2^31)"));
  detail::check_config_and_split(fn, o, kernels::kBlockwiseNumConfigs);
  if (o.config >= 0 && (gx == G::kPerRow) == (gw == G::kPerRow) &&
      !kernels::blockwise_config_supports(o.config, gx, gw, M)) {
    const kernels::BlockwiseConfig& c = kernels::kBlockwiseConfigs[o.config];
    const std::string why = c.per_row_only ? std::string("serves x_scale per_row with w_scale per_row only")
                                           : detail::cat("a 128x128 scale block must cover whole ", c.tile_m, "x",
                                                         c.tile_n, " tiles");
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", o.config, " (", c.name(), ") cannot serve x_scale ", granularity_name(gx),
                             " with w_scale ", granularity_name(gw), ": ", why));
  }
  if (o.config == kernels::kSkinnyConfig && M > kernels::kSkinnyMaxM)
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", o.config, " (", describe(o.config), ") serves M <= ", kernels::kSkinnyMaxM,
                             "; got M=", M));
  detail::check_max_swizzle(fn, o.max_swizzle);
  const int sc = o.skinny_cluster;
  if (sc != 0) {
    if (sc != 1 && sc != 2 && sc != 4 && sc != 8)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " must be 0 (chosen by the library), 1, 2, 4 or 8"));
    if (o.config != kernels::kSkinnyConfig)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " applies to the skinny configuration only: set options.config=",
                               kernels::kSkinnyConfig, " (got config ", o.config, ")"));
    const int64_t k_groups = ceil_div(K, kScaleGroupK);
    const int64_t warps = std::min<int64_t>(kernels::kSkinnyMaxWarps, k_groups);  // K splits per CTA
    if (sc * warps > k_groups)
      detail::fail(fn, Status::kInvalidArgument, "options.skinny_cluster",
                   detail::cat("skinny_cluster=", sc, " x ", warps, " warps leaves a warp without a 128-wide K group: K=",
                               K, " has ", k_groups));
  }
  const int sk = o.split_k;
  if (sk >= 2) {
    const int64_t whole = K / kScaleGroupK;  // the slices share the whole groups; the reduction adds the rest
    if (whole < sk || whole % sk != 0)
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", sk, " needs the whole 128-wide groups of K to be a multiple of ", sk,
                               " (the same number per slice): K=", K, " has ", whole));
    if (o.config == kernels::kSkinnyConfig)
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", sk, " applies to the CUTLASS configurations, not config ", o.config, " (",
                               describe(o.config), ")"));
  }
}

// The row strides the plan functions take: 0 (K, packed) or a stride blockwise_linear accepts.
void check_plan_ld(const char* fn, int64_t K, int64_t ld_x, int64_t ld_w) {
  for (const auto& [name, ld] : {std::pair<const char*, int64_t>{"ld_x", ld_x}, {"ld_w", ld_w}})
    if (ld != 0 && (ld < K || ld % 16 != 0))
      detail::fail(fn, Status::kInvalidArgument, name,
                   detail::cat(name, "=", ld, " must be 0 (packed rows) or >= K=", K, " and a multiple of 16"));
}

// What a plan (config, split_k) keeps in the workspace: the split-K slices from byte 0 (split_k > 1),
// then, where the tile reads x blocks through the expanded copy, that copy on a 256-byte boundary.
// make_plan, the forced configuration's check and the launch all read it from here.
struct WorkspaceLayout {
  size_t expanded_x_offset = 0;  // where the copy starts (valid when expands_x)
  size_t bytes = 0;              // the whole workspace the plan needs
  bool expands_x = false;
};
WorkspaceLayout workspace_layout(int config, int split_k, int64_t M, int64_t N, int64_t K, G gx, G gw) {
  WorkspaceLayout w;
  if (M <= 0) return w;
  w.bytes = split_k > 1 ? detail::splitk_workspace_bytes(M, N, split_k) : 0;
  w.expands_x = kernels::blockwise_expands_x_scales(config, gx, gw, M);
  if (w.expands_x) {
    w.expanded_x_offset = (w.bytes + 255) / 256 * 256;
    w.bytes = w.expanded_x_offset + kernels::blockwise_expanded_x_bytes(M, ceil_div(K, kScaleGroupK));
  }
  return w;
}

// THE plan (include/qsgemm/linear.h): what blockwise_plan publishes and blockwise_linear runs, with
// or without a workspace. The arguments are checked (check_problem), sm_count > 0. A forced split
// where the heuristic chose the skinny kernel is an error here, for every entry point.
LinearPlan make_plan(const char* fn, int64_t M, int64_t N, int64_t K, G gx, G gw, const BlockwiseOptions& o, int sm_count,
                     bool with_workspace, int64_t ld_x, int64_t ld_w) {
  const kernels::BlockwiseChoice c = kernels::blockwise_choose(std::max<int64_t>(M, 1), N, K, gx, gw, o.config,
                                                               o.split_k, sm_count, with_workspace, ld_x, ld_w);
  if (o.split_k >= 2 && c.config == kernels::kSkinnyConfig)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, " applies to the CUTLASS configurations; for M=", M,
                             " the heuristic chose config ", c.config, " (", describe(c.config),
                             "): force a configuration with options.config"));
  return LinearPlan{c.config, c.split_k, workspace_layout(c.config, c.split_k, M, N, K, gx, gw).bytes};
}

}  // namespace

void blockwise_linear(const MatrixView& x, const ScaleView& x_scale, const MatrixView& w, const ScaleView& w_scale,
                      const VectorView& bias, const MatrixView& y, const BlockwiseOptions& options,
                      cudaStream_t stream) {
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

  // ---- bias, options (the rules blockwise_plan applies), workspace ---------------------------------
  const bool has_bias = detail::check_bias(fn, bias, N, y.dtype);
  check_problem(fn, M, N, K, gx, gw, options);
  if (options.split_k >= 2) detail::check_forced_split_workspace(fn, options.split_k, M, N, options);
  const WorkspaceLayout forced = workspace_layout(options.config, options.split_k, M, N, K, gx, gw);
  if (options.config >= 0 && forced.expands_x) {
    // A forced tile that reads x blocks through the copy: at least the copy's bytes (after a forced
    // split's slices), like a forced split's own rule, before any GPU work.
    const size_t need = forced.bytes;
    const size_t given = options.workspace != nullptr ? options.workspace_bytes : 0;
    if (given < need)
      detail::fail(fn, Status::kInvalidArgument, "options.workspace_bytes",
                   detail::cat("config ", options.config, " (", describe(options.config), ") reads x_scale ",
                               granularity_name(gx), " beyond 128 tokens (M=", M, ") through a copy as ",
                               granularity_name(G::kGroup1x128), " scales in the workspace: it needs ", need,
                               " bytes of workspace (blockwise_linear_workspace_bytes), ", given, " given"));
  }
  detail::check_workspace_alignment(fn, options);

  if (M == 0) return;
  detail::check_ptr(fn, "x_scale", x_scale.data, 4);
  detail::check_ptr(fn, "w_scale", w_scale.data, 4);
  // ---- y and the workspace against the inputs -------------------------------------------------------
  size_t sx_count = 0, sw_count = 0;
  switch (gx) {
    case G::kGroup1x128: sx_count = static_cast<size_t>(x_scale.ld * k_groups); break;
    case G::kBlock128x128: sx_count = static_cast<size_t>(ceil_div(M, 128) * k_groups); break;
    default: sx_count = static_cast<size_t>(M); break;
  }
  switch (gw) {
    case G::kGroup1x128: sw_count = static_cast<size_t>(N * k_groups); break;
    case G::kBlock128x128: sw_count = static_cast<size_t>(ceil_div(N, 128) * k_groups); break;
    default: sw_count = static_cast<size_t>(N); break;
  }
  detail::check_outputs_disjoint(fn, y,
                                 {{"x", detail::byte_range(x)},
                                  {"w", detail::byte_range(w)},
                                  {"x_scale", detail::byte_range(x_scale.data, sizeof(float) * sx_count)},
                                  {"w_scale", detail::byte_range(w_scale.data, sizeof(float) * sw_count)},
                                  {"bias", has_bias ? detail::byte_range(bias) : detail::ByteRange{}}},
                                 detail::byte_range(options.workspace, options.workspace_bytes));

  // ---- device and plan -------------------------------------------------------------------------------
  const detail::LaunchDevice dev = detail::launch_device(fn, stream);
  const LinearPlan plan = detail::select_plan(
      fn, options, M, N, K, [&](bool with_ws) { return make_plan(fn, M, N, K, gx, gw, options, dev.sm_count, with_ws, x.ld, w.ld); },
      describe);

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
  const WorkspaceLayout layout = workspace_layout(plan.config, plan.split_k, M, N, K, gx, gw);
  if (layout.expands_x) {
    // Beyond 128 tokens a tile of 1x128 groups reads x blocks as an expanded copy in the workspace
    // (after the split-K slices), written by a kernel on the stream before the GEMM.
    auto* groups = reinterpret_cast<float*>(static_cast<char*>(options.workspace) + layout.expanded_x_offset);
    kernels::run_blockwise_expand_x_scales(x_scale.data, M, k_groups, groups, stream, fn);
    a.x_scale = groups;
    a.gx = G::kGroup1x128;
    a.ld_x_scale = m_major_scale_ld(M);
  } else if (!kernels::blockwise_config_reads(plan.config, gx, gw)) {
    // Up to 128 tokens x blocks are one row [ceil(K/128)]: the tiles of 1x128 groups read it with
    // a row stride of 0 (blockwise_tile_gx).
    a.gx = kernels::blockwise_tile_gx(gx, M);
    a.ld_x_scale = 1;
    a.x_scale_row_stride = 0;
  }
  a.w_scale = w_scale.data;
  a.gw = gw;
  if (has_bias) {
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
  a.whole_last_tile = options.whole_last_tile;
  const kernels::TileOrder order = options.max_swizzle > 0 ? kernels::TileOrder{options.max_swizzle, 1}
                                                           : kernels::blockwise_tile_order(M, N, plan.config, dev.sm_count);
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  if (plan.split_k == 1) return kernels::run_blockwise_gemm(a, plan.config, stream);
  // The GEMM writes split_k unbiased float32 slices of the whole groups into the workspace; the
  // reduction adds them, the partial last group (K % 128 columns) if any, and writes y.
  kernels::SplitKTail tail;
  const int64_t k0 = K / kScaleGroupK * kScaleGroupK, last = K / kScaleGroupK;  // the partial group's start, index
  if (k0 < K) {
    // The partial group's scale of row r: s[(r >> shift) · stride] (layouts in include/qsgemm/blockwise.h).
    const auto scale_of = [&](G g, const float* s, bool m_major, int64_t ld, const float*& p, int64_t& stride, int& shift) {
      p = g == G::kPerRow ? s : s + (m_major ? last * ld : last);
      stride = g == G::kPerRow || m_major ? 1 : k_groups;
      shift = g == G::kBlock128x128 ? 7 : 0;
    };
    tail.x = static_cast<const uint8_t*>(x.data) + k0;
    tail.ldx = x.ld;
    tail.w = static_cast<const uint8_t*>(w.data) + k0;
    tail.ldw = w.ld;
    tail.kt = static_cast<int>(K - k0);
    scale_of(gx, x_scale.data, gx == G::kGroup1x128, x_scale.ld, tail.sx, tail.sx_stride, tail.sx_shift);
    scale_of(gw, w_scale.data, false, 0, tail.sw, tail.sw_stride, tail.sw_shift);
  }
  detail::run_split_k(
      fn, plan.split_k, y, bias, options.workspace, dev.sm_count, stream,
      [&](void* ws_ptr) {
        kernels::BlockwiseGemmArgs g = a;
        g.splits = plan.split_k;
        g.y = ws_ptr;
        g.y_dtype = DType::kF32;
        g.ldy = N;
        g.bias_f32 = nullptr;
        g.bias_out = nullptr;
        kernels::run_blockwise_gemm(g, plan.config, stream);
      },
      k0 < K ? &tail : nullptr);
}

int blockwise_num_configs() { return kernels::kBlockwiseNumConfigs; }

std::string blockwise_config_name(int index) {
  if (index < 0 || index >= kernels::kBlockwiseNumConfigs)
    detail::fail("blockwise_config_name", Status::kInvalidArgument, "index",
                 detail::cat("config index ", index, " is outside [0, ", kernels::kBlockwiseNumConfigs, ")"));
  return kernels::kBlockwiseConfigs[index].name();
}

int blockwise_config_index(const std::string& name) {
  return detail::config_index_by_name("blockwise_config_index", name, kernels::kBlockwiseNumConfigs, describe);
}

bool blockwise_config_supports(int index, ScaleGranularity gx, ScaleGranularity gw, int64_t M) {
  return kernels::blockwise_config_supports(index, gx, gw, M);
}

int blockwise_choose_config(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                            int sm_count, int64_t ld_x, int64_t ld_w) {
  if (sm_count <= 0)
    detail::fail("blockwise_choose_config", Status::kInvalidArgument, "sm_count",
                 detail::cat("sm_count=", sm_count, " must be positive"));
  check_plan_ld("blockwise_choose_config", K, ld_x, ld_w);
  return kernels::blockwise_choose_config(M, N, K, gx, gw, sm_count, ld_x, ld_w);
}

LinearPlan blockwise_plan(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                          const BlockwiseOptions& options, int sm_count, int64_t ld_x, int64_t ld_w) {
  const char* fn = "blockwise_plan";
  check_problem(fn, M, N, K, gx, gw, options);
  check_plan_ld(fn, K, ld_x, ld_w);
  return make_plan(fn, M, N, K, gx, gw, options, detail::resolve_sm_count(fn, sm_count), true, ld_x, ld_w);
}

size_t blockwise_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, ScaleGranularity gx, ScaleGranularity gw,
                                        const BlockwiseOptions& options, int sm_count, int64_t ld_x, int64_t ld_w) {
  const char* fn = "blockwise_linear_workspace_bytes";
  check_problem(fn, M, N, K, gx, gw, options);
  check_plan_ld(fn, K, ld_x, ld_w);
  return make_plan(fn, M, N, K, gx, gw, options, detail::resolve_sm_count(fn, sm_count), true, ld_x, ld_w)
      .workspace_bytes;
}

}  // namespace qsgemm
