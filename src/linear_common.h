// What every GEMM family's linear layer shares (include/qsgemm/linear.h): the option and operand
// rules, the SM count and device resolution, the plan selection against the caller's workspace, the
// split-K run and the output-overlap checks. The families (src/sparse24.cpp, src/blockwise.cpp) add
// their own operand rules and kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "qsgemm/device.h"
#include "qsgemm/linear.h"
#include "qsgemm/tensor.h"
#include "validate.h"

namespace qsgemm::kernels {
struct SplitKTail;  // kernels/sm90/common/splitk_reduce.h
}  // namespace qsgemm::kernels

namespace qsgemm::detail {

// A non-owning reference to a callable, for the per-call callbacks below: unlike std::function it
// never allocates (a lambda capturing a handful of references outgrows std::function's small
// buffer, and *_linear is on the hot path). The callable must outlive the call it is passed to.
template <class Sig>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): passed like a lambda
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...); }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// The largest forced split of every family.
inline constexpr int kMaxSplitK = 16;

// options.config in [-1, num_configs) and options.split_k in [0, kMaxSplitK]; kInvalidArgument
// naming the option otherwise.
void check_config_and_split(const char* fn, const LinearOptions& o, int num_configs);
// A tuning band of tiles (Sparse24Options / BlockwiseOptions::max_swizzle): 0 (the library's order),
// 1, 2, 4 or 8; kInvalidArgument naming options.max_swizzle otherwise.
void check_max_swizzle(const char* fn, int max_swizzle);
// A non-null workspace is 16-byte aligned (kMisaligned otherwise).
void check_workspace_alignment(const char* fn, const LinearOptions& o);
// A forced split's workspace: non-null and at least split_k · M · N · 4 bytes; otherwise
// kInvalidArgument (operand options.workspace) naming the size needed and what was given.
void check_forced_split_workspace(const char* fn, int split_k, int64_t M, int64_t N, const LinearOptions& o);
// Bytes of a split-K workspace: split_k float32 slices of [M][N].
size_t splitk_workspace_bytes(int64_t M, int64_t N, int split_k);

// The SM count of *_plan / *_workspace_bytes: sm_count > 0 as given, 0 the current device's
// (kUnsupported when there is none), negative kInvalidArgument.
int resolve_sm_count(const char* fn, int sm_count);

// The peak DRAM bandwidth of `device` (-1: the current one) in GB/s, from its memory clock and bus
// width, read once per device; 0 where there is no device or it cannot be read. The heuristics'
// card profiles follow it (sparse24_profile).
double device_dram_gbps(int device);

// The device a *_linear call runs on: the stream's, checked to be sm_90 (kUnsupported otherwise).
struct LaunchDevice {
  int device = 0;
  int sm_count = 0;
};
LaunchDevice launch_device(const char* fn, cudaStream_t stream);

// The cached properties of `device` once device_info has read them (nullptr before that, and for a
// device that is absent or outside the cache): a lock-free read without a copy (src/device.cpp).
const DeviceInfo* cached_device_info(int device);

// The bias rule of every family: size 0 is no bias (whatever the pointer); otherwise size N, non-null
// data, dtype fp32 or the output dtype, base 16-byte aligned. Returns whether there is a bias.
bool check_bias(const char* fn, const VectorView& bias, int64_t N, DType y_dtype);
inline bool has_bias(const VectorView& bias) { return bias.size != 0; }
inline ByteRange byte_range(const VectorView& v) {
  return byte_range(v.data, static_cast<size_t>(v.size > 0 ? v.size : 0) * static_cast<size_t>(dtype_size(v.dtype)));
}

// An input of a linear call for the overlap checks: a name and its bytes.
struct NamedRange {
  const char* name;
  ByteRange range;
};
// y may not overlap any input or the workspace, and the workspace no input (kInvalidArgument).
void check_outputs_disjoint(const char* fn, const MatrixView& y, std::initializer_list<NamedRange> inputs,
                            ByteRange workspace);

// The plan a *_linear call runs: plan(true) when the caller's workspace holds its workspace_bytes,
// else plan(false) (no stream-K or library split), which must then need no more workspace than
// given (a forced split or stream-K configuration): kInvalidArgument naming the sizes otherwise.
// `describe` names the plan's configuration in the error.
LinearPlan select_plan(const char* fn, const LinearOptions& o, int64_t M, int64_t N, int64_t K,
                       FunctionRef<LinearPlan(bool with_workspace)> plan, std::string (*describe)(int config));

// Split-K: gemm_into(workspace) writes split_k scaled, unbiased float32 slices [split_k][M][N] into
// the workspace; then the reduction adds them in order, the tail (a blockwise K's partial last
// group) where one is given, and the bias, and writes y.
void run_split_k(const char* fn, int split_k, const MatrixView& y, const VectorView& bias, void* workspace,
                 int sm_count, cudaStream_t stream, FunctionRef<void(void* workspace)> gemm_into,
                 const kernels::SplitKTail* tail = nullptr);

// "name (i)" lists of a config table for errors: "a, b, c".
std::string list_names(int count, const std::function<std::string(int)>& name);
// The index of `name` in a table of `count` names; kInvalidArgument listing them otherwise.
int config_index_by_name(const char* fn, const std::string& name, int count, const std::function<std::string(int)>& name_of);

}  // namespace qsgemm::detail
