// 2:4 sparse FP8 host API (include/qsgemm/sparse24.h): validation and launch. The configuration
// table is src/kernels/sm90/sparse24/sm90_sparse24_configs.h, the heuristic src/sparse24_heuristic.h,
// the rules every family shares src/linear_common.h.
#include "qsgemm/sparse24.h"

#include <algorithm>

#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "kernels/sm90/sparse24/sparse24_skinny.h"
#include "linear_common.h"
#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "sparse24_heuristic.h"
#include "validate.h"

namespace qsgemm {
namespace {

using kernels::kSparse24Configs;
using kernels::kSparse24NumConfigs;

static_assert(kernels::kSparse24MaxSplitK == detail::kMaxSplitK, "one split-K limit for every family");

constexpr int64_t kMaxExtent = int64_t{1} << 30;

void check_weight_shape(const char* fn, int64_t N, int64_t K) {
  if (N <= 0 || K <= 0)
    detail::fail(fn, Status::kInvalidArgument, "w", detail::cat("weight shape [N=", N, ", K=", K, "] must be positive"));
  if (N % kSparse24AlignN != 0)
    detail::fail(fn, Status::kInvalidArgument, "N", detail::cat("N=", N, " must be a multiple of ", kSparse24AlignN));
  if (K % kSparse24AlignK != 0)
    detail::fail(fn, Status::kInvalidArgument, "K", detail::cat("K=", K, " must be a multiple of ", kSparse24AlignK));
  if (N > kMaxExtent || K > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "w", detail::cat("weight shape [", N, ", ", K, "] exceeds 2^30"));
}

void check_weight(const char* fn, const SparseFp8Weight& w) {
  check_weight_shape(fn, w.N, w.K);
  detail::check_ptr(fn, "w.values", w.values, 16);
  detail::check_ptr(fn, "w.meta", w.meta, 16);
  detail::check_ptr(fn, "w.scales", w.scales, 4);
}

const kernels::Sparse24ConfigRow& row(int config) { return kSparse24Configs[static_cast<size_t>(config)]; }

}  // namespace

std::string Sparse24Config::name() const {
  if (skinny) return detail::cat("skinny_m", tile_n, "_splitk");
  return detail::cat(tile_m, "x", tile_n, "x", tile_k, "_c", cluster_m, "x", cluster_n, cooperative ? "_coop" : "_pingpong",
                     fast_accum ? "_fastaccum" : "", stream_k ? "_streamk" : "");
}
int sparse24_num_configs() { return kSparse24NumConfigs; }
Sparse24Config sparse24_config(int index) {
  if (index < 0 || index >= kSparse24NumConfigs)
    detail::fail("sparse24_config", Status::kInvalidArgument, "index",
                 detail::cat("config index ", index, " is outside [0, ", kSparse24NumConfigs, ")"));
  const kernels::Sparse24ConfigRow& r = row(index);
  return Sparse24Config{r.tile_m, r.tile_n, r.tile_k, r.cluster_m, r.cluster_n, r.cooperative, r.fast_accum, r.stream_k(), r.skinny()};
}
int sparse24_config_index(const std::string& name) {
  return detail::config_index_by_name("sparse24_config_index", name, kSparse24NumConfigs,
                                      [](int i) { return std::string(row(i).name); });
}
int sparse24_choose_config(int64_t M, int64_t N, int64_t K, int sm_count, bool fast_accum, bool stream_k) {
  if (sm_count <= 0)
    detail::fail("sparse24_choose_config", Status::kInvalidArgument, "sm_count",
                 detail::cat("sm_count=", sm_count, " must be positive"));
  return kernels::sparse24_heuristic(M, N, K, sm_count, fast_accum, stream_k);
}

namespace {

std::string describe(int config) { return row(config).name; }

// The tile order a launch of `config` runs: the library's (sparse24_tile_order) or the tuning
// option's bands (Sparse24Options::max_swizzle).
kernels::TileOrder tile_order(int64_t M, int64_t N, int config, int sm_count, kernels::Sparse24Profile profile,
                              int max_swizzle) {
  if (max_swizzle > 0) return kernels::TileOrder{max_swizzle, 1};
  return kernels::sparse24_tile_order(M, N, config, sm_count, profile);
}

// The workspace configuration `config` needs for M x N x K (0 without stream-K). Host arithmetic.
size_t config_workspace_bytes(int64_t M, int64_t N, int64_t K, int sm_count, int config, kernels::Sparse24Profile profile,
                              int max_swizzle) {
  if (!row(config).stream_k()) return 0;
  kernels::Sparse24GemmArgs a;  // the size depends on the shape, the SM count and the tile order only
  a.m_tok = M;
  a.n_out = N;
  a.k = K;
  a.sm_count = sm_count;
  a.ldx = K;
  a.ldy = N;
  const kernels::TileOrder order = tile_order(M, N, config, sm_count, profile, max_swizzle);  // as sparse24_linear launches it
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  // At least 16 bytes: a stream-K configuration always takes a workspace, also where CUTLASS's
  // decomposition runs the shape as plain data-parallel tiles and needs none.
  return std::max<size_t>(kernels::sparse24_gemm_workspace_bytes(a, config), 16);
}

// The option and shape rules of every entry point that do not depend on the device: the shape
// limits, the config index and split range, the decode kernel's M, a forced split's configuration
// and K. (A forced split with config -1 runs a data-parallel tile whatever the SM count.)
void check_problem(const char* fn, int64_t M, int64_t N, int64_t K, const Sparse24Options& o) {
  check_weight_shape(fn, N, K);
  if (M < 0 || M > kMaxExtent) detail::fail(fn, Status::kInvalidArgument, "M", detail::cat("M=", M, " is outside [0, 2^30]"));
  detail::check_config_and_split(fn, o, kSparse24NumConfigs);
  detail::check_max_swizzle(fn, o.max_swizzle);
  if (o.config == kernels::kSparse24SkinnyConfig && M > kernels::kSparse24SkinnyMaxM)
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("configuration ", o.config, " (", describe(o.config), ") serves M <= ",
                             kernels::kSparse24SkinnyMaxM, "; got M=", M));
  if (o.split_k >= 2) {
    if (o.config >= 0 && !row(o.config).splittable())
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", o.split_k, " applies to the data-parallel configurations, not config ", o.config,
                               " (", describe(o.config), ")"));
    if (K % (kernels::kSparse24SplitTileK * o.split_k) != 0)
      detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                   detail::cat("split_k=", o.split_k, " needs K to be a multiple of 256 x ", o.split_k, " = ",
                               kernels::kSparse24SplitTileK * o.split_k, "; got K=", K));
  }
}

