// The W4A4 heuristic (src/w4a4_heuristic.h): the measured fastest row per staging and L band, and
// the cost model that picks the staging from 17 tokens.
#include "w4a4_heuristic.h"

#include <limits>

#include "qsgemm/formats.h"

namespace qsgemm::kernels {
namespace {

const W4A4CostModel& cost_model(int group) { return group == 128 ? kW4A4CostGroup128 : kW4A4CostGroup64; }

}  // namespace

bool w4a4_wgmma_clamp_pays(int64_t L) {
  if (L <= 128 || L % 128 == 0) return false;
  const int64_t tiles = ceil_div(L, int64_t{128});
  return static_cast<double>(tiles * 128 - L) / 128.0 >= kW4A4ClampMinOobPerTile * static_cast<double>(tiles);
}

double w4a4_decode32_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group) {
  const W4A4CostModel& m = cost_model(group);
  // double: no overflow, and the estimate is a real number of µs.
  const double rows_per_sm = static_cast<double>(D) / sm_count;
  return m.decode_fixed_us + static_cast<double>(ceil_div(L, 32)) * rows_per_sm *
                                 (m.decode_us_per_row_sm + static_cast<double>(D1) * m.decode_us_per_elem_sm);
}

double w4a4_wgmma_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group, int64_t token_tile) {
  const W4A4CostModel& m = cost_model(group);
  // The token tile the e4m3 staging runs (w4a4_choose_for_x1): a band tile up to kW4A4BandMaxL.
  const int band = w4a4_wgmma_band_config(L);
  const int64_t tile = token_tile > 0 ? token_tile : band >= 0 ? kW4A4Configs[band].tile_m : 128;
  const double share = kW4A4BandFixedShare + (1.0 - kW4A4BandFixedShare) * static_cast<double>(tile) / 128.0;
  const int64_t token_tiles = ceil_div(L, tile);
  const double waves = static_cast<double>(ceil_div(token_tiles * ceil_div(D, 128), sm_count));
  const bool clamped = tile == 128 && w4a4_wgmma_clamp_pays(L);
  const double oob = clamped ? 0.0 : static_cast<double>(token_tiles * tile - L) / 128.0;
  const double ktiles = static_cast<double>(ceil_div(D1, 128));
  return m.wgmma_fixed_us +
         waves * (m.wgmma_wave_us + ktiles * (m.wgmma_ktile_us * share + m.wgmma_ktile_oob_us * oob));
}

double w4a4_small_cost_us(int64_t L, int64_t D, int64_t D1, int sm_count, int group) {
  const W4A4CostModel& m = cost_model(group);
  if (!m.small_candidate) return std::numeric_limits<double>::infinity();
  const int64_t ctas = ceil_div(L, 32) * ceil_div(D, 64);
  const double waves = static_cast<double>(ceil_div(ctas, 4 * static_cast<int64_t>(sm_count)));
  return m.small_fixed_us + static_cast<double>(ctas) * static_cast<double>(D1) / sm_count * m.small_us_per_cta_k +
         waves * static_cast<double>(D1) * m.small_us_per_wave_k;
}

namespace {

// The packed-X1 candidate the model prefers from 17 tokens, and its estimate.
struct PackedPick {
  int config;
  double cost_us;
};
PackedPick packed_pick(int64_t L, int64_t D, int64_t D1, int sm_count, int group) {
  const double decode = w4a4_decode32_cost_us(L, D, D1, sm_count, group);
  const double small = w4a4_small_cost_us(L, D, D1, sm_count, group);
  return small < decode ? PackedPick{w4a4_detail::kSmall, small} : PackedPick{w4a4_detail::kDecode32, decode};
}

}  // namespace

bool w4a4_prefers_e4m3(int64_t L, int64_t D, int64_t D1, int sm_count, int group) {
  if (L > kW4A4ModelMaxL) return true;
  if (L <= 16) return false;
  return w4a4_wgmma_cost_us(L, D, D1, sm_count, group) < packed_pick(L, D, D1, sm_count, group).cost_us;
}

int w4a4_wgmma_band_config(int64_t L) {
  for (int i = 0; i < 4; ++i)
    if (L <= kW4A4BandTiles[i]) return w4a4_detail::kWgmmaBand[i];
  return -1;
}

int w4a4_choose_for_x1(int64_t L, int64_t D, int64_t D1, int /*rank*/, int sm_count, DType x1, int group) {
  if (x1 == DType::kE4M3) {
    if (L <= kW4A4BandMaxL) return w4a4_wgmma_band_config(L);
    return w4a4_wgmma_clamp_pays(L) ? w4a4_detail::kWgmmaClamped : w4a4_detail::kWgmma;
  }
  if (L <= 8) {
    // D · D1 / 2 packed bytes against the per-SM threshold (double: no overflow at any valid shape).
    const double bytes_per_sm = static_cast<double>(D) * static_cast<double>(D1) / 2.0 / sm_count;
    return bytes_per_sm >= static_cast<double>(kW4A4DecodeRingMinBytesPerSm) ? w4a4_detail::kDecode8Ring
                                                                              : w4a4_detail::kDecode8;
  }
  if (L <= 16) return w4a4_detail::kDecode16;
  if (L > kW4A4ModelMaxL) return w4a4_detail::kSmall;
  // 33..48 tokens: three 16-token blocks where the model keeps the decode row, at either group.
  const int packed = packed_pick(L, D, D1, sm_count, group).config;
  return packed == w4a4_detail::kDecode32 && L >= 33 && L <= 48 ? w4a4_detail::kDecode16 : packed;
}

int w4a4_choose(int64_t L, int64_t D, int64_t D1, int rank, int sm_count, int group) {
  const DType x1 = w4a4_prefers_e4m3(L, D, D1, sm_count, group) ? DType::kE4M3 : DType::kI4x2;
  return w4a4_choose_for_x1(L, D, D1, rank, sm_count, x1, group);
}

}  // namespace qsgemm::kernels
