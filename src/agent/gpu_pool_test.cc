#include "agent/gpu_pool.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::agent {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(GpuPoolTest, GivesEachAllocationDistinctGpusLowestFirstAndTakesThemBack) {
  GpuPool pool({3, 0, 2, 1});
  EXPECT_FALSE(pool.empty());
  absl::StatusOr<std::vector<int>> a = pool.Take("a", 2);
  ASSERT_OK(a);
  EXPECT_THAT(*a, ElementsAre(0, 1));
  absl::StatusOr<std::vector<int>> b = pool.Take("b", 1);
  ASSERT_OK(b);
  EXPECT_THAT(*b, ElementsAre(2));
  pool.Release("a");
  absl::StatusOr<std::vector<int>> c = pool.Take("c", 3);
  ASSERT_OK(c);
  EXPECT_THAT(*c, ElementsAre(0, 1, 3));
}

TEST(GpuPoolTest, AnAllocationAskingAgainGetsTheSameGpus) {
  GpuPool pool({0, 1});
  ASSERT_OK(pool.Take("a", 1));
  absl::StatusOr<std::vector<int>> again = pool.Take("a", 1);
  ASSERT_OK(again);
  EXPECT_THAT(*again, ElementsAre(0));
}

TEST(GpuPoolTest, TooFewFreeGpusIsResourceExhaustedNamingTheFreeOnes) {
  GpuPool pool({0, 1, 2});
  ASSERT_OK(pool.Take("a", 2));
  absl::StatusOr<std::vector<int>> b = pool.Take("b", 2);
  ASSERT_THAT(b, StatusIs(absl::StatusCode::kResourceExhausted,
                          HasSubstr("allocation b needs 2 GPU slot(s)")));
  EXPECT_THAT(b.status().message(), HasSubstr("only 1 of this agent's 3 GPUs are free (free: 2)"));
  pool.Release("b");  // holds nothing: no effect
  EXPECT_OK(pool.Take("c", 1));
}

TEST(GpuPoolTest, AnEmptyPoolIsCpuSlotsAndNeverFails) {
  GpuPool pool({});
  EXPECT_TRUE(pool.empty());
  absl::StatusOr<std::vector<int>> a = pool.Take("a", 8);
  ASSERT_OK(a);
  EXPECT_THAT(*a, IsEmpty());
}

}  // namespace
}  // namespace cohort::agent
