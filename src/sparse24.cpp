// 2:4 sparse FP8 host API (include/qsgemm/sparse24.h): validation, configuration choice, launch.
#include "qsgemm/sparse24.h"

#include <algorithm>
#include <vector>

#include "kernels/sm90/sparse24/sm90_sparse24_configs.h"
#include "kernels/sm90/sparse24/sparse24_launch.h"
#include "kernels/sm90/sparse24/sparse24_skinny.h"
#include "kernels/sm90/splitk/splitk_reduce.h"
#include "sparse24_heuristic.h"
#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "validate.h"

namespace qsgemm {
namespace {

static_assert(kernels::kSparse24SkinnyConfig + 1 == kernels::kSparse24NumConfigs,
              "the decode kernel is the last row of the configuration table (config_table below)");

struct ConfigRow {
  int tm, tn, tk, cm, cn;
  bool coop, fast, stream_k;
  bool skinny = false;
};
const std::vector<ConfigRow>& config_table() {
  static const std::vector<ConfigRow> table = {
#define QSGEMM_ROW(i, tm, tn, tk, cm, cn, coop, fast, two_partials) {tm, tn, tk, cm, cn, coop, fast, false},
      QSGEMM_SPARSE24_CONFIGS(QSGEMM_ROW)
      QSGEMM_SPARSE24_WIDE_CONFIGS(QSGEMM_ROW)
#undef QSGEMM_ROW
#define QSGEMM_ROW(i, tm, tn, tk, cm, cn, coop, fast, two_partials) {tm, tn, tk, cm, cn, coop, fast, true},
      QSGEMM_SPARSE24_STREAMK_CONFIGS(QSGEMM_ROW)
#undef QSGEMM_ROW
      // kernels::kSparse24SkinnyConfig: 16 weight rows per warp, up to 32 tokens, 128-wide K panels.
      {16, kernels::kSparse24SkinnyMaxM, 128, 1, 1, false, false, false, true},
  };
  return table;
}

void check_weight_shape(const char* fn, int64_t N, int64_t K) {
  if (N <= 0 || K <= 0)
    detail::fail(fn, Status::kInvalidArgument, "w", detail::cat("weight shape [N=", N, ", K=", K, "] must be positive"));
  if (N % kSparse24AlignN != 0)
    detail::fail(fn, Status::kInvalidArgument, "N", detail::cat("N=", N, " must be a multiple of ", kSparse24AlignN));
  if (K % kSparse24AlignK != 0)
    detail::fail(fn, Status::kInvalidArgument, "K", detail::cat("K=", K, " must be a multiple of ", kSparse24AlignK));
  if (N > (int64_t{1} << 30) || K > (int64_t{1} << 30))
    detail::fail(fn, Status::kInvalidArgument, "w", detail::cat("weight shape [", N, ", ", K, "] exceeds 2^30"));
}

void check_weight(const char* fn, const SparseFp8Weight& w) {
  check_weight_shape(fn, w.N, w.K);
  detail::check_ptr(fn, "w.values", w.values, 16);
  detail::check_ptr(fn, "w.meta", w.meta, 16);
  detail::check_ptr(fn, "w.scales", w.scales, 4);
}

}  // namespace

std::string Sparse24Config::name() const {
  if (skinny) return detail::cat("skinny_m", tile_n, "_splitk");
  return detail::cat(tile_m, "x", tile_n, "x", tile_k, "_c", cluster_m, "x", cluster_n, cooperative ? "_coop" : "_pingpong",
                     fast_accum ? "_fastaccum" : "", stream_k ? "_streamk" : "");
}
int sparse24_num_configs() { return static_cast<int>(config_table().size()); }
Sparse24Config sparse24_config(int index) {
  if (index < 0 || index >= sparse24_num_configs())
    detail::fail("sparse24_config", Status::kInvalidArgument, "index",
                 detail::cat("config index ", index, " is outside [0, ", sparse24_num_configs(), ")"));
  const ConfigRow& r = config_table()[static_cast<size_t>(index)];
  return Sparse24Config{r.tm, r.tn, r.tk, r.cm, r.cn, r.coop, r.fast, r.stream_k, r.skinny};
}
int sparse24_choose_config(int64_t M, int64_t N, int64_t K, int sm_count, bool fast_accum, bool stream_k) {
  return kernels::sparse24_heuristic(M, N, K, sm_count, fast_accum, stream_k);
}

namespace {

void check_config_index(const char* fn, int config) {
  if (config < -1 || config >= sparse24_num_configs())
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("config ", config, " is outside [-1, ", sparse24_num_configs(), ")"));
}

// The workspace configuration `config` needs for M x N x K (0 without stream-K). Host arithmetic.
size_t config_workspace_bytes(int64_t M, int64_t N, int64_t K, int sm_count, int config) {
  if (!config_table()[static_cast<size_t>(config)].stream_k) return 0;
  kernels::Sparse24GemmArgs a;  // the size depends on the shape, the SM count and the tile order only
  a.m_tok = M;
  a.n_out = N;
  a.k = K;
  a.sm_count = sm_count;
  a.ldx = K;
  a.ldy = N;
  const kernels::TileOrder order = kernels::sparse24_tile_order(M, N);  // as sparse24_linear launches it
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  // At least 16 bytes: a stream-K configuration always takes a workspace, also where CUTLASS's
  // decomposition runs the shape as plain data-parallel tiles and needs none.
  return std::max<size_t>(kernels::sparse24_gemm_workspace_bytes(a, config), 16);
}

// Split-K runs on the data-parallel CUTLASS configurations only.
bool splittable(int config) {
  const ConfigRow& r = config_table()[static_cast<size_t>(config)];
  return !r.stream_k && !r.skinny;
}

// The option rules every entry point shares: the config index and the split_k range.
void check_config_and_split(const char* fn, const Sparse24LinearOptions& o) {
  check_config_index(fn, o.config);
  if (o.split_k < 0 || o.split_k > kernels::kSparse24MaxSplitK)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, " must be 0 (chosen by the library), 1 (no split) or 2..",
                             kernels::kSparse24MaxSplitK));
}

