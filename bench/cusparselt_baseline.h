// bench/cusparselt_baseline.h — cuSPARSELt FP8 2:4, the fair sparse baseline: loaded at run time
// (dlopen), plan made once per shape, best algorithm from cusparseLtMatmulSearch.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "baseline.h"

namespace qsgemm::bench {

// "cusparselt_fp8": w is a dense e4m3 [N,K]; a copy is pruned 2:4 by cusparseLtSpMMAPrune and
// compressed; bf16 out, float32 compute, no scales (alpha = 1). reference() uses that pruned copy
// and unit scales: cuSPARSELt computes exactly that, so its rel_err is like-for-like.
std::unique_ptr<Baseline> make_cusparselt_fp8(const GemmOperands& ops, cudaStream_t stream);
// "cuSPARSELt <version> from <path>" or why it is unavailable (loads it on first use).
std::string cusparselt_status();

}  // namespace qsgemm::bench
