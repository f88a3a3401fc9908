// bench/cublaslt_baselines.h — the cuBLASLt baselines: FP8 e4m3 row-wise (per-token x per-channel),
// per-tensor, 1x128 x 128x128 block-scaled, and bf16; bf16 out, float32 accumulation.
//
// Each is set up once per shape and asks cublasLtMatmulAlgoGetHeuristic for up to
// LtContext::max_algorithms() candidates (the --algo-search option, default 8): PointTimer times
// them all on the point and keeps the fastest, as cuSPARSELt's baseline gets cusparseLtMatmulSearch.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "baseline.h"
#include "bench_util.h"

namespace qsgemm::bench {

// One cuBLASLt handle and one 32 MiB workspace for all cuBLASLt baselines of a run (allocated once,
// so calls can be captured into CUDA graphs).
class LtContext {
 public:
  explicit LtContext(int max_algorithms = 8);
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  void* handle() const { return handle_; }  // cublasLtHandle_t
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }
  int max_algorithms() const { return max_algorithms_; }  // requestedAlgoCount of the heuristic

 private:
  void* handle_ = nullptr;
  DeviceBuffer workspace_;
  int max_algorithms_;
};

// The factories allocate and fill random positive scales in the layout cuBLASLt reads
// (cublaslt_baselines.cpp documents each); reference() reads them back.
std::unique_ptr<Baseline> make_cublaslt_fp8_rowwise(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
std::unique_ptr<Baseline> make_cublaslt_fp8_tensor(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
std::unique_ptr<Baseline> make_cublaslt_fp8_block128(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);
// cuBLASLt bf16 x bf16 -> bf16, float32 accumulation (x and w bf16), named "cublas_bf16".
std::unique_ptr<Baseline> make_cublas_bf16(LtContext& lt, const GemmOperands& ops, cudaStream_t stream);

}  // namespace qsgemm::bench
