// python/csrc/w4a4.cpp — the W4A4 + low-rank ops (include/qsgemm/w4a4.h): schemas (a fragment of the
// qsgemm library), operand checks, CPU kernels (the float64 reference of qsgemm/reference.h) and
// CUDA kernels (the library), boxed by hand like register.cpp's.
//
//   w4a4_pack_weight(Tensor w, int group) -> (Tensor packed, Tensor scale)
//   w4a4_quantize_activations(Tensor x, int group, Tensor? lora_down=None, bool e4m3=False)
//       -> (Tensor x1, Tensor x_scale, Tensor? x2)
//   w4a4_linear(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,
//               Tensor? w2=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor
//   w4a4_linear.out(..., Tensor? bias=None, *, Tensor(a!) out) -> ()
//
// Packed INT4 (docs/formats.md §5) is torch.uint8 [rows, K/2] (two signed values per byte, even k
// in the low nibble); the activations' e4m3 staging (e4m3=True) is torch.float8_e4m3fn [M, K], one
// code in -8..7 per byte as an e4m3 value, what the wgmma kernel reads (w4a4_linear takes either).
// Scales float32: weights [N, K/group] row-major, activations [M, K/group] M-major (strides (1, ld),
// ld >= M; the quantizer's ld is qsgemm::w4a4_x_scale_ld(M), M rounded up to 4); x2, w2, lora_down bf16.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "cuda_common.h"
#include "ops.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"
#include "qsgemm/w4a4.h"