// The 64x32 tile of the accumulation mode: what the heuristic takes at M <= 32 when it does not take
// the decode kernel.
int narrow_tile(bool fast_accum) {
  return (fast_accum ? kernels::sparse24_detail::kFast : kernels::sparse24_detail::kDefault)[0].index;
}

// The library's split of `config` (split_k = 0, given a workspace): the rule of sparse24_split_k for
// a data-parallel configuration; where the heuristic took the decode kernel, the split 64x32 tile
// when the rule splits it (the 1280-row shard at M = 1 / 8: 10.3 against 10.8 / 11.2 us,
// tune_sparse24_splitk.jsonl).
Sparse24Plan library_split(int64_t M, int64_t N, int64_t K, int config, bool fast_accum, int sm_count) {
  const ConfigRow& c = config_table()[static_cast<size_t>(config)];
  if (splittable(config)) return {config, kernels::sparse24_split_k(M, N, K, c.tm, c.tn, sm_count)};
  if (c.skinny) {
    const int alt = narrow_tile(fast_accum);
    const ConfigRow& r = config_table()[static_cast<size_t>(alt)];
    const int s = kernels::sparse24_split_k(M, N, K, r.tm, r.tn, sm_count);
    if (s > 1) return {alt, s};
  }
  return {config, 1};
}

// sparse24_plan without its argument checks. A forced split (split_k >= 2) picks among the
// data-parallel configurations when options.config leaves the choice to the heuristic.
Sparse24Plan plan_unchecked(int64_t M, int64_t N, int64_t K, const Sparse24LinearOptions& o, int sm_count) {
  Sparse24Plan p;
  p.config = o.config >= 0 ? o.config : sparse24_choose_config(M, N, K, sm_count, o.fast_accum, o.split_k < 2);
  if (o.split_k >= 2) {
    // Where the heuristic took the decode kernel: the 64x32 tile it would take otherwise.
    if (o.config < 0 && config_table()[static_cast<size_t>(p.config)].skinny) p.config = narrow_tile(o.fast_accum);
    if (splittable(p.config)) p.split_k = o.split_k;
    return p;
  }
  if (o.split_k == 1 || (o.config >= 0 && !splittable(p.config))) return p;
  return library_split(M, N, K, p.config, o.fast_accum, sm_count);
}

// A forced split's rules: a data-parallel configuration and whole 256-wide K tiles per slice.
void check_forced_split(const char* fn, int64_t M, int64_t K, const Sparse24LinearOptions& o, const Sparse24Plan& p) {
  if (o.split_k < 2) return;
  if (!splittable(p.config)) {
    const std::string chosen = o.config < 0 ? detail::cat(", the heuristic's choice for M=", M) : std::string();
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, " applies to the data-parallel configurations, not config ", p.config,
                             " (", sparse24_config(p.config).name(), ")", chosen));
  }
  if (K % (kernels::kSparse24SplitTileK * o.split_k) != 0)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, " needs K to be a multiple of 256 x ", o.split_k, " = ",
                             kernels::kSparse24SplitTileK * o.split_k, "; got K=", K));
}

