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
inline constexpr int kDecode = w4a4_named("32x32x128_w1x2_k4_s8");
inline constexpr int kWgmma = w4a4_named("128x128x128_wgmma_coop");
static_assert(kSquare >= 0 && kNarrow >= 0 && kSmall >= 0 && kDecode >= 0 && kWgmma >= 0,
              "the heuristic names rows of kW4A4Configs");
static_assert(kW4A4Configs[kWgmma].kernel == W4A4Kernel::kWgmma && kW4A4Configs[kDecode].kernel == W4A4Kernel::kMmaSync,
              "the prefill row is the wgmma kernel, the decode row the mma.sync one");
}  // namespace w4a4_detail

// L up to which the decode tile is taken.
inline constexpr int64_t kW4A4DecodeMaxL = 32;

// Y[L,D] = X1[L,D1]·W1ᵀ + X2·W2ᵀ over the whole table: decode sizes (L <= 32) take the mma.sync
// 32x32 8-stage tile with 4 K slices (the most weight bytes and warps in flight); larger L the
// mma.sync 32x64 tile. Both read X1 packed INT4. Measured at L = 2048, D = D1 = 4096
// (bench/results/h200/tuning/tune_w4a4.txt): 32x64 359 / 350 / 235 µs at rank 64 / rank 0 / group
// 128, the wgmma prefill kernel 396 / 378 / 248, 128x128 397 / 386 / 250, 64x128 427 / 412 / 287.
// The wgmma kernel (X1 int8 codes) is in the table and runs for an int8 X1, but is not preferred
// until it is the fastest. L >= 0, D > 0, sm_count > 0 (the callers check).
int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count);

// The same restricted to the rows that read X1 in dtype `x1` (what w4a4_linear runs with
// options.config == -1, so a caller's X1 staging always has a kernel):
//  * kI8: the wgmma row (the only one reading int8 codes), any L;
//  * kI4x2: the mma.sync rows: L <= 32 the decode tile, else the 32x64 tile (above).
int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, DType x1);

}  // namespace qsgemm::kernels
