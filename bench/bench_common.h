// bench/bench_common.h — everything the benchmark drivers (bench_sparse24.cpp, bench_blockwise.cpp)
// and `qsgemm tune` (tools/tune.cpp) use, in one include. The pieces, by concern:
//   bench_util.h           CUDA error checks, device buffers, random fills, downloads, statistics
//   timer.h                how one time is taken (L2 flush, CUDA events, graph replay, median)
//   report.h               the rows and the JSON file (shared/BENCH_RESULTS.md)
//   baseline.h             the vendor-baseline interface (algorithms, float64 reference of its output)
//   cublaslt_baselines.h   cuBLASLt FP8 row-wise / per-tensor / block-scaled and bf16
//   cusparselt_baseline.h  cuSPARSELt FP8 2:4
//   harness.h              one run (BenchEnv, run_bench) and one point (PointTimer: one timing
//                          method for all candidates, algorithm search, interleaved rounds)
//   summary.h              the printed table and summaries
#pragma once

#include "baseline.h"
#include "bench_util.h"
#include "cublaslt_baselines.h"
#include "cusparselt_baseline.h"
#include "harness.h"
#include "report.h"
#include "summary.h"
#include "timer.h"
