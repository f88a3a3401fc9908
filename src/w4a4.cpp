// W4A4 + low-rank host API (include/qsgemm/w4a4.h): validation and launch of the fused GEMM, the
// weight packer and the activation quantizer. The configuration table is
// src/kernels/sm90/w4a4/sm90_w4a4_configs.h, the heuristic src/w4a4_heuristic.h, the rules every
// family shares src/linear_common.h. Every rule is checked before anything touches the GPU.
#include "qsgemm/w4a4.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "linear_common.h"
#include "qsgemm/formats.h"
#include "validate.h"
#include "w4a4_heuristic.h"

namespace qsgemm {
namespace {

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxD = int64_t{65535} * 64;  // gridDim.y holds the D tiles (at least 64 wide)

std::string describe(int config) { return kernels::kW4A4Configs[config].name(); }

void check_group(const char* fn, int group, int64_t D1) {
  if (!w4a4_group_is_valid(group))
    detail::fail(fn, Status::kInvalidArgument, "group", detail::cat("group=", group, " must be 64 or 128"));
  if (D1 <= 0 || D1 % group != 0)
    detail::fail(fn, Status::kInvalidArgument, "D1",
                 detail::cat("D1=", D1, " must be a positive multiple of group=", group, " (whole INT4 groups)"));
}

void check_rank(const char* fn, const char* name, int64_t r) {
  if (r < 0 || r > kW4A4MaxRank || r % 16 != 0)
    detail::fail(fn, Status::kInvalidArgument, name,
                 detail::cat("rank r=", r, " must be a multiple of 16 in [0, ", kW4A4MaxRank, "]"));
}

void check_extents(const char* fn, int64_t L, int64_t D, int64_t D1) {
  if (L > kMaxExtent || D > kMaxExtent || D1 > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "L",
                 detail::cat("problem [L=", L, ", D=", D, ", D1=", D1, "] exceeds ", kMaxExtent, " in one dimension"));
}

// The option rules shared by w4a4_plan and w4a4_linear.
void check_options(const char* fn, const W4A4Options& o) {
  detail::check_config_and_split(fn, o, kernels::kW4A4NumConfigs);
  if (o.split_k >= 2)
    detail::fail(fn, Status::kInvalidArgument, "options.split_k",
                 detail::cat("split_k=", o.split_k, ": the W4A4 family does not split K (use 0 or 1)"));
  detail::check_workspace_alignment(fn, o);
}

int pick_config(int64_t L, int64_t D, int64_t D1, int rank, const W4A4Options& o, int sm_count, int group) {
  return o.config >= 0 ? o.config : kernels::w4a4_choose(L, D, D1, rank, sm_count, group);
}

// The X1 staging a configuration reads, in words (error messages).
const char* staging_name(DType t) {
  return t == DType::kE4M3 ? "e4m3 codes (DType::kE4M3 [L, D1])" : "packed INT4 (DType::kI4x2 [L, D1/2])";
}

// An explicit configuration must read the caller's X1 staging (the heuristic only picks such rows).
void check_config_reads_x1(const char* fn, int config, DType x1) {
  const DType want = kernels::kW4A4Configs[config].x1_dtype();
  if (want != x1)
    detail::fail(fn, Status::kInvalidArgument, "x1",
                 detail::cat("config ", kernels::kW4A4Configs[config].name(), " reads X1 as ", staging_name(want),
                             " but x1 is ", dtype_name(x1), "; quantize X1 with w4a4_x1_dtype(config) (",
                             dtype_name(want), ")"));
}

}  // namespace

// ---- configurations ------------------------------------------------------------------------------
int w4a4_num_configs() { return kernels::kW4A4NumConfigs; }

std::string w4a4_config_name(int index) {
  if (index < 0 || index >= kernels::kW4A4NumConfigs)
    detail::fail("w4a4_config_name", Status::kInvalidArgument, "index",
                 detail::cat("config index ", index, " is outside [0, ", kernels::kW4A4NumConfigs, ")"));
  return kernels::kW4A4Configs[index].name();
}

int w4a4_config_index(const std::string& name) {
  return detail::config_index_by_name("w4a4_config_index", name, kernels::kW4A4NumConfigs, describe);
}

int w4a4_choose_config(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group) {
  const char* fn = "w4a4_choose_config";
  if (!w4a4_group_is_valid(group))
    detail::fail(fn, Status::kInvalidArgument, "group", detail::cat("group=", group, " must be 64 or 128"));
  if (sm_count <= 0)
    detail::fail(fn, Status::kInvalidArgument, "sm_count", detail::cat("sm_count=", sm_count, " must be positive"));
  if (L < 0 || D <= 0)
    detail::fail(fn, Status::kInvalidArgument, "L", detail::cat("shape L=", L, " D=", D, " (L >= 0, D > 0)"));
  return kernels::w4a4_choose(L, D, D1, rank, sm_count, group);
}

DType w4a4_x1_dtype(int config) {
  if (config < 0 || config >= kernels::kW4A4NumConfigs)
    detail::fail("w4a4_x1_dtype", Status::kInvalidArgument, "config",
                 detail::cat("config index ", config, " is outside [0, ", kernels::kW4A4NumConfigs, ")"));
  return kernels::kW4A4Configs[config].x1_dtype();
}

DType w4a4_x1_dtype(const LinearPlan& plan) { return w4a4_x1_dtype(plan.config); }

LinearPlan w4a4_plan(int64_t L, int64_t D, int64_t D1, int rank, const W4A4Options& options, int sm_count,
                     int group) {
  const char* fn = "w4a4_plan";
  if (L < 0 || D <= 0 || D1 <= 0)
    detail::fail(fn, Status::kInvalidArgument, "L",
                 detail::cat("shape L=", L, " D=", D, " D1=", D1, " is not a problem (L >= 0, D, D1 > 0)"));
  check_extents(fn, L, D, D1);
  check_group(fn, group, D1);
  check_rank(fn, "rank", rank);
  check_options(fn, options);
  return LinearPlan{pick_config(L, D, D1, rank, options, detail::resolve_sm_count(fn, sm_count), group), 1, 0};
}

// ---- the fused GEMM ---------------------------------------------------------------------------------
void w4a4_linear(const MatrixView& x1, const float* x_scale, int64_t ld_x_scale, const MatrixView& w1,
                 const float* w_scale, int group, const MatrixView& x2, const MatrixView& w2, const VectorView& bias,
                 const MatrixView& y, const W4A4Options& options, cudaStream_t stream) {
  const char* fn = "w4a4_linear";
  // x1: packed INT4 [L, D1/2] or e4m3 codes [L, D1] (docs/formats.md §5); w1 is always packed.
  detail::check_matrix(fn, "x1", x1, {DType::kI4x2, DType::kE4M3}, -1, -1, 16);
  const bool x1_bytes = x1.dtype == DType::kE4M3;
  const int64_t L = x1.rows, D1 = x1_bytes ? x1.cols : 2 * x1.cols;
  if (x1_bytes && D1 % 2 != 0)
    detail::fail(fn, Status::kInvalidArgument, "x1", detail::cat("x1 (e4m3) has ", D1, " columns: D1 must be even"));
  detail::check_matrix(fn, "w1", w1, {DType::kI4x2}, -1, D1 / 2, 16);
  const int64_t D = w1.rows;
  check_group(fn, group, D1);
  if (D <= 0 || D % 8 != 0)
    detail::fail(fn, Status::kInvalidArgument, "D",
                 detail::cat("D=", D, " (rows of w1) must be a positive multiple of 8 (whole n8 MMA tiles)"));
  check_extents(fn, L, D, D1);
  if (D > kMaxD)
    detail::fail(fn, Status::kInvalidArgument, "D",
                 detail::cat("D=", D, " exceeds ", kMaxD, " (65535 CTA columns of 64 output channels)"));
  detail::check_matrix(fn, "y", y, {DType::kBF16, DType::kF16, DType::kF32}, L, D, 16);
  const int64_t r = x2.cols;
  check_rank(fn, "x2", r);
  if (r > 0 || w2.cols != 0) {  // r = 0: plain W4A4, x2 and w2 are not read (any rows, null data)
    detail::check_matrix(fn, "x2", x2, {DType::kBF16}, L, -1, 16);
    detail::check_matrix(fn, "w2", w2, {DType::kBF16}, D, r, 16);
  }
  if (ld_x_scale < L)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("ld_x_scale=", ld_x_scale, " must be >= L=", L, " (activation scales are M-major)"));
  const int64_t ng = D1 / group;
  if (ld_x_scale * ng > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("ld_x_scale=", ld_x_scale, " x ", ng, " groups exceeds ", kMaxExtent, " scales"));
  const bool has_bias = detail::check_bias(fn, bias, D, y.dtype);
  check_options(fn, options);
  if (options.config >= 0) check_config_reads_x1(fn, options.config, x1.dtype);
  detail::check_ptr(fn, "w_scale", w_scale, 4);
  if (L == 0) return;
  detail::check_ptr(fn, "x_scale", x_scale, 4);
  detail::check_outputs_disjoint(
      fn, y,
      {{"x1", detail::byte_range(x1)},
       {"w1", detail::byte_range(w1)},
       {"x_scale", detail::byte_range(x_scale, sizeof(float) * static_cast<size_t>((ng - 1) * ld_x_scale + L))},
       {"w_scale", detail::byte_range(w_scale, sizeof(float) * static_cast<size_t>(D * ng))},
       {"x2", r > 0 ? detail::byte_range(x2) : detail::ByteRange{}},
       {"w2", r > 0 ? detail::byte_range(w2) : detail::ByteRange{}},
       {"bias", has_bias ? detail::byte_range(bias) : detail::ByteRange{}}},
      detail::ByteRange{});

