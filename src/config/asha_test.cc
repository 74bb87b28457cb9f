// adaptive_asha's arithmetic: rung lengths per bracket and mode, trial-to-bracket assignment,
// and the promotion rule.

#include "config/asha.h"

#include "gtest/gtest.h"

namespace cohort::config {
namespace {

SearcherConfig Asha(int64_t max_length, int64_t max_rungs, double divisor, const char* mode) {
  SearcherConfig s;
  s.name = "adaptive_asha";
  s.max_length = Length{.unit = Length::Unit::kBatches, .value = max_length};
  s.max_rungs = max_rungs;
  s.divisor = divisor;
  s.mode = mode;
  return s;
}

using Rungs = std::vector<std::vector<int64_t>>;

TEST(AshaTest, RungsShrinkByTheDivisorAndEndAtMaxLength) {
  EXPECT_EQ(AshaBrackets(Asha(1000, 3, 4, "aggressive")), (Rungs{{63, 250, 1000}}));
  EXPECT_EQ(AshaBrackets(Asha(200, 2, 2, "aggressive")), (Rungs{{100, 200}}));
}

TEST(AshaTest, ModesSetTheNumberOfBrackets) {
  EXPECT_EQ(AshaBrackets(Asha(64, 3, 4, "standard")), (Rungs{{4, 16, 64}, {16, 64}}));
  EXPECT_EQ(AshaBrackets(Asha(64, 3, 4, "conservative")), (Rungs{{4, 16, 64}, {16, 64}, {64}}));
}

TEST(AshaTest, BracketRungsGiveEachBracketsNumberOfRungs) {
  SearcherConfig s = Asha(64, 5, 4, "standard");
  s.bracket_rungs = {3, 1};
  EXPECT_EQ(AshaBrackets(s), (Rungs{{4, 16, 64}, {64}})) << "bracket_rungs over max_rungs and mode";
}

TEST(AshaTest, AsyncHalvingIsOneBracketOfNumRungs) {
  SearcherConfig s = Asha(90, 5, 3, "standard");
  s.name = "async_halving";
  s.num_rungs = 3;
  EXPECT_TRUE(HasRungs(s));
  EXPECT_EQ(AshaBrackets(s), (Rungs{{10, 30, 90}}));
  EXPECT_EQ(SearcherOperations(s, 4), (std::vector<int64_t>{10, 30, 90}));
}

TEST(AshaTest, ShortMaxLengthsDropRungsThatWouldRepeat) {
  // 3/16 and 3/4 round to 0 and 1: the rungs start at 1 and never repeat.
  EXPECT_EQ(AshaBrackets(Asha(3, 3, 4, "aggressive")), (Rungs{{1, 3}}));
}

TEST(AshaTest, TrialsGoToBracketsInTurn) {
  const SearcherConfig s = Asha(64, 3, 4, "conservative");
  EXPECT_EQ(SearcherOperations(s, 0), (std::vector<int64_t>{4, 16, 64}));
  EXPECT_EQ(SearcherOperations(s, 1), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(SearcherOperations(s, 2), (std::vector<int64_t>{64}));
  EXPECT_EQ(SearcherOperations(s, 3), (std::vector<int64_t>{4, 16, 64}));
}

TEST(AshaTest, OtherSearchersHaveOneOperation) {
  SearcherConfig s;
  s.name = "random";
  s.max_length = Length{.unit = Length::Unit::kEpochs, .value = 3};
  EXPECT_EQ(SearcherOperations(s, 5), (std::vector<int64_t>{3}));
  EXPECT_TRUE(AshaBrackets(s).empty());
  s.max_length.reset();
  EXPECT_TRUE(SearcherOperations(s, 0).empty());
}

TEST(AshaTest, PromotesTheBestFractionOfWhatTheRungHasSeen) {
  // First at the rung: always on.
  EXPECT_TRUE(AshaPromotes({}, 9.0, 4, /*smaller_is_better=*/true));
  // Two at the rung, divisor 2: keep 1; the worse one stops.
  EXPECT_FALSE(AshaPromotes({1.0}, 2.0, 2, true));
  EXPECT_TRUE(AshaPromotes({2.0}, 1.0, 2, true));
  // Ties are not "better".
  EXPECT_TRUE(AshaPromotes({1.0}, 1.0, 2, true));
  // Five at the rung, divisor 4: keep ceil(5/4) = 2.
  EXPECT_TRUE(AshaPromotes({0.1, 0.5, 0.6, 0.7}, 0.2, 4, true));
  EXPECT_FALSE(AshaPromotes({0.1, 0.15, 0.6, 0.7}, 0.2, 4, true));
  // Larger is better (accuracy).
  EXPECT_TRUE(AshaPromotes({0.80}, 0.90, 2, /*smaller_is_better=*/false));
  EXPECT_FALSE(AshaPromotes({0.95}, 0.90, 2, false));
}

}  // namespace
}  // namespace cohort::config
