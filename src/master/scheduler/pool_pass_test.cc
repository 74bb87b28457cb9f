// Schedule(ScheduleInput) rule by rule (scheduler.h, "Shared clusters"): pools, max_slots,
// priority preemption and fair share, each on the smallest cluster that shows it.
#include "master/scheduler/pool_pass.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/scheduler/scheduler.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

AgentState Agent(std::string id, int slots, int used = 0, std::string pool = kDefaultPool) {
  AgentState a{std::move(id), slots, used, true};
  a.pool = std::move(pool);
  return a;
}

TaskRequest Task(std::string id, int64_t experiment, int slots, int64_t sequence,
                 int priority = 42, std::string pool = kDefaultPool) {
  TaskRequest t{std::move(id), slots, priority, sequence};
  t.experiment_id = experiment;
  t.pool = std::move(pool);
  return t;
}

RunningTask Running(std::string id, int64_t experiment, std::string agent, int slots,
                    int64_t sequence, int priority = 42, bool stopping = false) {
  RunningTask t;
  t.id = std::move(id);
  t.experiment_id = experiment;
  t.agents = {{std::move(agent), slots}};
  t.sequence = sequence;
  t.priority = priority;
  t.stopping = stopping;
  return t;
}

std::vector<std::string> PlacedIds(const ScheduleResult& r) {
  std::vector<std::string> ids;
  for (const Placement& p : r.placements) ids.push_back(p.task_id);
  return ids;
}

std::vector<std::string> PreemptedIds(const ScheduleResult& r) {
  std::vector<std::string> ids;
  for (const Preemption& p : r.preemptions) ids.push_back(p.task_id);
  return ids;
}

ScheduleInput Input(std::vector<AgentState> agents, std::vector<TaskRequest> queue,
                    std::vector<RunningTask> running = {}, bool preemption = true,
                    PoolPolicy policy = PoolPolicy::kPriority) {
  ScheduleInput in;
  in.agents = std::move(agents);
  in.queue = std::move(queue);
  in.running = std::move(running);
  in.pools[kDefaultPool] = PoolSpec{policy, preemption};
  return in;
}

TEST(PoolsTest, ATaskRunsOnlyOnItsPoolsAgents) {
  ScheduleInput in = Input({Agent("big", 8, 0, "big"), Agent("small", 1, 1)},
                           {Task("one", 1, 1, 1), Task("eight", 2, 8, 2, 42, "big")});
  const ScheduleResult r = Schedule(in);
  ASSERT_EQ(r.placements.size(), 1u);
  EXPECT_EQ(r.placements[0].task_id, "eight");
  EXPECT_THAT(r.placements[0].agents, ElementsAre(Pair("big", 8)));
  // The 1-slot task waits for the small agent, never taking the idle 8-slot one.
  EXPECT_THAT(r.waiting.at("one"), HasSubstr("waiting for 1 free slot on one agent"));
}

TEST(PoolsTest, APoolWithoutAgentsSaysSoAndEachPoolHasItsOwnBlocker) {
  ScheduleInput in = Input({Agent("a", 2, 2, "cpu"), Agent("b", 2, 0)},
                           {Task("gpu-task", 1, 1, 1, 42, "gpu"), Task("cpu-task", 2, 1, 2, 42, "cpu"),
                            Task("default-task", 3, 2, 3)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(PlacedIds(r), ElementsAre("default-task"));
  EXPECT_EQ(r.waiting.at("gpu-task"),
            "no agents of resource pool 'gpu' are connected (or all are disabled)");
  ASSERT_TRUE(r.blockers.count("cpu"));
  EXPECT_EQ(r.blockers.at("cpu").id, "cpu-task");
  EXPECT_FALSE(r.blocker.has_value()) << "the default pool placed all it had";
}

TEST(MaxSlotsTest, AnExperimentAtItsCapWaitsWithoutHoldingOthersBack) {
  ScheduleInput in = Input({Agent("a", 8, 2)},
                           {Task("t1", 1, 1, 1), Task("t2", 1, 1, 2), Task("other", 2, 4, 3)},
                           {Running("r1", 1, "a", 2, 0)});
  in.experiments[1].max_slots = 3;
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(PlacedIds(r), ElementsAre("t1", "other"));
  EXPECT_EQ(r.waiting.at("t2"), "experiment 1 holds 3 slots: its resources.max_slots is 3");
  EXPECT_FALSE(r.blocker.has_value());
}

TEST(PriorityPreemptionTest, AnUrgentTaskPreemptsTheNewestLowerPriorityTaskItNeeds) {
  ScheduleInput in = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 2, 10, 10)},
                           {Running("old", 1, "a", 2, 1, 50), Running("new", 1, "a", 2, 2, 50)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(r.placements, IsEmpty());
  ASSERT_THAT(PreemptedIds(r), ElementsAre("new"));
  EXPECT_EQ(r.preemptions[0].reason, "preempted by experiment 9 (priority 10)");
  EXPECT_EQ(r.waiting.at("urgent"),
            "waiting for 1 trial of lower priority to checkpoint and stop (preempted for it)");
}

TEST(PriorityPreemptionTest, OffByDefaultAndNeverForEqualOrHigherPriority) {
  ScheduleInput off = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 2, 10, 10)},
                            {Running("low", 1, "a", 4, 1, 50)}, /*preemption=*/false);
  EXPECT_THAT(Schedule(off).preemptions, IsEmpty());
  off.pools.clear();  // a pool without a spec: the priority policy, preemption off
  EXPECT_THAT(Schedule(off).preemptions, IsEmpty());
  off.pools[kDefaultPool].preemption = true;
  EXPECT_THAT(PreemptedIds(Schedule(off)), ElementsAre("low"));
  ScheduleInput equal = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 2, 10, 50)},
                              {Running("same", 1, "a", 4, 1, 50)});
  EXPECT_THAT(Schedule(equal).preemptions, IsEmpty());
}

