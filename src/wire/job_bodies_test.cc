#include "wire/job_bodies.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

Json Wire(const Json& json) { return Json::parse(json.dump()); }

TEST(JobBodiesTest, PoolsAndJobsRoundTrip) {
  ResourcePoolList pools{{{"big", "8-GPU machines", "fair_share", true, 2, 16, 8, 1, 3}}};
  absl::StatusOr<ResourcePoolList> p = ParseResourcePoolList(Wire(pools.ToJson()));
  ASSERT_OK(p);
  EXPECT_EQ(p->pools[0].scheduler, "fair_share");
  EXPECT_EQ(p->pools[0].used, 8);
  EXPECT_EQ(p->pools[0].trials_queued, 3);
  JobEntry job;
  job.position = 2;
  job.experiment_id = 7;
  job.name = "grid";
  job.pool = "default";
  job.state = "ACTIVE";
  job.priority = 10;
  job.weight = 0.5;
  job.max_slots = 4;
  job.waiting = "queued behind task 3 (priority 10)";
  absl::StatusOr<JobList> j = ParseJobList(Wire(JobList{{job}}.ToJson()));
  ASSERT_OK(j);
  EXPECT_EQ(j->jobs[0].experiment_id, 7);
  EXPECT_EQ(j->jobs[0].weight, 0.5);
  EXPECT_EQ(j->jobs[0].waiting, job.waiting);
  Json bad = JobList{{job}}.ToJson();
  bad["jobs"][0]["priority"] = 100;
  EXPECT_THAT(ParseJobList(bad).status().message(), HasSubstr("\"priority\""));
}

TEST(JobBodiesTest, AnUpdateTakesOnlyWhatItNamesWithinRange) {
  absl::StatusOr<JobUpdate> u = ParseJobUpdate(Json{{"priority", 5}, {"ahead_of", 3}});
  ASSERT_OK(u);
  EXPECT_EQ(u->priority, 5);
  EXPECT_EQ(u->ahead_of, 3);
  EXPECT_FALSE(u->weight.has_value());
  EXPECT_EQ(ParseJobUpdate(Wire(u->ToJson()))->ToJson(), u->ToJson());
  EXPECT_THAT(ParseJobUpdate(Json{{"priority", 0}}).status().message(), HasSubstr("priority"));
  EXPECT_THAT(ParseJobUpdate(Json{{"weight", -1}}).status().message(), HasSubstr("weight"));
  EXPECT_THAT(ParseJobUpdate(Json{{"ahead_of", 1}, {"behind_of", 2}}).status().message(),
              HasSubstr("not both"));
  EXPECT_THAT(ParseJobUpdate(Json{{"max_slots", "four"}}).status().message(),
              HasSubstr("max_slots"));
}

}  // namespace
}  // namespace cohort::wire