void check_plan_args(const char* fn, int64_t M, int64_t N, int64_t K, const Sparse24LinearOptions& options, int sm_count) {
  check_weight_shape(fn, N, K);
  if (M < 0 || M > (int64_t{1} << 30))
    detail::fail(fn, Status::kInvalidArgument, "M", detail::cat("M=", M, " is outside [0, 2^30]"));
  check_config_and_split(fn, options);
  if (sm_count < 0) detail::fail(fn, Status::kInvalidArgument, "sm_count", detail::cat("sm_count=", sm_count, " is negative"));
}

}  // namespace

Sparse24Plan sparse24_plan(int64_t M, int64_t N, int64_t K, const Sparse24LinearOptions& options, int sm_count) {
  const char* fn = "sparse24_plan";
  check_plan_args(fn, M, N, K, options, sm_count);
  if (sm_count == 0) sm_count = device_info(-1).sm_count;
  const Sparse24Plan p = plan_unchecked(std::max<int64_t>(M, 1), N, K, options, sm_count);
  check_forced_split(fn, M, K, options, p);
  return p;
}

size_t sparse24_linear_workspace_bytes(int64_t M, int64_t N, int64_t K, const Sparse24LinearOptions& options,
                                       int sm_count) {
  const char* fn = "sparse24_linear_workspace_bytes";
  check_plan_args(fn, M, N, K, options, sm_count);
  if (M == 0) return 0;
  if (sm_count == 0) sm_count = device_info(-1).sm_count;
  const Sparse24Plan p = plan_unchecked(M, N, K, options, sm_count);
  check_forced_split(fn, M, K, options, p);
  if (p.split_k > 1) return kernels::splitk_workspace_bytes(M, N, p.split_k);
  return config_workspace_bytes(M, N, K, sm_count, p.config);
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
  detail::require_sm90(fn);

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
  detail::require_sm90(fn);
  kernels::launch_sparse24_decompress(w.values, w.meta, w.scales, w.per_tensor_scale, w.N, w.K, out.data, out.dtype,
                                      out.ld, stream);
}

namespace {

// Split-K: the GEMM writes S scaled, unbiased float32 slices into the workspace; the reduction adds
// them in order with the bias and writes y.
void run_split(const kernels::Sparse24GemmArgs& a, const Sparse24Plan& p, void* workspace, const char* fn,
               cudaStream_t stream) {
  kernels::Sparse24GemmArgs g = a;
  g.splits = p.split_k;
  g.y = workspace;
  g.y_dtype = DType::kF32;
  g.ldy = a.n_out;
  g.bias = nullptr;
  g.bias_dtype = DType::kF32;
  g.workspace = nullptr;
  g.workspace_bytes = 0;
  kernels::run_sparse24_gemm(g, p.config, stream);
  kernels::run_splitk_reduce({static_cast<const float*>(workspace), p.split_k, static_cast<int>(a.m_tok),
                              static_cast<int>(a.n_out), a.bias, a.bias_dtype, a.y, a.y_dtype, a.ldy, a.sm_count, fn},
                             stream);
}

}  // namespace

