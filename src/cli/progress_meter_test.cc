#include "cli/progress_meter.h"

#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

TEST(ProgressMeterTest, ShowsBarCountsLossRateAndEta) {
  ProgressMeter meter("trial 1/3", /*global_batch_size=*/128);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(meter.Line(), "trial 1/3 starting...");
  meter.Update({.completed = 100, .total = 2000, .unit = "batches", .loss = 0.9}, t0);
  EXPECT_EQ(meter.Line(), "trial 1/3 [#...................]  100/2000 batches  loss 0.9000");
  // 900 batches in 10 s: 90 batches/s = 11520 samples/s; 1000 left: 11 s.
  meter.Update({.completed = 1000, .total = 2000, .unit = "batches", .loss = 0.41234}, t0 + absl::Seconds(10));
  EXPECT_EQ(meter.Line(),
            "trial 1/3 [##########..........] 1000/2000 batches  loss 0.4123  11520 samples/s  "
            "ETA 0:11");
}

TEST(ProgressMeterTest, OtherUnitsShowTheirOwnRateAndNoSamples) {
  ProgressMeter meter("trial 2/2", 0);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  meter.Update({.completed = 1, .total = 4, .unit = "epochs"}, t0);
  meter.Update({.completed = 2, .total = 4, .unit = "epochs"}, t0 + absl::Seconds(100));
  EXPECT_EQ(meter.Line(), "trial 2/2 [##########..........] 2/4 epochs  0.0 epochs/s  ETA 3:20");
}

TEST(ProgressMeterTest, RateFollowsTheRecentWindowAndRestartsReset) {
  ProgressMeter meter("t", 1, absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(0);
  meter.Update({.completed = 0, .total = 1000}, t0);
  meter.Update({.completed = 10, .total = 1000}, t0 + absl::Seconds(10));   // 1/s
  meter.Update({.completed = 110, .total = 1000}, t0 + absl::Seconds(20));  // then 10/s
  meter.Update({.completed = 210, .total = 1000}, t0 + absl::Seconds(30));
  ASSERT_TRUE(meter.Rate().has_value());
  EXPECT_NEAR(*meter.Rate(), 10.0, 1e-9);
  meter.Update({.completed = 50, .total = 1000}, t0 + absl::Seconds(31));  // resumed earlier
  EXPECT_FALSE(meter.Rate().has_value());
}

TEST(ProgressMeterTest, FormatsDurations) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(35.4), "0:35");
  EXPECT_EQ(FormatDuration(724), "12:04");
  EXPECT_EQ(FormatDuration(3729), "1:02:09");
}

}  // namespace
}  // namespace cohort::cli
