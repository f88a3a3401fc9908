// The shared linear layer (src/linear_common.h).
#include "linear_common.h"

#include "kernels/sm90/common/splitk_reduce.h"
#include "per_device_once.h"
#include "qsgemm/device.h"

namespace qsgemm::detail {

void check_config_and_split(const char* fn, const LinearOptions& o, int num_configs) {
  if (o.config < -1 || o.config >= num_configs)
    fail(fn, Status::kInvalidArgument, "options.config", cat("config ", o.config, " is outside [-1, ", num_configs, ")"));
  if (o.split_k < 0 || o.split_k > kMaxSplitK)
    fail(fn, Status::kInvalidArgument, "options.split_k",
         cat("split_k=", o.split_k, " must be 0 (chosen by the library), 1 (no split) or 2..", kMaxSplitK));
}

void check_max_swizzle(const char* fn, int max_swizzle) {
  if (max_swizzle != 0 && max_swizzle != 1 && max_swizzle != 2 && max_swizzle != 4 && max_swizzle != 8)
    fail(fn, Status::kInvalidArgument, "options.max_swizzle",
         cat("max_swizzle=", max_swizzle, " must be 0 (the library's order), 1, 2, 4 or 8"));
}

void check_workspace_alignment(const char* fn, const LinearOptions& o) {
  if (o.workspace != nullptr) check_ptr(fn, "options.workspace", o.workspace, 16);
}

size_t splitk_workspace_bytes(int64_t M, int64_t N, int split_k) { return kernels::splitk_workspace_bytes(M, N, split_k); }

void check_forced_split_workspace(const char* fn, int split_k, int64_t M, int64_t N, const LinearOptions& o) {
  kernels::check_splitk_workspace(fn, split_k, M, N, o.workspace, o.workspace_bytes);
}

double device_dram_gbps(int device) {
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();  // no device: clear the error so that later calls are not confused
    return 0.0;
  }
  static PerDeviceOnce once;
  static double gbps[PerDeviceOnce::kMaxDevices];
  double read = 0.0;
  double& out = device < PerDeviceOnce::kMaxDevices ? gbps[device] : read;
  once.run(device, [&] {
    int khz = 0, bits = 0;
    cudaError_t e = cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device);
    if (e != cudaSuccess) cudaGetLastError();
    out = e == cudaSuccess ? 2.0 * khz * 1e3 * (bits / 8.0) * 1e-9 : 0.0;  // double data rate
    return e;
  });
  return out;
}

int resolve_sm_count(const char* fn, int sm_count) {
  if (sm_count < 0) fail(fn, Status::kInvalidArgument, "sm_count", cat("sm_count=", sm_count, " is negative"));
  if (sm_count > 0) return sm_count;
  const DeviceInfo d = device_info(-1);
  if (!d.present || d.sm_count <= 0)
    fail(fn, Status::kUnsupported, "sm_count",
         cat("sm_count=0 asks for the current device's SM count, but no CUDA device is available",
             d.error.empty() ? std::string() : cat(" (", d.error, ")"), "; pass the SM count of the target GPU"));
  return d.sm_count;
}

LaunchDevice launch_device(const char* fn, cudaStream_t stream) {
  const int device = stream_device(fn, stream);
  // Every launch comes here: after the first call on a device its cached entry answers, without
  // copying a DeviceInfo (whose name string can allocate).
  if (const DeviceInfo* c = cached_device_info(device); c != nullptr && c->cc_major == 9 && c->cc_minor == 0)
    return {device, c->sm_count};
  return {device, require_sm90(fn, device).sm_count};
}

bool check_bias(const char* fn, const VectorView& bias, int64_t N, DType y_dtype) {
  if (bias.size == 0) return false;
  if (bias.size != N) fail(fn, Status::kInvalidArgument, "bias", cat("bias has ", bias.size, " elements, expected N=", N));
  if (bias.dtype != y_dtype && bias.dtype != DType::kF32)
    fail(fn, Status::kInvalidArgument, "bias",
         cat("bias dtype ", dtype_name(bias.dtype), " must be fp32 or the output dtype ", dtype_name(y_dtype)));
  if (bias.data == nullptr)
    fail(fn, Status::kInvalidArgument, "bias",
         cat("bias has size ", bias.size, " but a null pointer (size 0 means no bias)"));
  check_ptr(fn, "bias", bias.data, 16);
  return true;
}

void check_outputs_disjoint(const char* fn, const MatrixView& y, std::initializer_list<NamedRange> inputs,
                            ByteRange workspace) {
  const ByteRange out = byte_range(y);
  for (const NamedRange& in : inputs) check_no_overlap(fn, "y", out, in.name, in.range);
  check_no_overlap(fn, "y", out, "options.workspace", workspace);
  for (const NamedRange& in : inputs) check_no_overlap(fn, "options.workspace", workspace, in.name, in.range);
}

LinearPlan select_plan(const char* fn, const LinearOptions& o, int64_t M, int64_t N, int64_t K,
                       FunctionRef<LinearPlan(bool)> plan, std::string (*describe)(int)) {
  const size_t given = o.workspace != nullptr ? o.workspace_bytes : 0;
  const LinearPlan with = plan(true);
  if (with.workspace_bytes <= given) return with;
  const LinearPlan without = plan(false);
  if (without.workspace_bytes > given)
    fail(fn, Status::kInvalidArgument, "options.workspace_bytes",
         cat("configuration ", without.config, " (", describe(without.config), ")",
             without.split_k > 1 ? cat(" with split_k=", without.split_k) : std::string(), " needs ",
             without.workspace_bytes, " bytes of workspace for M=", M, " N=", N, " K=", K, "; ", given, " given"));
  return without;
}

void run_split_k(const char* fn, int split_k, const MatrixView& y, const VectorView& bias, void* workspace, int sm_count,
                 cudaStream_t stream, FunctionRef<void(void*)> gemm_into, const kernels::SplitKTail* tail) {
  gemm_into(workspace);
  const bool b = has_bias(bias);
  kernels::run_splitk_reduce({static_cast<const float*>(workspace), split_k, static_cast<int>(y.rows),
                              static_cast<int>(y.cols), b ? bias.data : nullptr, bias.dtype, y.data, y.dtype, y.ld,
                              sm_count, fn, tail},
                             stream);
}

std::string list_names(int count, const std::function<std::string(int)>& name) {
  std::string s;
  for (int i = 0; i < count; ++i) s += (i ? ", " : "") + name(i);
  return s;
}

int config_index_by_name(const char* fn, const std::string& name, int count, const std::function<std::string(int)>& name_of) {
  for (int i = 0; i < count; ++i)
    if (name_of(i) == name) return i;
  fail(fn, Status::kInvalidArgument, "name",
       cat("no configuration named '", name, "'; valid names: ", list_names(count, name_of)));
}

}  // namespace qsgemm::detail