namespace qsgemm_torch {
namespace {

using qsgemm::Status;


// ---- shared checks (the library's rules and wording, src/w4a4.cpp) ----------------------------------

void check_group(const char* fn, int64_t group, int64_t K) {
  if (group != 64 && group != 128)
    fail(fn, Status::kInvalidArgument, "group", cat("group=", group, " must be 64 or 128"));
  if (K <= 0 || K % group != 0)
    fail(fn, Status::kInvalidArgument, "D1",
         cat("D1=", K, " must be a positive multiple of group=", group, " (whole INT4 groups)"));
}

void check_rank(const char* fn, const char* name, int64_t r) {
  if (r < 0 || r > qsgemm::kW4A4MaxRank || r % 16 != 0)
    fail(fn, Status::kInvalidArgument, name,
         cat("rank r=", r, " must be a multiple of 16 in [0, ", qsgemm::kW4A4MaxRank, "]"));
}

void check_shape2(const char* fn, const char* name, const Tensor& t, int64_t rows, int64_t cols, const char* what) {
  check_dim(fn, name, t, 2);
  if (t.size(0) != rows || t.size(1) != cols)
    fail(fn, Status::kInvalidArgument, name,
         cat("has shape [", t.size(0), ", ", t.size(1), "], expected [", rows, ", ", cols, "] (", what, ")"));
}

struct PackArgs {
  int64_t N, K;
};

PackArgs check_pack(const char* fn, const Tensor& w, int64_t group) {
  const auto& c = dtype_codes();
  check_dtype(fn, "w", w, {c.bf16, c.f16, c.f32});
  check_dim(fn, "w", w, 2);
  check_contiguous(fn, "w", w);
  check_group(fn, group, w.size(1));
  return {w.size(0), w.size(1)};
}

struct QuantArgs {
  int64_t M, K, r;
  bool lora;
};

QuantArgs check_quant(const char* fn, const Tensor& x, int64_t group, const OptTensor& lora_down) {
  const auto& c = dtype_codes();
  check_dtype(fn, "x", x, {c.bf16, c.f16, c.f32});
  check_dim(fn, "x", x, 2);
  check_contiguous(fn, "x", x);
  const int64_t M = x.size(0), K = x.size(1);
  check_group(fn, group, K);
  int64_t r = 0;
  if (lora_down) {
    check_dtype(fn, "lora_down", *lora_down, {c.bf16});
    check_dim(fn, "lora_down", *lora_down, 2);
    r = lora_down->size(0);
    check_rank(fn, "lora_down", r);
    check_shape2(fn, "lora_down", *lora_down, r, K, "[r, K]");
    check_contiguous(fn, "lora_down", *lora_down);
    check_same_device(fn, x, "lora_down", *lora_down);
  }
  return {M, K, r, lora_down.has_value()};
}

struct W4A4Problem {
  int64_t M, N, K, r, ld_sx;
};

W4A4Problem check_linear(const char* fn, const Tensor& x1, const Tensor& x_scale, const Tensor& w1,
                         const Tensor& w_scale, int64_t group, const OptTensor& x2, const OptTensor& w2,
                         const OptTensor& bias, const Tensor& out) {
  const auto& c = dtype_codes();
  check_dtype(fn, "w1", w1, {c.u8});
  check_dim(fn, "w1", w1, 2);
  check_contiguous(fn, "w1", w1);
  const int64_t N = w1.size(0), K = 2 * w1.size(1);
  check_group(fn, group, K);
  if (N <= 0 || N % 8 != 0)
    fail(fn, Status::kInvalidArgument, "D",
         cat("D=", N, " (rows of w1) must be a positive multiple of 8 (whole n8 MMA tiles)"));
  const int64_t ng = K / group;
  check_dtype(fn, "w_scale", w_scale, {c.f32});
  check_shape2(fn, "w_scale", w_scale, N, ng, "[N, K/group]");
  check_contiguous(fn, "w_scale", w_scale);
  check_dtype(fn, "x1", x1, {c.u8, c.e4m3});
  check_dim(fn, "x1", x1, 2);
  const int64_t M = x1.size(0);
  const bool staged = dtype_code(x1) == c.e4m3;
  if (x1.size(1) != (staged ? K : K / 2))
    fail(fn, Status::kInvalidArgument, "x1",
         staged ? cat("has ", x1.size(1), " columns, expected K=", K, " (e4m3 codes; w1.size(1) = K/2 packed bytes)")
                : cat("has ", x1.size(1), " columns, expected K/2=", K / 2, " (w1.size(1): packed INT4 bytes)"));
  check_contiguous(fn, "x1", x1);
  check_dtype(fn, "x_scale", x_scale, {c.f32});
  check_shape2(fn, "x_scale", x_scale, M, ng, "[M, K/group]");
  if (M > 1 && x_scale.stride(0) != 1)
    fail(fn, Status::kInvalidArgument, "x_scale",
         cat("activation scales must be M-major (stride(0) == 1, as w4a4_quantize_activations writes them), "
             "got stride(0)=", x_scale.stride(0)));
  int64_t ld_sx = M > 1 ? M : 1;
  if (ng > 1) ld_sx = x_scale.stride(1);
  if (ld_sx < M) fail(fn, Status::kInvalidArgument, "x_scale", cat("stride(1)=", ld_sx, " must be >= M=", M));
  if (x2.has_value() != w2.has_value())
    fail(fn, Status::kInvalidArgument, x2 ? "w2" : "x2", "x2 and w2 must be given together (or both None)");
  int64_t r = 0;
  if (x2) {
    check_dtype(fn, "x2", *x2, {c.bf16});
    check_dtype(fn, "w2", *w2, {c.bf16});
    check_dim(fn, "x2", *x2, 2);
    r = x2->size(1);
    check_rank(fn, "x2", r);
    check_shape2(fn, "x2", *x2, M, r, "[M, r]");
    check_shape2(fn, "w2", *w2, N, r, "[N, r] with r = x2.size(1)");
    check_contiguous(fn, "x2", *x2);
    check_contiguous(fn, "w2", *w2);
    check_same_device(fn, x1, "x2", *x2);
    check_same_device(fn, x1, "w2", *w2);
  }
  check_shape2(fn, "out", out, M, N, "[M, N]");
  check_dtype(fn, "out", out, {c.bf16, c.f16, c.f32});
  check_contiguous(fn, "out", out);
  check_same_device(fn, x1, "x_scale", x_scale);
  check_same_device(fn, x1, "w1", w1);
  check_same_device(fn, x1, "w_scale", w_scale);
  check_same_device(fn, x1, "out", out);
  if (bias) {
    check_dtype(fn, "bias", *bias, {c.f32, dtype_code(out)});
    check_contiguous(fn, "bias", *bias);
    check_numel(fn, "bias", *bias, N, "N");
    check_same_device(fn, x1, "bias", *bias);
  }
  return {M, N, K, r, ld_sx};
}

// M-major with the ld w4a4_linear reads fastest (qsgemm::w4a4_x_scale_ld: M rounded up to 4 floats,
// the TMA's 16-byte stride).
Tensor x_scale_tensor(int64_t M, int64_t ng, const Tensor& like) {
  return empty_strided({M, ng}, {1, qsgemm::w4a4_x_scale_ld(M)}, dtype_codes().f32, like);
}

// ---- CPU kernels -----------------------------------------------------------------------------------------

void require_cpu(const char* fn, const char* name, const Tensor& t) {
  if (!t.is_cpu()) fail(fn, Status::kInvalidArgument, name, "must be a CPU tensor");
}

std::vector<float> to_floats(const Tensor& t) {
  Tensor f = dtype_code(t) == dtype_codes().f32 ? t : torch::stable::to(t, ScalarType::Float);
  f = torch::stable::contiguous(f);
  const float* p = static_cast<const float*>(f.data_ptr());
  return std::vector<float>(p, p + f.numel());
}

void store(const std::vector<double>& y, const Tensor& out) {
  const auto& c = dtype_codes();
  const int32_t d = dtype_code(out);
  if (d == c.f32) {
    float* o = static_cast<float*>(out.data_ptr());
    for (size_t i = 0; i < y.size(); ++i) o[i] = static_cast<float>(y[i]);
  } else {
    uint16_t* o = static_cast<uint16_t*>(out.data_ptr());
    const bool bf = d == c.bf16;
    for (size_t i = 0; i < y.size(); ++i) {
      const float f = static_cast<float>(y[i]);
      o[i] = bf ? qsgemm::bf16_encode(f) : qsgemm::fp16_encode(f);
    }
  }
}

namespace cpu {

Tensors2 pack_weight(const Tensor& w, int64_t group) {
  const char* fn = "w4a4_pack_weight";
  require_cpu(fn, "w", w);
  const PackArgs p = check_pack(fn, w, group);
  const auto& c = dtype_codes();
  Tensor packed = empty({p.N, p.K / 2}, c.u8, w);
  Tensor scale = empty({p.N, p.K / group}, c.f32, w);
  const std::vector<float> wf = to_floats(w);
  for (size_t i = 0; i < wf.size(); ++i)
    if (!std::isfinite(wf[i]))
      fail(fn, Status::kInvalidValue, "w",
           cat("w[", static_cast<int64_t>(i) / p.K, ", ", static_cast<int64_t>(i) % p.K, "] = ", wf[i],
               " is not finite: INT4 weights must be finite"));
  if (p.N > 0)
    qsgemm::ref::quantize_int4_groups(wf.data(), p.N, p.K, p.K, static_cast<int>(group),
                                      static_cast<uint8_t*>(packed.data_ptr()), static_cast<float*>(scale.data_ptr()));
  return {packed, scale};
}

std::tuple<Tensor, Tensor, OptTensor> quantize_activations(const Tensor& x, int64_t group, const OptTensor& lora_down,
                                                           bool e4m3) {
  const char* fn = "w4a4_quantize_activations";
  require_cpu(fn, "x", x);
  const QuantArgs q = check_quant(fn, x, group, lora_down);
  const auto& c = dtype_codes();
  const int64_t M = q.M, K = q.K, ng = K / group;
  Tensor x1 = e4m3 ? empty({M, K}, c.e4m3, x) : empty({M, K / 2}, c.u8, x);
  Tensor xs = x_scale_tensor(M, ng, x);
  OptTensor x2;
  if (q.lora) x2 = empty({M, q.r}, c.bf16, x);
  if (M == 0) return {x1, xs, x2};
  const std::vector<float> xf = to_floats(x);
  std::vector<float> rm(static_cast<size_t>(M * ng));
  std::vector<uint8_t> packed(e4m3 ? static_cast<size_t>(M * K / 2) : 0);
  uint8_t* pk = e4m3 ? packed.data() : static_cast<uint8_t*>(x1.data_ptr());
  qsgemm::ref::quantize_int4_groups(xf.data(), M, K, K, static_cast<int>(group), pk, rm.data());
  if (e4m3) {  // the staging: nibble k of the packed row as byte k, an e4m3 value
    uint8_t* q8 = static_cast<uint8_t*>(x1.data_ptr());
    for (int64_t i = 0; i < M * K; ++i)
      q8[i] = qsgemm::fp8_e4m3_encode(static_cast<float>(qsgemm::int4_unpack(pk[i / 2], static_cast<int>(i % 2))));
  }
  float* sp = static_cast<float*>(xs.data_ptr());
  const int64_t ld = qsgemm::w4a4_x_scale_ld(M);  // xs's stride(1)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < ng; ++g) sp[g * ld + m] = rm[static_cast<size_t>(m * ng + g)];
  if (q.lora && q.r > 0) {
    // X·L1ᵀ from the unquantized X, in float64, rounded once to bf16.
    const std::vector<float> l1 = to_floats(*lora_down);
    std::vector<double> y(static_cast<size_t>(M * q.r));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < q.r; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(xf[static_cast<size_t>(m * K + k)]) * l1[static_cast<size_t>(j * K + k)];
        y[static_cast<size_t>(m * q.r + j)] = acc;
      }
    store(y, *x2);
  }
  return {x1, xs, x2};
}

void linear_out(const Tensor& x1, const Tensor& x_scale, const Tensor& w1, const Tensor& w_scale, int64_t group,
                const OptTensor& x2, const OptTensor& w2, const OptTensor& bias, const Tensor& out) {
  const char* fn = "w4a4_linear";
  require_cpu(fn, "x1", x1);
  const W4A4Problem p = check_linear(fn, x1, x_scale, w1, w_scale, group, x2, w2, bias, out);
  if (p.M == 0) return;
  const int64_t ng = p.K / group;
  // The reference reads packed codes: an e4m3 staging is packed first (lossless: codes in -8..7;
  // a byte that is not such a code packs as its value clamped to -8..7, NaN as 0).
  std::vector<uint8_t> x1p;
  const uint8_t* x1_packed = static_cast<const uint8_t*>(x1.data_ptr());
  if (dtype_code(x1) == dtype_codes().e4m3) {
    const uint8_t* q8 = static_cast<const uint8_t*>(x1.data_ptr());
    auto code = [](uint8_t b) {
      const float v = qsgemm::fp8_e4m3_decode(b);
      return v == v ? static_cast<int>(std::fmin(std::fmax(v, -8.0f), 7.0f)) : 0;
    };
    x1p.resize(static_cast<size_t>(p.M * p.K / 2));
    for (int64_t i = 0; i < p.M * p.K / 2; ++i)
      x1p[static_cast<size_t>(i)] = qsgemm::int4_pack(code(q8[2 * i]), code(q8[2 * i + 1]));
    x1_packed = x1p.data();
  }
  // The reference takes row-major [M][K/group] activation scales.
  const float* sx = static_cast<const float*>(x_scale.data_ptr());
  std::vector<float> sx_rm(static_cast<size_t>(p.M * ng));
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t g = 0; g < ng; ++g) sx_rm[static_cast<size_t>(m * ng + g)] = sx[g * p.ld_sx + m];
  std::vector<float> x2f, w2f, bf;
  if (p.r > 0) {
    x2f = to_floats(*x2);
    w2f = to_floats(*w2);
  }
  if (bias) bf = to_floats(*bias);
  std::vector<double> y(static_cast<size_t>(p.M * p.N));
  qsgemm::ref::gemm_w4a4_lowrank(x1_packed, static_cast<const uint8_t*>(w1.data_ptr()),
                                 sx_rm.data(), static_cast<const float*>(w_scale.data_ptr()), p.M, p.N, p.K,
                                 static_cast<int>(group), p.r > 0 ? x2f.data() : nullptr,
                                 p.r > 0 ? w2f.data() : nullptr, p.r, bias ? bf.data() : nullptr, y.data());
  store(y, out);
}

}  // namespace cpu

