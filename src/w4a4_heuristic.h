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
inline constexpr int kWgmmaClamped = w4a4_named("128x128x128_wgmma_coop_clamped");
inline constexpr int kWgmmaBand[] = {w4a4_named("64x128x128_wgmma_coop"), w4a4_named("80x128x128_wgmma_coop"),
                                     w4a4_named("96x128x128_wgmma_coop"), w4a4_named("112x128x128_wgmma_coop")};
constexpr bool band_rows_named() {
  for (int i = 0; i < 4; ++i)
    if (kWgmmaBand[i] < 0 || kW4A4Configs[kWgmmaBand[i]].kernel != W4A4Kernel::kWgmma ||
        kW4A4Configs[kWgmmaBand[i]].tile_m != kW4A4BandTiles[i] || kW4A4Configs[kWgmmaBand[i]].clamped)
      return false;
  return true;
}
static_assert(band_rows_named(), "kWgmmaBand names the band rows of kW4A4BandTiles, narrowest first");
static_assert(kSquare >= 0 && kNarrow >= 0 && kSmall >= 0 && kDecode8 >= 0 && kDecode8Ring >= 0 && kDecode16 >= 0 &&
                  kDecode32 >= 0 && kWgmma >= 0 && kWgmmaClamped >= 0,
              "the heuristic names rows of kW4A4Configs");
static_assert(kW4A4Configs[kWgmma].kernel == W4A4Kernel::kWgmma && !kW4A4Configs[kWgmma].clamped &&
                  kW4A4Configs[kWgmmaClamped].kernel == W4A4Kernel::kWgmma && kW4A4Configs[kWgmmaClamped].clamped &&
                  kW4A4Configs[kDecode8].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode8Ring].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode16].kernel == W4A4Kernel::kDecode &&
                  kW4A4Configs[kDecode32].kernel == W4A4Kernel::kDecode,
              "the prefill rows are the wgmma kernel, the decode rows the decode kernel");
}  // namespace w4a4_detail

// The wgmma kernel's last token tile clamped inside L (row 128x128x128_wgmma_coop_clamped) where it
// pays. A token tile that runs past L costs ~0.56 · oob of a whole tile more (oob: the fraction of it
// past L; the bench's six layers at L = 129..300, group 64, bench/results/h200/tuning/tune_w4a4_clamp.txt);
// the clamped kernel costs 1.1-2.3 % more on every tile. So it runs where L > 128 leaves a partial
// last tile and oob / token tiles >= kW4A4ClampMinOobPerTile (129..248 tokens, 257..372, ...,
// 897..993; not 1000 or 3000).
inline constexpr double kW4A4ClampMinOobPerTile = 0.03;
bool w4a4_wgmma_clamp_pays(int64_t L);

// The band rows: e4m3 X1 at L <= kW4A4BandMaxL runs the narrowest band tile that holds L (64, 80, 96
// or 112 tokens; 64 up to 64 tokens), so that from 49 tokens the one token tile reads at most 15
// rows past L. The 128-token tile reads up to 127 there, a TMA box's rows past the tensor each costing more than a row
// inside it (a 24-token tile at group 64 took 1.2x a full one; 80 tokens on the bench's gate_up layers
// 1.05-1.12x the time of 128 tokens, w4a4.json); nothing can be clamped below 128 tokens. 113..128
// tokens keep the 128-token tile (at most 15 rows past L).
inline constexpr int64_t kW4A4BandMaxL = 112;
// A band tile of b rows takes kW4A4BandFixedShare + (1 - it) · b/128 of the 128-token tile's time per
// K tile: the weight's 128 rows are streamed and widened to e4m3 whatever b is, the MMA's rows scale
// with b (bench/results/h100/tuning/tune_w4a4_band_tiles.jsonl, an H100: each band tile at its own
// width took 0.80-0.87 (64), 0.85-0.90 (80), 0.91-0.93 (96), 0.98-1.00 (112) of the 128-token tile's
// time at 128 tokens on three layers of other models than the bench's, both groups).
inline constexpr double kW4A4BandFixedShare = 0.6;
static_assert(kW4A4BandMaxL == kW4A4BandTiles[3], "the widest band tile");
// The band row for L tokens; -1 above kW4A4BandMaxL.
int w4a4_wgmma_band_config(int64_t L);

