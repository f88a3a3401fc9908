// python/csrc/register.cpp — the qsgemm op schemas and their CPU / CUDA kernels, registered through
// the LibTorch stable ABI (STABLE_TORCH_LIBRARY*), built with TORCH_TARGET_VERSION = 2.10.
//
// The kernels are boxed by hand (not TORCH_BOX): torch 2.10/2.11's std::string unboxing
// (ToImpl<std::string>) leaks one heap string per `str` argument per call, which a GEMM called
// millions of times cannot afford; take_str below reads and frees the string handle instead.
// The schemas are documented in python/qsgemm/_ops.py and docs/python.md.
#include "ops.h"

namespace qsgemm_torch {
namespace {

namespace sd = torch::stable::detail;

template <class T>
T arg(StableIValue* stack, int i) {
  return sd::to<T>(stack[i]);
}

std::string take_str(StableIValue v) {
  auto h = sd::to<StringHandle>(v);
  size_t n = 0;
  const char* data = nullptr;
  TORCH_ERROR_CODE_CHECK(torch_string_length(h, &n));
  TORCH_ERROR_CODE_CHECK(torch_string_c_str(h, &data));
  std::string s(data, n);
  TORCH_ERROR_CODE_CHECK(torch_delete_string(h));
  return s;
}

bool is_cuda(const Tensor& t) { return t.is_cuda(); }

// ---- functional forms: allocate the output through torch, then run the .out kernel ---------------------

template <bool Cuda>
Tensor decompress(const Tensor& values, const Tensor& meta, const Tensor& scale, int64_t N, int64_t K, ScalarType dtype) {
  Tensor out = empty({N > 0 ? N : 0, K > 0 ? K : 0}, dtype_code(dtype), values);
  if constexpr (Cuda) cuda::sparse24_decompress_out(values, meta, scale, N, K, out);
  else cpu::sparse24_decompress_out(values, meta, scale, N, K, out);
  return out;
}

template <bool Cuda>
Tensor sparse24_linear(const Tensor& x, const Tensor& x_scale, const Tensor& values, const Tensor& meta,
                       const Tensor& w_scale, const OptTensor& bias, std::optional<ScalarType> out_dtype,
                       bool fast_accum) {
  const int32_t od = out_dtype_code("sparse24_linear", out_dtype);
  if (x.dim() != 2 || values.dim() != 2)
    fail("sparse24_linear", qsgemm::Status::kInvalidArgument, x.dim() != 2 ? "x" : "values", "must be 2-D");
  Tensor out = empty({x.size(0), values.size(0)}, od, x);
  if constexpr (Cuda) cuda::sparse24_linear_out(x, x_scale, values, meta, w_scale, bias, fast_accum, out);
  else cpu::sparse24_linear_out(x, x_scale, values, meta, w_scale, bias, fast_accum, out);
  return out;
}

template <bool Cuda>
Tensor blockwise_linear(const Tensor& x, const Tensor& x_scale, const std::string& gx, const Tensor& w,
                        const Tensor& w_scale, const std::string& gw, const OptTensor& bias,
                        std::optional<ScalarType> out_dtype) {
  const int32_t od = out_dtype_code("blockwise_linear", out_dtype);
  if (x.dim() != 2 || w.dim() != 2)
    fail("blockwise_linear", qsgemm::Status::kInvalidArgument, x.dim() != 2 ? "x" : "w", "must be 2-D");
  Tensor out = empty({x.size(0), w.size(0)}, od, x);
  if constexpr (Cuda) cuda::blockwise_linear_out(x, x_scale, gx, w, w_scale, gw, bias, out);
  else cpu::blockwise_linear_out(x, x_scale, gx, w, w_scale, gw, bias, out);
  return out;
}

// ---- boxed kernels ------------------------------------------------------------------------------------

template <bool Cuda>
void boxed_sparse24_compress(StableIValue* st, uint64_t, uint64_t) {
  const Tensor w = arg<Tensor>(st, 0);
  const std::string prune = take_str(st[1]), scale = take_str(st[2]);
  const OptTensor given = arg<OptTensor>(st, 3);
  Tensors3 r = guarded([&] {
    return Cuda ? cuda::sparse24_compress(w, prune, scale, given) : cpu::sparse24_compress(w, prune, scale, given);
  });
  st[0] = sd::from(std::get<0>(r));
  st[1] = sd::from(std::get<1>(r));
  st[2] = sd::from(std::get<2>(r));
}

template <bool Cuda>
void boxed_sparse24_decompress(StableIValue* st, uint64_t, uint64_t) {
  const Tensor v = arg<Tensor>(st, 0), m = arg<Tensor>(st, 1), s = arg<Tensor>(st, 2);
  const int64_t N = arg<int64_t>(st, 3), K = arg<int64_t>(st, 4);
  const ScalarType dt = arg<ScalarType>(st, 5);
  Tensor out = guarded([&] { return decompress<Cuda>(v, m, s, N, K, dt); });
  st[0] = sd::from(out);
}

template <bool Cuda>
void boxed_sparse24_decompress_out(StableIValue* st, uint64_t, uint64_t) {
  const Tensor v = arg<Tensor>(st, 0), m = arg<Tensor>(st, 1), s = arg<Tensor>(st, 2);
  const int64_t N = arg<int64_t>(st, 3), K = arg<int64_t>(st, 4);
  const Tensor out = arg<Tensor>(st, 5);
  guarded([&] {
    if (Cuda) cuda::sparse24_decompress_out(v, m, s, N, K, out);
    else cpu::sparse24_decompress_out(v, m, s, N, K, out);
    return 0;
  });
}

template <bool Cuda>
void boxed_sparse24_linear(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1), v = arg<Tensor>(st, 2), m = arg<Tensor>(st, 3),
               ws = arg<Tensor>(st, 4);
  const OptTensor bias = arg<OptTensor>(st, 5);
  const auto od = arg<std::optional<ScalarType>>(st, 6);
  const bool fast = arg<bool>(st, 7);
  Tensor out = guarded([&] { return sparse24_linear<Cuda>(x, xs, v, m, ws, bias, od, fast); });
  st[0] = sd::from(out);
}

template <bool Cuda>
void boxed_sparse24_linear_out(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1), v = arg<Tensor>(st, 2), m = arg<Tensor>(st, 3),
               ws = arg<Tensor>(st, 4);
  const OptTensor bias = arg<OptTensor>(st, 5);
  const bool fast = arg<bool>(st, 6);
  const Tensor out = arg<Tensor>(st, 7);
  guarded([&] {
    if (Cuda) cuda::sparse24_linear_out(x, xs, v, m, ws, bias, fast, out);
    else cpu::sparse24_linear_out(x, xs, v, m, ws, bias, fast, out);
    return 0;
  });
}

