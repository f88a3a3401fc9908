// python/csrc/common.cpp — operand checks, dtype codes, allocation and error tagging shared by the
// CPU and CUDA kernels of the qsgemm ops.
#include <sstream>
#include <stdexcept>

#include "ops.h"
#include "qsgemm/formats.h"

namespace qsgemm_torch {

namespace {
using qsgemm::Status;
}  // namespace

void fail(const char* fn, Status code, const std::string& operand, const std::string& message) {
  // The library's format (src/validate.cpp, detail::fail): "qsgemm::<fn>: <message> (operand <name>)".
  std::string msg = cat("qsgemm::", fn, ": ", message);
  if (!operand.empty()) msg += cat(" (operand ", operand, ")");
  throw qsgemm::Error(code, operand, msg);
}

void rethrow_tagged(const qsgemm::Error& e) {
  throw std::runtime_error(cat("[qsgemm:", qsgemm::status_name(e.code()), "] ", e.what()));
}

const DtypeCodes& dtype_codes() {
  static const DtypeCodes c{aoti_torch_dtype_float32(), aoti_torch_dtype_float16(), aoti_torch_dtype_bfloat16(),
                            aoti_torch_dtype_float8_e4m3fn(), aoti_torch_dtype_uint8(), aoti_torch_dtype_int8()};
  return c;
}

int32_t dtype_code(const Tensor& t) {
  int32_t d = 0;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype(t.get(), &d));
  return d;
}

int32_t dtype_code(ScalarType t) {
  const auto& c = dtype_codes();
  switch (t) {
    case ScalarType::Float: return c.f32;
    case ScalarType::Half: return c.f16;
    case ScalarType::BFloat16: return c.bf16;
    case ScalarType::Float8_e4m3fn: return c.e4m3;
    case ScalarType::Byte: return c.u8;
    case ScalarType::Char: return c.i8;
    default: return -1;
  }
}

const char* torch_dtype_name(int32_t code) {
  const auto& c = dtype_codes();
  if (code == c.f32) return "float32";
  if (code == c.f16) return "float16";
  if (code == c.bf16) return "bfloat16";
  if (code == c.e4m3) return "float8_e4m3fn";
  if (code == c.u8) return "uint8";
  if (code == c.i8) return "int8";
  return "another dtype";
}

qsgemm::DType qs_dtype(const char* fn, const char* name, const Tensor& t) {
  const auto& c = dtype_codes();
  const int32_t d = dtype_code(t);
  if (d == c.f32) return qsgemm::DType::kF32;
  if (d == c.f16) return qsgemm::DType::kF16;
  if (d == c.bf16) return qsgemm::DType::kBF16;
  if (d == c.e4m3) return qsgemm::DType::kE4M3;
  if (d == c.u8) return qsgemm::DType::kU8;
  fail(fn, Status::kInvalidArgument, name, cat("dtype ", torch_dtype_name(d), " is not accepted"));
}

int32_t out_dtype_code(const char* fn, std::optional<ScalarType> t) {
  const auto& c = dtype_codes();
  if (!t) return c.bf16;
  const int32_t d = dtype_code(*t);
  if (d != c.bf16 && d != c.f16 && d != c.f32)
    fail(fn, Status::kInvalidArgument, "out_dtype",
         "must be torch.bfloat16, torch.float16 or torch.float32");
  return d;
}

void check_dtype(const char* fn, const char* name, const Tensor& t, std::initializer_list<int32_t> allowed) {
  const int32_t d = dtype_code(t);
  std::string list;
  for (int32_t a : allowed) {
    if (a == d) return;
    list += list.empty() ? torch_dtype_name(a) : cat(", ", torch_dtype_name(a));
  }
  fail(fn, Status::kInvalidArgument, name,
       cat("dtype ", torch_dtype_name(d), " is not accepted; expected one of {", list, "}"));
}

void check_dim(const char* fn, const char* name, const Tensor& t, int64_t dim) {
  if (t.dim() != dim) fail(fn, Status::kInvalidArgument, name, cat("must be ", dim, "-D, got ", t.dim(), "-D"));
}

qsgemm::MatrixView matrix_view(const char* fn, const char* name, const Tensor& t) {
  check_dim(fn, name, t, 2);
  const int64_t rows = t.size(0), cols = t.size(1);
  if (cols > 1 && t.stride(1) != 1)
    fail(fn, Status::kInvalidArgument, name, cat("must have unit column stride (row-major), got stride(1)=", t.stride(1)));
  // One row: its stride is not looked at by torch's own contiguity rule; use the tight ld.
  const int64_t ld = rows > 1 ? t.stride(0) : cols;
  return qsgemm::MatrixView(t.data_ptr(), qs_dtype(fn, name, t), rows, cols, ld < cols ? cols : ld);
}

