// qsgemm — command-line front end: info / verify / bench / tune / plan.
#include <cstdio>
#include <cstring>
#include <string>

#include "bench.h"
#include "cli_common.h"
#include "qsgemm/device.h"
#include "qsgemm/version.h"

namespace {

const char* kUsage =
    "qsgemm — low-precision and sparse GEMMs for NVIDIA Hopper (sm_90a)\n"
    "\n"
    "usage: qsgemm <command> [options]\n"
    "\n"
    "commands:\n"
    "  info     the device (name, compute capability, SMs, memory, L2) and how qsgemm was built\n"
    "  verify   self-check: the CPU reference on small problems; on an sm_90 GPU, every GPU kernel\n"
    "           against it (exit code 0 only when all checks pass)\n"
    "  bench    time the kernels against cuBLASLt / cuSPARSELt / cuBLAS in the same run, write JSON\n"
    "  tune     time every kernel configuration on one shape and print the winner\n"
    "  plan     the plan the heuristics give a shape, on the CPU (sparse24 on either card's profile)\n"
    "\n"
    "'qsgemm <command> --help' describes each command's options.\n";

int run_info(int argc, char** argv) {
  if (qsgemm::cli::has_flag(argc, argv, "--help")) {
    std::printf("usage: qsgemm info\n\nPrints the CUDA device qsgemm sees and the build configuration.\n");
    return 0;
  }
  std::printf("qsgemm %s (%s)\n", qsgemm::version(), qsgemm::build_info().c_str());
  const qsgemm::DeviceInfo d = qsgemm::device_info();
  if (!d.present) {
    std::printf("device: none (%s)\nkernels: need an sm_90a GPU (H100/H200); CPU reference only\n", d.error.c_str());
    return 0;
  }
  std::printf("device %d: %s\ncompute capability: %d.%d\nSMs: %d\nmemory: %.1f GiB\nL2: %.1f MiB\nkernels: %s\n",
              d.device, d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
              static_cast<double>(d.global_memory) / (1 << 30), static_cast<double>(d.l2_bytes) / (1 << 20),
              d.supports_kernels() ? "supported (sm_90a)" : "NOT supported on this device (need sm_90a)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "info") return run_info(argc - 2, argv + 2);
    if (cmd == "verify") return qsgemm::cli::run_verify(argc - 2, argv + 2);
    if (cmd == "bench") return qsgemm::bench::bench_main(argc - 2, argv + 2);
    if (cmd == "tune") return qsgemm::cli::run_tune(argc - 2, argv + 2);
    if (cmd == "plan") return qsgemm::cli::run_plan(argc - 2, argv + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qsgemm %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "qsgemm: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}