void sparse24_linear(const MatrixView& x, const ScaleView& x_scale, const SparseFp8Weight& w, const VectorView& bias,
                     const MatrixView& y, const Sparse24LinearOptions& options, cudaStream_t stream) {
  const char* fn = "sparse24_linear";
  check_weight(fn, w);
  detail::check_matrix(fn, "x", x, {DType::kE4M3}, -1, w.K, 16);
  detail::check_matrix(fn, "y", y, {DType::kBF16, DType::kF16, DType::kF32}, x.rows, w.N, 16);
  if (x_scale.granularity != ScaleGranularity::kPerRow && x_scale.granularity != ScaleGranularity::kPerTensor)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("granularity ", granularity_name(x_scale.granularity), " is not accepted; use per_row or per_tensor"));
  if (!bias.empty()) {
    if (bias.size != w.N)
      detail::fail(fn, Status::kInvalidArgument, "bias", detail::cat("bias has ", bias.size, " elements, expected N=", w.N));
    const bool ok = bias.dtype == y.dtype || bias.dtype == DType::kF32;
    if (!ok)
      detail::fail(fn, Status::kInvalidArgument, "bias",
                   detail::cat("bias dtype ", dtype_name(bias.dtype), " must be fp32 or the output dtype ", dtype_name(y.dtype)));
    detail::check_ptr(fn, "bias", bias.data, 16);
  }
  check_config_and_split(fn, options);
  const bool forced_stream_k = options.config >= 0 && config_table()[static_cast<size_t>(options.config)].stream_k;
  if (forced_stream_k && options.workspace == nullptr)
    detail::fail(fn, Status::kInvalidArgument, "options.workspace",
                 detail::cat("configuration ", options.config, " (", sparse24_config(options.config).name(),
                             ") is stream-K and needs a workspace (sparse24_linear_workspace_bytes)"));
  if (options.workspace != nullptr) detail::check_ptr(fn, "options.workspace", options.workspace, 16);
  if (options.config == kernels::kSparse24SkinnyConfig && x.rows > kernels::kSparse24SkinnyMaxM)
    detail::fail(fn, Status::kInvalidArgument, "options.config",
                 detail::cat("configuration ", options.config, " (", sparse24_config(options.config).name(), ") serves M <= ",
                             kernels::kSparse24SkinnyMaxM, "; got M=", x.rows));
  if (x.rows == 0) return;
  if (x.rows > (int64_t{1} << 30))
    detail::fail(fn, Status::kInvalidArgument, "x", detail::cat("M=", x.rows, " exceeds 2^30"));
  detail::check_ptr(fn, "x_scale", x_scale.data, 4);
  const DeviceInfo dev = device_info(-1);
  // A forced split: its configuration, K and workspace rules (before the device check, so that
  // they are reported anywhere).
  const int sk = options.split_k;
  Sparse24Plan forced;
  if (sk >= 2) {
    forced = plan_unchecked(x.rows, w.N, w.K, options, dev.sm_count);
    check_forced_split(fn, x.rows, w.K, options, forced);
    kernels::check_splitk_workspace(fn, sk, x.rows, w.N, options.workspace, options.workspace_bytes);
  }
  detail::require_sm90(fn);

  kernels::Sparse24GemmArgs a;
  a.m_tok = x.rows;
  a.n_out = w.N;
  a.k = w.K;
  a.x = static_cast<const uint8_t*>(x.data);
  a.ldx = x.ld;
  a.w_values = w.values;
  a.w_meta = w.meta;
  a.w_scale = w.scales;
  a.w_scale_scalar = w.per_tensor_scale;
  a.x_scale = x_scale.data;
  a.x_scale_scalar = x_scale.granularity == ScaleGranularity::kPerTensor;
  a.bias = bias.data;
  a.bias_dtype = bias.dtype;
  a.y = y.data;
  a.y_dtype = y.dtype;
  a.ldy = y.ld;
  a.sm_count = dev.sm_count;
  const kernels::TileOrder order = kernels::sparse24_tile_order(x.rows, w.N);
  a.swizzle = order.swizzle;
  a.raster = order.raster;
  if (sk >= 2) return run_split(a, forced, options.workspace, fn, stream);
  // The workspace the configuration needs (0 without stream-K), worked out once. A stream-K choice
  // of the heuristic runs only with a large enough workspace; otherwise the heuristic's choice
  // among the configurations that need none.
  int config = options.config;
  size_t need = 0;
  if (config < 0) {
    config = sparse24_choose_config(x.rows, w.N, w.K, dev.sm_count, options.fast_accum, options.workspace != nullptr);
    need = config_workspace_bytes(x.rows, w.N, w.K, dev.sm_count, config);
    if (need > options.workspace_bytes) {
      config = sparse24_choose_config(x.rows, w.N, w.K, dev.sm_count, options.fast_accum, false);
      need = 0;
    }
  } else {
    need = config_workspace_bytes(x.rows, w.N, w.K, dev.sm_count, config);
  }
  if (need > options.workspace_bytes)  // a forced stream-K configuration
    detail::fail(fn, Status::kInvalidArgument, "options.workspace_bytes",
                 detail::cat("configuration ", config, " (", sparse24_config(config).name(), ") needs ", need,
                             " bytes of workspace for M=", x.rows, " N=", w.N, " K=", w.K, "; ", options.workspace_bytes,
                             " given"));
  if (need > 0) {
    a.workspace = options.workspace;
    a.workspace_bytes = options.workspace_bytes;
  }
  // The library's split (split_k == 0), where the workspace holds its slices. A forced configuration
  // is split only if it is a data-parallel one (the decode kernel, forced, stays itself).
  if (sk == 0 && options.workspace != nullptr && (options.config < 0 || splittable(config))) {
    const Sparse24Plan p = library_split(x.rows, w.N, w.K, config, options.fast_accum, dev.sm_count);
    if (p.split_k > 1 && options.workspace_bytes >= kernels::splitk_workspace_bytes(x.rows, w.N, p.split_k))
      return run_split(a, p, options.workspace, fn, stream);
  }
  if (config == kernels::kSparse24SkinnyConfig)
    kernels::run_sparse24_skinny(a, stream);
  else
    kernels::run_sparse24_gemm(a, config, stream);
}

}  // namespace qsgemm