// The card profile the heuristic follows on `device` (-1: the current one; the H200's without one).
kernels::Sparse24Profile device_profile(int device) { return kernels::sparse24_profile(detail::device_dram_gbps(device)); }

// THE plan (include/qsgemm/linear.h): what sparse24_plan publishes and sparse24_linear runs, with or
// without a workspace. The arguments are checked (check_problem), sm_count > 0.
LinearPlan make_plan(int64_t M, int64_t N, int64_t K, const Sparse24Options& o, int sm_count, bool with_workspace,
                     kernels::Sparse24Profile profile) {
  const kernels::Sparse24Choice c = kernels::sparse24_choose(std::max<int64_t>(M, 1), N, K, o.config, o.split_k,
                                                             o.fast_accum, sm_count, with_workspace, profile);
  LinearPlan p{c.config, c.split_k, 0, c.tail_config, c.tail_config >= 0 ? c.tail_rows : 0};
  // With a tail, the main launch covers c.main_rows tokens (and the tail needs no workspace).
  if (M > 0)
    p.workspace_bytes = p.split_k > 1 ? detail::splitk_workspace_bytes(M, N, p.split_k)
                                      : config_workspace_bytes(p.tail_config >= 0 ? c.main_rows : M, N, K, sm_count, p.config,
                                                               profile, o.max_swizzle);
  return p;
}

}  // namespace

LinearPlan sparse24_plan(int64_t M, int64_t N, int64_t K, const Sparse24Options& options, int sm_count) {
  const char* fn = "sparse24_plan";
  check_problem(fn, M, N, K, options);
  return make_plan(M, N, K, options, detail::resolve_sm_count(fn, sm_count), true, device_profile(-1));
}