template <bool Cuda, int Which>  // 0: per token, 1: per token group
void boxed_quantize_act(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0);
  const bool pow2 = arg<bool>(st, 1);
  Tensors2 r = guarded([&] {
    if (Which == 0) return Cuda ? cuda::quantize_fp8_per_token(x, pow2) : cpu::quantize_fp8_per_token(x, pow2);
    return Cuda ? cuda::quantize_fp8_per_token_group(x, pow2) : cpu::quantize_fp8_per_token_group(x, pow2);
  });
  st[0] = sd::from(std::get<0>(r));
  st[1] = sd::from(std::get<1>(r));
}

template <bool Cuda>
void boxed_quantize_fp8_weight(StableIValue* st, uint64_t, uint64_t) {
  const Tensor w = arg<Tensor>(st, 0);
  const std::string g = take_str(st[1]);
  Tensors2 r = guarded([&] { return Cuda ? cuda::quantize_fp8_weight(w, g) : cpu::quantize_fp8_weight(w, g); });
  st[0] = sd::from(std::get<0>(r));
  st[1] = sd::from(std::get<1>(r));
}

template <bool Cuda>
void boxed_blockwise_linear(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1);
  const std::string gx = take_str(st[2]);
  const Tensor w = arg<Tensor>(st, 3), ws = arg<Tensor>(st, 4);
  const std::string gw = take_str(st[5]);
  const OptTensor bias = arg<OptTensor>(st, 6);
  const auto od = arg<std::optional<ScalarType>>(st, 7);
  Tensor out = guarded([&] { return blockwise_linear<Cuda>(x, xs, gx, w, ws, gw, bias, od); });
  st[0] = sd::from(out);
}