// ---- CUDA kernels ----------------------------------------------------------------------------------------
namespace cuda {

using qsgemm_torch::cuda::current_stream;
using qsgemm_torch::cuda::device_of;
using qsgemm_torch::cuda::DeviceScope;

qsgemm::MatrixView i4_view(const Tensor& t, int64_t rows, int64_t bytes) {
  return qsgemm::MatrixView(t.data_ptr(), qsgemm::DType::kI4x2, rows, bytes);
}

Tensors2 pack_weight(const Tensor& w, int64_t group) {
  const char* fn = "w4a4_pack_weight";
  const int32_t dev = device_of(fn, "w", w);
  DeviceScope scope(dev);
  const PackArgs p = check_pack(fn, w, group);
  const auto& c = dtype_codes();
  Tensor packed = empty({p.N, p.K / 2}, c.u8, w);
  Tensor scale = empty({p.N, p.K / group}, c.f32, w);
  if (p.N == 0) return {packed, scale};
  const qsgemm::MatrixView wv = matrix_view(fn, "w", w);
  qsgemm::w4a4_pack_weight(wv, static_cast<int>(group), i4_view(packed, p.N, p.K / 2),
                           static_cast<float*>(scale.data_ptr()), current_stream(dev));
  return {packed, scale};
}

// x1 as the library sees it: packed INT4 (torch.uint8 [M, K/2]) or the e4m3 staging
// (torch.float8_e4m3fn [M, K]).
qsgemm::MatrixView x1_view(const Tensor& x1, int64_t M, int64_t K) {
  if (dtype_code(x1) == dtype_codes().e4m3) return qsgemm::MatrixView(x1.data_ptr(), qsgemm::DType::kE4M3, M, K);
  return i4_view(x1, M, K / 2);
}

std::tuple<Tensor, Tensor, OptTensor> quantize_activations(const Tensor& x, int64_t group, const OptTensor& lora_down,
                                                           bool e4m3) {
  const char* fn = "w4a4_quantize_activations";
  const int32_t dev = device_of(fn, "x", x);
  DeviceScope scope(dev);
  const QuantArgs q = check_quant(fn, x, group, lora_down);
  const auto& c = dtype_codes();
  const int64_t M = q.M, K = q.K, ng = K / group;
  Tensor x1 = e4m3 ? empty({M, K}, c.e4m3, x) : empty({M, K / 2}, c.u8, x);
  Tensor xs = x_scale_tensor(M, ng, x);
  OptTensor x2;
  if (q.lora) x2 = empty({M, q.r}, c.bf16, x);
  if (M == 0) return {x1, xs, x2};
  const qsgemm::MatrixView xv = matrix_view(fn, "x", x);
  float* sp = static_cast<float*>(xs.data_ptr());
  const int64_t ld = qsgemm::w4a4_x_scale_ld(M);  // xs's stride(1)
  if (q.lora && q.r > 0) {
    const qsgemm::MatrixView lv = matrix_view(fn, "lora_down", *lora_down);
    const qsgemm::MatrixView x2v(x2->data_ptr(), qsgemm::DType::kBF16, M, q.r);
    qsgemm::w4a4_quantize_activations(xv, static_cast<int>(group), lv, x1_view(x1, M, K), sp, ld, x2v,
                                      current_stream(dev));
  } else {
    qsgemm::w4a4_quantize_activations(xv, static_cast<int>(group), x1_view(x1, M, K), sp, ld, current_stream(dev));
  }
  return {x1, xs, x2};
}

void linear_out(const Tensor& x1, const Tensor& x_scale, const Tensor& w1, const Tensor& w_scale, int64_t group,
                const OptTensor& x2, const OptTensor& w2, const OptTensor& bias, const Tensor& out) {
  const char* fn = "w4a4_linear";
  const int32_t dev = device_of(fn, "x1", x1);
  DeviceScope scope(dev);
  const W4A4Problem p = check_linear(fn, x1, x_scale, w1, w_scale, group, x2, w2, bias, out);
  if (p.M == 0) return;
  qsgemm::MatrixView x2v, w2v;
  if (p.r > 0) {
    x2v = qsgemm::MatrixView(x2->data_ptr(), qsgemm::DType::kBF16, p.M, p.r);
    w2v = qsgemm::MatrixView(w2->data_ptr(), qsgemm::DType::kBF16, p.N, p.r);
  } else {
    x2v = qsgemm::MatrixView(nullptr, qsgemm::DType::kBF16, p.M, 0);
    w2v = qsgemm::MatrixView(nullptr, qsgemm::DType::kBF16, p.N, 0);
  }
  qsgemm::VectorView bv;
  if (bias) bv = qsgemm::VectorView(bias->data_ptr(), qs_dtype(fn, "bias", *bias), p.N);
  const qsgemm::MatrixView yv(out.data_ptr(), qs_dtype(fn, "out", out), p.M, p.N);
  qsgemm::W4A4Options opt;
  qsgemm::w4a4_linear(x1_view(x1, p.M, p.K), static_cast<const float*>(x_scale.data_ptr()), p.ld_sx,
                      i4_view(w1, p.N, p.K / 2), static_cast<const float*>(w_scale.data_ptr()), static_cast<int>(group),
                      x2v, w2v, bv, yv, opt, current_stream(dev));
}

}  // namespace cuda