void check_contiguous(const char* fn, const char* name, const Tensor& t) {
  if (!t.is_contiguous()) fail(fn, Status::kInvalidArgument, name, "must be contiguous");
}

void check_numel(const char* fn, const char* name, const Tensor& t, int64_t expected, const char* what) {
  if (t.numel() != expected)
    fail(fn, Status::kInvalidArgument, name, cat("has ", t.numel(), " elements, expected ", expected, " (", what, ")"));
}

void check_same_device(const char* fn, const Tensor& ref, const char* name, const Tensor& t) {
  int32_t ta = 0, tb = 0, ia = 0, ib = 0;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(ref.get(), &ta));
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(t.get(), &tb));
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(ref.get(), &ia));
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(t.get(), &ib));
  if (ta != tb || (ta == aoti_torch_device_type_cuda() && ia != ib))
    fail(fn, Status::kInvalidArgument, name, "must be on the same device as the first operand");
}

CompressArgs parse_compress(const char* fn, const std::string& prune, const std::string& scale) {
  CompressArgs a{};
  if (prune == "require") a.require = true;
  else if (prune != "magnitude")
    fail(fn, Status::kInvalidArgument, "prune", cat("'", prune, "' is not one of magnitude, require"));
  if (scale == "per_tensor") a.per_tensor = true;
  else if (scale != "per_channel")
    fail(fn, Status::kInvalidArgument, "scale", cat("'", scale, "' is not one of per_channel, per_tensor"));
  return a;
}

qsgemm::ScaleGranularity parse_granularity(const char* fn, const char* name, const std::string& s) {
  using G = qsgemm::ScaleGranularity;
  if (s == "per_tensor") return G::kPerTensor;
  if (s == "per_row") return G::kPerRow;
  if (s == "group_1x128") return G::kGroup1x128;
  if (s == "block_128x128") return G::kBlock128x128;
  fail(fn, Status::kInvalidArgument, name,
       cat("'", s, "' is not a granularity; expected one of per_tensor, per_row, group_1x128, block_128x128"));
}

int64_t scale_count(qsgemm::ScaleGranularity g, int64_t rows, int64_t K) {
  using G = qsgemm::ScaleGranularity;
  const int64_t groups = qsgemm::ceil_div(K, qsgemm::kScaleGroupK);
  switch (g) {
    case G::kPerTensor: return 1;
    case G::kPerRow: return rows;
    case G::kGroup1x128: return rows * groups;
    case G::kBlock128x128: return qsgemm::ceil_div(rows, 128) * groups;
  }
  return 0;
}

std::tuple<int64_t, int64_t> weight_scale_shape(qsgemm::ScaleGranularity g, int64_t N, int64_t K) {
  using G = qsgemm::ScaleGranularity;
  const int64_t groups = qsgemm::ceil_div(K, qsgemm::kScaleGroupK);
  if (g == G::kBlock128x128) return {qsgemm::ceil_div(N, 128), groups};
  if (g == G::kGroup1x128) return {N, groups};
  return {N, -1};  // per_row: 1-D [N]
}

namespace {
Tensor empty_impl(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype, const Tensor& like) {
  int32_t dev_type = 0, dev_index = 0;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_type(like.get(), &dev_type));
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_device_index(like.get(), &dev_index));
  AtenTensorHandle h = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(ndim, sizes, strides, dtype, dev_type, dev_index, &h));
  return Tensor(h);
}
}  // namespace

Tensor empty(std::initializer_list<int64_t> sizes, int32_t dtype, const Tensor& like) {
  int64_t s[4], st[4];
  const int64_t n = static_cast<int64_t>(sizes.size());
  int64_t i = 0;
  for (int64_t v : sizes) s[i++] = v;
  int64_t acc = 1;
  for (int64_t d = n - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= s[d] > 1 ? s[d] : 1;
  }
  return empty_impl(s, st, n, dtype, like);
}

Tensor empty_strided(std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides, int32_t dtype,
                     const Tensor& like) {
  int64_t s[4], st[4];
  int64_t i = 0;
  for (int64_t v : sizes) s[i++] = v;
  i = 0;
  for (int64_t v : strides) st[i++] = v;
  return empty_impl(s, st, static_cast<int64_t>(sizes.size()), dtype, like);
}

// ---- shared GEMM operand checks ------------------------------------------------------------------------

