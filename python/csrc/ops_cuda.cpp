// python/csrc/ops_cuda.cpp — the CUDA kernels of the qsgemm ops: operand checks, then the library.
// Every call runs on the current torch CUDA stream of the operands' device, allocates its outputs
// and workspaces through torch's caching allocator and never synchronizes (sparse24_compress
// excepted: the library syncs once to report data errors; it is a load-time op).
#include <cuda_runtime_api.h>

#include "cuda_common.h"
#include "ops.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/device.h"
#include "qsgemm/formats.h"
#include "qsgemm/quant.h"
#include "qsgemm/sparse24.h"


namespace qsgemm_torch::cuda {

namespace {
using qsgemm::Status;

int sm_count(int32_t device) { return qsgemm::device_info(device).sm_count; }

Tensor workspace(size_t bytes, const Tensor& like) {
  // 16-byte aligned: the caching allocator returns 512-byte aligned blocks.
  return empty({static_cast<int64_t>(bytes)}, dtype_codes().u8, like);
}
}  // namespace

Tensors3 sparse24_compress(const Tensor& w, const std::string& prune, const std::string& scale, const OptTensor& given) {
  const char* fn = "sparse24_compress";
  const auto& c = dtype_codes();
  const int32_t dev = device_of(fn, "w", w);
  DeviceScope scope(dev);
  check_dtype(fn, "w", w, {c.bf16, c.f16, c.f32});
  const qsgemm::MatrixView wv = matrix_view(fn, "w", w);
  const CompressArgs args = parse_compress(fn, prune, scale);
  const bool per_tensor = args.per_tensor;
  qsgemm::Sparse24CompressOptions opt;
  opt.prune = args.require ? qsgemm::Sparse24Prune::kRequire : qsgemm::Sparse24Prune::kMagnitude;
  opt.scale = per_tensor ? qsgemm::Sparse24Scale::kPerTensor : qsgemm::Sparse24Scale::kPerChannel;
  const int64_t N = wv.rows, K = wv.cols;
  check_sparse24_shape(fn, N, K);
  Tensor values = empty({N, K / 2}, c.e4m3, w);
  Tensor meta = empty({qsgemm::sparse24_meta_bytes(N, K)}, c.u8, w);
  Tensor scales = empty({per_tensor ? 1 : N}, c.f32, w);
  if (given) {
    check_dtype(fn, "given_scale", *given, {c.f32});
    check_same_device(fn, w, "given_scale", *given);
    check_numel(fn, "given_scale", *given, per_tensor ? 1 : N, per_tensor ? "scale=per_tensor" : "scale=per_channel: N");
    torch::stable::copy_(scales, torch::stable::reshape(*given, {per_tensor ? 1 : N}));
    opt.scale = qsgemm::Sparse24Scale::kGiven;
  }
  qsgemm::SparseFp8Weight out;
  out.N = N;
  out.K = K;
  out.values = static_cast<uint8_t*>(values.data_ptr());
  out.meta = static_cast<uint8_t*>(meta.data_ptr());
  out.scales = static_cast<float*>(scales.data_ptr());
  out.per_tensor_scale = per_tensor;
  Tensor ws = workspace(qsgemm::sparse24_compress_workspace_bytes(N, K), w);
  qsgemm::sparse24_compress(wv, out, opt, ws.data_ptr(), current_stream(dev));
  return {values, meta, scales};
}

void sparse24_decompress_out(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N, int64_t K,
                             const Tensor& out) {
  const char* fn = "sparse24_decompress";
  const int32_t dev = device_of(fn, "values", values);
  DeviceScope scope(dev);
  check_sparse24_weight(fn, values, meta, scale, N, K);
  check_same_device(fn, values, "out", out);
  check_dtype(fn, "out", out, {dtype_codes().bf16, dtype_codes().f32});
  check_dim(fn, "out", out, 2);
  if (out.size(0) != N || out.size(1) != K) fail(fn, Status::kInvalidArgument, "out", "must have shape [N, K]");
  check_contiguous(fn, "out", out);
  const qsgemm::MatrixView ov = matrix_view(fn, "out", out);
  qsgemm::SparseFp8Weight w;
  w.N = N;
  w.K = K;
  w.values = static_cast<uint8_t*>(values.data_ptr());
  w.meta = static_cast<uint8_t*>(meta.data_ptr());
  w.scales = static_cast<float*>(scale.data_ptr());
  w.per_tensor_scale = scale.numel() == 1 && N != 1;
  qsgemm::sparse24_decompress(w, ov, current_stream(dev));
}

void sparse24_linear_out(const Tensor& x, const Tensor& x_scale, const Tensor& values, const Tensor& meta,
                         const Tensor& w_scale, const OptTensor& bias, bool fast_accum, const Tensor& out) {
  const char* fn = "sparse24_linear";
  const int32_t dev = device_of(fn, "x", x);
  DeviceScope scope(dev);
  const Sparse24Problem p = check_sparse24_linear(fn, x, x_scale, values, meta, w_scale, bias, out);
  if (p.M == 0) return;
  qsgemm::SparseFp8Weight w;
  w.N = p.N;
  w.K = p.K;
  w.values = static_cast<uint8_t*>(values.data_ptr());
  w.meta = static_cast<uint8_t*>(meta.data_ptr());
  w.scales = static_cast<float*>(w_scale.data_ptr());
  w.per_tensor_scale = p.per_tensor_w;
  qsgemm::ScaleView sx;
  sx.data = static_cast<const float*>(x_scale.data_ptr());
  sx.granularity = p.per_tensor_x ? qsgemm::ScaleGranularity::kPerTensor : qsgemm::ScaleGranularity::kPerRow;
  qsgemm::VectorView bv;
  if (bias) bv = qsgemm::VectorView(bias->data_ptr(), qs_dtype(fn, "bias", *bias), p.N);
  qsgemm::Sparse24Options opt;
  opt.fast_accum = fast_accum;
  // The plan's workspace (stream-K, split-K) from the caching allocator; freed (stream-ordered) on return.
  const qsgemm::LinearPlan plan = qsgemm::sparse24_plan(p.M, p.N, p.K, opt, sm_count(dev));
  Tensor ws;
  if (plan.workspace_bytes > 0) {
    ws = workspace(plan.workspace_bytes, x);
    opt.workspace = ws.data_ptr();
    opt.workspace_bytes = plan.workspace_bytes;
  }
  const qsgemm::MatrixView xv(x.data_ptr(), qsgemm::DType::kE4M3, p.M, p.K);
  const qsgemm::MatrixView yv(out.data_ptr(), qs_dtype(fn, "out", out), p.M, p.N);
  qsgemm::sparse24_linear(xv, sx, w, bv, yv, opt, current_stream(dev));
}

Tensors2 quantize_fp8_per_token(const Tensor& x, bool pow2) {
  const char* fn = "quantize_fp8_per_token";
  const auto& c = dtype_codes();
  const int32_t dev = device_of(fn, "x", x);
  DeviceScope scope(dev);
  const qsgemm::MatrixView xv = check_quant_input(fn, "x", x, {c.bf16, c.f16});
  Tensor q = empty({xv.rows, xv.cols}, c.e4m3, x);
  Tensor s = empty({xv.rows}, c.f32, x);
  qsgemm::quantize_fp8_per_token(xv, qsgemm::MatrixView(q.data_ptr(), qsgemm::DType::kE4M3, xv.rows, xv.cols),
                                 static_cast<float*>(s.data_ptr()), pow2, current_stream(dev));
  return {q, s};
}

Tensors2 quantize_fp8_per_token_group(const Tensor& x, bool pow2) {
  const char* fn = "quantize_fp8_per_token_group";
  const auto& c = dtype_codes();
  const int32_t dev = device_of(fn, "x", x);
  DeviceScope scope(dev);
  const qsgemm::MatrixView xv = check_quant_input(fn, "x", x, {c.bf16, c.f16});
  const int64_t M = xv.rows, groups = qsgemm::ceil_div(xv.cols, qsgemm::kScaleGroupK);
  // Rows padded to 128 bytes where K % 128 != 0 (the GEMMs' fast layout, qsgemm::fp8_row_ld).
  const int64_t ldq = qsgemm::fp8_row_ld(xv.cols);
  Tensor q = empty_strided({M, xv.cols}, {ldq, 1}, c.e4m3, x);
  // [M, G] with strides (1, M): the transpose of a contiguous [G, M] (M-major, docs/formats.md §2).
  Tensor s = empty_strided({M, groups}, {1, M > 0 ? M : 1}, c.f32, x);
  qsgemm::quantize_fp8_per_token_group(xv, qsgemm::MatrixView(q.data_ptr(), qsgemm::DType::kE4M3, M, xv.cols, ldq),
                                       static_cast<float*>(s.data_ptr()), M > 0 ? M : 1, pow2, current_stream(dev));
  return {q, s};
}

Tensors2 quantize_fp8_weight(const Tensor& w, const std::string& granularity) {
  const char* fn = "quantize_fp8_weight";
  const auto& c = dtype_codes();
  const int32_t dev = device_of(fn, "w", w);
  DeviceScope scope(dev);
  const qsgemm::ScaleGranularity g = parse_granularity(fn, "granularity", granularity);
  const qsgemm::MatrixView wv = g == qsgemm::ScaleGranularity::kPerRow
                                     ? check_quant_input(fn, "w", w, {c.bf16, c.f16})
                                     : check_quant_input(fn, "w", w, {c.bf16, c.f16, c.f32});
  if (g == qsgemm::ScaleGranularity::kPerTensor)
    fail(fn, Status::kUnsupported, "granularity", "per_tensor weights are not supported; use per_row, group_1x128 or block_128x128");
  const int64_t ldq = qsgemm::fp8_row_ld(wv.cols);  // as quantize_fp8_per_token_group
  Tensor q = empty_strided({wv.rows, wv.cols}, {ldq, 1}, c.e4m3, w);
  const qsgemm::MatrixView qv(q.data_ptr(), qsgemm::DType::kE4M3, wv.rows, wv.cols, ldq);
  if (g == qsgemm::ScaleGranularity::kPerRow) {
    Tensor s = empty({wv.rows}, c.f32, w);
    qsgemm::quantize_fp8_per_token(wv, qv, static_cast<float*>(s.data_ptr()), false, current_stream(dev));
    return {q, s};
  }
  const auto [r, cc] = weight_scale_shape(g, wv.rows, wv.cols);
  Tensor s = empty({r, cc}, c.f32, w);
  qsgemm::quantize_fp8_weight(wv, qv, static_cast<float*>(s.data_ptr()), g, current_stream(dev));
  return {q, s};
}

void blockwise_linear_out(const Tensor& x, const Tensor& x_scale, const std::string& gx, const Tensor& w,
                          const Tensor& w_scale, const std::string& gw, const OptTensor& bias, const Tensor& out) {
  const char* fn = "blockwise_linear";
  const int32_t dev = device_of(fn, "x", x);
  DeviceScope scope(dev);
  const BlockwiseProblem p = check_blockwise_linear(fn, x, x_scale, gx, w, w_scale, gw, bias, out);
  if (p.M == 0) return;
  qsgemm::ScaleView sx{static_cast<const float*>(x_scale.data_ptr()), p.gx, p.ld_sx};
  qsgemm::ScaleView sw{static_cast<const float*>(w_scale.data_ptr()), p.gw, 0};
  qsgemm::VectorView bv;
  if (bias) bv = qsgemm::VectorView(bias->data_ptr(), qs_dtype(fn, "bias", *bias), p.N);
  qsgemm::BlockwiseOptions opt;
  const qsgemm::LinearPlan plan =
      qsgemm::blockwise_plan(p.M, p.N, p.K, p.gx, p.gw, opt, sm_count(dev), p.ld_x, p.ld_w);
  Tensor ws;
  if (plan.workspace_bytes > 0) {
    ws = workspace(plan.workspace_bytes, x);
    opt.workspace = ws.data_ptr();
    opt.workspace_bytes = plan.workspace_bytes;
  }
  const qsgemm::MatrixView xv(x.data_ptr(), qsgemm::DType::kE4M3, p.M, p.K, p.ld_x);
  const qsgemm::MatrixView wv(w.data_ptr(), qsgemm::DType::kE4M3, p.N, p.K, p.ld_w);
  const qsgemm::MatrixView yv(out.data_ptr(), qs_dtype(fn, "out", out), p.M, p.N);
  qsgemm::blockwise_linear(xv, sx, wv, sw, bv, yv, opt, current_stream(dev));
}

}  // namespace qsgemm_torch::cuda