TEST(PriorityPreemptionTest, NothingIsPreemptedWhenItWouldStillNotFit) {
  // 8 slots on two 4-slot agents: the 4 of priority 50 alone would leave a2 busy.
  ScheduleInput in = Input({Agent("a1", 4, 4), Agent("a2", 4, 4)}, {Task("big", 9, 8, 10, 10)},
                           {Running("low", 1, "a1", 4, 1, 50), Running("high", 2, "a2", 4, 2, 5)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(r.preemptions, IsEmpty());
  EXPECT_THAT(r.waiting.at("big"), HasSubstr("waiting for"));
}

TEST(PriorityPreemptionTest, SlotsAlreadyBeingFreedAreWaitedForNotPreemptedAgain) {
  ScheduleInput in = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 2, 10, 10)},
                           {Running("leaving", 1, "a", 2, 1, 50, /*stopping=*/true),
                            Running("other", 1, "a", 2, 2, 50)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(r.preemptions, IsEmpty());
  EXPECT_EQ(r.waiting.at("urgent"), "waiting for trials that are stopping to free their slots");
}

TEST(PriorityPreemptionTest, LowestPriorityFirstThenWhatWasNotNeededIsGivenBack) {
  // X (priority 60, 1 slot) goes first but does not make room; Y (50, 3 slots) does, alone.
  ScheduleInput in = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 3, 10, 10)},
                           {Running("x", 1, "a", 1, 5, 60), Running("y", 2, "a", 3, 1, 50)});
  EXPECT_THAT(PreemptedIds(Schedule(in)), ElementsAre("y"));
  ScheduleInput two = Input({Agent("a", 4, 4)}, {Task("urgent", 9, 2, 10, 10)},
                            {Running("x", 1, "a", 2, 5, 60), Running("y", 2, "a", 2, 1, 50)});
  EXPECT_THAT(PreemptedIds(Schedule(two)), ElementsAre("x")) << "the lowest priority first";
}

TEST(PriorityPreemptionTest, EachUrgentTaskInOrderGetsRoomInOnePassUntilOneFindsNone) {
  ScheduleInput in = Input({Agent("a", 4, 4)},
                           {Task("u1", 9, 1, 10, 10), Task("u2", 9, 1, 11, 10),
                            Task("u3", 9, 4, 12, 10), Task("u4", 9, 1, 13, 10)},
                           {Running("l1", 1, "a", 1, 1, 50), Running("l2", 1, "a", 1, 2, 50),
                            Running("h", 2, "a", 2, 3, 5)});
  const ScheduleResult r = Schedule(in);
  // u1 and u2 take l2's and l1's slots; u3 (4 slots) would need h's too: nothing more.
  EXPECT_THAT(PreemptedIds(r), ElementsAre("l2", "l1"));
  EXPECT_THAT(r.waiting.at("u2"), HasSubstr("preempted for it"));
  EXPECT_THAT(r.waiting, ::testing::Not(::testing::Contains(::testing::Key("u4"))))
      << "u4 is behind u3: the master says queued behind";
}

