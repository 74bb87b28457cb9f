#include "master/experiments/lifecycle.h"

#include <set>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

// The allowed moves, spelled out independently of the table under test: every other pair of
// states must be refused.
const std::set<std::pair<std::string, std::string>>& ExpectedTrialMoves() {
  static const std::set<std::pair<std::string, std::string>> moves = {
      {"QUEUED", "RUNNING"}, {"QUEUED", "PAUSED"},     {"QUEUED", "CANCELED"},
      {"QUEUED", "ERROR"},   {"RUNNING", "COMPLETED"}, {"RUNNING", "QUEUED"},
      {"RUNNING", "PAUSED"}, {"RUNNING", "STOPPED"},   {"RUNNING", "CANCELED"},
      {"RUNNING", "ERROR"},  {"PAUSED", "QUEUED"},     {"PAUSED", "CANCELED"},
      {"STOPPED", "QUEUED"}, {"STOPPED", "COMPLETED"}, {"STOPPED", "CANCELED"},
      {"COMPLETED", "QUEUED"}, {"CANCELED", "QUEUED"}, {"ERROR", "QUEUED"},  // continue
  };
  return moves;
}

TEST(LifecycleTest, EveryTrialMoveIsAllowedExactlyWhenTheLifecycleSaysSo) {
  int allowed = 0, refused = 0;
  for (TrialState from : wire::AllTrialStates()) {
    for (TrialState to : wire::AllTrialStates()) {
      const bool expected = ExpectedTrialMoves().count({wire::Name(from), wire::Name(to)}) > 0;
      TrialState state = from;
      absl::Status s = Transition(state, to, "trial 7");
      EXPECT_EQ(s.ok(), expected) << wire::Name(from) << " -> " << wire::Name(to);
      EXPECT_EQ(CanTransition(from, to), expected) << wire::Name(from) << " -> " << wire::Name(to);
      if (expected) {
        EXPECT_EQ(state, to);
        ++allowed;
      } else {
        EXPECT_EQ(state, from) << "a refused move must leave the state as it was";
        EXPECT_TRUE(absl::IsFailedPrecondition(s));
        EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("trial 7: cannot move from ",
                                                        wire::Name(from), " to ", wire::Name(to))));
        ++refused;
      }
    }
  }
  EXPECT_EQ(allowed, 18);
  EXPECT_EQ(refused, 7 * 7 - 18);
}

TEST(LifecycleTest, EveryExperimentMoveIsAllowedExactlyWhenTheLifecycleSaysSo) {
  const std::set<std::pair<std::string, std::string>> expected_moves = {
      {"ACTIVE", "PAUSED"},      {"ACTIVE", "CANCELED"},   {"ACTIVE", "COMPLETED"},
      {"ACTIVE", "ERROR"},       {"PAUSED", "ACTIVE"},     {"PAUSED", "CANCELED"},
      {"COMPLETED", "DELETING"}, {"CANCELED", "DELETING"}, {"ERROR", "DELETING"},
      {"COMPLETED", "ACTIVE"},   {"CANCELED", "ACTIVE"},   {"ERROR", "ACTIVE"},  // continue
  };
  for (ExperimentState from : wire::AllExperimentStates()) {
    for (ExperimentState to : wire::AllExperimentStates()) {
      const bool expected = expected_moves.count({wire::Name(from), wire::Name(to)}) > 0;
      ExperimentState state = from;
      absl::Status s = Transition(state, to, "experiment 3");
      EXPECT_EQ(s.ok(), expected) << wire::Name(from) << " -> " << wire::Name(to);
      EXPECT_EQ(state, expected ? to : from);
      if (!expected) {
        EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("experiment 3: cannot move from ",
                                                        wire::Name(from), " to ", wire::Name(to))));
      }
    }
  }
}

TEST(LifecycleTest, FinalStatesLeadOnlyToContinueOrDeletion) {
  // An ended trial only goes back to the queue (continued).
  for (TrialState from : wire::AllTrialStates()) {
    if (!wire::IsTerminal(from)) continue;
    for (TrialState to : wire::AllTrialStates()) {
      EXPECT_EQ(CanTransition(from, to), to == TrialState::kQueued)
          << wire::Name(from) << " -> " << wire::Name(to);
    }
  }
  // An ended experiment can only be deleted or continued, and a deleting one goes nowhere.
  for (ExperimentState from : wire::AllExperimentStates()) {
    if (!wire::IsTerminal(from)) continue;
    for (ExperimentState to : wire::AllExperimentStates()) {
      const bool expected = from != ExperimentState::kDeleting &&
                            (to == ExperimentState::kDeleting || to == ExperimentState::kActive);
      EXPECT_EQ(CanTransition(from, to), expected) << wire::Name(from) << " -> " << wire::Name(to);
    }
  }
}

TEST(LifecycleTest, TheTablesHoldNoDuplicates) {
  const auto& trials = TrialTransitions();
  const std::set<std::pair<TrialState, TrialState>> unique_trials(trials.begin(), trials.end());
  EXPECT_EQ(unique_trials.size(), trials.size());
  const auto& exps = ExperimentTransitions();
  const std::set<std::pair<ExperimentState, ExperimentState>> unique_exps(exps.begin(), exps.end());
  EXPECT_EQ(unique_exps.size(), exps.size());
}

}  // namespace
}  // namespace cohort::master