// ---- boxed kernels ---------------------------------------------------------------------------------------
namespace sd = torch::stable::detail;

template <class T>
T arg(StableIValue* stack, int i) {
  return sd::to<T>(stack[i]);
}

template <bool Cuda>
void boxed_pack(StableIValue* st, uint64_t, uint64_t) {
  const Tensor w = arg<Tensor>(st, 0);
  const int64_t group = arg<int64_t>(st, 1);
  Tensors2 r = guarded([&] { return Cuda ? cuda::pack_weight(w, group) : cpu::pack_weight(w, group); });
  st[0] = sd::from(std::get<0>(r));
  st[1] = sd::from(std::get<1>(r));
}

template <bool Cuda>
void boxed_quantize(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0);
  const int64_t group = arg<int64_t>(st, 1);
  const OptTensor l1 = arg<OptTensor>(st, 2);
  const bool e4m3 = arg<bool>(st, 3);
  auto r = guarded([&] {
    return Cuda ? cuda::quantize_activations(x, group, l1, e4m3) : cpu::quantize_activations(x, group, l1, e4m3);
  });
  st[0] = sd::from(std::get<0>(r));
  st[1] = sd::from(std::get<1>(r));
  st[2] = sd::from(std::get<2>(r));
}

template <bool Cuda>
Tensor linear_functional(const Tensor& x1, const Tensor& xs, const Tensor& w1, const Tensor& ws, int64_t group,
                         const OptTensor& x2, const OptTensor& w2, const OptTensor& bias,
                         std::optional<ScalarType> out_dtype) {
  const char* fn = "w4a4_linear";
  const int32_t od = out_dtype_code(fn, out_dtype);
  if (x1.dim() != 2 || w1.dim() != 2)
    fail(fn, Status::kInvalidArgument, x1.dim() != 2 ? "x1" : "w1", "must be 2-D");
  Tensor out = empty({x1.size(0), w1.size(0)}, od, x1);
  if constexpr (Cuda) cuda::linear_out(x1, xs, w1, ws, group, x2, w2, bias, out);
  else cpu::linear_out(x1, xs, w1, ws, group, x2, w2, bias, out);
  return out;
}

