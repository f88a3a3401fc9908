// The W4A4 wgmma kernel reads its INT4 A operand from shared memory with its own 16-bit loads at
// offsets set up once per work tile (W4A4Mainloop::a_thread_offset / a_piece_offset), not through
// CuTe's copy. These tests check those offsets against where CuTe's own partition of the base
// collective's A stages puts every value of every consumer thread, so a change of tile, swizzle or
// fragment layout fails here, on the CPU, instead of as wrong sums on the GPU.
// Compiled by nvcc for the CuTe layout algebra; runs entirely on the host.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace {

using Mainloop = qsgemm::kernels::sm90_w4a4_wgmma::W4A4WgmmaGemm<__nv_bfloat16, false>::CollectiveMainloop;
static_assert(std::is_same_v<typename qsgemm::kernels::sm90_w4a4_wgmma::W4A4WgmmaGemm<__nv_bfloat16, true>::CollectiveMainloop::SmemLayoutA,
                             typename Mainloop::SmemLayoutA>,
              "the clamped row's A stages are the plain row's (the offsets below serve both)");

// Byte offset from `base` of the INT4 value CuTe's partition gives thread `tid` at (v, 0, kb, stage).
// The positionally independent swizzle is how CuTe's copy addressed A in the kernel before.
struct CuteA {
  alignas(1024) uint8_t smem[Mainloop::kStageBytesA * cute::size<2>(typename Mainloop::SmemLayoutA{})];

  long offset(int tid, int v, int kb, int stage) const {
    using namespace cute;
    typename Mainloop::TiledMma mma;
    Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<const cutlass::int4b_t*>(smem)),
                           typename Mainloop::SmemLayoutA{});
    Tensor t = mma.get_thread_slice(tid).partition_A(as_position_independent_swizzle_tensor(s));
    const auto* p = reinterpret_cast<const uint8_t*>(raw_pointer_cast(&t(v, 0, kb, stage)));
    // The subbyte iterator keeps a bit address; where the swizzle steps back from an intermediate
    // offset, its byte pointer comes out 2^61 too high on the host (the bit address wrapped), so
    // the offset is taken modulo 2^61.
    return static_cast<long>(static_cast<uint64_t>(p - smem) & ((uint64_t{1} << 61) - 1));
  }
};

TEST(W4A4WgmmaLayout, APiecesAreWhereCuTePartitionsThem) {
  static CuteA a;  // static: 40 KB
  constexpr int kStages = cute::size<2>(typename Mainloop::SmemLayoutA{});
  int checked = 0, wrong = 0;
  for (int tid = 0; tid < 256; ++tid) {
    const uint32_t base = Mainloop::a_thread_offset(tid);
    for (int stage : {0, kStages - 1})
      for (int kb = 0; kb < 4; ++kb)
        for (int v = 0; v < 16; v += 4) {  // four INT4 values (two bytes) per piece
          const int h = v / 8, row8 = (v / 4) % 2;  // fragment order: k, row + 8, k + 16
          const long mine = static_cast<long>(stage) * Mainloop::kStageBytesA +
                            Mainloop::a_piece_offset(base, kb, h) + row8 * 8 * Mainloop::kRowBytesA;
          const long cute_off = a.offset(tid, v, kb, stage);
          ++checked;
          if (mine != cute_off && ++wrong <= 5)
            ADD_FAILURE() << "thread " << tid << " stage " << stage << " k32 block " << kb << " value " << v
                          << ": kernel reads byte " << mine << ", CuTe places it at " << cute_off;
          // The next three values of the piece follow in the same two bytes.
          for (int j = 1; j < 4; ++j)
            if (a.offset(tid, v + j, kb, stage) != cute_off + j / 2 && ++wrong <= 5)
              ADD_FAILURE() << "thread " << tid << " value " << v + j << " is not in its piece's two bytes";
        }
  }
  EXPECT_EQ(wrong, 0) << "of " << checked << " pieces";
  EXPECT_EQ(checked, 256 * 2 * 4 * 4);
}

