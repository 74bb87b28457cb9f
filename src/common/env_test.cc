#include "common/env.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace cohort::env {
namespace {

TEST(EnvTest, ParsesIntegersAndNamesTheVariableOnError) {
  setenv("COHORT_TEST_INT", "42", 1);
  EXPECT_EQ(GetIntOr("COHORT_TEST_INT", 7).value(), 42);
  setenv("COHORT_TEST_INT", "4x", 1);
  auto bad = GetIntOr("COHORT_TEST_INT", 7);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("COHORT_TEST_INT"), absl::string_view::npos);
  EXPECT_NE(bad.status().message().find("'4x'"), absl::string_view::npos);
  unsetenv("COHORT_TEST_INT");
  EXPECT_EQ(GetIntOr("COHORT_TEST_INT", 7).value(), 7);
}

TEST(EnvTest, ParsesSecondsAndRejectsNonPositive) {
  setenv("COHORT_TEST_SECONDS", "2.5", 1);
  EXPECT_EQ(GetSecondsOr("COHORT_TEST_SECONDS", absl::Seconds(1)).value(), absl::Seconds(2.5));
  setenv("COHORT_TEST_SECONDS", "0", 1);
  EXPECT_FALSE(GetSecondsOr("COHORT_TEST_SECONDS", absl::Seconds(1)).ok());
  unsetenv("COHORT_TEST_SECONDS");
  EXPECT_EQ(GetSecondsOr("COHORT_TEST_SECONDS", absl::Seconds(1)).value(), absl::Seconds(1));
}

}  // namespace
}  // namespace cohort::env
