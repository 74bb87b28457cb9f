#include "master/scheduler/scheduler.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

AgentState Agent(std::string id, int slots, int used = 0, bool enabled = true) {
  return AgentState{std::move(id), slots, used, enabled};
}

AgentState Disabled(std::string id, int slots) { return Agent(std::move(id), slots, 0, false); }

TaskRequest Task(std::string id, int slots, int64_t sequence, int priority = 42) {
  return TaskRequest{std::move(id), slots, priority, sequence};
}

using AgentSlots = std::vector<std::pair<std::string, int>>;
using ::cohort::testing_support::StatusIs;

// The agents of each placement, in the order the scheduler made them.
std::vector<std::pair<std::string, AgentSlots>> Placed(const ScheduleResult& result) {
  std::vector<std::pair<std::string, AgentSlots>> placed;
  for (const Placement& p : result.placements) placed.emplace_back(p.task_id, p.agents);
  return placed;
}

// Schedule, with the tasks queued behind the blocker also listed in `waiting` (as the master
// describes them), so that each test states every waiting task's reason.
ScheduleResult ScheduleListingAll(const std::vector<AgentState>& agents,
                                  const std::vector<TaskRequest>& queue) {
  ScheduleResult r = Schedule(agents, queue);
  if (!r.blocker) return r;
  std::set<std::string> placed;
  for (const Placement& p : r.placements) placed.insert(p.task_id);
  for (const TaskRequest& t : queue) {
    if (t.id == r.blocker->id || placed.count(t.id) > 0 || r.waiting.count(t.id) > 0) continue;
    EXPECT_TRUE(IsBehind(*r.blocker, t.priority, t.sequence)) << t.id;
    r.waiting[t.id] = QueuedBehindReason(*r.blocker);
  }
  return r;
}

TEST(SchedulerTest, TasksBehindTheBlockerAreNotListedOneByOne) {
  std::vector<TaskRequest> queue = {Task("big", 16, 1)};
  for (int i = 0; i < 1000; ++i) queue.push_back(Task(absl::StrCat("small", i), 1, 2 + i));
  const ScheduleResult r = Schedule({Agent("a", 8, 4), Agent("b", 8)}, queue);
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("big", "waiting for 2 idle agents of 8 slots: 1 is idle")));
  ASSERT_TRUE(r.blocker.has_value());
  EXPECT_EQ(r.blocker->id, "big");
  EXPECT_TRUE(IsBehind(*r.blocker, 42, 2));
  EXPECT_FALSE(IsBehind(*r.blocker, 42, 1));
  EXPECT_FALSE(IsBehind(*r.blocker, 41, 500));  // a higher priority comes first
  EXPECT_TRUE(IsBehind(*r.blocker, 43, 0));
  EXPECT_EQ(QueuedBehindReason(*r.blocker), "queued behind task big (priority 42)");
}

TEST(SchedulerTest, PlacesOnTheAgentWithTheFewestFreeSlotsThatStillFit) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8), Agent("b", 8, 4), Agent("c", 8, 6)}, {Task("t", 3, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 3}})));
  EXPECT_THAT(r.waiting, IsEmpty());
}

TaskRequest Excluding(TaskRequest task, std::set<std::string> agents) {
  task.excluded_agents = std::move(agents);
  return task;
}

TEST(SchedulerTest, ATaskNeverGoesOnAnAgentItsLogPoliciesExclude) {
  // Best fit would pick b (fewest free slots that fit); b is excluded, so a.
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8), Agent("b", 8, 4)}, {Excluding(Task("t", 2, 1), {"b"})});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"a", 2}})));
  // On whole agents: the excluded idle one is skipped.
  r = ScheduleListingAll({Agent("a", 4), Agent("b", 4), Agent("c", 4)}, {Excluding(Task("t", 8, 1), {"a"})});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 4}, {"c", 4}})));
}

TEST(SchedulerTest, ATaskOnlyExcludedAgentsCouldHostWaitsSayingSoAndHoldsNobodyBack) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4), Agent("b", 2)},
                              {Excluding(Task("t", 4, 1), {"a"}), Task("u", 2, 2)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("u", AgentSlots{{"b", 2}})));
  EXPECT_THAT(r.waiting, ElementsAre(Pair("t",
                                          "waiting for agents its log policies do not "
                                          "exclude (excluded: a)")));
}

TEST(SchedulerTest, ATaskWithExclusionsWaitsForBusyAgentsItMayUse) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 4), Agent("b", 4, 4)}, {Excluding(Task("t", 4, 1), {"a"})});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, ElementsAre(Pair("t",
                                          "waiting for 4 free slots on one agent: the most "
                                          "free on any agent is 0")));
}