// 1..8 tokens take the 8-token ring (TMA boxes, resident CTAs) where the packed weight has at least
// this many bytes per SM, else the 8-token register stream, whose first loads start sooner.
inline constexpr int64_t kW4A4DecodeRingMinBytesPerSm = 90 * 1024;
// The cost model decides up to this many tokens (8 decode blocks; fitted up to 6); above, the wgmma
// kernel at every shape, and for packed X1 the mma.sync 32x64 tile.
inline constexpr int64_t kW4A4ModelMaxL = 256;

// From 17 tokens the choice between the 32-token decode row (packed X1) and the wgmma kernel (e4m3
// X1), at group 128 also the mma.sync 32x64 tile (packed X1), is a cost model of each, in µs on the
// H200, fitted per group on 8 layers of other models at L = 24..175 (bench/results/h200/tuning/
// tune_w4a4_band_model.txt: rank 64; group 64: 2.8 % RMS for the wgmma kernel, 4.5 % for the decode
// row; group 128: 2.0 / 5.6 / 6.5 % for the wgmma kernel, the decode row and the tile):
//  * the decode row is instruction-bound: every 32-token block streams the whole weight through the
//    SMs, so decode_fixed_us + ceil(L/32) · D/sm_count · (decode_us_per_row_sm + D1 ·
//    decode_us_per_elem_sm); the per-row term (each block's rows end in a reduction, a promotion and
//    a store) makes a long row cheaper per element (without it: 6.5 / 8.1 % RMS, and 13-20 % too
//    high on the bench's layers of D1 >= 8192, tune_w4a4_clamp.txt);
//  * the wgmma kernel runs b x 128 work tiles (b the token tile it runs: the band tile up to
//    kW4A4BandMaxL tokens, else 128) in waves of one per SM (persistent, no K split, so a layer of few
//    128-row tiles leaves SMs idle): wgmma_fixed_us + waves · (wgmma_wave_us + ceil(D1/128) ·
//    (wgmma_ktile_us · share(b) + wgmma_ktile_oob_us · oob)), share(b) the band tile's part of a
//    128-token tile's K tile (kW4A4BandFixedShare), oob the rows of the last token tile past L over
//    128 (a TMA box's rows past the tensor cost more than rows inside it: at group 64 a 24-token
//    128-row tile takes 1.2x a full one), 0 where the clamped row runs (w4a4_wgmma_clamp_pays);
//  * the 32x64 tile (group 128 only: at group 64 it was never the fastest of the three), c = its
//    ceil(L/32)·ceil(D/64) CTAs, four per SM: small_fixed_us + c·D1/sm_count · small_us_per_cta_k +
//    ceil(c / (4·sm_count)) · D1 · small_us_per_wave_k.
struct W4A4CostModel {
  double decode_fixed_us, decode_us_per_elem_sm, decode_us_per_row_sm;
  double wgmma_fixed_us, wgmma_wave_us, wgmma_ktile_us, wgmma_ktile_oob_us;
  bool small_candidate;
  double small_fixed_us, small_us_per_cta_k, small_us_per_wave_k;
};
inline constexpr W4A4CostModel kW4A4CostGroup64{12.06, 3.34e-5, 2.83e-2, 6.16, 5.08, 1.019, 0.317,
                                                false, 0.0,     0.0,     0.0};
inline constexpr W4A4CostModel kW4A4CostGroup128{13.21, 2.79e-5, 3.80e-2, 4.375, 5.71, 0.751, 0.0456,
                                                 true,  8.097,   1.0724e-3, 2.502e-3};
// The model's estimates (group 64 or 128; any other group uses group 64's constants).
double w4a4_decode32_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group);
// token_tile: the wgmma kernel's token tile (64, 80, 96, 112 or 128); 0: the one the e4m3 staging runs.
double w4a4_wgmma_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group, int64_t token_tile = 0);
// The 32x64 tile's; +infinity where it is not a candidate (group 64).
double w4a4_small_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group);
// Whether the heuristic stages X1 as e4m3 codes for the wgmma kernel: L > kW4A4ModelMaxL, or L > 16
// and the model's wgmma estimate below those of the packed-X1 candidates. python/qsgemm/_ops_w4a4.py
// (w4a4_x1_e4m3) mirrors it.
bool w4a4_prefers_e4m3(int64_t L, int64_t D, int64_t D1, int sm_count, int group);