template <bool Cuda>
void boxed_blockwise_linear_out(StableIValue* st, uint64_t, uint64_t) {
  const Tensor x = arg<Tensor>(st, 0), xs = arg<Tensor>(st, 1);
  const std::string gx = take_str(st[2]);
  const Tensor w = arg<Tensor>(st, 3), ws = arg<Tensor>(st, 4);
  const std::string gw = take_str(st[5]);
  const OptTensor bias = arg<OptTensor>(st, 6);
  const Tensor out = arg<Tensor>(st, 7);
  guarded([&] {
    if (Cuda) cuda::blockwise_linear_out(x, xs, gx, w, ws, gw, bias, out);
    else cpu::blockwise_linear_out(x, xs, gx, w, ws, gw, bias, out);
    return 0;
  });
}

template <bool Cuda>
void register_kernels(torch::stable::detail::StableLibrary& m) {
  m.impl("sparse24_compress", &boxed_sparse24_compress<Cuda>);
  m.impl("sparse24_decompress", &boxed_sparse24_decompress<Cuda>);
  m.impl("sparse24_decompress.out", &boxed_sparse24_decompress_out<Cuda>);
  m.impl("sparse24_linear", &boxed_sparse24_linear<Cuda>);
  m.impl("sparse24_linear.out", &boxed_sparse24_linear_out<Cuda>);
  m.impl("quantize_fp8_per_token", &boxed_quantize_act<Cuda, 0>);
  m.impl("quantize_fp8_per_token_group", &boxed_quantize_act<Cuda, 1>);
  m.impl("quantize_fp8_weight", &boxed_quantize_fp8_weight<Cuda>);
  m.impl("blockwise_linear", &boxed_blockwise_linear<Cuda>);
  m.impl("blockwise_linear.out", &boxed_blockwise_linear_out<Cuda>);
}

}  // namespace
}  // namespace qsgemm_torch

STABLE_TORCH_LIBRARY(qsgemm, m) {
  m.def("sparse24_compress(Tensor w, str prune=\"magnitude\", str scale=\"per_channel\", Tensor? given_scale=None)"
        " -> (Tensor values, Tensor meta, Tensor scale)");
  m.def("sparse24_decompress(Tensor values, Tensor meta, Tensor scale, int N, int K, ScalarType dtype) -> Tensor");
  m.def("sparse24_decompress.out(Tensor values, Tensor meta, Tensor scale, int N, int K, *, Tensor(a!) out) -> ()");
  m.def("sparse24_linear(Tensor x, Tensor x_scale, Tensor values, Tensor meta, Tensor w_scale, Tensor? bias=None,"
        " ScalarType? out_dtype=None, bool fast_accum=False) -> Tensor");
  m.def("sparse24_linear.out(Tensor x, Tensor x_scale, Tensor values, Tensor meta, Tensor w_scale,"
        " Tensor? bias=None, bool fast_accum=False, *, Tensor(a!) out) -> ()");
  m.def("quantize_fp8_per_token(Tensor x, bool pow2_scales=False) -> (Tensor q, Tensor scale)");
  m.def("quantize_fp8_per_token_group(Tensor x, bool pow2_scales=False) -> (Tensor q, Tensor scale)");
  m.def("quantize_fp8_weight(Tensor w, str granularity=\"block_128x128\") -> (Tensor q, Tensor scale)");
  m.def("blockwise_linear(Tensor x, Tensor x_scale, str x_granularity, Tensor w, Tensor w_scale, str w_granularity,"
        " Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor");
  m.def("blockwise_linear.out(Tensor x, Tensor x_scale, str x_granularity, Tensor w, Tensor w_scale,"
        " str w_granularity, Tensor? bias=None, *, Tensor(a!) out) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL(qsgemm, CPU, m) { qsgemm_torch::register_kernels<false>(m); }
STABLE_TORCH_LIBRARY_IMPL(qsgemm, CUDA, m) { qsgemm_torch::register_kernels<true>(m); }
