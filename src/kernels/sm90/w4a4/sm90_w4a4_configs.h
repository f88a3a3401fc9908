// The one table of W4A4 + low-rank kernel configurations and the launch arguments shared by the host
// code (src/w4a4.cpp) and the kernels (sm90_w4a4_gemm.cuh). Host-only: no device code. The heuristic
// that picks a row is src/w4a4_heuristic.{h,cpp}.
//
// Coordinates: Y[L,D] = X1[L,D1]·W1[D,D1]ᵀ with X1 as the MMA's A operand (row-major) and W1 as B
// (K-major), Y row-major; no operand swap.
//
// Why these tiles:
//  * tile_k is 128 INT4 values (64 bytes per row) in every configuration: one K tile holds one
//    group of 128 or two groups of 64 (docs/formats.md §5), so each group's integer sum is promoted
//    at a tile or half-tile boundary.
//  * 128x128 (8 warps of 64x32) is the general tile; 64x128 (8 warps of 32x32) doubles the CTA count
//    where 128-row tiles leave SMs idle; 32x64 (4 warps of 32x16) is the fastest mma.sync tile at
//    prefill sizes.
//  * The decode rows (kDecode, sm90_w4a4_decode.cu) are for small L (the heuristic's cost model), where
//    the weight stream is the whole cost: the weight is the MMA's A operand (m16 tiles of output
//    channels, tile_n = 16 or 32), the tokens the n8 columns (tile_m = 8, 16 or 32 of them), and the
//    eight warps of a CTA split K (k_slices = 8): 8 tokens stream through registers or a per-warp
//    ring of TMA boxes, 16 and 32 tokens through the ring (16 tokens on 16 or 32 weight rows);
//    ring_sw is a ring stage's bytes per row.
//  * k_slices: warps splitting K (sm90_w4a4_gemm.cuh: each K tile's k32 steps; the decode kernel:
//    the groups); their partial float32 tiles are added in shared memory at the end, in slice order.
//  * stages: the cp.async ring depth (all in static shared memory, <= 48 KiB); 0 where the kernel
//    has none (decode) or CUTLASS sizes it (wgmma).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "qsgemm/tensor.h"

