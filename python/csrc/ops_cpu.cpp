// python/csrc/ops_cpu.cpp — the CPU kernels of the qsgemm ops: the float64 reference of
// include/qsgemm/reference.h behind the same operand checks as the CUDA kernels. Slow by design; they
// make every op (and so the Python layer) testable without a GPU. Quantizers, compress and
// decompress are bit-identical to the CUDA kernels; the GEMMs are the float64 result rounded once to
// the output dtype (the CUDA kernels are within tests/tolerances.h of it).
#include <cstring>
#include <sstream>
#include <vector>

#include "ops.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"

namespace qsgemm_torch::cpu {

namespace {
using qsgemm::Status;

void require_cpu(const char* fn, const char* name, const Tensor& t) {
  if (!t.is_cpu()) fail(fn, Status::kInvalidArgument, name, "must be a CPU tensor");
}

// The elements of a 2-D (or 1-D) tensor as float32, row-major with ld = cols.
std::vector<float> to_floats(const Tensor& t) {
  const auto& c = dtype_codes();
  Tensor f = dtype_code(t) == c.f32 ? t : torch::stable::to(t, ScalarType::Float);
  f = torch::stable::contiguous(f);
  const float* p = static_cast<const float*>(f.data_ptr());
  return std::vector<float>(p, p + f.numel());
}

const uint8_t* bytes(const Tensor& t) { return static_cast<const uint8_t*>(t.data_ptr()); }

qsgemm::ref::Sparse24Host host_weight(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N,
                                      int64_t K) {
  qsgemm::ref::Sparse24Host w;
  w.N = N;
  w.K = K;
  w.values.assign(bytes(values), bytes(values) + values.numel());
  w.meta.assign(bytes(meta), bytes(meta) + meta.numel());
  const float* s = static_cast<const float*>(scale.data_ptr());
  w.scales.assign(s, s + scale.numel());
  return w;
}

// Rounds a float64 result once to float32, then (for 16-bit outputs) to the output dtype, RNE.
void store(const std::vector<double>& y, const Tensor& out) {
  const auto& c = dtype_codes();
  const int32_t d = dtype_code(out);
  const size_t n = y.size();
  if (d == c.f32) {
    float* o = static_cast<float*>(out.data_ptr());
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<float>(y[i]);
  } else {
    uint16_t* o = static_cast<uint16_t*>(out.data_ptr());
    const bool bf = d == c.bf16;
    for (size_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(y[i]);
      o[i] = bf ? qsgemm::bf16_encode(f) : qsgemm::fp16_encode(f);
    }
  }
}

std::vector<float> bias_floats(const OptTensor& bias) { return bias ? to_floats(*bias) : std::vector<float>(); }
}  // namespace

Tensors3 sparse24_compress(const Tensor& w, const std::string& prune, const std::string& scale, const OptTensor& given) {
  const char* fn = "sparse24_compress";
  const auto& c = dtype_codes();
  require_cpu(fn, "w", w);
  check_dtype(fn, "w", w, {c.bf16, c.f16, c.f32});
  const qsgemm::MatrixView wv = matrix_view(fn, "w", w);
  const CompressArgs args = parse_compress(fn, prune, scale);
  const int64_t N = wv.rows, K = wv.cols;
  check_sparse24_shape(fn, N, K);
  const int64_t n_scales = args.per_tensor ? 1 : N;
  std::vector<float> given_s;
  if (given) {
    check_dtype(fn, "given_scale", *given, {c.f32});
    check_same_device(fn, w, "given_scale", *given);
    check_numel(fn, "given_scale", *given, n_scales, args.per_tensor ? "scale=per_tensor" : "scale=per_channel: N");
    given_s = to_floats(*given);
    for (int64_t i = 0; i < n_scales; ++i)
      if (!qsgemm::fp8_scale_is_valid(given_s[static_cast<size_t>(i)])) {
        std::ostringstream os;
        os << "given scale of channel " << i << " (out.scales[" << i << "] = " << given_s[static_cast<size_t>(i)]
           << ") must be a positive, normal, finite float; its values were written as zeros";
        fail(fn, Status::kInvalidValue, "out.scales", os.str());
      }
  }
  const std::vector<float> wf = to_floats(torch::stable::contiguous(w));
  qsgemm::ref::Sparse24Host host;
  int64_t bad_row = -1, bad_group = 0;
  const auto mode = args.require ? qsgemm::ref::PruneMode::kRequire : qsgemm::ref::PruneMode::kMagnitude;
  const auto smode = given ? qsgemm::ref::WeightScale::kGiven
                           : args.per_tensor ? qsgemm::ref::WeightScale::kPerTensor
                                             : qsgemm::ref::WeightScale::kPerChannel;
  if (!qsgemm::ref::sparse24_compress(wf.data(), N, K, K, mode, smode, given ? given_s.data() : nullptr,
                                      args.per_tensor, &host, &bad_row, &bad_group)) {
    std::ostringstream os;
    // The CUDA kernel's wording (src/sparse24.cpp).
    if (bad_group < 0) {
      os << "non-finite value at row " << bad_row << ", column " << (-1 - bad_group);
    } else {
      os << "not 2:4 sparse: row " << bad_row << ", group " << bad_group << " (columns " << 4 * bad_group << ".."
         << 4 * bad_group + 3 << ") has more than two non-zeros";
    }
    fail(fn, Status::kInvalidValue, "w", os.str());
  }
  Tensor values = empty({N, K / 2}, c.e4m3, w);
  Tensor meta = empty({qsgemm::sparse24_meta_bytes(N, K)}, c.u8, w);
  Tensor scales = empty({n_scales}, c.f32, w);
  std::memcpy(values.data_ptr(), host.values.data(), host.values.size());
  std::memcpy(meta.data_ptr(), host.meta.data(), host.meta.size());
  std::memcpy(scales.data_ptr(), host.scales.data(), host.scales.size() * sizeof(float));
  return {values, meta, scales};
}

void sparse24_decompress_out(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N, int64_t K,
                             const Tensor& out) {
  const char* fn = "sparse24_decompress";
  const auto& c = dtype_codes();
  require_cpu(fn, "values", values);
  check_sparse24_weight(fn, values, meta, scale, N, K);
  check_same_device(fn, values, "out", out);
  check_dtype(fn, "out", out, {c.bf16, c.f32});
  check_dim(fn, "out", out, 2);
  if (out.size(0) != N || out.size(1) != K)
    fail(fn, Status::kInvalidArgument, "out", "must have shape [N, K]");
  check_contiguous(fn, "out", out);
  const std::vector<float> d = qsgemm::ref::sparse24_decompress(host_weight(values, meta, scale, N, K));
  store(std::vector<double>(d.begin(), d.end()), out);
}

void sparse24_linear_out(const Tensor& x, const Tensor& x_scale, const Tensor& values, const Tensor& meta,
                         const Tensor& w_scale, const OptTensor& bias, bool fast_accum, const Tensor& out) {
  const char* fn = "sparse24_linear";
  (void)fast_accum;  // the reference is exact either way
  require_cpu(fn, "x", x);
  const Sparse24Problem p = check_sparse24_linear(fn, x, x_scale, values, meta, w_scale, bias, out);
  if (p.M == 0) return;
  const qsgemm::ref::Sparse24Host w = host_weight(values, meta, w_scale, p.N, p.K);
  const std::vector<float> b = bias_floats(bias);
  std::vector<double> y(static_cast<size_t>(p.M * p.N));
  qsgemm::ref::gemm_sparse24_fp8(bytes(x), p.K, p.M, w, static_cast<const float*>(x_scale.data_ptr()), p.per_tensor_x,
                                 bias ? b.data() : nullptr, y.data());
  store(y, out);
}

Tensors2 quantize_fp8_per_token(const Tensor& x, bool pow2) {
  const char* fn = "quantize_fp8_per_token";
  const auto& c = dtype_codes();
  require_cpu(fn, "x", x);
  const qsgemm::MatrixView xv = check_quant_input(fn, "x", x, {c.bf16, c.f16});
  const int64_t M = xv.rows, K = xv.cols;
  Tensor q = empty({M, K}, c.e4m3, x);
  Tensor s = empty({M}, c.f32, x);
  const std::vector<float> xf = to_floats(x);
  qsgemm::ref::quantize_fp8_per_row(xf.data(), M, K, K, static_cast<uint8_t*>(q.data_ptr()), K,
                                    static_cast<float*>(s.data_ptr()), pow2);
  return {q, s};
}

Tensors2 quantize_fp8_per_token_group(const Tensor& x, bool pow2) {
  const char* fn = "quantize_fp8_per_token_group";
  const auto& c = dtype_codes();
  require_cpu(fn, "x", x);
  const qsgemm::MatrixView xv = check_quant_input(fn, "x", x, {c.bf16, c.f16});
  const int64_t M = xv.rows, K = xv.cols, groups = qsgemm::ceil_div(K, qsgemm::kScaleGroupK);
  const int64_t ldq = qsgemm::fp8_row_ld(K);  // the CUDA op's layout
  Tensor q = empty_strided({M, K}, {ldq, 1}, c.e4m3, x);
  Tensor s = empty_strided({M, groups}, {1, M > 0 ? M : 1}, c.f32, x);
  const std::vector<float> xf = to_floats(x);
  qsgemm::ref::quantize_fp8_1x128(xf.data(), M, K, K, static_cast<uint8_t*>(q.data_ptr()), ldq,
                                  static_cast<float*>(s.data_ptr()), M > 0 ? M : 1, pow2);
  return {q, s};
}

Tensors2 quantize_fp8_weight(const Tensor& w, const std::string& granularity) {
  const char* fn = "quantize_fp8_weight";
  const auto& c = dtype_codes();
  require_cpu(fn, "w", w);
  using G = qsgemm::ScaleGranularity;
  const G g = parse_granularity(fn, "granularity", granularity);
  const qsgemm::MatrixView wv = g == G::kPerRow ? check_quant_input(fn, "w", w, {c.bf16, c.f16})
                                                : check_quant_input(fn, "w", w, {c.bf16, c.f16, c.f32});
  if (g == G::kPerTensor)
    fail(fn, Status::kUnsupported, "granularity", "per_tensor weights are not supported; use per_row, group_1x128 or block_128x128");
  const int64_t N = wv.rows, K = wv.cols, ldq = qsgemm::fp8_row_ld(K);  // the CUDA op's layout
  Tensor q = empty_strided({N, K}, {ldq, 1}, c.e4m3, w);
  uint8_t* qp = static_cast<uint8_t*>(q.data_ptr());
  const std::vector<float> wf = to_floats(w);
  if (g == G::kPerRow) {
    Tensor s = empty({N}, c.f32, w);
    qsgemm::ref::quantize_fp8_per_row(wf.data(), N, K, K, qp, ldq, static_cast<float*>(s.data_ptr()), false);
    return {q, s};
  }
  const auto [r, cc] = weight_scale_shape(g, N, K);
  Tensor s = empty({r, cc}, c.f32, w);
  float* sp = static_cast<float*>(s.data_ptr());
  if (g == G::kBlock128x128) qsgemm::ref::quantize_fp8_128x128(wf.data(), N, K, K, qp, ldq, sp);
  else qsgemm::ref::quantize_fp8_row_groups(wf.data(), N, K, K, qp, ldq, sp);
  return {q, s};
}

void blockwise_linear_out(const Tensor& x, const Tensor& x_scale, const std::string& gx, const Tensor& w,
                          const Tensor& w_scale, const std::string& gw, const OptTensor& bias, const Tensor& out) {
  const char* fn = "blockwise_linear";
  require_cpu(fn, "x", x);
  const BlockwiseProblem p = check_blockwise_linear(fn, x, x_scale, gx, w, w_scale, gw, bias, out);
  if (p.M == 0) return;
  const std::vector<float> b = bias_floats(bias);
  std::vector<double> y(static_cast<size_t>(p.M * p.N));
  qsgemm::ref::gemm_fp8_blockwise(bytes(x), p.ld_x, bytes(w), p.ld_w, p.M, p.N, p.K, p.gx,
                                  static_cast<const float*>(x_scale.data_ptr()), p.ld_sx, p.gw,
                                  static_cast<const float*>(w_scale.data_ptr()), bias ? b.data() : nullptr, y.data());
  store(y, out);
}

}  // namespace qsgemm_torch::cpu