TEST(SchedulerTest, BestFitTiesGoToTheLowerAgentId) {
  ScheduleResult r = ScheduleListingAll({Agent("b", 8), Agent("c", 8), Agent("a", 8)}, {Task("t", 2, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"a", 2}})));
}

TEST(SchedulerTest, TwoFourSlotTasksShareOneEightSlotAgent) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 8)}, {Task("t1", 4, 1), Task("t2", 4, 2)});
  EXPECT_THAT(Placed(r),
              ElementsAre(Pair("t1", AgentSlots{{"a", 4}}), Pair("t2", AgentSlots{{"a", 4}})));
  EXPECT_THAT(r.waiting, IsEmpty());
}

TEST(SchedulerTest, SixteenSlotTaskTakesBothIdleEightSlotAgentsInIdOrder) {
  ScheduleResult r = ScheduleListingAll({Agent("b", 8), Agent("a", 8)}, {Task("big", 16, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("big", AgentSlots{{"a", 8}, {"b", 8}})));
  EXPECT_THAT(r.waiting, IsEmpty());
}

TEST(SchedulerTest, MultiAgentTaskTakesTheLowestIdIdleAgentsAndSkipsBusyOnes) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 1), Agent("d", 8), Agent("c", 8), Agent("b", 8)},
                              {Task("big", 16, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("big", AgentSlots{{"b", 8}, {"c", 8}})));
}

TEST(SchedulerTest, TwelveSlotTaskOnEightSlotAgentsWaitsAsNotAMultipleAndHoldsNobodyBack) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8), Agent("b", 8)}, {Task("odd", 12, 1), Task("small", 4, 2)});
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("odd", "needs 12 slots: not a multiple of the 8 slots per agent")));
  EXPECT_THAT(Placed(r), ElementsAre(Pair("small", AgentSlots{{"a", 4}})));
}

TEST(SchedulerTest, TaskNeedingMoreAgentsThanTheClusterHasWaitsAndHoldsNobodyBack) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8, 8), Agent("b", 8)}, {Task("huge", 24, 1), Task("small", 4, 2)});
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("huge", "needs 24 slots: 3 agents of 8, the cluster has 2")));
  EXPECT_THAT(Placed(r), ElementsAre(Pair("small", AgentSlots{{"b", 4}})));
}

TEST(SchedulerTest, WaitingSixteenSlotTaskHoldsBackALaterFourSlotTaskOfTheSamePriority) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8, 4), Agent("b", 8)}, {Task("big", 16, 1), Task("small", 4, 2)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting,
              UnorderedElementsAre(Pair("big", "waiting for 2 idle agents of 8 slots: 1 is idle"),
                                   Pair("small", "queued behind task big (priority 42)")));
}

TEST(SchedulerTest, WaitingSingleAgentTaskHoldsBackEveryLaterTask) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 6), Agent("b", 4, 3)},
                              {Task("four", 4, 1), Task("one", 1, 2, /*priority=*/50)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(
      r.waiting,
      UnorderedElementsAre(
          Pair("four", "waiting for 4 free slots on one agent: the most free on any agent is 2"),
          Pair("one", "queued behind task four (priority 42)")));
}

TEST(SchedulerTest, OneSlotWaitReasonUsesTheSingular) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 2, 2)}, {Task("t", 1, 1)});
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("t",
                               "waiting for 1 free slot on one agent: the most free on any "
                               "agent is 0")));
}

TEST(SchedulerTest, NoIdleAgentsReasonUsesThePlural) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4, 1), Agent("b", 4, 1)}, {Task("t", 8, 1)});
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("t", "waiting for 2 idle agents of 4 slots: 0 are idle")));
}

TEST(SchedulerTest, LowerPriorityNumberIsPlacedFirstWhateverTheSubmissionOrder) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8)}, {Task("late-urgent", 8, 2, /*priority=*/10),
                                                Task("early-normal", 8, 1, /*priority=*/42)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("late-urgent", AgentSlots{{"a", 8}})));
  EXPECT_THAT(r.waiting, ElementsAre(Pair("early-normal", HasSubstr("waiting for 8 free slots"))));
}

TEST(SchedulerTest, TasksOfEqualPriorityArePlacedInSubmissionOrder) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4), Agent("b", 4)},
                              {Task("third", 4, 30), Task("first", 4, 10), Task("second", 4, 20)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("first", AgentSlots{{"a", 4}}),
                                     Pair("second", AgentSlots{{"b", 4}})));
  EXPECT_THAT(r.waiting, ElementsAre(Pair("third", HasSubstr("waiting for 4 free slots"))));
}