void check_sparse24_shape(const char* fn, int64_t N, int64_t K) {
  if (N <= 0 || K <= 0)
    fail(fn, Status::kInvalidArgument, "w", cat("weight shape [N=", N, ", K=", K, "] must be positive"));
  if (N % 8 != 0) fail(fn, Status::kInvalidArgument, "N", cat("N=", N, " must be a multiple of 8"));
  if (K % 32 != 0) fail(fn, Status::kInvalidArgument, "K", cat("K=", K, " must be a multiple of 32"));
  if (N > (int64_t{1} << 30) || K > (int64_t{1} << 30))
    fail(fn, Status::kInvalidArgument, "w", cat("weight shape [", N, ", ", K, "] exceeds 2^30"));
}

void check_sparse24_weight(const char* fn, const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N,
                           int64_t K) {
  const auto& c = dtype_codes();
  check_sparse24_shape(fn, N, K);
  check_dtype(fn, "values", values, {c.e4m3});
  check_dim(fn, "values", values, 2);
  if (values.size(0) != N || values.size(1) != K / 2)
    fail(fn, Status::kInvalidArgument, "values",
         cat("has shape [", values.size(0), ", ", values.size(1), "], expected [", N, ", ", K / 2, "] ([N, K/2])"));
  check_contiguous(fn, "values", values);
  check_dtype(fn, "meta", meta, {c.u8});
  check_contiguous(fn, "meta", meta);
  check_numel(fn, "meta", meta, qsgemm::sparse24_meta_bytes(N, K), "sparse24_meta_bytes(N, K)");
  check_dtype(fn, "w_scale", scale, {c.f32});
  check_contiguous(fn, "w_scale", scale);
  if (scale.numel() != N && scale.numel() != 1)
    fail(fn, Status::kInvalidArgument, "w_scale", cat("has ", scale.numel(), " elements, expected N=", N, " or 1"));
  check_same_device(fn, values, "meta", meta);
  check_same_device(fn, values, "w_scale", scale);
}

Sparse24Problem check_sparse24_linear(const char* fn, const Tensor& x, const Tensor& x_scale, const Tensor& values,
                                      const Tensor& meta, const Tensor& w_scale, const OptTensor& bias,
                                      const Tensor& out) {
  const auto& c = dtype_codes();
  check_dim(fn, "values", values, 2);
  const int64_t N = values.size(0), K = 2 * values.size(1);
  check_sparse24_weight(fn, values, meta, w_scale, N, K);
  check_dtype(fn, "x", x, {c.e4m3});
  check_dim(fn, "x", x, 2);
  const int64_t M = x.size(0);
  if (x.size(1) != K)
    fail(fn, Status::kInvalidArgument, "x", cat("has ", x.size(1), " columns, expected K=", K, " (2 * values.size(1))"));
  check_contiguous(fn, "x", x);
  check_dtype(fn, "x_scale", x_scale, {c.f32});
  check_contiguous(fn, "x_scale", x_scale);
  if (x_scale.numel() != M && x_scale.numel() != 1)
    fail(fn, Status::kInvalidArgument, "x_scale", cat("has ", x_scale.numel(), " elements, expected M=", M, " or 1"));
  check_dim(fn, "out", out, 2);
  if (out.size(0) != M || out.size(1) != N)
    fail(fn, Status::kInvalidArgument, "out",
         cat("has shape [", out.size(0), ", ", out.size(1), "], expected [", M, ", ", N, "]"));
  check_dtype(fn, "out", out, {c.bf16, c.f16, c.f32});
  check_contiguous(fn, "out", out);
  check_same_device(fn, x, "x_scale", x_scale);
  check_same_device(fn, x, "values", values);
  check_same_device(fn, x, "out", out);
  if (bias) {
    check_dtype(fn, "bias", *bias, {c.f32, dtype_code(out)});
    check_contiguous(fn, "bias", *bias);
    check_numel(fn, "bias", *bias, N, "N");
    check_same_device(fn, x, "bias", *bias);
  }
  // Exactly one scale for both: x_scale [1] with M == 1 is per-row and per-tensor at once.
  return {M, N, K, w_scale.numel() == 1 && N != 1, x_scale.numel() == 1 && M != 1};
}