template <bool Cuda>
void boxed_linear(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x1 = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1), w1 = arg<Tensor>(st, 2), ws = arg<Tensor>(st, 3);
  const int64_t group = arg<int64_t>(st, 4);
  const OptTensor x2 = arg<OptTensor>(st, 5), w2 = arg<OptTensor>(st, 6), bias = arg<OptTensor>(st, 7);
  const auto od = arg<std::optional<ScalarType>>(st, 8);
  Tensor out = guarded([&] { return linear_functional<Cuda>(x1, xs, w1, ws, group, x2, w2, bias, od); });
  st[0] = sd::from(out);
}

template <bool Cuda>
void boxed_linear_out(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x1 = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1), w1 = arg<Tensor>(st, 2), ws = arg<Tensor>(st, 3);
  const int64_t group = arg<int64_t>(st, 4);
  const OptTensor x2 = arg<OptTensor>(st, 5), w2 = arg<OptTensor>(st, 6), bias = arg<OptTensor>(st, 7);
  const Tensor out = arg<Tensor>(st, 8);
  guarded([&] {
    if (Cuda) cuda::linear_out(x1, xs, w1, ws, group, x2, w2, bias, out);
    else cpu::linear_out(x1, xs, w1, ws, group, x2, w2, bias, out);
    return 0;
  });
}