  const detail::LaunchDevice dev = detail::launch_device(fn, stream);
  // The heuristic picks among the rows that read the caller's X1 staging (w4a4_choose_for_x1).
  const int config = options.config >= 0
                         ? options.config
                         : kernels::w4a4_choose_for_x1(L, D, D1, static_cast<int>(r), dev.sm_count, x1.dtype, group);
  check_config_reads_x1(fn, config, x1.dtype);

  kernels::W4A4GemmArgs a;
  a.x1 = static_cast<const uint8_t*>(x1.data);
  a.ld_x1 = x1.ld;
  a.w1 = static_cast<const uint8_t*>(w1.data);
  a.ld_w1 = w1.ld;
  a.sx = x_scale;
  a.ld_sx = ld_x_scale;
  a.sw = w_scale;
  a.rank = static_cast<int>(r);
  if (r > 0) {
    a.x2 = x2.data;
    a.ld_x2 = x2.ld;
    a.w2 = w2.data;
    a.ld_w2 = w2.ld;
  }
  if (has_bias) {
    a.bias = bias.data;
    a.bias_f32 = bias.dtype == DType::kF32;
  }
  a.y = y.data;
  a.ld_y = y.ld;
  a.y_dtype = y.dtype;
  a.L = L;
  a.D = D;
  a.D1 = D1;
  a.group = group;
  a.device = dev.device;
  a.sm_count = dev.sm_count;
  const kernels::W4A4Kernel kind = kernels::kW4A4Configs[config].kernel;
  if (kind == kernels::W4A4Kernel::kDecode) {
    kernels::run_w4a4_decode(a, config, stream);
    detail::check_launch(fn, "sm90_w4a4_decode");
    return;
  }
  const bool wgmma = kind == kernels::W4A4Kernel::kWgmma;
  switch (y.dtype) {
    case DType::kBF16: wgmma ? kernels::run_w4a4_wgmma_bf16(a, config, stream) : kernels::run_w4a4_gemm_bf16(a, config, stream); break;
    case DType::kF16: wgmma ? kernels::run_w4a4_wgmma_f16(a, config, stream) : kernels::run_w4a4_gemm_f16(a, config, stream); break;
    case DType::kF32: wgmma ? kernels::run_w4a4_wgmma_f32(a, config, stream) : kernels::run_w4a4_gemm_f32(a, config, stream); break;
    default: detail::fail(fn, Status::kInternal, "y", detail::cat("no kernel for output dtype ", dtype_name(y.dtype)));
  }
  detail::check_launch(fn, wgmma ? "sm90_w4a4_wgmma" : "sm90_w4a4_gemm");
}