TEST(PriorityPreemptionTest, PreemptedTasksQueueBehindTheTaskTheyMadeRoomFor) {
  // The next pass: the preempted task is queued again (its own sequence), the slots are free.
  ScheduleInput in = Input({Agent("a", 4, 2)}, {Task("new", 1, 2, 2, 50), Task("urgent", 9, 2, 10, 10)},
                           {Running("old", 1, "a", 2, 1, 50)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(PlacedIds(r), ElementsAre("urgent"));
  EXPECT_THAT(r.waiting.at("new"), HasSubstr("waiting for 2 free slots"));
  EXPECT_THAT(r.preemptions, IsEmpty()) << "new waits: it never displaces urgent";
}

// Determined's TestPrioritySchedulingPreemption (master/internal/resourcemanagers/
// priority_test.go): the medium-priority task is preempted for the 4-slot high-priority one,
// the high-priority running one is not, and nothing starts in this pass.
TEST(DeterminedCasesTest, PrioritySchedulingPreemption) {
  ScheduleInput in = Input({Agent("agent1", 4, 4), Agent("agent2", 4, 4)},
                           {Task("low", 1, 1, 10, 50), Task("high-4", 3, 4, 11, 40),
                            Task("high-8", 3, 8, 12, 40)},
                           {Running("medium", 2, "agent1", 4, 1, 45),
                            Running("high-running", 4, "agent2", 4, 2, 40)});
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(r.placements, IsEmpty());
  EXPECT_THAT(PreemptedIds(r), ElementsAre("medium"));
}

// Determined's TestPrioritySchedulingPreemptionDisabledLowerPriorityMustWait: the three 1-slot
// high-priority tasks start, the 2-slot one waits, and the low-priority task waits behind it.
TEST(DeterminedCasesTest, PreemptionDisabledLowerPriorityMustWait) {
  ScheduleInput in = Input({Agent("agent1", 4)},
                           {Task("task1", 1, 1, 1, 50), Task("task2", 2, 1, 2, 40),
                            Task("task3", 2, 1, 3, 40), Task("task4", 2, 1, 4, 40),
                            Task("task5", 2, 2, 5, 40)},
                           {}, /*preemption=*/false);
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(PlacedIds(r), ElementsAre("task2", "task3", "task4"));
  ASSERT_TRUE(r.blocker.has_value());
  EXPECT_EQ(r.blocker->id, "task5");
  EXPECT_TRUE(IsBehind(*r.blocker, 50, 1)) << "task1 waits behind it";
}

TEST(FairShareTest, SharesFollowWeightsAndNoOneGetsMoreThanItAsks) {
  EXPECT_THAT(placing::FairShares(8, {{1, 1}, {2, 1}}, {{1, 10}, {2, 2}}),
              ElementsAre(Pair(1, 6.0), Pair(2, 2.0)));
  EXPECT_THAT(placing::FairShares(8, {{1, 3}, {2, 1}}, {{1, 10}, {2, 10}}),
              ElementsAre(Pair(1, 6.0), Pair(2, 2.0)));
  EXPECT_THAT(placing::FairShares(8, {{1, 1}, {2, 1}, {3, 2}}, {{1, 1}, {2, 10}, {3, 10}}),
              ElementsAre(Pair(1, 1.0), Pair(2, 7.0 / 3), Pair(3, 14.0 / 3)));
}

std::vector<AgentState> OneSlotAgents(int n) {
  std::vector<AgentState> agents;
  for (int i = 0; i < n; ++i) agents.push_back(Agent("a" + std::to_string(i), 1));
  return agents;
}

TEST(FairShareTest, SlotsAreDividedByWeightThenIdleOnesGoToAnyone) {
  std::vector<TaskRequest> queue;
  for (int i = 0; i < 8; ++i) queue.push_back(Task("e1-" + std::to_string(i), 1, 1, i));
  for (int i = 0; i < 8; ++i) queue.push_back(Task("e2-" + std::to_string(i), 2, 1, 100 + i));
  ScheduleInput in = Input(OneSlotAgents(8), queue, {}, true, PoolPolicy::kFairShare);
  in.experiments[1].weight = 3;
  const ScheduleResult r = Schedule(in);
  int e1 = 0, e2 = 0;
  for (const std::string& id : PlacedIds(r)) (id[1] == '1' ? e1 : e2)++;
  EXPECT_EQ(e1, 6);
  EXPECT_EQ(e2, 2);
  EXPECT_THAT(r.waiting.at("e2-2"), HasSubstr("fair share: experiment 2 holds 2 slots"));
  // Alone, an experiment takes every slot.
  ScheduleInput alone = Input(OneSlotAgents(4), {Task("x1", 1, 1, 1), Task("x2", 1, 1, 2),
                                                 Task("x3", 1, 1, 3), Task("y", 2, 1, 4)},
                              {}, true, PoolPolicy::kFairShare);
  EXPECT_EQ(Schedule(alone).placements.size(), 4u);
}

TEST(FairShareTest, AnExperimentBelowItsSharePreemptsTheNewestTasksOfOneAboveIt) {
  std::vector<RunningTask> running;
  for (int i = 0; i < 4; ++i) {
    running.push_back(Running("e1-" + std::to_string(i), 1, "a" + std::to_string(i), 1, i));
  }
  std::vector<AgentState> agents = OneSlotAgents(4);
  for (AgentState& a : agents) a.used = 1;
  ScheduleInput in = Input(agents, {Task("e2-0", 2, 1, 10), Task("e2-1", 2, 1, 11)}, running,
                           true, PoolPolicy::kFairShare);
  const ScheduleResult r = Schedule(in);
  EXPECT_THAT(PreemptedIds(r), ElementsAre("e1-3", "e1-2"));
  EXPECT_THAT(r.preemptions[0].reason, HasSubstr("experiment 2 is below its share"));
  // Without preemption the newcomer waits for a slot.
  in.pools[kDefaultPool].preemption = false;
  EXPECT_THAT(Schedule(in).preemptions, IsEmpty());
}

}  // namespace
}  // namespace cohort::master
