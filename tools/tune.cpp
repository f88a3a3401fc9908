// `qsgemm tune sparse24 --m M --n N --k K`: times every configuration of the sparse24 table on one
// shape (L2 flushed, median of many runs, the bench's timer) and prints the winner next to the
// heuristic's choice, so a new config or a heuristic change is one measured decision.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cli_common.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/sparse24.h"

namespace qsgemm::cli {

int run_tune(int argc, char** argv) {
  if (argc < 1 || has_flag(argc, argv, "--help")) {
    std::printf(
        "usage: qsgemm tune sparse24 --m M --n N --k K [--json FILE]\n\n"
        "Times every sparse24 kernel configuration on Y[M,N] = X[M,K]·W[N,K]ᵀ (bf16 output, per-token and\n"
        "per-channel scales; L2 flushed, median time) and prints each with the winner and the heuristic's\n"
        "pick. --json appends one JSON line per configuration to FILE.\n");
    return argc < 1 ? 2 : 0;
  }
  const std::string family = argv[0];
  if (family != "sparse24") {
    std::fprintf(stderr, "qsgemm tune: unknown family '%s' (known: sparse24)\n", family.c_str());
    return 2;
  }
  const int64_t M = arg_int(argc, argv, "--m", 16), N = arg_int(argc, argv, "--n", 4096),
                K = arg_int(argc, argv, "--k", 4096);
  const DeviceInfo d = device_info();
  if (!d.supports_kernels()) {
    std::fprintf(stderr, "qsgemm tune: needs an sm_90a GPU (%s)\n", d.present ? d.name.c_str() : d.error.c_str());
    return 2;
  }
  using namespace qsgemm::bench;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
  DeviceBuffer dense(static_cast<size_t>(N * K * 2)), values(b.values), meta(b.meta), scales(b.scales),
      ws(sparse24_compress_workspace_bytes(N, K)), x(static_cast<size_t>(M * K)), sx(static_cast<size_t>(M * 4)),
      y(static_cast<size_t>(M * N * 2));
  fill_bf16(dense.get(), static_cast<size_t>(N * K), 1, 1.0f, stream);
  fill_e4m3(x.get(), static_cast<size_t>(M * K), 2, stream);
  fill_f32(static_cast<float*>(sx.get()), static_cast<size_t>(M), 3, 0.01f, 0.02f, stream);
  SparseFp8Weight w{N, K, static_cast<uint8_t*>(values.get()), static_cast<uint8_t*>(meta.get()),
                    static_cast<float*>(scales.get()), false};
  sparse24_compress(MatrixView(dense.get(), DType::kBF16, N, K), w, {}, ws.get(), stream);
  Timer timer(stream);
  const int chosen = sparse24_choose_config(M, N, K, d.sm_count);
  std::string json;
  arg_value(argc, argv, "--json", &json);
  FILE* jf = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
  double best = 1e30;
  int best_i = -1;
  std::printf("tune sparse24 M=%lld N=%lld K=%lld\n", static_cast<long long>(M), static_cast<long long>(N),
              static_cast<long long>(K));
  for (int i = 0; i < sparse24_num_configs(); ++i) {
    const std::string name = sparse24_config(i).name();
    double us = -1;
    std::string err;
    try {
      Sparse24LinearOptions opt;
      opt.config = i;
      TimeOptions to;
      to.graph = true;
      us = timer.time_us(
          [&](cudaStream_t s) {
            sparse24_linear(MatrixView(x.get(), DType::kE4M3, M, K),
                            ScaleView{static_cast<const float*>(sx.get()), ScaleGranularity::kPerRow, 0}, w, {},
                            MatrixView(y.get(), DType::kBF16, M, N), opt, s);
          },
          to);
    } catch (const std::exception& e) {
      err = e.what();
    }
    const double tflops = us > 0 ? 2.0 * M * N * K / (us * 1e-6) / 1e12 : 0;
    std::printf("  [%d] %-28s %10.1f us %8.1f TFLOP/s%s %s\n", i, name.c_str(), us, tflops, i == chosen ? "  <- heuristic" : "",
                err.c_str());
    if (jf)
      std::fprintf(jf, "{\"family\":\"sparse24\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"config\":\"%s\",\"us\":%.3f}\n",
                   static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), name.c_str(), us);
    if (us > 0 && us < best) {
      best = us;
      best_i = i;
    }
  }
  if (jf) std::fclose(jf);
  std::printf("winner: [%d] %s %.1f us (heuristic [%d]: %s)\n", best_i,
              best_i >= 0 ? sparse24_config(best_i).name().c_str() : "-", best, chosen,
              sparse24_config(chosen).name().c_str());
  cudaStreamDestroy(stream);
  return best_i >= 0 ? 0 : 1;
}

}  // namespace qsgemm::cli