// ---- the weight packer -------------------------------------------------------------------------------
void w4a4_pack_weight(const MatrixView& w, int group, const MatrixView& w_packed, float* w_scale,
                      cudaStream_t stream) {
  const char* fn = "w4a4_pack_weight";
  detail::check_matrix(fn, "w", w, {DType::kBF16, DType::kF16, DType::kF32}, -1, -1, 16);
  const int64_t D = w.rows, D1 = w.cols;
  check_group(fn, group, D1);
  check_extents(fn, 0, D, D1);
  detail::check_matrix(fn, "w_packed", w_packed, {DType::kI4x2}, D, D1 / 2, 16);
  if (D == 0) return;
  detail::check_ptr(fn, "w_scale", w_scale, 4);
  const int64_t ng = D1 / group;
  const detail::ByteRange scales = detail::byte_range(w_scale, sizeof(float) * static_cast<size_t>(D * ng));
  detail::check_no_overlap(fn, "w_packed", detail::byte_range(w_packed), "w", detail::byte_range(w));
  detail::check_no_overlap(fn, "w_scale", scales, "w", detail::byte_range(w));
  detail::check_no_overlap(fn, "w_scale", scales, "w_packed", detail::byte_range(w_packed));
  const detail::LaunchDevice dev = detail::launch_device(fn, stream);

  unsigned long long* bad = nullptr;
  detail::check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&bad), sizeof(*bad), stream), fn, "cudaMallocAsync");
  unsigned long long first = ~0ull;
  cudaError_t e = cudaMemsetAsync(bad, 0xFF, sizeof(*bad), stream);
  if (e == cudaSuccess) {
    kernels::W4A4QuantArgs a;
    a.x = w.data;
    a.x_dtype = w.dtype;
    a.ldx = w.ld;
    a.rows = D;
    a.cols = D1;
    a.group = group;
    a.q = static_cast<uint8_t*>(w_packed.data);
    a.ldq = w_packed.ld;
    a.scales = w_scale;
    a.s_row = ng;
    a.s_grp = 1;
    a.bad = bad;
    a.sm_count = dev.sm_count;
    a.device = dev.device;
    kernels::run_w4a4_quantize(a, stream);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(&first, bad, sizeof(first), cudaMemcpyDeviceToHost, stream);
  const cudaError_t f = cudaFreeAsync(bad, stream);
  if (e == cudaSuccess) e = f;
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  detail::check_cuda(e, fn, "the INT4 weight packer");
  if (first != ~0ull) {
    const int64_t row = static_cast<int64_t>(first / static_cast<unsigned long long>(D1));
    const int64_t col = static_cast<int64_t>(first % static_cast<unsigned long long>(D1));
    float v = 0.0f;
    const char* src = static_cast<const char*>(w.data) + (row * w.ld + col) * dtype_size(w.dtype);
    if (w.dtype == DType::kF32) {
      detail::check_cuda(cudaMemcpy(&v, src, 4, cudaMemcpyDeviceToHost), fn, "cudaMemcpy(w)");
    } else {
      uint16_t h = 0;
      detail::check_cuda(cudaMemcpy(&h, src, 2, cudaMemcpyDeviceToHost), fn, "cudaMemcpy(w)");
      v = w.dtype == DType::kBF16 ? bf16_decode(h) : fp16_decode(h);
    }
    detail::fail(fn, Status::kInvalidValue, "w",
                 detail::cat("w[", row, ", ", col, "] = ", v, " is not finite: INT4 weights must be finite"));
  }
}