// The offsets cover each stage's bytes exactly once over the 256 consumer threads.
TEST(W4A4WgmmaLayout, APiecesTileTheStage) {
  std::vector<int> hits(Mainloop::kStageBytesA, 0);
  for (int tid = 0; tid < 256; ++tid)
    for (int kb = 0; kb < 4; ++kb)
      for (int h = 0; h < 2; ++h)
        for (int row8 = 0; row8 < 2; ++row8) {
          const uint32_t off = Mainloop::a_piece_offset(Mainloop::a_thread_offset(tid), kb, h) + row8 * 8 * Mainloop::kRowBytesA;
          ASSERT_LT(off + 1, Mainloop::kStageBytesA);
          ++hits[off];
          ++hits[off + 1];
        }
  for (uint32_t b = 0; b < Mainloop::kStageBytesA; ++b) ASSERT_EQ(hits[b], 1) << "byte " << b;
}

}  // namespace

// ---- the bf16 activation quantizer's ring (sm90_w4a4_quantize.cu) ----------------------------------
// TMA writes each 64-column box with the 128-byte swizzle (tma_sw128_offset); the quantize steps read
// and the wgmma descriptors address the ring through CuTe's K-major SW128 layout (Tile::LayoutX /
// LayoutL, kstep_offset_bytes). These must be one and the same placement, for X and every rank part.
#include "kernels/sm90/w4a4/sm90_w4a4_quant_tile.cuh"

namespace {

namespace wq = qsgemm::kernels::w4a4_quant;

// Where CuTe puts element (r, c, st) of a ring laid out by Layout at a 1024-byte aligned base (the
// swizzle is applied through the pointer), in elements.
alignas(1024) cute::bfloat16_t g_ring[4 * (wq::kRows + wq::kChunk) * wq::kChunk];
template <class Layout>
int cute_offset(int r, int c, int st) {
  auto t = cute::make_tensor(cute::make_smem_ptr(g_ring), Layout{});
  return static_cast<int>(&t(r, c, st) - g_ring);
}

template <class Layout>
int layout_mismatches(int rows, int stages, bool report = true) {
  int wrong = 0;
  for (int st = 0; st < stages; ++st)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < wq::kChunk; ++c) {
        const int cute_off = cute_offset<Layout>(r, c, st);
        const int tma_off = st * rows * wq::kChunk + wq::tma_sw128_offset(r, c, rows);
        if (cute_off != tma_off && ++wrong <= 3 && report)
          ADD_FAILURE() << rows << " rows, stage " << st << " (" << r << ", " << c << "): CuTe " << cute_off << ", TMA "
                        << tma_off;
      }
  for (int k = 0; k < wq::kChunk / 16; ++k)
    if (2 * cute_offset<Layout>(0, 16 * k, 0) != wq::kstep_offset_bytes(k, rows) && ++wrong <= 6 && report)
      ADD_FAILURE() << rows << " rows: k-step " << k << " at byte " << 2 * cute_offset<Layout>(0, 16 * k, 0)
                    << ", descriptors use " << wq::kstep_offset_bytes(k, rows);
  return wrong;
}

template <int kNr>
void expect_tile_matches_tma() {
  using T = wq::Tile<kNr>;
  SCOPED_TRACE("rank part " + std::to_string(kNr));
  EXPECT_EQ(layout_mismatches<typename T::LayoutX>(wq::kRows, T::kStages), 0);
  EXPECT_EQ(layout_mismatches<typename T::LayoutL>(kNr, T::kStages), 0);
  EXPECT_LE(wq::smem_bytes(kNr), 227 * 1024) << "ring of rank part " << kNr;
}

TEST(W4A4QuantizerLayout, RingIsWhereTmaWritesIt) {
  EXPECT_EQ(layout_mismatches<typename wq::Tile<0>::LayoutX>(wq::kRows, wq::Tile<0>::kStages), 0);
  expect_tile_matches_tma<16>();
  expect_tile_matches_tma<32>();
  expect_tile_matches_tma<48>();
  expect_tile_matches_tma<64>();
  expect_tile_matches_tma<80>();
  expect_tile_matches_tma<96>();
  expect_tile_matches_tma<112>();
  expect_tile_matches_tma<128>();
}

// The test can fail: a 64-byte swizzle (what a 64-column box of half the width would need) is not the
// ring's placement.
TEST(W4A4QuantizerLayout, DetectsAnotherSwizzle) {
  using Sw64 = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<cute::bfloat16_t>{},
                                            cute::Shape<cute::Int<wq::kRows>, cute::Int<wq::kChunk>, cute::_1>{}));
  EXPECT_GT(layout_mismatches<Sw64>(wq::kRows, 1, false), 0);
}

}  // namespace
