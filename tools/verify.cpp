// `qsgemm verify`: the self-check. On any machine it checks the CPU reference against itself on
// small problems (formats, 2:4 compression, each GEMM family); on an sm_90 GPU it then checks
// every GPU kernel against the CPU reference on the same quantized operands.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cli_common.h"
#include "qsgemm/blockwise.h"
#include "qsgemm/device.h"
#include "qsgemm/error.h"
#include "qsgemm/formats.h"
#include "qsgemm/quant.h"
#include "qsgemm/reference.h"
#include "qsgemm/sparse24.h"
#include "qsgemm/w4a4.h"

namespace qsgemm::cli {
namespace {

struct Tally {
  int passed = 0, failed = 0, skipped = 0;
  void check(const std::string& name, const std::function<std::string()>& f) {
    std::string detail;
    bool ok = false;
    try {
      detail = f();
      ok = detail.rfind("FAIL", 0) != 0;
      if (detail.rfind("SKIP", 0) == 0) {
        ++skipped;
        std::printf("SKIP  %-44s %s\n", name.c_str(), detail.c_str() + 4);
        return;
      }
    } catch (const std::exception& e) {
      detail = std::string("FAIL exception: ") + e.what();
    }
    (ok ? passed : failed)++;
    std::printf("%s  %-44s %s\n", ok ? "PASS" : "FAIL", name.c_str(), ok ? detail.c_str() : detail.c_str() + 4);
    std::fflush(stdout);
  }
};

std::string fmt(const char* f, double v) {
  char b[128];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::vector<float> randu(size_t n, std::mt19937& rng, float a) {
  std::uniform_real_distribution<float> d(-a, a);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// ---- CPU: the reference checked against itself ----------------------------------------------------
void cpu_checks(Tally& t) {
  t.check("fp8 e4m3 codes round-trip", [] {
    int bad = 0;
    for (int c = 0; c < 256; ++c)
      if ((c & 0x7F) != 0x7F) bad += fp8_e4m3_encode(fp8_e4m3_decode(static_cast<uint8_t>(c))) != c;
    return bad ? "FAIL " + std::to_string(bad) + " codes" : std::string("254 finite codes");
  });
  t.check("fp8 e4m3 saturation / NaN / ties", [] {
    const bool ok = fp8_e4m3_encode(1e9f) == 0x7E && fp8_e4m3_encode(-1e9f) == 0xFE &&
                    fp8_e4m3_encode(std::nanf("")) == 0x7F && fp8_e4m3_encode(1.0625f) == 0x38 &&
                    fp8_e4m3_encode(1.1875f) == 0x3A;
    return ok ? std::string("ok") : std::string("FAIL");
  });
  t.check("2:4 sparse GEMM == dense GEMM on decompressed", [] {
    std::mt19937 rng(11);
    const int64_t N = 72, K = 160, M = 9;
    const std::vector<float> w = randu(N * K, rng, 2.0f);
    ref::Sparse24Host c;
    if (!ref::sparse24_compress(w.data(), N, K, K, ref::PruneMode::kMagnitude, ref::WeightScale::kPerChannel, nullptr,
                                false, &c))
      return std::string("FAIL compress refused valid input");
    const std::vector<float> d = ref::sparse24_decompress(c);
    std::vector<uint8_t> x(M * K), wq(N * K);
    for (auto& v : x) v = fp8_e4m3_encode(std::uniform_real_distribution<float>(-4, 4)(rng));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) wq[n * K + k] = fp8_e4m3_encode(d[n * K + k] / c.scales[n]);
    std::vector<float> sx(M, 0.75f);
    std::vector<double> ys(M * N), yd(M * N);
    ref::gemm_sparse24_fp8(x.data(), K, M, c, sx.data(), false, nullptr, ys.data());
    ref::gemm_fp8_rowwise(x.data(), K, wq.data(), K, M, N, K, sx.data(), false, c.scales.data(), false, nullptr, yd.data());
    double worst = 0;
    for (int64_t i = 0; i < M * N; ++i) worst = std::max(worst, std::fabs(ys[i] - yd[i]) / (1 + std::fabs(yd[i])));
    return worst < 1e-9 ? fmt("max diff %.2e", worst) : fmt("FAIL max diff %.2e", worst);
  });
  t.check("blockwise GEMM with uniform scales == rowwise", [] {
    std::mt19937 rng(12);
    const int64_t M = 5, N = 8, K = 384;
    std::vector<uint8_t> x(M * K), w(N * K);
    for (auto& v : x) v = fp8_e4m3_encode(std::uniform_real_distribution<float>(-4, 4)(rng));
    for (auto& v : w) v = fp8_e4m3_encode(std::uniform_real_distribution<float>(-4, 4)(rng));
    std::vector<float> sx(3 * M), sw(3), sxr(M), swr(N, 0.5f);
    for (int64_t m = 0; m < M; ++m) sxr[m] = sx[m] = sx[M + m] = sx[2 * M + m] = 0.25f * (m + 1);
    sw.assign(3, 0.5f);
    std::vector<double> yb(M * N), yr(M * N);
    ref::gemm_fp8_blockwise(x.data(), K, w.data(), K, M, N, K, ScaleGranularity::kGroup1x128, sx.data(), M,
                            ScaleGranularity::kBlock128x128, sw.data(), nullptr, yb.data());
    ref::gemm_fp8_rowwise(x.data(), K, w.data(), K, M, N, K, sxr.data(), false, swr.data(), false, nullptr, yr.data());
    double worst = 0;
    for (int64_t i = 0; i < M * N; ++i) worst = std::max(worst, std::fabs(yb[i] - yr[i]) / (1 + std::fabs(yr[i])));
    return worst < 1e-12 ? fmt("max diff %.2e", worst) : fmt("FAIL max diff %.2e", worst);
  });
  t.check("W4A4 + low-rank == its definition", [] {
    std::mt19937 rng(13);
    const int64_t M = 3, N = 4, K = 128, R = 8;
    const int G = 64;
    const std::vector<float> xf = randu(M * K, rng, 3), wf = randu(N * K, rng, 3), x2 = randu(M * R, rng, 1),
                             w2 = randu(N * R, rng, 1);
    std::vector<uint8_t> xp(M * K / 2), wp(N * K / 2);
    std::vector<float> sx(M * 2), sw(N * 2);
    ref::quantize_int4_groups(xf.data(), M, K, K, G, xp.data(), sx.data());
    ref::quantize_int4_groups(wf.data(), N, K, K, G, wp.data(), sw.data());
    std::vector<double> y(M * N);
    ref::gemm_w4a4_lowrank(xp.data(), wp.data(), sx.data(), sw.data(), M, N, K, G, x2.data(), w2.data(), R, nullptr,
                           y.data());
    // Against the unquantized product: 4-bit error is large but bounded.
    double num = 0, den = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double e = 0;
        for (int64_t k = 0; k < K; ++k) e += static_cast<double>(xf[m * K + k]) * wf[n * K + k];
        for (int64_t r = 0; r < R; ++r) e += static_cast<double>(x2[m * R + r]) * w2[n * R + r];
        num += (y[m * N + n] - e) * (y[m * N + n] - e);
        den += e * e;
      }
    const double rel = std::sqrt(num / den);
    return rel < 0.3 ? fmt("rel err vs unquantized %.3f", rel) : fmt("FAIL rel err vs unquantized %.3f", rel);
  });
}

// ---- GPU: the kernels against the reference ---------------------------------------------------------
template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(size_t n) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  }
  ~Dev() { cudaFree(p); }
  void up(const std::vector<T>& h) { cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice); }
  std::vector<T> down(size_t n) const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