// ---- the activation quantizer --------------------------------------------------------------------------
void w4a4_quantize_activations(const MatrixView& x, int group, const MatrixView& lora_down, const MatrixView& x1,
                               float* x_scale, int64_t ld_x_scale, const MatrixView& x2, cudaStream_t stream) {
  const char* fn = "w4a4_quantize_activations";
  detail::check_matrix(fn, "x", x, {DType::kBF16, DType::kF16, DType::kF32}, -1, -1, 16);
  const int64_t L = x.rows, D1 = x.cols;
  check_group(fn, group, D1);
  check_extents(fn, L, 0, D1);
  // x1: packed INT4 [L, D1/2] or the e4m3 staging [L, D1] (the same codes, one per byte).
  detail::check_dtype(fn, "x1", x1.dtype, {DType::kI4x2, DType::kE4M3});
  detail::check_matrix(fn, "x1", x1, {DType::kI4x2, DType::kE4M3}, L, x1.dtype == DType::kE4M3 ? D1 : D1 / 2, 16);
  const int64_t r = lora_down.rows;
  check_rank(fn, "lora_down", r);
  if (r > 0) {
    detail::check_matrix(fn, "lora_down", lora_down, {DType::kBF16}, r, D1, 16);
    detail::check_matrix(fn, "x2", x2, {DType::kBF16, DType::kF32}, L, r, 16);
  }
  if (ld_x_scale < L)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("ld_x_scale=", ld_x_scale, " must be >= L=", L, " (activation scales are M-major)"));
  const int64_t ng = D1 / group;
  if (ld_x_scale * ng > kMaxExtent)
    detail::fail(fn, Status::kInvalidArgument, "x_scale",
                 detail::cat("ld_x_scale=", ld_x_scale, " x ", ng, " groups exceeds ", kMaxExtent, " scales"));
  if (L == 0) return;
  detail::check_ptr(fn, "x_scale", x_scale, 4);
  const detail::ByteRange in = detail::byte_range(x);
  const detail::ByteRange l1 = r > 0 ? detail::byte_range(lora_down) : detail::ByteRange{};
  const detail::ByteRange q = detail::byte_range(x1);
  const detail::ByteRange s = detail::byte_range(x_scale, sizeof(float) * static_cast<size_t>((ng - 1) * ld_x_scale + L));
  const detail::ByteRange o2 = r > 0 ? detail::byte_range(x2) : detail::ByteRange{};
  detail::check_no_overlap(fn, "x1", q, "x", in);
  detail::check_no_overlap(fn, "x1", q, "lora_down", l1);
  detail::check_no_overlap(fn, "x_scale", s, "x", in);
  detail::check_no_overlap(fn, "x_scale", s, "lora_down", l1);
  detail::check_no_overlap(fn, "x_scale", s, "x1", q);
  detail::check_no_overlap(fn, "x2", o2, "x", in);
  detail::check_no_overlap(fn, "x2", o2, "lora_down", l1);
  detail::check_no_overlap(fn, "x2", o2, "x1", q);
  detail::check_no_overlap(fn, "x2", o2, "x_scale", s);
  const detail::LaunchDevice dev = detail::launch_device(fn, stream);

  kernels::W4A4QuantArgs a;
  a.x = x.data;
  a.x_dtype = x.dtype;
  a.ldx = x.ld;
  a.rows = L;
  a.cols = D1;
  a.group = group;
  a.q = static_cast<uint8_t*>(x1.data);
  a.ldq = x1.ld;
  a.q_e4m3 = x1.dtype == DType::kE4M3;
  a.scales = x_scale;
  a.s_row = 1;
  a.s_grp = ld_x_scale;
  a.sm_count = dev.sm_count;
  a.device = dev.device;
  if (r > 0) {
    a.l1 = lora_down.data;
    a.ld_l1 = lora_down.ld;
    a.rank = static_cast<int>(r);
    a.x2 = x2.data;
    a.ld_x2 = x2.ld;
    a.x2_f32 = x2.dtype == DType::kF32;
  }
  kernels::run_w4a4_quantize(a, stream);
  detail::check_launch(fn, "sm90_w4a4_quantize");
}

void w4a4_quantize_activations(const MatrixView& x, int group, const MatrixView& x1, float* x_scale,
                               int64_t ld_x_scale, cudaStream_t stream) {
  w4a4_quantize_activations(x, group, MatrixView(nullptr, DType::kBF16, 0, x.cols), x1, x_scale, ld_x_scale,
                            MatrixView(nullptr, DType::kBF16, x.rows, 0), stream);
}

}  // namespace qsgemm
