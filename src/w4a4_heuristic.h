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
inline constexpr int kDecode16 = w4a4_named("decode_16x16_k8");
inline constexpr int kDecode16Tall = w4a4_named("decode_16x32_k8");
inline constexpr int kDecode32 = w4a4_named("decode_32x32_k8");
inline constexpr int kWgmma = w4a4_named("128x128x128_wgmma_coop");
static_assert(kSquare >= 0 && kNarrow >= 0 && kSmall >= 0 && kDecode8 >= 0 && kDecode16 >= 0 && kDecode16Tall >= 0 &&
                  kDecode32 >= 0 &&
                  kWgmma >= 0,
              "the heuristic names rows of kW4A4Configs");
static_assert(kW4A4Configs[kWgmma].kernel == W4A4Kernel::kWgmma && kW4A4Configs[kDecode8].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode16].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode16Tall].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode32].kernel == W4A4Kernel::kDecode,
              "the prefill row is the wgmma kernel, the decode rows the decode kernel");
}  // namespace w4a4_detail

// L up to which a decode row is taken, and from which the wgmma kernel (e4m3 X1) is.
inline constexpr int64_t kW4A4DecodeMaxL = 128;
inline constexpr int64_t kW4A4WgmmaMinL = 176;
// 9..16 tokens take the 16-token row on 32 weight rows where the weight has at least this many
// 32-row blocks per SM (two waves of two CTAs), else the one on 16 rows.
inline constexpr int64_t kW4A4Decode16TallMinBlocksPerSm = 4;

// Y[L,D] = X1[L,D1]·W1ᵀ + X2·W2ᵀ over the whole table. Small L is a weight stream: L <= 8 takes the
// 8-token decode row, L <= 16 a 16-token one (on 32 weight rows where D / 32 >= 4 · sm_count: its
// X1 fragments and scales serve twice the rows, and enough CTAs remain; tuning/tune_w4a4_decode_rows.txt,
// L = 12 and 16, rank 0, group 64: 57344x8192 151.1 -> 132.5 µs, 28672x4096 45.0 -> 36.9, on 10240
// and fewer rows a tie or 3-4 % slower), L <= 128 the 32-token one (several token blocks
// read the weight from DRAM once, then from L2), all reading X1 packed INT4; 129..175 tokens the
// mma.sync 32x64 tile (packed); from 176 tokens the wgmma kernel (X1 e4m3 codes). Measured on the
// H200 (bench/results/h200/tuning/tune_w4a4_decode.txt; rank 0, group 64): at L = 1 on 57344x8192
// the 8-token row takes 102 µs against 170 µs for 32x64; the 32-token row beats 32x64 from L = 48
// to 128 on 4096x4096, 57344x8192 and 8192x28672 (at L = 128: 30 / 575 / 290 µs against 47 / 611 /
// 358). The wgmma kernel against 32x64 (tuning/tune_w4a4_band.txt, rank 64, group 64, fitted at
// L = 160 and 200 on four layers, none of them the bench's L): at L = 200 48.2 / 148.8 µs against
// 56.0 / 175.5 (4096x4096, 4096x14336), at L = 320 and 448 1.4-2.1x faster on every layer; at
// L = 160 32x64 is ahead on two of three layers by 3-5 % (48.8 against 51.4 µs on 4096x4096,
// 177.4 against 183.7 on 10240x8192) and behind on 28672x4096 (201.4 against 192.9). (The band
// from 512 came from an earlier wgmma kernel, 71.9 against 56.2 µs at L = 256; its K loop has
// since been cut from 639 to 544 instructions per warp and K tile.) The group is not an input of
// the plan: at group 128 the edge lies between the same two points (32x64 1.11-1.19x faster at
// L = 160, the wgmma kernel 1.07-1.19x at 200). L >= 0, D > 0, sm_count > 0 (the callers check).
int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count);

// The same restricted to the rows that read X1 in dtype `x1` (what w4a4_linear runs with
// options.config == -1, so a caller's X1 staging always has a kernel):
//  * kE4M3: the wgmma row (the only one reading e4m3 codes), any L;
//  * kI4x2: L <= 128 a decode row, else the mma.sync 32x64 tile (the packed rows' bands above).
int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, DType x1);

}  // namespace qsgemm::kernels
