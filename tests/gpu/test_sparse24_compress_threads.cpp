// sparse24_compress from several host threads at once, each on its own stream with its own shape:
// the kernels' shared-memory attributes are set once per device (not per call, where one thread's
// limit could replace another's between its set and its launch), and every result is still
// bit-identical to the CPU compressor.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/error.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"

namespace {

using namespace qsgemm;
using namespace qsgemm::test;

struct Job {
  DType dtype;
  int64_t N, K;
  bool per_tensor;
};

// One thread's work: `rounds` compressions of its own shape on its own stream, each checked.
// Returns an empty string or the first mismatch.
std::string run_job(const Job& j, int rounds, unsigned seed) {
  std::mt19937 rng(seed);
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return "cudaStreamCreate failed";
  std::string err;
  for (int r = 0; r < rounds && err.empty(); ++r) {
    std::vector<float> dense = random_floats(static_cast<size_t>(j.N * j.K), rng, 3.0f);
    std::vector<uint8_t> bytes;
    if (j.dtype == DType::kF32) {
      bytes.resize(dense.size() * 4);
      std::memcpy(bytes.data(), dense.data(), bytes.size());
    } else {
      const std::vector<uint16_t> bits = j.dtype == DType::kBF16 ? to_bf16(dense) : to_fp16(dense);
      bytes.resize(bits.size() * 2);
      std::memcpy(bytes.data(), bits.data(), bytes.size());
    }
    const Sparse24WeightBytes b = sparse24_weight_bytes(j.N, j.K, j.per_tensor);
    void *src = nullptr, *values = nullptr, *meta = nullptr, *scales = nullptr, *ws = nullptr;
    const size_t ws_bytes = sparse24_compress_workspace_bytes(j.N, j.K);
    if (cudaMalloc(&src, bytes.size()) != cudaSuccess || cudaMalloc(&values, b.values) != cudaSuccess ||
        cudaMalloc(&meta, b.meta) != cudaSuccess || cudaMalloc(&scales, b.scales) != cudaSuccess ||
        cudaMalloc(&ws, ws_bytes) != cudaSuccess) {
      err = "cudaMalloc failed";
    } else {
      cudaMemcpyAsync(src, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream);
      Sparse24CompressOptions opt;
      opt.scale = j.per_tensor ? Sparse24Scale::kPerTensor : Sparse24Scale::kPerChannel;
      const SparseFp8Weight v{j.N, j.K, static_cast<uint8_t*>(values), static_cast<uint8_t*>(meta),
                              static_cast<float*>(scales), j.per_tensor};
      try {
        sparse24_compress(MatrixView(src, j.dtype, j.N, j.K), v, opt, ws, stream);  // synchronizes `stream`
      } catch (const Error& e) {
        err = e.what();
      }
      if (err.empty()) {
        ref::Sparse24Host host;
        ref::sparse24_compress(dense.data(), j.N, j.K, j.K, ref::PruneMode::kMagnitude,
                               j.per_tensor ? ref::WeightScale::kPerTensor : ref::WeightScale::kPerChannel, nullptr,
                               j.per_tensor, &host);
        std::vector<uint8_t> got_v(b.values), got_m(b.meta);
        std::vector<float> got_s(b.scales / 4);
        cudaMemcpy(got_v.data(), values, b.values, cudaMemcpyDeviceToHost);
        cudaMemcpy(got_m.data(), meta, b.meta, cudaMemcpyDeviceToHost);
        cudaMemcpy(got_s.data(), scales, b.scales, cudaMemcpyDeviceToHost);
        if (got_v != host.values) err = "values differ";
        else if (got_m != host.meta) err = "metadata differs";
        else if (got_s != host.scales) err = "scales differ";
      }
    }
    for (void* p : {src, values, meta, scales, ws})
      if (p) cudaFree(p);
  }
  cudaStreamDestroy(stream);
  return err;
}

TEST(Sparse24CompressThreads, DifferentShapesConcurrently) {
  QSGEMM_REQUIRE_SM90();
  // Shapes whose fast-path plans differ (chunks per thread, block size, ring depth: each a different
  // kernel or a different dynamic shared-memory size), per-channel and per-tensor, all three dtypes,
  // plus rows long enough for the two-pass fallback.
  const std::vector<Job> jobs = {
      {DType::kBF16, 64, 256, false},   {DType::kBF16, 128, 4096, false}, {DType::kBF16, 72, 16384, true},
      {DType::kF16, 256, 1024, false},  {DType::kF16, 40, 8192, true},    {DType::kF32, 64, 2048, false},
      {DType::kF32, 16, 16384, false},  {DType::kF32, 8, 33024, true},    {DType::kBF16, 8, 65536, false},
      {DType::kBF16, 512, 576, true},
  };
  constexpr int kRounds = 4;
  std::vector<std::string> errors(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i)
    threads.emplace_back([&, i] { errors[i] = run_job(jobs[i], kRounds, 100 + static_cast<unsigned>(i)); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i)
    EXPECT_EQ(errors[i], "") << dtype_name(jobs[i].dtype) << " N=" << jobs[i].N << " K=" << jobs[i].K
                             << " per_tensor=" << jobs[i].per_tensor;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
