// The bf16 W4A4 activation quantizer's shared-memory ring (sm90_w4a4_quantize.cu): its sizes, and
// the CuTe layouts through which its wgmma reads what TMA wrote. Its own header so that a CPU test
// (tests/cpu/test_w4a4_wgmma_layout.cu) can check that the two agree.
#pragma once

#include <cstdint>

#include "cute/atom/mma_traits_sm90_gmma.hpp"
#include "cute/tensor.hpp"
#include "qsgemm/w4a4.h"

namespace qsgemm::kernels::w4a4_quant {

constexpr int kThreads = 256;
constexpr int kRows = 64;                        // rows of X per CTA
constexpr int kChunk = 128;                      // columns per ring stage (one group of 128 or two of 64)
constexpr int kBox = 64;                         // TMA box width: 128 bytes of bf16, the swizzle's span
constexpr int kStageXBytes = kRows * kChunk * 2;  // 16384
constexpr int kSmemAlign = 1024;                  // the 128-byte swizzle repeats every 8 rows of 128 bytes

// Ring stages for a CTA with nr ranks (0: no down-projection): two CTAs per SM up to r = 128.
__host__ __device__ constexpr int stages(int nr) { return nr == 0 ? 4 : (nr > 64 ? 2 : 3); }
__host__ __device__ constexpr int ring_bytes(int nr) { return stages(nr) * (kStageXBytes + nr * kChunk * 2); }
// The X2 partial tile [64][nr] (floats) is parked in the ring after the K loop: it always fits.
static_assert(kRows * kW4A4MaxRank * 4 <= ring_bytes(kW4A4MaxRank), "the X2 partial tile fits the ring");
inline int smem_bytes(int nr) { return ring_bytes(nr) + kSmemAlign; }  // + the base's alignment

// Where TMA puts element (row, col) of a chunk's boxes (box h = col / 64, rows box_rows) with the
// 128-byte swizzle, in elements from the stage's start: the 16-byte unit (col % 64) / 8 of a
// 128-byte row is exchanged with unit ^ (row % 8).
__host__ __device__ constexpr int tma_sw128_offset(int row, int col, int box_rows) {
  return (col / kBox) * box_rows * kBox + row * kBox + ((((col % kBox) / 8) ^ (row % 8)) * 8) + col % 8;
}

// Where wgmma k-step k (columns 16k .. 16k + 15) of a chunk starts, in bytes from the stage's start
// (row 0, which the swizzle leaves in place): the kernel's descriptors add it to the stage's address.
__host__ __device__ constexpr int kstep_offset_bytes(int k, int box_rows) {
  return (16 * k / kBox) * box_rows * kBox * 2 + (16 * k % kBox) * 2;
}

// The ring's layouts (element offsets, bf16) of a CTA with kNr ranks: X [64][128][stages] and L1
// [kNr][128][stages], K-major with the 128-byte swizzle: CuTe's wgmma layout. The kernel builds its
// wgmma descriptors from these offsets and TMA fills them by tma_sw128_offset; the CPU test checks
// that the two are the same.
template <int kNr>
struct Tile {
  static constexpr int kStages = stages(kNr);
  static constexpr int kN = kNr > 0 ? kNr : 8;  // rank 0 has no L1 ring: any valid shape for the type
  using Atom = cute::GMMA::Layout_K_SW128_Atom<cute::bfloat16_t>;
  using LayoutX = decltype(cute::tile_to_shape(Atom{}, cute::Shape<cute::Int<kRows>, cute::Int<kChunk>, cute::Int<kStages>>{}));
  using LayoutL = decltype(cute::tile_to_shape(Atom{}, cute::Shape<cute::Int<kN>, cute::Int<kChunk>, cute::Int<kStages>>{}));
  static constexpr int kLBytes = kNr * kChunk * 2;  // one stage of L1
  static_assert(kStageXBytes % kSmemAlign == 0 && kLBytes % kSmemAlign == 0, "stages keep the swizzle's alignment");
};

}  // namespace qsgemm::kernels::w4a4_quant
