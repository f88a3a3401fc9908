// token_row_plan (src/kernels/sm90/common/token_row_plan.h): which rows of X the last token tile of
// the blockwise and sparse kernels loads.
#include "kernels/sm90/common/token_row_plan.h"

#include <gtest/gtest.h>

namespace qsgemm::kernels {
namespace {

TEST(TokenRowPlan, LastTileLoadsItsRowsRoundedUpToEight) {
  struct Case {
    int64_t m;
    int tile;
    int32_t last, box;
  };
  for (const Case& c : {Case{1, 64, 0, 8}, Case{8, 64, 0, 8}, Case{9, 64, 0, 16}, Case{48, 64, 0, 48},
                        Case{56, 64, 0, 56}, Case{57, 64, 0, -1}, Case{64, 64, 0, -1}, Case{65, 64, 1, 8},
                        Case{100, 64, 1, 40}, Case{160, 128, 1, 32}, Case{255, 128, 1, -1}, Case{256, 128, 1, -1},
                        Case{67, 80, 0, 72}, Case{3000, 128, 23, 56}, Case{5, 8, 0, -1}, Case{13, 8, 1, -1}}) {
    const TokenRowPlan p = token_row_plan(c.m, c.tile, false);
    EXPECT_EQ(p.last, c.last) << "M=" << c.m << " tile=" << c.tile;
    EXPECT_EQ(p.box_rows, c.box) << "M=" << c.m << " tile=" << c.tile;
    // The box covers the tile's rows, never more than 7 past M, and is a whole number of granules.
    if (p.box_rows > 0) {
      const int64_t rows = c.m - int64_t{p.last} * c.tile;
      EXPECT_GE(p.box_rows, rows);
      EXPECT_LT(p.box_rows - rows, kTokenRowGranule);
      EXPECT_EQ(p.box_rows % kTokenRowGranule, 0);
      EXPECT_LT(p.box_rows, c.tile);
    }
  }
}

TEST(TokenRowPlan, WholeAndEmptyKeepTheBox) {
  EXPECT_EQ(token_row_plan(100, 64, true).box_rows, -1);
  EXPECT_EQ(token_row_plan(100, 64, true).last, 1);
  EXPECT_EQ(token_row_plan(0, 64, false).box_rows, -1);
  EXPECT_EQ(token_row_plan(0, 64, false).last, 0);
  // Every M up to 4 tiles: the last tile index matches ceil(M / tile) - 1.
  for (int64_t m = 1; m <= 512; ++m) EXPECT_EQ(token_row_plan(m, 128, false).last, (m + 127) / 128 - 1) << m;
}

}  // namespace
}  // namespace qsgemm::kernels
