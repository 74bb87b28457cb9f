#include "wire/step_profile.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/agent_protocol.h"

namespace cohort::wire {
namespace {

using ::cohort::testing_support::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

StepProfileRecord Example() {
  StepProfileRecord rec;
  rec.rank = 1;
  rec.batch = 12;
  rec.time = 1700000000.123456;
  rec.phases = {{"step", 0, 45123}, {"dataloader_next", 3, 230}, {"forward", 251, 21100}};
  rec.buckets = {{0, 1048576, 20950, 812}, {1, 4194304, 23001, 2950}};
  return rec;
}

std::string ErrorOf(const Json& json) {
  absl::StatusOr<StepProfileRecord> rec = ParseStepProfileRecord(json, "rank-1.jsonl line 3");
  EXPECT_THAT(rec, Not(IsOk())) << json.dump();
  return std::string(rec.status().message());
}

TEST(StepProfileTest, RoundTripsThroughJsonText) {
  const StepProfileRecord rec = Example();
  absl::StatusOr<StepProfileRecord> back = ParseStepProfileRecord(Json::parse(rec.ToJson().dump()));
  ASSERT_OK(back);
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->batch, 12);
  EXPECT_NEAR(back->time, rec.time, 1e-6);
  ASSERT_EQ(back->phases.size(), 3u);
  EXPECT_EQ(back->phases[2].name, "forward");
  EXPECT_EQ(back->phases[2].start_us, 251);
  EXPECT_EQ(back->phases[2].duration_us, 21100);
  ASSERT_EQ(back->buckets.size(), 2u);
  EXPECT_EQ(back->buckets[1].bucket, 1);
  EXPECT_EQ(back->buckets[1].bytes, 4194304);
  EXPECT_EQ(back->buckets[1].start_us, 23001);
  EXPECT_EQ(back->buckets[1].duration_us, 2950);
}

TEST(StepProfileTest, WireShapeIsCompactTuples) {
  const Json j = Example().ToJson();
  EXPECT_EQ(j["phases"][0], Json::parse(R"(["step",0,45123])"));
  EXPECT_EQ(j["buckets"][0], Json::parse("[0,1048576,20950,812]"));
}

TEST(StepProfileTest, BucketsAreOptional) {
  Json j = Example().ToJson();
  j.erase("buckets");
  absl::StatusOr<StepProfileRecord> rec = ParseStepProfileRecord(j);
  ASSERT_OK(rec);
  EXPECT_TRUE(rec->buckets.empty());
}

TEST(StepProfileTest, ErrorsNameTheRecordTheFieldAndTheRule) {
  Json j = Example().ToJson();
  j["phases"][1][2] = -1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("rank-1.jsonl line 3: \"phases\"[1]: the duration must be "
                                    "an integer in [0, 86400000000], got -1"));
  j = Example().ToJson();
  j["phases"][0] = Json::parse(R"(["../etc", 0, 1])");
  EXPECT_THAT(ErrorOf(j), HasSubstr("the name must be a safe name"));
  j = Example().ToJson();
  j["buckets"][0] = Json::parse("[0, 1]");
  EXPECT_THAT(ErrorOf(j), HasSubstr("must be [bucket, bytes, start_us, duration_us]"));
  j = Example().ToJson();
  j["phases"][0][1] = 1.5;
  EXPECT_THAT(ErrorOf(j), HasSubstr("the start must be an integer"));
  j = Example().ToJson();
  j.erase("phases");
  EXPECT_THAT(ErrorOf(j), HasSubstr("missing \"phases\""));
  j = Example().ToJson();
  j["rank"] = -1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"rank\""));
}

TEST(StepProfileTest, CountsAreBounded) {
  Json j = Example().ToJson();
  j["phases"] = Json::array();
  for (size_t i = 0; i <= kMaxStepPhases; ++i) j["phases"].push_back({"p", 0, 1});
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"phases\""));
}

TEST(StepProfileTest, ReportBatchCarriesStepProfiles) {
  ReportBatch batch;
  batch.trial_id = 7;
  batch.step_profiles = {Example(), Example()};
  batch.step_profiles[1].rank = 0;
  absl::StatusOr<ReportBatch> back = ParseReportBatch(Json::parse(batch.ToJson().dump()));
  ASSERT_OK(back);
  ASSERT_EQ(back->step_profiles.size(), 2u);
  EXPECT_EQ(back->step_profiles[1].rank, 0);
  EXPECT_EQ(back->step_profiles[0].buckets.size(), 2u);
  Json too_many = batch.ToJson();
  too_many["step_profiles"] = Json::array();
  for (size_t i = 0; i <= kMaxStepProfilesPerBatch; ++i) {
    too_many["step_profiles"].push_back(Example().ToJson());
  }
  EXPECT_FALSE(ParseReportBatch(too_many).ok());
}

TEST(StepProfileTest, PathIsPerRank) { EXPECT_EQ(StepProfilePath(3), "profile/rank-3.jsonl"); }

}  // namespace
}  // namespace cohort::wire
