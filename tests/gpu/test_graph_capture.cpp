// Every GEMM plan can be captured into a CUDA graph (cudaStreamCaptureModeGlobal, as
// torch.cuda.graph uses) and its replay writes the same bits as the eager call: decode, stream-K,
// split-K, tail-launch and plain plans of both families, and the quantizers. A call during capture
// must not make a capture-unsupported CUDA call (cudaStreamGetDevice was one).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "qsgemm/qsgemm.h"

namespace {

using namespace qsgemm;
using test::DeviceBuffer;

// Runs fn eagerly into y, then captures it, replays the graph into a poisoned y and compares the
// first `bytes` bytes (the call's output) bit for bit.
void expect_graph_matches_eager(const char* what, DeviceBuffer<uint8_t>& y, size_t bytes,
                                const std::function<void(cudaStream_t)>& fn) {
  SCOPED_TRACE(what);
  cudaStream_t s;
  QSGEMM_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_NO_THROW(fn(s));
  QSGEMM_CUDA_OK(cudaStreamSynchronize(s));
  std::vector<uint8_t> eager = y.download();
  eager.resize(bytes);
  y.poison();
  QSGEMM_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_NO_THROW(fn(s));
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  EXPECT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  if (end == cudaSuccess) {
    cudaGraphExec_t exec = nullptr;
    QSGEMM_CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    for (int i = 0; i < 2; ++i) QSGEMM_CUDA_OK(cudaGraphLaunch(exec, s));
    QSGEMM_CUDA_OK(cudaStreamSynchronize(s));
    std::vector<uint8_t> replay = y.download();
    replay.resize(bytes);
    EXPECT_TRUE(replay == eager) << "graph replay differs from the eager call";
    cudaGraphExecDestroy(exec);
  }
  if (g) cudaGraphDestroy(g);
  (void)cudaGetLastError();
  cudaStreamDestroy(s);
}

std::vector<uint16_t> bf16_random(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  const std::vector<float> f = test::random_floats(n, rng, 2.0f);
  for (size_t i = 0; i < n; ++i) v[i] = bf16_encode(f[i]);
  return v;
}

TEST(GraphCapture, Sparse24AndBlockwisePlansReplayBitExact) {
  QSGEMM_REQUIRE_SM90();
  std::mt19937 rng(5);
  const int64_t N = 4096, K = 2048, Mmax = 300;
  DeviceBuffer<uint16_t> w16(N * K), x16(Mmax * K);
  w16.upload(bf16_random(N * K, rng));
  x16.upload(bf16_random(Mmax * K, rng));
  // Sparse weight and per-token activations.
  const Sparse24WeightBytes wb = sparse24_weight_bytes(N, K);
  DeviceBuffer<uint8_t> values(wb.values), meta(wb.meta), cws(sparse24_compress_workspace_bytes(N, K));
  DeviceBuffer<float> wscale(N);
  const SparseFp8Weight w{N, K, values.get(), meta.get(), wscale.get(), false};
  ASSERT_NO_THROW(sparse24_compress(MatrixView(w16.get(), DType::kBF16, N, K), w, {}, cws.get(), nullptr));
  DeviceBuffer<uint8_t> x8(Mmax * K), y(Mmax * N * 2);
  DeviceBuffer<float> sx(Mmax), sg(Mmax * (K / 128));
  ASSERT_NO_THROW(quantize_fp8_per_token(MatrixView(x16.get(), DType::kBF16, Mmax, K),
                                         MatrixView(x8.get(), DType::kE4M3, Mmax, K), sx.get(), false, nullptr));
  // Blockwise weight (128x128 blocks); 1x128 activation groups go into their own buffer.
  DeviceBuffer<uint8_t> wq(N * K), xg(Mmax * K);
  DeviceBuffer<float> swq((N / 128) * (K / 128));
  ASSERT_NO_THROW(quantize_fp8_weight(MatrixView(w16.get(), DType::kBF16, N, K), MatrixView(wq.get(), DType::kE4M3, N, K),
                                      swq.get(), ScaleGranularity::kBlock128x128, nullptr));
  QSGEMM_CUDA_OK(cudaDeviceSynchronize());
  DeviceBuffer<uint8_t> ws(64 << 20);

  for (int64_t M : {1, 16, 288, 300}) {
    for (bool with_ws : {false, true}) {
      Sparse24Options o;
      if (with_ws) {
        o.workspace = ws.get();
        o.workspace_bytes = ws.bytes();
      }
      const LinearPlan p = sparse24_plan(M, N, K, o);
      std::string what = "sparse24 M=" + std::to_string(M) + (with_ws ? " ws" : "") + " " +
                         sparse24_config(p.config).name() + (p.split_k > 1 ? " split" : "") +
                         (p.tail_config >= 0 ? " +tail" : "");
      expect_graph_matches_eager(what.c_str(), y, static_cast<size_t>(M * N * 2), [&](cudaStream_t s) {
        sparse24_linear(MatrixView(x8.get(), DType::kE4M3, M, K), ScaleView{sx.get(), ScaleGranularity::kPerRow, 0}, w, {},
                        MatrixView(y.get(), DType::kBF16, M, N), o, s);
      });
      BlockwiseOptions bo;
      if (with_ws) {
        bo.workspace = ws.get();
        bo.workspace_bytes = ws.bytes();
      }
      what = "blockwise M=" + std::to_string(M) + (with_ws ? " ws" : "");
      expect_graph_matches_eager(what.c_str(), y, static_cast<size_t>(M * N * 2), [&](cudaStream_t s) {
        quantize_fp8_per_token_group(MatrixView(x16.get(), DType::kBF16, M, K), MatrixView(xg.get(), DType::kE4M3, M, K),
                                     sg.get(), M, false, s);
        blockwise_linear(MatrixView(xg.get(), DType::kE4M3, M, K), ScaleView{sg.get(), ScaleGranularity::kGroup1x128, M},
                         MatrixView(wq.get(), DType::kE4M3, N, K), ScaleView{swq.get(), ScaleGranularity::kBlock128x128, 0},
                         {}, MatrixView(y.get(), DType::kBF16, M, N), bo, s);
      });
    }
  }
}

}  // namespace
