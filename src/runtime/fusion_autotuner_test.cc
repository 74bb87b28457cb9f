#include "runtime/fusion_autotuner.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

TEST(FusionAutotunerTest, TriesEveryCandidateThenPicksTheFastestMedian) {
  FusionAutotuner tuner({.candidates_mb = {1, 4, 16}, .warmup_steps = 1, .measured_steps = 3});
  EXPECT_EQ(tuner.total_steps(), 12);
  // Step times per candidate: warm-up (ignored, huge), then three measured steps.
  const double times[3][4] = {{900, 10, 11, 12}, {900, 8, 30, 7}, {900, 9, 9, 9}};
  std::vector<double> seen_mb;
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(tuner.tuning());
    seen_mb.push_back(tuner.current_mb());
    for (int s = 0; s < 4; ++s) {
      bool changed = tuner.Record(absl::Milliseconds(times[c][s]));
      EXPECT_EQ(changed, s == 3) << "candidate " << c << " step " << s;
    }
  }
  EXPECT_EQ(seen_mb, (std::vector<double>{1, 4, 16}));
  EXPECT_FALSE(tuner.tuning());
  // Medians: 11, 8, 9 ms: the 4 MB candidate wins even though one of its steps was slow.
  EXPECT_EQ(tuner.best_index(), 1);
  EXPECT_EQ(tuner.current_mb(), 4);
  EXPECT_NE(tuner.Summary().find("chose 4 MB"), std::string::npos) << tuner.Summary();
  EXPECT_FALSE(tuner.Record(absl::Milliseconds(1)));
}

TEST(FusionAutotunerTest, SetChoiceOverridesTheLocalDecision) {
  FusionAutotuner tuner({.candidates_mb = {1, 4}, .warmup_steps = 0, .measured_steps = 1});
  tuner.Record(absl::Milliseconds(5));
  tuner.Record(absl::Milliseconds(1));
  EXPECT_EQ(tuner.current_mb(), 4);
  tuner.SetChoice(0);
  EXPECT_EQ(tuner.current_mb(), 1);
  EXPECT_NE(tuner.Summary().find("chose 1 MB"), std::string::npos);
}

TEST(FusionAutotunerTest, CanAlsoTryTheLargestThresholdWithoutOverlap) {
  FusionAutotuner tuner({.candidates_mb = {2, 8},
                         .also_without_overlap = true,
                         .warmup_steps = 0,
                         .measured_steps = 1});
  EXPECT_EQ(tuner.total_steps(), 3);
  std::vector<std::pair<double, bool>> seen;
  for (double ms : {9.0, 8.0, 5.0}) {
    seen.emplace_back(tuner.current_mb(), tuner.current_overlap());
    tuner.Record(absl::Milliseconds(ms));
  }
  EXPECT_EQ(seen, (std::vector<std::pair<double, bool>>{{2, true}, {8, true}, {8, false}}));
  EXPECT_FALSE(tuner.current_overlap());
  EXPECT_EQ(tuner.current_mb(), 8);
  EXPECT_NE(tuner.Summary().find("chose 8 MB without overlap"), std::string::npos)
      << tuner.Summary();
}

}  // namespace
}  // namespace cohort::runtime
