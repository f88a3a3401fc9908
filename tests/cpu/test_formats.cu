// docs/formats.md §4–§5: 2:4 selection, the metadata layout (checked against CUTLASS's own
// SparseConfig layout for the sm90 FP8 sparse mainloop), and INT4 packing.
// Compiled by nvcc for the CuTe layout algebra; runs entirely on the host.
#include <gtest/gtest.h>

#include <cmath>

#include "cute/tensor.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "qsgemm/formats.h"

namespace {

using qsgemm::sparse24_select;

uint8_t sel(float a, float b, float c, float d) {
  const float g[4] = {a, b, c, d};
  return sparse24_select(g);
}
uint8_t nib(int i0, int i1) { return static_cast<uint8_t>(i0 | (i1 << 2)); }

TEST(Sparse24Select, LargestMagnitudesTiesToLowerIndex) {
  EXPECT_EQ(sel(1, 2, 3, 4), nib(2, 3));
  EXPECT_EQ(sel(-4, 2, 3, 1), nib(0, 2));
  EXPECT_EQ(sel(0, 0, 0, 5), nib(0, 3));        // FIELD_NOTES: [0 0 0 x] -> (0,3)
  EXPECT_EQ(sel(0, 0, 0, 0), nib(0, 1));
  EXPECT_EQ(sel(1, 1, 1, 1), nib(0, 1));        // ties -> lower indices
  EXPECT_EQ(sel(-0.0f, 0.0f, 0.0f, -0.0f), nib(0, 1));
  EXPECT_EQ(sel(-0.0f, 0.0f, 7, -0.0f), nib(0, 2));  // -0.0 is a zero
  EXPECT_EQ(sel(2, -2, 2, 1), nib(0, 1));
  EXPECT_EQ(sel(1, 3, -3, 1), nib(1, 2));
}

TEST(Sparse24Select, NonZeroCountTreatsNegativeZeroAsZero) {
  const float a[4] = {-0.0f, 0.0f, 1.0f, 0.0f};
  const float b[4] = {1, 2, 3, 0};
  EXPECT_EQ(qsgemm::sparse24_nonzeros(a), 1);
  EXPECT_EQ(qsgemm::sparse24_nonzeros(b), 3);
}

// The metadata offset formula of formats.h equals the layout CUTLASS 4.2 builds for an e4m3 sparse
// A operand (SparseConfig::fill_layoutE), for every tile K the library uses (128 and 256).
template <int TileK>
void check_meta_layout_against_cutlass(int N, int K) {
  using namespace cute;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassSparseTensorOp, cutlass::float_e4m3_t, cutlass::layout::RowMajor, 32,
      cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, 16, float, Shape<_128, _128, Int<TileK>>,
      Shape<_1, _1, _1>, cutlass::gemm::collective::StageCount<3>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  using Config = typename Mainloop::SparseConfig;
  using ElementE = typename Config::ElementEMma;  // sparse_elem<8, uint8_t>
  // Logical elements of A covered by one metadata element (the E element type is a sparse_elem).
  constexpr int kLogicalPerE = ElementE::sparsity;  // 8 logical e4m3 per metadata byte
  static_assert(sizeof(typename ElementE::raw_type) == 1, "metadata is byte-addressed");
  static_assert(kLogicalPerE == 8, "one metadata byte covers two groups of four e4m3");
  const auto layout_e = Config::fill_layoutE(make_shape(N, 16, K, 1));
  EXPECT_EQ(static_cast<int64_t>(cosize(layout_e)) / kLogicalPerE, qsgemm::sparse24_meta_bytes(N, K));
  for (int n = 0; n < N; n += (N > 200 ? 7 : 1))
    for (int k = 0; k < K; k += 8) {
      const int64_t logical = layout_e(n, k, 0);
      ASSERT_EQ(logical / kLogicalPerE, qsgemm::sparse24_meta_offset(N, n, k)) << "n=" << n << " k=" << k;
      ASSERT_EQ(logical % kLogicalPerE, 0);
    }
  // And the compressed values are dense [N, K/2]: A's layout counts logical elements, two per
  // stored byte (sparse_elem<2, e4m3>), so its cosize is N*K logical = N*K/2 bytes, row stride K.
  const auto layout_a = Config::fill_layoutA(make_shape(N, 16, K, 1));
  EXPECT_EQ(static_cast<int64_t>(cosize(layout_a)), static_cast<int64_t>(N) * K);
  EXPECT_EQ(static_cast<int64_t>(layout_a(1, 0, 0)), static_cast<int64_t>(K));
}

TEST(Sparse24MetaLayout, MatchesCutlassSm90Fp8SparseConfig) {
  for (auto [n, k] : {std::pair{64, 128}, {128, 256}, {72, 160}, {8, 32}, {200, 4128}, {1024, 1024}}) {
    check_meta_layout_against_cutlass<128>(n, k);
    check_meta_layout_against_cutlass<256>(n, k);
  }
}

TEST(Sparse24MetaLayout, PaddingAndPanels) {
  EXPECT_EQ(qsgemm::sparse24_meta_rows(8), 64);
  EXPECT_EQ(qsgemm::sparse24_meta_kpad(4128), 4224);
  EXPECT_EQ(qsgemm::sparse24_meta_bytes(8, 32), 64 * 128 / 8);
  // Row-major [rows_padded][16 bytes] panels, one per 128 of K.
  EXPECT_EQ(qsgemm::sparse24_meta_offset(100, 0, 0), 0);
  EXPECT_EQ(qsgemm::sparse24_meta_offset(100, 1, 0), 16);
  EXPECT_EQ(qsgemm::sparse24_meta_offset(100, 0, 8), 1);
  EXPECT_EQ(qsgemm::sparse24_meta_offset(100, 0, 128), 128 * 16);
  EXPECT_EQ(qsgemm::sparse24_meta_shift(0), 0);
  EXPECT_EQ(qsgemm::sparse24_meta_shift(4), 4);
}

TEST(Int4, PackUnpackAndQuantize) {
  for (int lo = -8; lo < 8; ++lo)
    for (int hi = -8; hi < 8; ++hi) {
      const uint8_t b = qsgemm::int4_pack(lo, hi);
      EXPECT_EQ(qsgemm::int4_unpack(b, 0), lo);
      EXPECT_EQ(qsgemm::int4_unpack(b, 1), hi);
    }
  EXPECT_EQ(qsgemm::int4_pack(1, -1), 0xF1);  // even k in the low nibble
  EXPECT_EQ(qsgemm::int4_scale_from_amax(14.0f), 2.0f);
  EXPECT_EQ(qsgemm::int4_quantize(14.0f, 2.0f), 7);
  EXPECT_EQ(qsgemm::int4_quantize(-16.0f, 2.0f), -8);
  EXPECT_EQ(qsgemm::int4_quantize(5.0f, 2.0f), 2);   // 2.5 -> 2 (ties to even)
  EXPECT_EQ(qsgemm::int4_quantize(7.0f, 2.0f), 4);   // 3.5 -> 4
}

}  // namespace
