// Picks the instantiation for the output / bias dtypes of a call (instantiations live in
// sm90_sparse24_gemm_out_*_bias_*.cu).
#include "kernels/sm90/sparse24/sm90_sparse24_gemm.cuh"

namespace qsgemm::kernels {

template <> void run_sparse24_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::bfloat16_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::half_t, cutlass::half_t>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<cutlass::half_t, float>(const Sparse24GemmArgs&, int, cudaStream_t);
template <> void run_sparse24_config<float, float>(const Sparse24GemmArgs&, int, cudaStream_t);

void run_sparse24_gemm(const Sparse24GemmArgs& a, int config, cudaStream_t stream) {
  // Without a bias the bias dtype is irrelevant (the broadcast reads a null pointer as 0): use
  // the instantiation whose bias type matches the output, which exists for every output.
  const bool bias_f32 = a.bias != nullptr && a.bias_dtype == DType::kF32;
  switch (a.y_dtype) {
    case DType::kBF16:
      return bias_f32 ? run_sparse24_config<cutlass::bfloat16_t, float>(a, config, stream)
                      : run_sparse24_config<cutlass::bfloat16_t, cutlass::bfloat16_t>(a, config, stream);
    case DType::kF16:
      return bias_f32 ? run_sparse24_config<cutlass::half_t, float>(a, config, stream)
                      : run_sparse24_config<cutlass::half_t, cutlass::half_t>(a, config, stream);
    case DType::kF32: return run_sparse24_config<float, float>(a, config, stream);
    default: detail::fail("sparse24_linear", Status::kInternal, "y", "unexpected output dtype");
  }
}

}  // namespace qsgemm::kernels
