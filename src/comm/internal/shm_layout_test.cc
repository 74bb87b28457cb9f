#include "comm/internal/shm_layout.h"

#include <vector>

#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

TEST(ShmLayoutTest, SliceBeginSplitsEvenlyAndCoversEverything) {
  EXPECT_EQ(ShmSliceBegin(10, 3, 0), 0u);
  EXPECT_EQ(ShmSliceBegin(10, 3, 1), 3u);
  EXPECT_EQ(ShmSliceBegin(10, 3, 2), 6u);
  EXPECT_EQ(ShmSliceBegin(10, 3, 3), 10u);
  EXPECT_EQ(ShmSliceBegin(0, 4, 4), 0u);
  // Large counts do not overflow count * slice.
  const size_t huge = size_t{1} << 62;
  EXPECT_EQ(ShmSliceBegin(huge, 4, 3), huge / 4 * 3);
  EXPECT_EQ(ShmSliceBegin(huge + 3, 4, 4), huge + 3);
}

TEST(ShmLayoutTest, PiecesCoverEveryElementExactlyOnceInsideTheirSlice) {
  for (size_t count : {0u, 1u, 2u, 7u, 10u, 1001u, 100003u}) {
    for (int size = 1; size <= 5; ++size) {
      for (size_t piece : {1u, 2u, 16u, 4096u}) {
        ShmLayout layout(count, size, piece);
        std::vector<int> hits(count, 0);
        for (size_t k = 0; k < layout.rounds(); ++k) {
          for (int j = 0; j < size; ++j) {
            ShmLayout::Piece p = layout.At(k, j);
            ASSERT_LE(p.count, piece);
            ASSERT_GE(p.begin, ShmSliceBegin(count, size, j));
            ASSERT_LE(p.begin + p.count, ShmSliceBegin(count, size, j + 1));
            for (size_t i = p.begin; i < p.begin + p.count; ++i) ++hits[i];
          }
        }
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(hits[i], 1) << "count=" << count << " size=" << size << " piece=" << piece
                                << " element " << i;
        }
      }
    }
  }
}

TEST(ShmLayoutTest, ExampleFromTheHeader) {
  ShmLayout layout(10, 3, 2);
  ASSERT_EQ(layout.rounds(), 2u);
  EXPECT_EQ(layout.At(0, 2).begin, 6u);
  EXPECT_EQ(layout.At(1, 0).begin, 2u);
  EXPECT_EQ(layout.At(1, 0).count, 1u);
  EXPECT_EQ(layout.At(1, 2).count, 2u);
}

TEST(ShmLayoutTest, PiecesAreWholeCacheLinesWhenTheSlotAllows) {
  EXPECT_EQ(ShmPieceElems(1 << 20, 3, 4) * 4 % 64, 0u);
  EXPECT_LE(ShmPieceElems(1 << 20, 3, 4) * 4 * 3, size_t{1} << 20);
  EXPECT_EQ(ShmPieceElems(4096, 64, 8), 8u);
  EXPECT_EQ(ShmPieceElems(100, 64, 8), 1u);
}

}  // namespace
}  // namespace cohort::comm::internal
