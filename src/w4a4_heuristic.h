// The pure heuristic of the W4A4 + low-rank family: problem shape + SM count -> configuration (a row
// of kW4A4Configs, src/kernels/sm90/w4a4/sm90_w4a4_configs.h). No device calls. Tested in
// tests/cpu/test_w4a4_validation.cpp (W4A4Heuristic.*).
#pragma once

#include <cstdint>

#include "kernels/sm90/w4a4/sm90_w4a4_configs.h"
#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

namespace w4a4_detail {
inline constexpr int kSquare = w4a4_named("128x128x128_w2x4");
inline constexpr int kNarrow = w4a4_named("64x128x128_w2x4");
inline constexpr int kSmall = w4a4_named("32x64x128_w1x4");
inline constexpr int kDecode8 = w4a4_named("decode_8x16_k8");
inline constexpr int kDecode8Ring = w4a4_named("decode_8x16_k8_ring");
inline constexpr int kDecode16 = w4a4_named("decode_16x16_k8");
inline constexpr int kDecode32 = w4a4_named("decode_32x32_k8");
inline constexpr int kWgmma = w4a4_named("128x128x128_wgmma_coop");
static_assert(kSquare >= 0 && kNarrow >= 0 && kSmall >= 0 && kDecode8 >= 0 && kDecode8Ring >= 0 && kDecode16 >= 0 &&
                  kDecode32 >= 0 &&
                  kWgmma >= 0,
              "the heuristic names rows of kW4A4Configs");
static_assert(kW4A4Configs[kWgmma].kernel == W4A4Kernel::kWgmma && kW4A4Configs[kDecode8].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode8Ring].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode16].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode32].kernel == W4A4Kernel::kDecode,
              "the prefill row is the wgmma kernel, the decode rows the decode kernel");
}  // namespace w4a4_detail

// L up to which a decode row is taken, and from which the wgmma kernel (e4m3 X1) is.
inline constexpr int64_t kW4A4DecodeMaxL = 128;
inline constexpr int64_t kW4A4WgmmaMinL = 176;
// 1..8 tokens take the 8-token ring (TMA boxes, resident CTAs) where the packed weight has at least
// this many bytes per SM, else the 8-token register stream, whose first loads start sooner.
inline constexpr int64_t kW4A4DecodeRingMinBytesPerSm = 90 * 1024;

// Y[L,D] = X1[L,D1]·W1ᵀ + X2·W2ᵀ over the whole table. Small L is a weight stream
// (bench/results/h200/tuning/tune_w4a4_decode_resident.txt, rank 0; fitted on seven layers of other
// models, 13-35 MB of packed weight, at L = 1, 8 (both groups), 24 and 32; checked on the bench's six
// layers):
//  * L <= 8: a packed weight of >= 90 KiB per SM (>= 12.2 MB on 132 SMs), either group: the 8-token
//    ring (13824x5120 at L = 1: 20.6 µs against 23.5 for the registers, group 128 18.7 / 23.4;
//    5120x5120, 97 KiB per SM: 12.3 / 14.1), else the register stream (the bench's 4096x4096, 63 KiB
//    per SM: 9.0 against 9.3 µs). At 124 KiB per SM (4096x8192, one block per CTA) the registers were
//    1-4 % ahead.
//  * L <= 16: the 16-token ring on 16 weight rows (fastest on all six layers at L = 12 and 16, e.g.
//    57344x8192 at L = 16: 103.9 µs against 118.9 on 32 rows; of the other layers, two with
//    D1 <= 5120 and >= 27648 rows run 3-8 % faster on 32 rows).
//  * L <= 128: the 32-token ring (several token blocks read the weight from DRAM once, then from
//    L2; at L = 24 and 32 faster than 16-token blocks on five of the seven fit layers, by up to 11 %,
//    and up to 12 % slower on the other two, 5120x5120 and 6144x8192).
// All of them read X1 packed INT4; 129..175 tokens the mma.sync 32x64 tile (packed); from 176 tokens
// the wgmma kernel (X1 e4m3 codes). Measured on the H200 (tuning/tune_w4a4_decode.txt): the 32-token
// row beats 32x64 from L = 48 to 128 on 4096x4096, 57344x8192 and 8192x28672 (at L = 128: 30 / 575 /
// 290 µs against 47 / 611 / 358, with the cp.async ring the TMA ring replaced). The wgmma kernel
// against 32x64 (tuning/tune_w4a4_band.txt, rank 64, group 64, fitted at L = 160 and 200 on four
// layers, none of them the bench's L): at L = 200 48.2 / 148.8 µs against 56.0 / 175.5 (4096x4096,
// 4096x14336), at L = 320 and 448 1.4-2.1x faster on every layer; at L = 160 32x64 is ahead on two
// of three layers by 3-5 % (48.8 against 51.4 µs on 4096x4096, 177.4 against 183.7 on 10240x8192)
// and behind on 28672x4096 (201.4 against 192.9). At group 128 that edge lies between the same two
// points (32x64 1.11-1.19x faster at L = 160, the wgmma kernel 1.07-1.19x at 200). L >= 0, D > 0,
// sm_count > 0, group 64 or 128 (the callers check).
int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group = 64);

// The same restricted to the rows that read X1 in dtype `x1` (what w4a4_linear runs with
// options.config == -1, so a caller's X1 staging always has a kernel):
//  * kE4M3: the wgmma row (the only one reading e4m3 codes), any L;
//  * kI4x2: L <= 128 a decode row, else the mma.sync 32x64 tile (the packed rows' bands above).
int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, DType x1, int group = 64);

}  // namespace qsgemm::kernels