template <bool Cuda>
void register_w4a4(sd::StableLibrary& m) {
  m.impl("w4a4_pack_weight", &boxed_pack<Cuda>);
  m.impl("w4a4_quantize_activations", &boxed_quantize<Cuda>);
  m.impl("w4a4_linear", &boxed_linear<Cuda>);
  m.impl("w4a4_linear.out", &boxed_linear_out<Cuda>);
}

}  // namespace
}  // namespace qsgemm_torch

STABLE_TORCH_LIBRARY_FRAGMENT(qsgemm, m) {
  m.def("w4a4_pack_weight(Tensor w, int group) -> (Tensor packed, Tensor scale)");
  m.def("w4a4_quantize_activations(Tensor x, int group, Tensor? lora_down=None, bool e4m3=False)"
        " -> (Tensor x1, Tensor x_scale, Tensor? x2)");
  m.def("w4a4_linear(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,"
        " Tensor? w2=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor");
  m.def("w4a4_linear.out(Tensor x1, Tensor x_scale, Tensor w1, Tensor w_scale, int group, Tensor? x2=None,"
        " Tensor? w2=None, Tensor? bias=None, *, Tensor(a!) out) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL(qsgemm, CPU, m) { qsgemm_torch::register_w4a4<false>(m); }
STABLE_TORCH_LIBRARY_IMPL(qsgemm, CUDA, m) { qsgemm_torch::register_w4a4<true>(m); }
