// bench/baseline.h — what every vendor baseline of `qsgemm bench` is: a GEMM set up once for one
// shape, a list of algorithms it can run (timed by PointTimer, the best kept), and the float64
// reference of its own output (its rel_err in the JSON).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "report.h"

namespace qsgemm::bench {

// Device operands of Y = X · Wᵀ in the nn.Linear convention, all row-major and dense:
// x [M,K], w [N,K] (e4m3 or bf16 as the baseline says), y [M,N] bf16 written.
struct GemmOperands {
  int64_t M = 0, N = 0, K = 0;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  int64_t ld_x = 0, ld_w = 0;  // row strides of the FP8 operands in elements; 0: K (packed)
  int64_t ldx() const { return ld_x > 0 ? ld_x : K; }
  int64_t ldw() const { return ld_w > 0 ? ld_w : K; }
};

// A vendor GEMM set up once for one shape (descriptors, algorithm candidates, plan, its own scale
// buffers), then run(stream) enqueues exactly one call with the selected algorithm. When the
// library refuses the shape or is missing, available() is false and unavailable_reason() says why;
// run() must not be called then.
class Baseline {
 public:
  virtual ~Baseline() = default;
  const std::string& name() const { return name_; }
  bool available() const { return reason_.empty(); }
  const std::string& unavailable_reason() const { return reason_; }
  virtual void run(cudaStream_t stream) = 0;

  // The algorithms PointTimer may time (cuBLASLt: its heuristic's results, best first); 1 when the
  // library picks by itself. select_algorithm(i) makes run() use candidate i.
  virtual int algorithm_count() const { return 1; }
  virtual void select_algorithm(int /*index*/) {}
  // What the JSON records about the algorithm (how and the library's id); search times are added by PointTimer.
  virtual AlgoChoice algorithm() const { return {}; }

  // The float64 reference of y[tokens[t]][channels[j]] from the baseline's own operands (the same
  // quantized values and scales it runs on), into expect [T][C]. False when it has none.
  virtual bool reference(const std::vector<int64_t>& /*tokens*/, const std::vector<int64_t>& /*channels*/,
                         std::vector<double>& /*expect*/, cudaStream_t /*stream*/) {
    return false;
  }
  // Its output (y [M,N] bf16, row-major); null when it writes none (the memcpy floor).
  virtual const GemmOperands* operands() const { return nullptr; }
  // What the row's notes should say about how it ran (e.g. a padded M); empty: nothing.
  virtual std::string note() const { return {}; }

 protected:
  explicit Baseline(std::string name) : name_(std::move(name)) {}
  std::string name_;
  std::string reason_;
};

// A baseline that never runs: `reason` says why.
std::unique_ptr<Baseline> make_unavailable(std::string name, std::string reason);

// "cuda_memcpy_same_bytes": one device-to-device cudaMemcpyAsync of `bytes` bytes (so bytes read
// plus written = 2 x bytes), the floor of a memory-bound kernel that moves as much.
std::unique_ptr<Baseline> make_memcpy_same_bytes(size_t bytes, cudaStream_t stream);

// ‖Y − ref‖/‖ref‖ of the baseline's output over sampled tokens x channels: y is poisoned with NaN,
// the baseline runs once, the samples are compared with reference(). NaN when it has no reference;
// +inf when an element is not finite (an unwritten or wrong-layout output).
double baseline_rel_err(Baseline& b, const std::vector<int64_t>& tokens, const std::vector<int64_t>& channels,
                        cudaStream_t stream);

}  // namespace qsgemm::bench
