// Picks the instantiation for the output / bias dtypes of a call (instantiations live in
// sm90_sparse24_gemm_out_*_bias_*.cu, the wide table's in sm90_sparse24_gemm_wide_*.cu, the between
// tiles' in sm90_sparse24_gemm_between_*.cu (and _band_*), the clustered ones in
// sm90_sparse24_gemm_cluster_*.cu, the stream-K ones in sm90_sparse24_gemm_streamk_*.cu).
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

template <> void run_sparse24_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_wide_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_wide_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_wide_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_wide_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_wide_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_between_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_between_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_between_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_between_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_between_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_cluster_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_cluster_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_cluster_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_cluster_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_cluster_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_streamk_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_streamk_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_streamk_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_streamk_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_streamk_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> size_t sparse24_streamk_workspace_bytes<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int);
template <> size_t sparse24_streamk_workspace_bytes<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int);
template <> size_t sparse24_streamk_workspace_bytes<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int);
template <> size_t sparse24_streamk_workspace_bytes<cutlass::half_t, float>(const Sparse24GemmArgs&, int);
template <> size_t sparse24_streamk_workspace_bytes<float, float>(const Sparse24GemmArgs&, int);

namespace {

// Calls f.template operator()<Out, Bias>() for the instantiation that serves a's output and bias dtypes.
// Without a bias the bias dtype is irrelevant (the broadcast reads a null pointer as 0): use the
// instantiation whose bias type matches the output, which exists for every output.
template <class F>
decltype(auto) with_dtypes(const Sparse24GemmArgs& a, F&& f) {
  const bool bias_f32 = a.bias != nullptr && a.bias_dtype == DType::kF32;
  switch (a.y_dtype) {
    case DType::kBF16:
      return bias_f32 ? f.template operator()<cutlass::bfloat16_t, float>()
                      : f.template operator()<cutlass::bfloat16_t, cutlass::bfloat16_t>();
    case DType::kF16:
      return bias_f32 ? f.template operator()<cutlass::half_t, float>() : f.template operator()<cutlass::half_t, cutlass::half_t>();
    case DType::kF32: return f.template operator()<float, float>();
    default: detail::fail("sparse24_linear", Status::kInternal, "y", "unexpected output dtype");
  }
}

// (Member templates cannot live in local classes, hence these two here.)
struct Run {
  const Sparse24GemmArgs& a;
  int config;
  cudaStream_t stream;
  template <class Out, class Bias>
  void operator()() const {
    switch (kSparse24Configs[config].unit) {
      case Sparse24Unit::kStreamK: return run_sparse24_streamk_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kWide: return run_sparse24_wide_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kBetween: return run_sparse24_between_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kBand: return run_sparse24_band_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kCluster: return run_sparse24_cluster_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kMain: return run_sparse24_config<Out, Bias>(a, config, stream);
      case Sparse24Unit::kSkinny: break;
    }
    detail::fail("sparse24_linear", Status::kInternal, "config",
                 detail::cat("configuration ", config, " is not a CUTLASS configuration"));
  }
};
struct WorkspaceBytes {
  const Sparse24GemmArgs& a;
  int config;
  template <class Out, class Bias>
  size_t operator()() const { return sparse24_streamk_workspace_bytes<Out, Bias>(a, config); }
};

}  // namespace

void run_sparse24_gemm(const Sparse24GemmArgs& a, int config, cudaStream_t stream) {
  if (config < 0 || config >= kSparse24NumConfigs)
    detail::fail("sparse24_linear", Status::kInternal, "config", detail::cat("no configuration ", config));
  with_dtypes(a, Run{a, config, stream});
}

size_t sparse24_gemm_workspace_bytes(const Sparse24GemmArgs& a, int config) {
  if (config < 0 || config >= kSparse24NumConfigs || !kSparse24Configs[config].stream_k()) return 0;
  return with_dtypes(a, WorkspaceBytes{a, config});
}

}  // namespace qsgemm::kernels