size_t sparse24_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, const Sparse24Options& options, int sm_count) {
  const char* fn = "sparse24_linear_workspace_bytes";
  check_problem(fn, M, N, K, options);
  return make_plan(M, N, K, options, detail::resolve_sm_count(fn, sm_count), true, device_profile(-1)).workspace_bytes;
}

Sparse24WeightBytes sparse24_weight_bytes(int64_t N, int64_t K, bool per_tensor_scale) {
  check_weight_shape("sparse24_weight_bytes", N, K);
  return Sparse24WeightBytes{static_cast<size_t>(N * K / 2), static_cast<size_t>(sparse24_meta_bytes(N, K)),
                             per_tensor_scale ? sizeof(float) : sizeof(float) * static_cast<size_t>(N)};
}

size_t sparse24_compress_workspace_bytes(int64_t, int64_t) { return sizeof(kernels::Sparse24CompressStatus); }

void sparse24_compress(const MatrixView& w, const SparseFp8Weight& out, const Sparse24CompressOptions& options,
                       void* workspace, cudaStream_t stream) {
  const char* fn = "sparse24_compress";
  detail::check_matrix(fn, "w", w, {DType::kBF16, DType::kF16, DType::kF32}, -1, -1, 16);
  check_weight_shape(fn, w.rows, w.cols);
  if (out.N != w.rows || out.K != w.cols)
    detail::fail(fn, Status::kInvalidArgument, "out",
                 detail::cat("out is [", out.N, ", ", out.K, "] but w is [", w.rows, ", ", w.cols, "]"));
  if (options.scale == Sparse24Scale::kPerTensor && !out.per_tensor_scale)
    detail::fail(fn, Status::kInvalidArgument, "out.per_tensor_scale", "must be true with Sparse24Scale::kPerTensor");
  if (options.scale == Sparse24Scale::kPerChannel && out.per_tensor_scale)
    detail::fail(fn, Status::kInvalidArgument, "out.per_tensor_scale", "must be false with Sparse24Scale::kPerChannel");
  check_weight(fn, out);
  detail::check_ptr(fn, "workspace", workspace, 8);
  detail::require_sm90(fn, detail::stream_device(fn, stream));

  auto* status = static_cast<kernels::Sparse24CompressStatus*>(workspace);
  // first_* = ~0 ("none yet"), amax = 0.
  constexpr size_t kFirst = kernels::Sparse24CompressStatus::kFirstFieldsBytes;
  detail::check_cuda(cudaMemsetAsync(status, 0xFF, kFirst, stream), fn, "cudaMemsetAsync(workspace)");
  detail::check_cuda(cudaMemsetAsync(reinterpret_cast<char*>(status) + kFirst, 0,
                                     sizeof(kernels::Sparse24CompressStatus) - kFirst, stream),
                     fn, "cudaMemsetAsync(workspace)");
  // Padding nibbles of the metadata (rows past N, columns past K) hold a valid index pair.
  detail::check_cuda(cudaMemsetAsync(out.meta, kSparse24PadNibble * 0x11, sparse24_meta_bytes(out.N, out.K), stream), fn,
                     "cudaMemsetAsync(meta)");
  const int mode = options.scale == Sparse24Scale::kPerChannel ? 0 : options.scale == Sparse24Scale::kPerTensor ? 1 : 2;
  kernels::launch_sparse24_compress(w.data, w.dtype, w.ld, w.rows, w.cols, options.prune == Sparse24Prune::kRequire,
                                    mode, out.per_tensor_scale, out.values, out.meta, out.scales, status, stream);
  kernels::Sparse24CompressStatus host{};
  detail::check_cuda(cudaMemcpyAsync(&host, status, sizeof(host), cudaMemcpyDeviceToHost, stream), fn,
                     "cudaMemcpyAsync(status)");
  detail::check_cuda(cudaStreamSynchronize(stream), fn, "cudaStreamSynchronize");
  if (host.first_nonfinite != ~0ull)
    detail::fail(fn, Status::kInvalidValue, "w",
                 detail::cat("non-finite value at row ", host.first_nonfinite / w.cols, ", column ",
                             host.first_nonfinite % w.cols));
  if (host.first_not_24 != ~0ull)
    detail::fail(fn, Status::kInvalidValue, "w",
                 detail::cat("not 2:4 sparse: row ", host.first_not_24 / (w.cols / 4), ", group ",
                             host.first_not_24 % (w.cols / 4), " (columns ", 4 * (host.first_not_24 % (w.cols / 4)),
                             "..", 4 * (host.first_not_24 % (w.cols / 4)) + 3, ") has more than two non-zeros"));
  if (host.first_bad_scale != ~0ull) {
    // Error path only: fetch the offending value for the message.
    float bad = 0.0f;
    detail::check_cuda(cudaMemcpy(&bad, out.scales + host.first_bad_scale, sizeof(float), cudaMemcpyDeviceToHost), fn,
                       "cudaMemcpy(out.scales)");
    detail::fail(fn, Status::kInvalidValue, "out.scales",
                 detail::cat("given scale of channel ", host.first_bad_scale, " (out.scales[", host.first_bad_scale,
                             "] = ", bad, ") must be a positive, normal, finite float; its values were written as zeros"));
  }
}

