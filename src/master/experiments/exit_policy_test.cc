#include "master/experiments/exit_policy.h"

#include "gtest/gtest.h"
#include "master/experiments/lifecycle.h"

namespace cohort::master {
namespace {

using wire::ExperimentState;
using wire::TrialState;

ExitFacts Facts(StopReason stop, bool ok) {
  return {.stop = stop, .all_exited_ok = ok, .restarts = 0, .max_restarts = 2};
}

TEST(ExitPolicyTest, ACleanExitNobodyAskedForCompletesTheTrial) {
  EXPECT_EQ(DecideAfterExit(Facts(StopReason::kNone, true)).next, TrialState::kCompleted);
}

TEST(ExitPolicyTest, AnAllocationNoAgentReclaimedAfterAMasterRestartIsQueuedWithoutARestart) {
  ExitFacts facts = Facts(StopReason::kUnclaimed, false);
  facts.restarts = facts.max_restarts;  // even with no restart left
  ExitDecision d = DecideAfterExit(facts);
  EXPECT_EQ(d.next, TrialState::kQueued);
  EXPECT_FALSE(d.restart);
  facts.experiment = ExperimentState::kPaused;
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kPaused);
  facts.experiment = ExperimentState::kCanceled;
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kCanceled);
}

TEST(ExitPolicyTest, AFailureRestartsUntilMaxRestartsThenErrors) {
  ExitFacts facts = Facts(StopReason::kFailure, false);
  ExitDecision first = DecideAfterExit(facts);
  EXPECT_EQ(first.next, TrialState::kQueued);
  EXPECT_TRUE(first.restart);
  facts.restarts = 2;
  ExitDecision last = DecideAfterExit(facts);
  EXPECT_EQ(last.next, TrialState::kError);
  EXPECT_FALSE(last.restart);
  // A node that exits non-zero without anyone stopping it is a failure too.
  EXPECT_EQ(DecideAfterExit(Facts(StopReason::kNone, false)).next, TrialState::kQueued);
  EXPECT_EQ(DecideAfterExit(Facts(StopReason::kLost, true)).next, TrialState::kQueued);
}

TEST(ExitPolicyTest, ACancelRetriesLogPolicyMatchEndsAFailureInErrorWithRestartsLeft) {
  ExitFacts facts = Facts(StopReason::kFailure, false);
  facts.cancel_retries = true;
  ExitDecision d = DecideAfterExit(facts);
  EXPECT_EQ(d.next, TrialState::kError);
  EXPECT_FALSE(d.restart);
  // A run that completes, or is paused, is not a failure: the match changes nothing.
  ExitFacts ok = Facts(StopReason::kNone, true);
  ok.cancel_retries = true;
  EXPECT_EQ(DecideAfterExit(ok).next, TrialState::kCompleted);
  ExitFacts pause = Facts(StopReason::kPause, false);
  pause.cancel_retries = true;
  EXPECT_EQ(DecideAfterExit(pause).next, TrialState::kQueued);
}

TEST(ExitPolicyTest, KillOrACanceledExperimentCancelsWhateverTheExit) {
  EXPECT_EQ(DecideAfterExit(Facts(StopReason::kKill, true)).next, TrialState::kCanceled);
  ExitFacts facts = Facts(StopReason::kFailure, false);
  facts.experiment = ExperimentState::kCanceled;
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kCanceled);
}

TEST(ExitPolicyTest, APausePausesTheTrialOnlyWhileItsExperimentIsPaused) {
  ExitFacts facts = Facts(StopReason::kPause, false);
  facts.experiment = ExperimentState::kPaused;
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kPaused);
  facts.experiment = ExperimentState::kActive;  // activated again before the trial stopped
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kQueued);
  EXPECT_FALSE(DecideAfterExit(facts).restart);
}

TEST(ExitPolicyTest, TheSearcherStopsForGoodOnlyWithStopOnce) {
  ExitFacts facts = Facts(StopReason::kSearcher, false);
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kStopped);
  facts.stop_once = true;
  EXPECT_EQ(DecideAfterExit(facts).next, TrialState::kCompleted);
}

TEST(ExitPolicyTest, EveryDecisionIsALegalMoveFromRunning) {
  for (StopReason stop : {StopReason::kNone, StopReason::kKill, StopReason::kPause,
                          StopReason::kSearcher, StopReason::kFailure, StopReason::kLost}) {
    for (bool ok : {false, true}) {
      for (ExperimentState exp : wire::AllExperimentStates()) {
        for (int restarts : {0, 2}) {
          ExitFacts facts = Facts(stop, ok);
          facts.experiment = exp;
          facts.restarts = restarts;
          const TrialState next = DecideAfterExit(facts).next;
          EXPECT_TRUE(CanTransition(TrialState::kRunning, next))
              << Name(stop) << " -> " << wire::Name(next);
        }
      }
    }
  }
}

}  // namespace
}  // namespace cohort::master
