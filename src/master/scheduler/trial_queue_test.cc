#include "master/scheduler/trial_queue.h"

#include "gtest/gtest.h"

namespace cohort::master {
namespace {

using wire::ExperimentState;
using wire::TrialState;

TEST(TrialQueueTest, KeepsQueuedAndRunningTrialsOnly) {
  TrialQueue queue;
  queue.SetTrial(1, 10, TrialState::kQueued, 1);
  queue.SetTrial(2, 10, TrialState::kRunning, 2);
  queue.SetTrial(3, 10, TrialState::kPaused, 3);
  EXPECT_EQ(queue.trials().size(), 2u);
  EXPECT_TRUE(queue.IsQueued(1));
  EXPECT_FALSE(queue.IsQueued(2));
  EXPECT_FALSE(queue.IsQueued(3));
  EXPECT_EQ(queue.queued(), 1);
  EXPECT_EQ(queue.RunningOf(10), 1);
  EXPECT_EQ(queue.ActiveOf(10), 2);
  EXPECT_EQ(queue.ActiveOf(11), 0);
}

TEST(TrialQueueTest, CountsFollowEveryMove) {
  TrialQueue queue;
  queue.SetTrial(1, 10, TrialState::kQueued, 1);
  queue.SetTrial(1, 10, TrialState::kRunning, 1);
  EXPECT_EQ(queue.queued(), 0);
  EXPECT_EQ(queue.RunningOf(10), 1);
  queue.SetTrial(1, 10, TrialState::kQueued, 1);  // restarted
  EXPECT_EQ(queue.queued(), 1);
  EXPECT_EQ(queue.RunningOf(10), 0);
  queue.SetTrial(1, 10, TrialState::kCompleted, 1);
  EXPECT_EQ(queue.queued(), 0);
  EXPECT_EQ(queue.ActiveOf(10), 0);
  EXPECT_TRUE(queue.trials().empty());
}

TEST(TrialQueueTest, RemembersExperimentsAndTheirStates) {
  TrialQueue queue;
  EXPECT_EQ(queue.FindExperiment(4), nullptr);
  queue.SetExperimentState(4, ExperimentState::kPaused);  // unknown: nothing to change
  EXPECT_EQ(queue.FindExperiment(4), nullptr);
  queue.SetExperiment(4, {ExperimentState::kActive, 8, 10});
  queue.SetExperimentState(4, ExperimentState::kPaused);
  ASSERT_NE(queue.FindExperiment(4), nullptr);
  EXPECT_EQ(queue.FindExperiment(4)->state, ExperimentState::kPaused);
  EXPECT_EQ(queue.FindExperiment(4)->slots, 8);
  EXPECT_EQ(queue.FindExperiment(4)->priority, 10);
}

}  // namespace
}  // namespace cohort::master