void gpu_checks(Tally& t) {
  t.check("GPU quantize_fp8_per_token_group == CPU", [] {
    std::mt19937 rng(21);
    const int64_t M = 67, K = 1040;
    std::vector<float> x = randu(M * K, rng, 5);
    std::vector<uint16_t> xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = bf16_decode(xb[i] = bf16_encode(x[i]));
    Dev<uint16_t> dx(x.size());
    Dev<uint8_t> dq(x.size());
    Dev<float> ds(9 * M);
    dx.up(xb);
    quantize_fp8_per_token_group(MatrixView(dx.p, DType::kBF16, M, K), MatrixView(dq.p, DType::kE4M3, M, K), ds.p, M,
                                 false, nullptr);
    if (cudaDeviceSynchronize() != cudaSuccess) return std::string("FAIL CUDA error");
    std::vector<uint8_t> q(M * K);
    std::vector<float> s(9 * M);
    ref::quantize_fp8_1x128(x.data(), M, K, K, q.data(), K, s.data(), M);
    const bool ok = dq.down(q.size()) == q && ds.down(s.size()) == s;
    return ok ? std::string("bit-identical") : std::string("FAIL codes or scales differ");
  });
  t.check("GPU sparse24 compress + linear vs CPU", [] {
    std::mt19937 rng(22);
    const int64_t N = 520, K = 1056;
    std::vector<float> w = randu(N * K, rng, 1);
    std::vector<uint16_t> wb(w.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = bf16_decode(wb[i] = bf16_encode(w[i]));
    ref::Sparse24Host host;
    ref::sparse24_compress(w.data(), N, K, K, ref::PruneMode::kMagnitude, ref::WeightScale::kPerChannel, nullptr,
                           false, &host);
    const Sparse24WeightBytes b = sparse24_weight_bytes(N, K);
    Dev<uint16_t> dw(w.size());
    Dev<uint8_t> vals(b.values), meta(b.meta), ws(sparse24_compress_workspace_bytes(N, K));
    Dev<float> sc(N);
    dw.up(wb);
    SparseFp8Weight sw{N, K, vals.p, meta.p, sc.p, false};
    sparse24_compress(MatrixView(dw.p, DType::kBF16, N, K), sw, {}, ws.p, nullptr);
    if (vals.down(b.values) != host.values || meta.down(b.meta) != host.meta || sc.down(N) != host.scales)
      return std::string("FAIL compressed weight differs from the CPU compressor");
    double worst = 0;
    for (int64_t M : {1, 16, 300}) {
      std::vector<float> xf = randu(M * K, rng, 3);
      std::vector<uint8_t> xq(M * K);
      std::vector<float> sx(M);
      ref::quantize_fp8_per_row(xf.data(), M, K, K, xq.data(), K, sx.data());
      Dev<uint8_t> dx(M * K);
      Dev<float> dsx(M), dy(M * N);
      dx.up(xq);
      dsx.up(sx);
      cudaMemset(dy.p, 0xFF, M * N * 4);
      sparse24_linear(MatrixView(dx.p, DType::kE4M3, M, K), ScaleView{dsx.p, ScaleGranularity::kPerRow, 0}, sw, {},
                      MatrixView(dy.p, DType::kF32, M, N), {}, nullptr);
      if (cudaDeviceSynchronize() != cudaSuccess) return std::string("FAIL CUDA error");
      std::vector<double> ref_y(M * N);
      ref::gemm_sparse24_fp8(xq.data(), K, M, host, sx.data(), false, nullptr, ref_y.data());
      const std::vector<float> y = dy.down(M * N);
      worst = std::max(worst, ref::rel_frobenius_error(ref_y.data(), y.data(), M, N, N));
    }
    return worst <= 5e-4 ? fmt("max rel err %.2e (fp32 out, M=1,16,300)", worst) : fmt("FAIL rel err %.2e", worst);
  });
  t.check("GPU blockwise 1x128 x 128x128 vs CPU", [] {
    std::mt19937 rng(23);
    const int64_t M = 33, N = 264, K = 640, G = 5;
    std::vector<float> xf = randu(M * K, rng, 3), wf = randu(N * K, rng, 1);
    std::vector<uint8_t> xq(M * K), wq(N * K);
    std::vector<float> sx(G * M), sw(3 * G);
    ref::quantize_fp8_1x128(xf.data(), M, K, K, xq.data(), K, sx.data(), M);
    ref::quantize_fp8_128x128(wf.data(), N, K, K, wq.data(), K, sw.data());
    Dev<uint8_t> dx(M * K), dw(N * K);
    Dev<float> dsx(sx.size()), dsw(sw.size()), dy(M * N);
    dx.up(xq);
    dw.up(wq);
    dsx.up(sx);
    dsw.up(sw);
    try {
      blockwise_linear(MatrixView(dx.p, DType::kE4M3, M, K), ScaleView{dsx.p, ScaleGranularity::kGroup1x128, M},
                       MatrixView(dw.p, DType::kE4M3, N, K), ScaleView{dsw.p, ScaleGranularity::kBlock128x128, 0}, {},
                       MatrixView(dy.p, DType::kF32, M, N), {}, nullptr);
    } catch (const Error& e) {
      if (e.code() == Status::kUnsupported) return std::string("SKIP ") + e.what();
      throw;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return std::string("FAIL CUDA error");
    std::vector<double> ref_y(M * N);
    ref::gemm_fp8_blockwise(xq.data(), K, wq.data(), K, M, N, K, ScaleGranularity::kGroup1x128, sx.data(), M,
                            ScaleGranularity::kBlock128x128, sw.data(), nullptr, ref_y.data());
    const double err = ref::rel_frobenius_error(ref_y.data(), dy.down(M * N).data(), M, N, N);
    return err <= 2e-4 ? fmt("rel err %.2e (fp32 out)", err) : fmt("FAIL rel err %.2e", err);
  });
  t.check("GPU W4A4 pack + quantize + fused GEMM vs CPU", [] {
    // The whole W4A4 + low-rank layer (include/qsgemm/w4a4.h): codes and scales bit-identical to the
    // reference quantizer, the GEMM within 2e-4 (fp32 out) of the float64 reference on those codes.
    std::mt19937 rng(26);
    const int64_t M = 37, N = 136, K = 576, R = 32;
    const int G = 64, ng = static_cast<int>(K / G);
    std::vector<float> xf = randu(M * K, rng, 3), wf = randu(N * K, rng, 1), l1 = randu(R * K, rng, 0.1f),
                       w2 = randu(N * R, rng, 0.1f);
    std::vector<uint16_t> xb(xf.size()), wb(wf.size()), l1b(l1.size()), w2b(w2.size());
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = bf16_decode(xb[i] = bf16_encode(xf[i]));
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_decode(wb[i] = bf16_encode(wf[i]));
    for (size_t i = 0; i < l1.size(); ++i) l1[i] = bf16_decode(l1b[i] = bf16_encode(l1[i]));
    for (size_t i = 0; i < w2.size(); ++i) w2[i] = bf16_decode(w2b[i] = bf16_encode(w2[i]));
    Dev<uint16_t> dx(xb.size()), dw(wb.size()), dl1(l1b.size()), dw2(w2b.size()), dx2(M * R);
    Dev<uint8_t> dx1(M * K), dw1(N * K / 2);  // X1 packed or e4m3 codes (the plan's staging)
    Dev<float> dsx(ng * M), dsw(N * ng), dy(M * N);
    DType staging = DType::kI4x2;
    dx.up(xb);
    dw.up(wb);
    dl1.up(l1b);
    dw2.up(w2b);
    try {
      // The heuristic's configuration and the staging it reads (e4m3 codes for the wgmma kernel).
      staging = w4a4_x1_dtype(w4a4_plan(M, N, K, static_cast<int>(R), W4A4Options{}));
      const MatrixView x1v = staging == DType::kE4M3 ? MatrixView(dx1.p, DType::kE4M3, M, K)
                                                     : MatrixView(dx1.p, DType::kI4x2, M, K / 2);
      w4a4_pack_weight(MatrixView(dw.p, DType::kBF16, N, K), G, MatrixView(dw1.p, DType::kI4x2, N, K / 2), dsw.p,
                       nullptr);
      w4a4_quantize_activations(MatrixView(dx.p, DType::kBF16, M, K), G, MatrixView(dl1.p, DType::kBF16, R, K), x1v,
                                dsx.p, M, MatrixView(dx2.p, DType::kBF16, M, R), nullptr);
      w4a4_linear(x1v, dsx.p, M, MatrixView(dw1.p, DType::kI4x2, N, K / 2),
                  dsw.p, G, MatrixView(dx2.p, DType::kBF16, M, R), MatrixView(dw2.p, DType::kBF16, N, R), {},
                  MatrixView(dy.p, DType::kF32, M, N), W4A4Options{}, nullptr);
    } catch (const Error& e) {
      if (e.code() == Status::kUnsupported) return std::string("SKIP ") + e.what();
      throw;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return std::string("FAIL CUDA error");
    std::vector<uint8_t> xq(M * K / 2), wq(N * K / 2);
    std::vector<float> sx(M * ng), sw(N * ng);
    ref::quantize_int4_groups(xf.data(), M, K, K, G, xq.data(), sx.data());
    ref::quantize_int4_groups(wf.data(), N, K, K, G, wq.data(), sw.data());
    std::vector<float> sx_mm(ng * M);
    for (int64_t m = 0; m < M; ++m)
      for (int g = 0; g < ng; ++g) sx_mm[g * M + m] = sx[m * ng + g];
    if (dw1.down(wq.size()) != wq || dsw.down(sw.size()) != sw) return std::string("FAIL packer differs from the CPU");
    std::vector<uint8_t> x1_ref = xq;  // the packed codes, or their e4m3 staging
    if (staging == DType::kE4M3) {
      x1_ref.resize(M * K);
      for (int64_t i = 0; i < M * K; ++i)
        x1_ref[i] = fp8_e4m3_encode(static_cast<float>(int4_unpack(xq[i / 2], static_cast<int>(i & 1))));
    }
    if (dx1.down(x1_ref.size()) != x1_ref || dsx.down(sx_mm.size()) != sx_mm)
      return std::string("FAIL quantizer differs from the CPU");
    const std::vector<uint16_t> x2b = dx2.down(M * R);
    std::vector<float> x2(x2b.size());
    for (size_t i = 0; i < x2.size(); ++i) x2[i] = bf16_decode(x2b[i]);
    std::vector<double> ref_y(M * N);
    ref::gemm_w4a4_lowrank(xq.data(), wq.data(), sx.data(), sw.data(), M, N, K, G, x2.data(), w2.data(), R, nullptr,
                           ref_y.data());
    const double err = ref::rel_frobenius_error(ref_y.data(), dy.down(M * N).data(), M, N, N);
    return err <= 2e-4 ? std::string("codes bit-identical (x1 ") + dtype_name(staging) + "), " +
                             fmt("rel err %.2e (fp32 out)", err)
                       : fmt("FAIL rel err %.2e", err);
  });
}

}  // namespace

int run_verify(int argc, char** argv) {
  if (has_flag(argc, argv, "--help")) {
    std::printf(
        "usage: qsgemm verify [--cpu-only]\n\n"
        "Checks the CPU reference on small problems; then, on an sm_90 GPU, each GPU kernel against it\n"
        "(same quantized operands, float64 reference). Prints one line per check and a summary line;\n"
        "the exit code is 0 only when no check failed.\n");
    return 0;
  }
  Tally t;
  std::printf("-- CPU reference self-check\n");
  cpu_checks(t);
  const DeviceInfo d = device_info();
  if (has_flag(argc, argv, "--cpu-only")) {
    std::printf("-- GPU checks not requested (--cpu-only)\n");
  } else if (!d.supports_kernels()) {
    std::printf("-- GPU checks skipped: qsgemm's kernels need an sm_90a GPU (H100/H200); %s\n",
                d.present ? ("this device is " + d.name + ", sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor)).c_str()
                          : ("no CUDA device: " + d.error).c_str());
  } else {
    std::printf("-- GPU kernels vs the CPU reference on %s\n", d.name.c_str());
    gpu_checks(t);
  }
  std::printf("verify: %d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
  return t.failed == 0 ? 0 : 1;
}

}  // namespace qsgemm::cli