BlockwiseProblem check_blockwise_linear(const char* fn, const Tensor& x, const Tensor& x_scale, const std::string& gx_s,
                                        const Tensor& w, const Tensor& w_scale, const std::string& gw_s,
                                        const OptTensor& bias, const Tensor& out) {
  using G = qsgemm::ScaleGranularity;
  const auto& c = dtype_codes();
  const G gx = parse_granularity(fn, "x_granularity", gx_s);
  const G gw = parse_granularity(fn, "w_granularity", gw_s);
  check_dtype(fn, "x", x, {c.e4m3});
  check_dtype(fn, "w", w, {c.e4m3});
  // Row-major with any row stride (the library checks ld % 16): quantize_fp8_per_token_group and
  // quantize_fp8_weight pad rows of K % 128 != 0 to 128 bytes (fp8_row_ld).
  const qsgemm::MatrixView xv = matrix_view(fn, "x", x), wv = matrix_view(fn, "w", w);
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  if (w.size(1) != K) fail(fn, Status::kInvalidArgument, "w", cat("has ", w.size(1), " columns, expected K=", K));
  if (K <= 0 || K % 16 != 0)
    fail(fn, Status::kInvalidArgument, "K", cat("K=", K, " must be positive and a multiple of 16"));
  const bool pair_ok = (gx == G::kPerRow && gw == G::kPerRow) ||
                       ((gx == G::kGroup1x128 || gx == G::kBlock128x128) &&
                        (gw == G::kGroup1x128 || gw == G::kBlock128x128));
  if (!pair_ok)
    fail(fn, Status::kInvalidArgument, "x_granularity",
         cat("the pair (", gx_s, ", ", gw_s, ") is not supported; x group_1x128 or block_128x128 with w "
             "block_128x128 or group_1x128, or per_row with per_row"));
  const int64_t groups = qsgemm::ceil_div(K, qsgemm::kScaleGroupK);
  check_dtype(fn, "x_scale", x_scale, {c.f32});
  check_dtype(fn, "w_scale", w_scale, {c.f32});
  int64_t ld_sx = M;
  if (gx == G::kGroup1x128) {
    // [M, G] M-major: element (m, g) at m + g * ld (quantize_fp8_per_token_group's layout).
    check_dim(fn, "x_scale", x_scale, 2);
    if (x_scale.size(0) != M || x_scale.size(1) != groups)
      fail(fn, Status::kInvalidArgument, "x_scale",
           cat("has shape [", x_scale.size(0), ", ", x_scale.size(1), "], expected [M=", M, ", ceil(K/128)=", groups, "]"));
    if (M > 1 && x_scale.stride(0) != 1)
      fail(fn, Status::kInvalidArgument, "x_scale",
           cat("group_1x128 scales must be M-major (stride(0) == 1, e.g. torch.empty(G, M).t()), got stride(0)=",
               x_scale.stride(0)));
    if (groups > 1) ld_sx = x_scale.stride(1);
    if (ld_sx < M)
      fail(fn, Status::kInvalidArgument, "x_scale", cat("stride(1)=", ld_sx, " must be >= M=", M));
  } else {
    check_contiguous(fn, "x_scale", x_scale);
    check_numel(fn, "x_scale", x_scale, scale_count(gx, M, K), gx_s.c_str());
  }
  check_contiguous(fn, "w_scale", w_scale);
  check_numel(fn, "w_scale", w_scale, scale_count(gw, N, K), gw_s.c_str());
  check_dim(fn, "out", out, 2);
  if (out.size(0) != M || out.size(1) != N)
    fail(fn, Status::kInvalidArgument, "out",
         cat("has shape [", out.size(0), ", ", out.size(1), "], expected [", M, ", ", N, "]"));
  check_dtype(fn, "out", out, {c.bf16, c.f16, c.f32});
  check_contiguous(fn, "out", out);
  const int64_t n_align = dtype_code(out) == c.f32 ? 4 : 8;
  if (N <= 0 || N % n_align != 0)
    fail(fn, Status::kInvalidArgument, "N",
         cat("N=", N, " must be positive and a multiple of ", n_align, " for ", torch_dtype_name(dtype_code(out)),
             " output (16-byte output rows)"));
  check_same_device(fn, x, "x_scale", x_scale);
  check_same_device(fn, x, "w", w);
  check_same_device(fn, x, "w_scale", w_scale);
  check_same_device(fn, x, "out", out);
  if (bias) {
    check_dtype(fn, "bias", *bias, {c.f32, dtype_code(out)});
    check_contiguous(fn, "bias", *bias);
    check_numel(fn, "bias", *bias, N, "N");
    check_same_device(fn, x, "bias", *bias);
  }
  return {M, N, K, gx, gw, ld_sx, xv.ld, wv.ld};
}

}  // namespace qsgemm_torch

namespace qsgemm_torch {
qsgemm::MatrixView check_quant_input(const char* fn, const char* name, const Tensor& x,
                                     std::initializer_list<int32_t> allowed) {
  check_dtype(fn, name, x, allowed);
  check_dim(fn, name, x, 2);
  check_contiguous(fn, name, x);
  if (x.size(1) % 8 != 0)
    fail(fn, Status::kInvalidArgument, "K", cat("K=", x.size(1), " must be a multiple of 8 (operand ", name, ")"));
  return matrix_view(fn, name, x);
}
}  // namespace qsgemm_torch
