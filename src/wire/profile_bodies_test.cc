#include "wire/profile_bodies.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

TEST(ProfileBodiesTest, StepTimingsRoundTripThroughJsonText) {
  StepTimings t{.trial_id = 3,
                .profiled_steps = 400,
                .ranks = {{0, {{"backward", 200, 22.9, 20.1, 31}, {"forward", 200, 21, 19, 25}}},
                          {1, {{"backward", 200, 23.5, 20.0, 30}}}}};
  absl::StatusOr<StepTimings> back = ParseStepTimings(Json::parse(t.ToJson().dump()));
  ASSERT_OK(back);
  EXPECT_EQ(back->trial_id, 3);
  EXPECT_EQ(back->profiled_steps, 400);
  ASSERT_EQ(back->ranks.size(), 2u);
  ASSERT_EQ(back->ranks[0].phases.size(), 2u);
  EXPECT_EQ(back->ranks[0].phases[1].name, "forward");
  EXPECT_DOUBLE_EQ(back->ranks[0].phases[0].mean_ms, 22.9);
  EXPECT_EQ(back->ranks[1].rank, 1);
}

TEST(ProfileBodiesTest, ErrorsNameTheField) {
  Json j = StepTimings{.trial_id = 3, .ranks = {{0, {{"x", 1, 1, 1, 1}}}}}.ToJson();
  j["ranks"][0]["phases"][0]["mean_ms"] = -1;
  absl::StatusOr<StepTimings> t = ParseStepTimings(j);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              ::testing::HasSubstr("\"ranks\"[0]: \"phases\"[0]: \"mean_ms\""));
}

TEST(ProfileBodiesTest, StepSeriesRoundTripsWithGapsAndRefusesUnevenPhases) {
  StepSeries steps{.trial_id = 3, .rank = 1, .stride = 2, .batches = {2, 4}};
  steps.phases = {{"forward", {21.5, std::nullopt}}};
  absl::StatusOr<StepSeries> back = ParseStepSeries(steps.ToJson());
  ASSERT_OK(back);
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->stride, 2);
  EXPECT_EQ(back->batches, (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(back->phases.size(), 1u);
  EXPECT_EQ(back->phases[0].ms[0], 21.5);
  EXPECT_FALSE(back->phases[0].ms[1].has_value());
  Json uneven = steps.ToJson();
  uneven["batches"].push_back(6);
  EXPECT_THAT(ParseStepSeries(uneven).status().message(),
              ::testing::HasSubstr("phase \"forward\" has 2 values for 3 batches"));
}

}  // namespace
}  // namespace cohort::wire
