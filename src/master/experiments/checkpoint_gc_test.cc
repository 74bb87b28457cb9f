#include "master/experiments/checkpoint_gc.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Three trials of four checkpoints (batches 100..400); trial t's loss at batch b is known.
std::vector<GcCheckpoint> ThreeTrials() {
  std::vector<GcCheckpoint> c;
  const double loss[3][4] = {{0.9, 0.5, 0.6, 0.7}, {0.8, 0.4, 0.3, 0.35}, {1.0, 0.95, 0.9, 0.2}};
  for (int t = 0; t < 3; ++t) {
    for (int i = 0; i < 4; ++i) {
      c.push_back({"t" + std::to_string(t + 1) + "-" + std::to_string((i + 1) * 100), t + 1,
                   (i + 1) * 100, loss[t][i]});
    }
  }
  return c;
}

TEST(CheckpointGcTest, DeterminedsDefaultsKeepEachTrialsNewestAndBest) {
  EXPECT_THAT(CheckpointsToDelete(ThreeTrials(), {}),
              ElementsAre("t1-100", "t1-300", "t2-100", "t2-200", "t3-100", "t3-200", "t3-300"));
}

TEST(CheckpointGcTest, ExperimentBestKeepsTheBestAcrossTrials) {
  const GcPolicy policy{.save_experiment_best = 2, .save_trial_best = 0, .save_trial_latest = 0};
  // The two lowest losses: t3-400 (0.2) and t2-300 (0.3).
  std::vector<std::string> gone = CheckpointsToDelete(ThreeTrials(), policy);
  EXPECT_EQ(gone.size(), 10u);
  EXPECT_EQ(std::count(gone.begin(), gone.end(), "t3-400"), 0);
  EXPECT_EQ(std::count(gone.begin(), gone.end(), "t2-300"), 0);
}

TEST(CheckpointGcTest, LargerIsBetterAndZerosDeleteEverything) {
  const GcPolicy higher{.save_trial_best = 1, .save_trial_latest = 0, .smaller_is_better = false};
  std::vector<std::string> gone = CheckpointsToDelete(ThreeTrials(), higher);
  EXPECT_EQ(std::count(gone.begin(), gone.end(), "t1-100"), 0) << "0.9 is t1's highest";
  EXPECT_EQ(gone.size(), 9u);
  EXPECT_EQ(CheckpointsToDelete(ThreeTrials(), {0, 0, 0, true}).size(), 12u);
}

TEST(CheckpointGcTest, ACheckpointWithoutAValidationIsNeverBestButMayBeNewest) {
  std::vector<GcCheckpoint> c = {{"a", 1, 100, 0.5}, {"b", 1, 200, std::nullopt}};
  EXPECT_THAT(CheckpointsToDelete(c, {}), IsEmpty());  // a: best, b: newest
  EXPECT_THAT(CheckpointsToDelete(c, {.save_trial_best = 1, .save_trial_latest = 0}),
              ElementsAre("b"));
}

}  // namespace
}  // namespace cohort::master