namespace qsgemm::kernels {

// Which kernel a row runs, and so which X1 staging it reads (docs/formats.md §5).
enum class W4A4Kernel : uint8_t {
  kMmaSync,  // sm90_w4a4_gemm.cuh: mma.sync, X1 packed INT4 (DType::kI4x2 [L][D1/2])
  kWgmma,    // sm90_w4a4_wgmma.cuh: CUTLASS TMA + wgmma, X1 e4m3 codes (DType::kE4M3 [L][D1])
  kDecode,   // sm90_w4a4_decode.cu: mma.sync with the weight as A, split K, X1 packed INT4
};

struct W4A4Config {
  const char* label;  // the public name (w4a4_config_name, the CLI's --configs)
  int tile_m, tile_n;  // along L (tokens) and D (output channels), whatever the kernel's GEMM roles
  int warps_m, warps_n;
  int k_slices;  // warps that split each K tile's four k32 steps per output sub-tile (1: none)
  int stages;    // kWgmma: 0 = as many as shared memory holds (CUTLASS's carve-out)
  W4A4Kernel kernel = W4A4Kernel::kMmaSync;
  // kDecode rows: the bytes of every weight row and token one ring stage holds (sm90_w4a4_decode.cu);
  // 0: the 8-token register stream, which has no ring.
  int ring_sw = 0;
  // kWgmma rows: the last token tile is clamped inside L (sm90_w4a4_wgmma.cuh, clamped_token_column.cuh).
  bool clamped = false;
  static constexpr int tile_k = 128;  // INT4 values per K tile (64 bytes of a packed row)
  int threads() const { return 32 * warps_m * warps_n * k_slices; }
  std::string name() const { return label; }
  // The dtype of the X1 operand this row reads: kI4x2 (packed) or kE4M3 (one code per byte, as e4m3).
  DType x1_dtype() const { return kernel == W4A4Kernel::kWgmma ? DType::kE4M3 : DType::kI4x2; }
};

// Rows 0-2: the mma.sync kernel. Row 3: the wgmma kernel (sm90_w4a4_wgmma.cuh): CUTLASS's
// mixed-input collective, warp-specialized cooperative (two consumer warp groups of 64 D rows each,
// one TMA producer warp), persistent; the INT4 weight is wgmma's A operand (widened to e4m3 in
// registers), X1 the e4m3 B operand. Its tile is 128 (L) x 128 (D) x 128 (K).
// Rows 4-6: the decode kernel, 8 / 16 / 32 tokens per CTA (any L runs: more CTAs along L); row 7
// (appended): 16 tokens on 32 weight rows; row 8 (appended): 8 tokens through the ring. Row 9
// (appended): row 3 with its last token tile clamped inside L (computing tokens [L - 128, L) when L
// leaves a partial tile): no rows past L, but 1-2 % slower on whole tiles (w4a4_wgmma_clamp_pays).
// Rows 10-13 (appended): the band tiles, row 3 on 64, 80, 96 and 112 tokens for L <= 128 (one token
// tile of L rounded up to 16 rows instead of 128: w4a4_wgmma_band_tile); never clamped (one tile).
inline constexpr W4A4Config kW4A4Configs[] = {
    {"128x128x128_w2x4", 128, 128, 2, 4, 1, 3},
    {"64x128x128_w2x4", 64, 128, 2, 4, 1, 3},
    {"32x64x128_w1x4", 32, 64, 1, 4, 1, 3},
    {"128x128x128_wgmma_coop", 128, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma},
    {"decode_8x16_k8", 8, 16, 1, 1, 8, 0, W4A4Kernel::kDecode, 0},
    {"decode_16x16_k8", 16, 16, 1, 1, 8, 0, W4A4Kernel::kDecode, 128},
    {"decode_32x32_k8", 32, 32, 1, 1, 8, 0, W4A4Kernel::kDecode, 64},
    {"decode_16x32_k8", 16, 32, 1, 1, 8, 0, W4A4Kernel::kDecode, 64},
    {"decode_8x16_k8_ring", 8, 16, 1, 1, 8, 0, W4A4Kernel::kDecode, 128},
    {"128x128x128_wgmma_coop_clamped", 128, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma, 0, true},
    {"64x128x128_wgmma_coop", 64, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma},
    {"80x128x128_wgmma_coop", 80, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma},
    {"96x128x128_wgmma_coop", 96, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma},
    {"112x128x128_wgmma_coop", 112, 128, 2, 1, 1, 0, W4A4Kernel::kWgmma},
};
inline constexpr int kW4A4NumConfigs = static_cast<int>(sizeof(kW4A4Configs) / sizeof(kW4A4Configs[0]));

// The index of a configuration by name at compile time (-1 when absent).
constexpr int w4a4_named(std::string_view name) {
  for (int i = 0; i < kW4A4NumConfigs; ++i)
    if (std::string_view(kW4A4Configs[i].label) == name) return i;
  return -1;
}

// Everything one GEMM launch reads: validated by src/w4a4.cpp.
struct W4A4GemmArgs {
  const uint8_t* x1 = nullptr;  // kMmaSync / kDecode rows: packed [L][D1/2]; kWgmma rows: e4m3 [L][D1]; ld_x1 bytes
  int64_t ld_x1 = 0;
  const uint8_t* w1 = nullptr;  // packed [D][D1/2], ld_w1 bytes
  int64_t ld_w1 = 0;
  const float* sx = nullptr;    // M-major [D1/group][ld_sx]
  int64_t ld_sx = 0;
  const float* sw = nullptr;    // row-major [D][D1/group]
  const void* x2 = nullptr;     // bf16 [L][rank], ld_x2 elements
  int64_t ld_x2 = 0;
  const void* w2 = nullptr;     // bf16 [D][rank], ld_w2 elements
  int64_t ld_w2 = 0;
  int rank = 0;
  const void* bias = nullptr;   // [D] or null
  bool bias_f32 = false;        // bias dtype: fp32 (true) or the output dtype
  void* y = nullptr;            // [L][D], ld_y elements
  int64_t ld_y = 0;
  DType y_dtype = DType::kBF16;
  int64_t L = 0, D = 0, D1 = 0;
  int group = 64;
  int device = 0;    // the CUDA device of the stream (the wgmma rows: CUTLASS's hardware info)
  int sm_count = 0;  // its SM count (> 0: CUTLASS does not query the device per call)
};

// One launcher per output dtype (sm90_w4a4_gemm_<dtype>.cu), each dispatching config and group
// (kMmaSync rows only).
void run_w4a4_gemm_bf16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_gemm_f16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_gemm_f32(const W4A4GemmArgs& a, int config, cudaStream_t stream);
// The kDecode rows, every output dtype (sm90_w4a4_decode.cu).
void run_w4a4_decode(const W4A4GemmArgs& a, int config, cudaStream_t stream);
// The kWgmma rows, one launcher per output dtype (sm90_w4a4_wgmma_<dtype>.cu): the 128-token rows
// there, the band rows (tile_m < 128) through the band launchers (sm90_w4a4_wgmma_band_<dtype>.cu).
void run_w4a4_wgmma_bf16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_wgmma_f16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_wgmma_f32(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_wgmma_band_bf16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_wgmma_band_f16(const W4A4GemmArgs& a, int config, cudaStream_t stream);
void run_w4a4_wgmma_band_f32(const W4A4GemmArgs& a, int config, cudaStream_t stream);

// The token tiles of the band rows, each instantiated in sm90_w4a4_wgmma_band_<dtype>.cu.
inline constexpr int kW4A4BandTiles[] = {64, 80, 96, 112};
constexpr bool w4a4_is_band_tile(int tile_m) {
  for (int t : kW4A4BandTiles)
    if (t == tile_m) return true;
  return false;
}
// Every wgmma row is a 128-row weight tile on 128 tokens (plain or clamped) or on a band tile (plain).
constexpr bool w4a4_wgmma_rows_instantiated() {
  for (const W4A4Config& c : kW4A4Configs)
    if (c.kernel == W4A4Kernel::kWgmma &&
        (c.tile_n != 128 || !(c.tile_m == 128 || (w4a4_is_band_tile(c.tile_m) && !c.clamped))))
      return false;
  return true;
}
static_assert(w4a4_wgmma_rows_instantiated(), "a wgmma row names a tile that no launcher instantiates");

// The INT4 group quantizer (sm90_w4a4_quantize.cu): x [rows][cols] (bf16/fp16/fp32, ldx elements)
// → packed codes q [rows][cols/2] (ldq bytes), or with q_e4m3 one code per byte as e4m3 q [rows][cols],
// and the scale of (row r, group g) at
// scales[r * s_row + g * s_grp]; with rank > 0 also x2 = x · l1ᵀ [rows][rank] (fp32 or bf16).
// With bad != null, the smallest row-major index r * cols + c of a non-finite element is
// atomicMin'ed into *bad (which the caller sets to ~0 first).
struct W4A4QuantArgs {
  const void* x = nullptr;
  DType x_dtype = DType::kBF16;
  int64_t ldx = 0;
  int64_t rows = 0, cols = 0;
  int group = 64;
  uint8_t* q = nullptr;
  int64_t ldq = 0;     // bytes
  bool q_e4m3 = false;  // q: packed INT4 [rows][cols/2] (false) or e4m3 codes [rows][cols] (true)
  float* scales = nullptr;
  int64_t s_row = 0, s_grp = 0;
  const void* l1 = nullptr;  // bf16 [rank][cols], ld_l1 elements
  int64_t ld_l1 = 0;
  int rank = 0;
  void* x2 = nullptr;
  int64_t ld_x2 = 0;
  bool x2_f32 = false;
  unsigned long long* bad = nullptr;
  int sm_count = 0;  // the launch device and its SMs (the bf16 kernel sizes its grid to one wave)
  int device = -1;
};
void run_w4a4_quantize(const W4A4QuantArgs& a, cudaStream_t stream);

}  // namespace qsgemm::kernels