// Y[L,D] = X1[L,D1]·W1ᵀ + X2·W2ᵀ over the whole table: w4a4_choose_for_x1 in the staging
// w4a4_prefers_e4m3 picks. Small L is a weight stream (bench/results/h200/tuning/
// tune_w4a4_decode_resident.txt, rank 0; fitted on seven layers of other models, 13-35 MB of packed
// weight, at L = 1, 8 (both groups), 24 and 32; checked on the bench's six layers):
//  * L <= 8: a packed weight of >= 90 KiB per SM (>= 12.2 MB on 132 SMs), either group: the 8-token
//    ring (13824x5120 at L = 1: 20.6 µs against 23.5 for the registers, group 128 18.7 / 23.4;
//    5120x5120, 97 KiB per SM: 12.3 / 14.1), else the register stream (the bench's 4096x4096, 63 KiB
//    per SM: 9.0 against 9.3 µs). At 124 KiB per SM (4096x8192, one block per CTA) the registers were
//    1-4 % ahead.
//  * L <= 16: the 16-token ring on 16 weight rows (fastest on all six layers at L = 12 and 16, e.g.
//    57344x8192 at L = 16: 103.9 µs against 118.9 on 32 rows; of the other layers, two with
//    D1 <= 5120 and >= 27648 rows run 3-8 % faster on 32 rows).
//  * 33..48 tokens where the model keeps the decode row: the 16-token ring again, three blocks of 16
//    against two of 32 (tune_w4a4_band_model.txt, group 64: 0.85-1.00x the 32-token row's time on all
//    8 fit layers at L = 40, 48; group 128 on an H100, bench/results/h100/tuning/tune_w4a4_band64.jsonl:
//    0.75x on 5120x13824 at L = 36..48; on 18944x3584 the model's 32x64 tile, faster still, stays).
//  * Else, where the model keeps packed X1: the 32-token ring (several token blocks read the weight
//    from DRAM once, then from L2; at L = 24 and 32 faster than 16-token blocks on five of the seven
//    fit layers, by up to 11 %, and up to 12 % slower on the other two); at group 128 the 32x64 tile
//    where the model prefers it. At group 64 the ring beat the tile at L = 144..175 on all 8 fit
//    layers (1.0-1.5x); at group 128 the tile was 1.1-1.4x faster than the ring from 24 tokens on the
//    layers of >= 13824 rows.
//  * The wgmma kernel wherever the model says so. On the fit layers at group 64 (L = 24..175; 72fbba6's
//    model and kernel, before the clamped row and the decode row's per-row term): at
//    80-128 and 175 tokens on 13824x5120, 14336x4096 and 27648x5120 (108-216 work tiles of 128 rows;
//    0.53-0.58x the decode row's time at L = 112..128), at 112, 128, 175 on 18944x3584, from 80 on
//    59136x8192, at 175 on 6144x4096, never on 3584x18944 and 5120x13824 (28 and 40 tiles: 1.1-6x
//    the decode row's time). The picks: 0.2 % slower than the fastest kernel timed, geomean, 7 % at
//    worst (88 points); at group 128 1.2 %, 26 % at worst (40 points; the worst where three 16-token
//    blocks, not a candidate there, were fastest). Now, on the bench's six layers at L = 144..240 (no
//    fit points, tune_w4a4_clamp.txt): 0.4 % geomean, 6.4 % at worst at group 64; 0.3 % / 7 % at 128.
// Packed X1 above 256 tokens: the mma.sync 32x64 tile. L >= 0, D > 0, sm_count > 0, group 64 or 128
// (the callers check).
int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group = 64);

// The same restricted to the rows that read X1 in dtype `x1` (what w4a4_linear runs with
// options.config == -1, so a caller's X1 staging always has a kernel):
//  * kE4M3: a wgmma row (the only ones reading e4m3 codes), any L: up to kW4A4BandMaxL tokens the
//    band row (w4a4_wgmma_band_config), else the 128-token row, clamped where w4a4_wgmma_clamp_pays;
//  * kI4x2: up to kW4A4ModelMaxL tokens the rows above with the model's packed-X1 pick from 17 tokens
//    (the decode row, at group 128 the 32x64 tile where cheaper), else the mma.sync 32x64 tile.
int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, DType x1, int group = 64);

}  // namespace qsgemm::kernels