TEST(SchedulerTest, WaitingHighPriorityTaskHoldsBackLowerPriorityTasksThatWouldFit) {
  ScheduleResult r = ScheduleListingAll(
      {Agent("a", 8, 4)}, {Task("low", 2, 1, /*priority=*/50), Task("high", 8, 2, /*priority=*/1)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, UnorderedElementsAre(Pair("high", HasSubstr("waiting for 8 free slots")),
                                              Pair("low", "queued behind task high (priority 1)")));
}

TEST(SchedulerTest, DisabledAgentsTakeNoTasks) {
  ScheduleResult r =
      ScheduleListingAll({Disabled("a", 8), Agent("b", 8, 4)}, {Task("t1", 4, 1), Task("t2", 4, 2)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t1", AgentSlots{{"b", 4}})));
  EXPECT_THAT(r.waiting, ElementsAre(Pair("t2",
                                          "waiting for 4 free slots on one agent: the most free on "
                                          "any agent is 0")));
}

TEST(SchedulerTest, DisabledAgentsDoNotCountTowardsAMultiAgentTask) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8), Disabled("b", 8)}, {Task("big", 16, 1), Task("small", 2, 2)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("big",
                                          "needs 16 slots: 2 agents of 8, the cluster has "
                                          "1 enabled (1 more disabled)")));
  EXPECT_THAT(Placed(r), ElementsAre(Pair("small", AgentSlots{{"a", 2}})));
}

TEST(SchedulerTest, EveryTaskWaitsWhenAllAgentsAreDisabled) {
  ScheduleResult r = ScheduleListingAll({Disabled("a", 8)}, {Task("t", 1, 1)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, ElementsAre(Pair("t", "no agents are connected (or all are disabled)")));
}

TEST(SchedulerTest, EveryTaskWaitsWhenNoAgentsAreConnected) {
  ScheduleResult r = ScheduleListingAll({}, {Task("t1", 1, 1), Task("t2", 16, 2)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting,
              UnorderedElementsAre(Pair("t1", "no agents are connected (or all are disabled)"),
                                   Pair("t2", "no agents are connected (or all are disabled)")));
}

TEST(SchedulerTest, AnEmptyQueuePlacesNothing) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8)}, {});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, IsEmpty());
}

TEST(SchedulerTest, PlacementsEarlierInACallReduceFreeSlotsForLaterTasks) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8)}, {Task("six", 6, 1), Task("four", 4, 2)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("six", AgentSlots{{"a", 6}})));
  EXPECT_THAT(r.waiting, ElementsAre(Pair("four",
                                          "waiting for 4 free slots on one agent: the most free on "
                                          "any agent is 2")));
}

TEST(SchedulerTest, SmallTaskPlacedEarlierInACallLeavesItsAgentNoLongerIdle) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8), Agent("b", 8)}, {Task("small", 1, 1), Task("big", 16, 2)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("small", AgentSlots{{"a", 1}})));
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("big", "waiting for 2 idle agents of 8 slots: 1 is idle")));
}

TEST(SchedulerTest, WholeAgentsTakenEarlierInACallAreNotGivenAgain) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4), Agent("b", 4), Agent("c", 4)},
                              {Task("first", 8, 1), Task("second", 8, 2)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("first", AgentSlots{{"a", 4}, {"b", 4}})));
  EXPECT_THAT(r.waiting,
              ElementsAre(Pair("second", "waiting for 2 idle agents of 4 slots: 1 is idle")));
}

TEST(SchedulerTest, SingleAgentTaskOnMixedSizesTakesTheSmallerAgentThatFits) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 4)}, {Task("t", 4, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 4}})));
}

TEST(SchedulerTest, MultiAgentTaskOnMixedSizesUsesTheSizeThatHasEnoughAgents) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4), Agent("b", 8), Agent("c", 8)}, {Task("t", 16, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 8}, {"c", 8}})));
}

TEST(SchedulerTest, MixedSizesReasonNamesEveryAgentSizeThatDividesTheTask) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 4), Agent("c", 4)},
                              {Task("odd", 12, 1), Task("two", 16, 2)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting,
              UnorderedElementsAre(
                  Pair("odd",
                       "needs 12 slots: 3 agents of 4, the cluster has 2 (agents of 8 slots do "
                       "not divide 12)"),
                  Pair("two",
                       "needs 16 slots: 2 agents of 8 or 4 agents of 4, the cluster has 1 of 8 "
                       "and 2 of 4")));
}