void sparse24_decompress(const SparseFp8Weight& w, const MatrixView& out, cudaStream_t stream) {
  const char* fn = "sparse24_decompress";
  check_weight(fn, w);
  detail::check_matrix(fn, "out", out, {DType::kBF16, DType::kF32}, w.N, w.K, dtype_size(out.dtype));
  detail::require_sm90(fn, detail::stream_device(fn, stream));
  kernels::launch_sparse24_decompress(w.values, w.meta, w.scales, w.per_tensor_scale, w.N, w.K, out.data, out.dtype,
                                      out.ld, stream);
}

void sparse24_linear(const MatrixView& x, const ScaleView& x_scale, const SparseFp8Weight& w, const VectorView& bias,
                     const MatrixView& y, const Sparse24Options& options, cudaStream_t stream) {
  const char* fn = "sparse24_linear";
  // ---- operands ----------------------------------------------------------------------------------
  check_weight(fn, w);
  detail::check_matrix(fn, "x", x, {DType::kE4M3}, -1, w.K, 16);
  detail::check_matrix(fn, "y", y, {DType::kBF16, DType::kF16, DType::kF32}, x.rows, w.N, 16);
  if (x_scale.granularity != ScaleGranularity::kPerRow && x_scale.granularity != ScaleGranularity::kPerTensor)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("granularity ", granularity_name(x_scale.granularity), " is not accepted; use per_row or per_tensor"));
  const bool has_bias = detail::check_bias(fn, bias, w.N, y.dtype);
  const int64_t M = x.rows, N = w.N, K = w.K;
  // ---- options (the rules sparse24_plan applies) ----------------------------------------------------
  check_problem(fn, M, N, K, options);
  const bool forced_stream_k = options.config >= 0 && row(options.config).stream_k();
  if (forced_stream_k && options.workspace == nullptr)
    detail::fail(fn, Status::kInvalidArgument, "options.workspace",
                 detail::cat("configuration ", options.config, " (", describe(options.config),
                             ") is stream-K and needs a workspace (sparse24_linear_workspace_bytes)"));
  detail::check_workspace_alignment(fn, options);
  if (M == 0) return;
  if (options.split_k >= 2) detail::check_forced_split_workspace(fn, options.split_k, M, N, options);
  detail::check_ptr(fn, "x_scale", x_scale.data, 4);
  // ---- y and the workspace against the inputs -------------------------------------------------------
  const bool sx_scalar = x_scale.granularity == ScaleGranularity::kPerTensor;
  const detail::ByteRange ws = detail::byte_range(options.workspace, options.workspace_bytes);
  detail::check_outputs_disjoint(
      fn, y,
      {{"x", detail::byte_range(x)},
       {"x_scale", detail::byte_range(x_scale.data, sizeof(float) * static_cast<size_t>(sx_scalar ? 1 : M))},
       {"w.values", detail::byte_range(w.values, static_cast<size_t>(N * K / 2))},
       {"w.meta", detail::byte_range(w.meta, static_cast<size_t>(sparse24_meta_bytes(N, K)))},
       {"w.scales", detail::byte_range(w.scales, sizeof(float) * static_cast<size_t>(w.per_tensor_scale ? 1 : N))},
       {"bias", has_bias ? detail::byte_range(bias) : detail::ByteRange{}}},
      ws);
  // ---- device and plan -------------------------------------------------------------------------------
  const detail::LaunchDevice dev = detail::launch_device(fn, stream);
  const kernels::Sparse24Profile profile = device_profile(dev.device);
  const LinearPlan plan = detail::select_plan(
      fn, options, M, N, K, [&](bool with_ws) { return make_plan(M, N, K, options, dev.sm_count, with_ws, profile); },
      describe);

  kernels::Sparse24GemmArgs a;
  a.m_tok = M;
  a.n_out = N;
  a.k = K;
  a.x = static_cast<const uint8_t*>(x.data);
  a.ldx = x.ld;
  a.w_values = w.values;
  a.w_meta = w.meta;
  a.w_scale = w.scales;
  a.w_scale_scalar = w.per_tensor_scale;
  a.x_scale = x_scale.data;
  a.x_scale_scalar = sx_scalar;
  a.bias = has_bias ? bias.data : nullptr;
  a.bias_dtype = has_bias ? bias.dtype : DType::kF32;
  a.y = y.data;
  a.y_dtype = y.dtype;
  a.ldy = y.ld;
  a.device = dev.device;
  a.sm_count = dev.sm_count;
  a.whole_last_tile = options.whole_last_tile;
  const kernels::TileOrder order = tile_order(M, N, plan.config, dev.sm_count, profile, options.max_swizzle);
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  if (plan.split_k > 1) {
    // The GEMM writes split_k scaled, unbiased float32 slices; the reduction adds them and the bias.
    return detail::run_split_k(fn, plan.split_k, y, bias, options.workspace, dev.sm_count, stream, [&](void* ws_ptr) {
      kernels::Sparse24GemmArgs g = a;
      g.splits = plan.split_k;
      g.y = ws_ptr;
      g.y_dtype = DType::kF32;
      g.ldy = N;
      g.bias = nullptr;
      g.bias_dtype = DType::kF32;
      kernels::run_sparse24_gemm(g, plan.config, stream);
    });
  }
  if (plan.workspace_bytes > 0) {  // a stream-K configuration
    a.workspace = options.workspace;
    a.workspace_bytes = options.workspace_bytes;
  }
  if (row(plan.config).skinny()) return kernels::run_sparse24_skinny(a, stream);
  if (plan.tail_config < 0) return kernels::run_sparse24_gemm(a, plan.config, stream);
  // Main launch on the whole token columns, then the tail on the last tail_rows tokens: it starts
  // inside the main launch's last column (a multiple of 4 tokens, so the per-token scales keep
  // their alignment) and rewrites those rows, so that no token tile reads far past M
  // (sparse24_partial_column in src/sparse24_heuristic.h).
  const int64_t main_rows = kernels::sparse24_main_rows(plan.config, M);
  const int64_t start = M - plan.tail_rows;
  kernels::Sparse24GemmArgs t = a;
  a.m_tok = main_rows;
  const kernels::TileOrder main_order = tile_order(main_rows, N, plan.config, dev.sm_count, profile, options.max_swizzle);
  a.swizzle = main_order.swizzle;
  a.raster = main_order.raster;
  kernels::run_sparse24_gemm(a, plan.config, stream);
  t.m_tok = plan.tail_rows;
  t.x = a.x + start * x.ld;
  t.y = static_cast<char*>(y.data) + start * y.ld * static_cast<int64_t>(dtype_size(y.dtype));
  if (!sx_scalar) t.x_scale = x_scale.data + start;
  const kernels::TileOrder tail_order =
      tile_order(plan.tail_rows, N, plan.tail_config, dev.sm_count, profile, options.max_swizzle);
  t.swizzle = tail_order.swizzle;
  t.raster = tail_order.raster;
  t.workspace = nullptr;
  t.workspace_bytes = 0;
  kernels::run_sparse24_gemm(t, plan.tail_config, stream);
}

}  // namespace qsgemm
