// The W4A4 wgmma kernel reads its INT4 A operand from shared memory with its own 16-bit loads at
// offsets set up once per work tile (W4A4Mainloop::a_thread_offset / a_piece_offset), not through
// CuTe's copy. These tests check those offsets against where CuTe's own partition of the base
// collective's A stages puts every value of every consumer thread, so a change of tile, swizzle or
// fragment layout fails here, on the CPU, instead of as wrong sums on the GPU.
// Compiled by nvcc for the CuTe layout algebra; runs entirely on the host.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/w4a4/sm90_w4a4_wgmma.cuh"

namespace {

using Mainloop = qsgemm::kernels::sm90_w4a4_wgmma::W4A4WgmmaGemm<__nv_bfloat16>::CollectiveMainloop;

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