TEST(SchedulerTest, TwelveSlotTaskRunsOnThreeIdleFourSlotAgentsBesideAnEightSlotOne) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 4), Agent("c", 4), Agent("d", 4)},
                              {Task("twelve", 12, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("twelve", AgentSlots{{"b", 4}, {"c", 4}, {"d", 4}})));
  EXPECT_THAT(r.waiting, IsEmpty());
}

TEST(SchedulerTest, SixteenSlotTaskRunsOnFourFourSlotAgentsWhenOnlyOneEightSlotAgentIsEnabled) {
  ScheduleResult r = ScheduleListingAll(
      {Agent("a", 8), Disabled("b", 8), Agent("c", 4), Agent("d", 4), Agent("e", 4), Agent("f", 4)},
      {Task("sixteen", 16, 1)});
  EXPECT_THAT(Placed(r),
              ElementsAre(Pair("sixteen", AgentSlots{{"c", 4}, {"d", 4}, {"e", 4}, {"f", 4}})));
}

TEST(SchedulerTest, GroupTakesTheLowestIdIdleAgentsOfItsSize) {
  ScheduleResult r = ScheduleListingAll(
      {Agent("x", 8), Agent("d", 4), Agent("c", 4, 1), Agent("b", 4), Agent("a", 4), Agent("e", 4)},
      {Task("twelve", 12, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("twelve", AgentSlots{{"a", 4}, {"b", 4}, {"d", 4}})));
}

TEST(SchedulerTest, GroupChoiceKeepsTheLargestTaskThatCouldStartNextAsLargeAsPossible) {
  // Two 8s would leave 8 + four 4s (16 placeable); four 4s leave three 8s (24 placeable).
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 8), Agent("c", 8), Agent("d", 4),
                               Agent("e", 4), Agent("f", 4), Agent("g", 4)},
                              {Task("sixteen", 16, 1)});
  EXPECT_THAT(Placed(r),
              ElementsAre(Pair("sixteen", AgentSlots{{"d", 4}, {"e", 4}, {"f", 4}, {"g", 4}})));
}

TEST(SchedulerTest, GroupChoiceTakesLargerAgentsWhenThatLeavesMoreCapacity) {
  // Two 8s leave six 4s (24 placeable); four 4s would leave two 8s (16).
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 8), Agent("c", 4), Agent("d", 4),
                               Agent("e", 4), Agent("f", 4), Agent("g", 4), Agent("h", 4)},
                              {Task("sixteen", 16, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("sixteen", AgentSlots{{"a", 8}, {"b", 8}})));
}

TEST(SchedulerTest, GroupChoiceTakesFewerAgentsWhenTheCapacityLeftIsEqual) {
  // Either way 16 slots stay placeable (two 8s or four 4s): the two 8s are fewer agents.
  ScheduleResult r = ScheduleListingAll(
      {Agent("a", 8), Agent("b", 8), Agent("c", 4), Agent("d", 4), Agent("e", 4), Agent("f", 4)},
      {Task("sixteen", 16, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("sixteen", AgentSlots{{"a", 8}, {"b", 8}})));
}

TEST(SchedulerTest, TaskThatFitsOneAgentTakesItRatherThanAGroup) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 4), Agent("b", 4), Agent("c", 8)}, {Task("t", 8, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"c", 8}})));
}

TEST(SchedulerTest, TaskThatFitsNoAgentNowRunsOnIdleSmallerAgents) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 1), Agent("b", 4), Agent("c", 4)}, {Task("t", 8, 1)});
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 4}, {"c", 4}})));
}

TEST(SchedulerTest, TaskNoAgentSizeDividesSaysSoAndHoldsNobodyBack) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 5), Agent("c", 5)},
                              {Task("odd", 12, 1), Task("t", 5, 2)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("odd",
                                          "needs 12 slots: no agent size divides it: agents "
                                          "have 8 or 5 slots")));
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"b", 5}})));
}

TEST(SchedulerTest, TaskWaitingForIdleAgentsOfOneSizeSaysHowManyAreIdle) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Agent("b", 4), Agent("c", 4, 1), Agent("d", 4, 2)},
                              {Task("twelve", 12, 1), Task("small", 1, 2)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, UnorderedElementsAre(
                             Pair("twelve", "waiting for 3 idle agents of 4 slots: 1 is idle"),
                             Pair("small", "queued behind task twelve (priority 42)")));
}

TEST(SchedulerTest, TaskWaitingForEitherOfTwoGroupsNamesBoth) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 1), Agent("b", 8), Agent("c", 4, 1), Agent("d", 4),
                               Agent("e", 4), Agent("f", 4)},
                              {Task("sixteen", 16, 1)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("sixteen",
                                          "waiting for 2 idle agents of 8 slots (1 is idle) or "
                                          "4 idle agents of 4 slots (3 are idle)")));
}

