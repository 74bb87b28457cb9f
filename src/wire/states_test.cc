#include "wire/states.h"

#include <set>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

TEST(StatesTest, EveryTrialStateRoundTripsThroughItsName) {
  std::set<std::string> names;
  for (TrialState s : AllTrialStates()) {
    absl::StatusOr<TrialState> back = ParseTrialState(Name(s));
    ASSERT_OK(back) << Name(s);
    EXPECT_EQ(*back, s);
    names.insert(Name(s));
  }
  EXPECT_EQ(names.size(), AllTrialStates().size()) << "two states share a name";
}

TEST(StatesTest, EveryExperimentStateRoundTripsThroughItsName) {
  for (ExperimentState s : AllExperimentStates()) {
    absl::StatusOr<ExperimentState> back = ParseExperimentState(Name(s));
    ASSERT_OK(back) << Name(s);
    EXPECT_EQ(*back, s);
  }
}

TEST(StatesTest, UnknownNamesAreRefusedWithTheValidOnes) {
  absl::StatusOr<TrialState> t = ParseTrialState("running");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("'running' is not a trial state"));
  EXPECT_THAT(t.status().message(), HasSubstr("QUEUED, RUNNING"));
  EXPECT_FALSE(ParseExperimentState("QUEUED").ok());
}

TEST(StatesTest, OnlyCompletedCanceledAndErrorAreTerminal) {
  std::set<std::string> terminal;
  for (TrialState s : AllTrialStates()) {
    if (IsTerminal(s)) terminal.insert(Name(s));
  }
  EXPECT_EQ(terminal, (std::set<std::string>{"CANCELED", "COMPLETED", "ERROR"}));
  EXPECT_TRUE(IsTerminal(ExperimentState::kError));
  EXPECT_TRUE(IsTerminal(ExperimentState::kDeleting));  // ended: no trial of it runs again
  EXPECT_FALSE(IsTerminal(ExperimentState::kPaused));
}

}  // namespace
}  // namespace cohort::wire
