// bench/baseline.cpp — see baseline.h.
#include "baseline.h"

#include <cmath>

#include "bench_util.h"
#include "qsgemm/formats.h"
#include "qsgemm/reference.h"

namespace qsgemm::bench {
namespace {

class UnavailableBaseline final : public Baseline {
 public:
  UnavailableBaseline(std::string name, std::string reason) : Baseline(std::move(name)) { reason_ = std::move(reason); }
  void run(cudaStream_t) override { throw BenchError(name_ + " is unavailable: " + reason_); }
};

class MemcpySameBytes final : public Baseline {
 public:
  MemcpySameBytes(size_t bytes, cudaStream_t stream)
      : Baseline("cuda_memcpy_same_bytes"), bytes_(bytes), src_(bytes), dst_(bytes) {
    QSB_CHECK_CUDA(cudaMemsetAsync(src_.get(), 0x5A, bytes_, stream));
  }
  void run(cudaStream_t s) override {
    QSB_CHECK_CUDA(cudaMemcpyAsync(dst_.get(), src_.get(), bytes_, cudaMemcpyDeviceToDevice, s));
  }

 private:
  size_t bytes_;
  DeviceBuffer src_, dst_;
};

}  // namespace

std::unique_ptr<Baseline> make_unavailable(std::string name, std::string reason) {
  return std::make_unique<UnavailableBaseline>(std::move(name), std::move(reason));
}

std::unique_ptr<Baseline> make_memcpy_same_bytes(size_t bytes, cudaStream_t stream) {
  return std::make_unique<MemcpySameBytes>(bytes, stream);
}

double baseline_rel_err(Baseline& b, const std::vector<int64_t>& tokens, const std::vector<int64_t>& channels,
                        cudaStream_t stream) {
  const GemmOperands* ops = b.operands();
  if (!ops) return NAN;
  std::vector<double> expect;
  if (!b.reference(tokens, channels, expect, stream)) return NAN;
  const int64_t M = ops->M, N = ops->N;
  QSB_CHECK_CUDA(cudaMemsetAsync(ops->y, 0xFF, static_cast<size_t>(2 * M * N), stream));  // bf16 NaN
  b.run(stream);
  const std::vector<uint8_t> rows = download_rows(ops->y, static_cast<size_t>(2 * N), tokens, stream);
  const auto T = static_cast<int64_t>(tokens.size()), C = static_cast<int64_t>(channels.size());
  std::vector<float> out(static_cast<size_t>(T * C));
  const auto* y16 = reinterpret_cast<const uint16_t*>(rows.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < C; ++j)
      out[static_cast<size_t>(t * C + j)] = bf16_decode(y16[static_cast<size_t>(t * N + channels[j])]);
  return ref::rel_frobenius_error(expect.data(), out.data(), T, C, C);
}

}  // namespace qsgemm::bench