TEST(SchedulerTest, TaskWaitingForOneAgentOrAGroupNamesBoth) {
  ScheduleResult r =
      ScheduleListingAll({Agent("a", 8, 4), Agent("b", 4), Agent("c", 4, 1)}, {Task("eight", 8, 1)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("eight",
                                          "waiting for 8 free slots on one agent (the most free "
                                          "on any agent is 4) or 2 idle agents of 4 slots (1 "
                                          "is idle)")));
}

TEST(SchedulerTest, MixedSizesReasonCountsDisabledAgentsPerSize) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8), Disabled("b", 8), Agent("c", 4), Agent("d", 4)},
                              {Task("sixteen", 16, 1)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("sixteen",
                                          "needs 16 slots: 2 agents of 8 or 4 agents of 4, the "
                                          "cluster has 1 of 8 and 2 of 4 enabled (1 more of 8 "
                                          "disabled)")));
}

TEST(SchedulerTest, TaskThatCanNeverRunGivesItsOwnReasonEvenBehindAWaitingTask) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 8), Agent("b", 8)},
                              {Task("big", 16, 1), Task("odd", 12, 2), Task("small", 1, 3)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting,
              UnorderedElementsAre(Pair("big", "waiting for 2 idle agents of 8 slots: 1 is idle"),
                                   Pair("odd", HasSubstr("not a multiple")),
                                   Pair("small", "queued behind task big (priority 42)")));
}

TEST(SchedulerTest, TaskAskingForNoSlotsWaitsAndHoldsNobodyBack) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8)}, {Task("zero", 0, 1), Task("t", 8, 2)});
  EXPECT_THAT(r.waiting, ElementsAre(Pair("zero", "needs at least 1 slot, asked for 0")));
  EXPECT_THAT(Placed(r), ElementsAre(Pair("t", AgentSlots{{"a", 8}})));
}

TEST(SchedulerTest, AgentUsingMoreThanItsSlotsCountsAsFull) {
  ScheduleResult r = ScheduleListingAll({Agent("a", 8, 10)}, {Task("t", 1, 1)});
  EXPECT_THAT(Placed(r), IsEmpty());
  EXPECT_THAT(r.waiting, ElementsAre(Pair("t", HasSubstr("the most free on any agent is 0"))));
}

TEST(FeasibleTest, RefusesNineSlotsOnOneEightSlotAgentNamingNineAndEight) {
  absl::Status s = Feasible({Agent("a", 8)}, 9);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(s.message(), "needs 9 slots but the whole cluster has 8 (1 agent)");
}

TEST(FeasibleTest, AcceptsSixteenSlotsOnTwoEightSlotAgents) {
  EXPECT_OK(Feasible({Agent("a", 8), Agent("b", 8)}, 16));
}

TEST(FeasibleTest, AcceptsTwelveSlotsOnTwoEightSlotAgentsToWaitWithItsReason) {
  // It fits in total; Schedule keeps it waiting ("not a multiple of the 8 slots per agent").
  EXPECT_OK(Feasible({Agent("a", 8), Agent("b", 8)}, 12));
}

TEST(FeasibleTest, RefusesTwentyFourSlotsOnTwoEightSlotAgents) {
  absl::Status s = Feasible({Agent("a", 8), Agent("b", 8)}, 24);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(s.message(), "needs 24 slots but the whole cluster has 16 (2 agents)");
}

TEST(FeasibleTest, RejectsZeroOrNegativeSlotsAsInvalid) {
  EXPECT_THAT(Feasible({Agent("a", 8)}, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Feasible({}, -1), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(FeasibleTest, AcceptsAnyPositiveSizeWhenNoAgentsHaveJoined) {
  EXPECT_OK(Feasible({}, 1));
  EXPECT_OK(Feasible({}, 1000));
}

TEST(FeasibleTest, AcceptsUpToTheLargestAgentOnMixedSizes) {
  EXPECT_OK(Feasible({Agent("a", 4), Agent("b", 8)}, 8));
  EXPECT_OK(Feasible({Agent("a", 4), Agent("b", 8)}, 5));
}

TEST(FeasibleTest, CountsEveryAgentOfMixedSizes) {
  EXPECT_OK(Feasible({Agent("a", 4), Agent("b", 8)}, 12));
  EXPECT_THAT(Feasible({Agent("a", 4), Agent("b", 8)}, 13),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(FeasibleTest, CountsDisabledAndBusyAgents) {
  EXPECT_OK(Feasible({Agent("a", 8, 8), Disabled("b", 8)}, 16));
}

}  // namespace
}  // namespace cohort::master
