#include <string>

#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/agents/agent_registry.h"
#include "master/agents/allocations.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(AgentRegistryTest, AnAgentIsExpiredOnlyWhenSilentPastTheTimeoutAndNotPolling) {
  FakeClock clock;
  AgentRegistry registry(clock, absl::Seconds(30));
  registry.Register("a1", 2, "h1", 29500, 29501, true);
  registry.Register("a2", 2, "h2", 29500, 29501, true);
  clock.Advance(absl::Seconds(30));
  EXPECT_THAT(registry.Expired(), IsEmpty()) << "exactly the timeout is not past it";
  ASSERT_OK(registry.Touch("a2"));
  registry.Find("a1")->polling = 1;
  clock.Advance(absl::Seconds(1));
  EXPECT_THAT(registry.Expired(), IsEmpty()) << "a1 waits in a long poll; a2 was just heard";
  registry.Find("a1")->polling = 0;
  EXPECT_THAT(registry.Expired(), ElementsAre("a1"));
  registry.Remove("a1");
  EXPECT_THAT(registry.Touch("a1").message(), HasSubstr("agent a1 is not registered"));
}

TEST(AgentRegistryTest, ActionsQueueUntilTakenAndChiefPortsGoRoundRobin) {
  FakeClock clock;
  AgentRegistry registry(clock, absl::Seconds(30));
  AgentLive& a = registry.Register("a1", 4, "10.0.0.1", 29500, 29501, true);
  EXPECT_TRUE(registry.Push("a1", wire::StopAction{"1.ab.1", wire::StopMode::kKill}));
  EXPECT_FALSE(registry.Push("nobody", wire::StopAction{"1.ab.1"}));
  EXPECT_EQ(registry.TakeActions(a).actions.size(), 1u);
  EXPECT_TRUE(registry.TakeActions(a).actions.empty());
  EXPECT_EQ(registry.NextChiefAddress(a), "10.0.0.1:29500");
  EXPECT_EQ(registry.NextChiefAddress(a), "10.0.0.1:29501");
  EXPECT_EQ(registry.NextChiefAddress(a), "10.0.0.1:29500");
  a.state.used = 3;
  registry.Release("a1", 5);
  EXPECT_EQ(a.state.used, 0) << "never below zero";
}

TEST(AllocationsTest, IdsNameTheirTrialAndOnlyTheLatestMayReport) {
  Allocations allocations("beef");
  Allocation& first = allocations.Add(7, {"7", {{"a1", 2}}}, "t1", "t1");
  EXPECT_EQ(first.id, "7.beef.1");
  const std::string first_id = first.id;
  EXPECT_OK(allocations.CheckBelongs(first_id, 7, true));
  EXPECT_TRUE(absl::IsInvalidArgument(allocations.CheckBelongs(first_id, 8, false)));
  allocations.Remove(first_id);
  EXPECT_EQ(allocations.OfTrial(7), nullptr);
  const std::string second_id = allocations.Add(7, {"7", {{"a2", 2}}}, "t2", "t2").id;
  EXPECT_EQ(second_id, "7.beef.2");
  absl::Status stale = allocations.CheckBelongs(first_id, 7, /*latest=*/true);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("superseded by allocation 7.beef.2"));
  EXPECT_OK(allocations.CheckBelongs(first_id, 7, /*latest=*/false)) << "logs still count";
}

TEST(AllocationsTest, OnlyARunningAllocationsOwnTokenIsAccepted) {
  Allocations allocations("beef");
  const std::string a = allocations.Add(1, {"1", {{"a1", 1}}}, "token-a", "token-a").id;
  const std::string b = allocations.Add(2, {"2", {{"a1", 1}}}, "token-b", "token-b").id;
  EXPECT_OK(allocations.CheckToken(a, "token-a"));
  EXPECT_TRUE(absl::IsUnauthenticated(allocations.CheckToken(a, "token-b")));
  EXPECT_TRUE(absl::IsUnauthenticated(allocations.CheckToken(b, "")));
  allocations.Remove(a);
  EXPECT_TRUE(absl::IsNotFound(allocations.CheckToken(a, "token-a"))) << "not after it ended";
}

TEST(AllocationsTest, ALostAgentMarksItsNodesExitedAndAnAllocationEndsWhenAllNodesHave) {
  Allocations allocations("beef");
  Allocation& a = allocations.Add(3, {"3", {{"a1", 4}, {"a2", 4}}}, "t3", "t3");
  EXPECT_THAT(allocations.MarkAgentLost("a2"), ElementsAre(a.id));
  EXPECT_FALSE(a.AllExited());
  a.exits[0] = 0;
  EXPECT_TRUE(a.AllExited());
  EXPECT_FALSE(a.AllExitedOk()) << "a lost node is not a clean exit";
  EXPECT_THAT(allocations.MarkAgentLost("a2"), IsEmpty()) << "already marked";
}

TEST(AllocationsTest, ARestoredAllocationRunsAgainOnceEveryNodeIsClaimedByItsOwnAgent) {
  Allocations allocations("c0de");
  const absl::Time deadline = absl::FromUnixSeconds(100);
  Allocation& a = allocations.Restore(5, "5.beef.1", "hash", {{"a1", 1}, {"a2", 1}}, deadline);
  EXPECT_EQ(a.state, AllocationState::kRecovering);
  EXPECT_EQ(allocations.OfTrial(5), &a);
  EXPECT_OK(allocations.CheckBelongs("5.beef.1", 5, /*latest=*/true)) << "it may report";
  EXPECT_OK(allocations.CheckToken("5.beef.1", "hash")) << "its agent's token still works";
  EXPECT_FALSE(a.HeardFrom());
  const wire::RunningAllocation node0{.allocation = "5.beef.1", .trial_id = 5, .node_rank = 0};
  EXPECT_EQ(allocations.Claim("a2", node0), ClaimOutcome::kMismatch) << "node 0 is a1's";
  EXPECT_EQ(allocations.Claim("a1", {.allocation = "5.beef.1", .trial_id = 6}),
            ClaimOutcome::kMismatch)
      << "another trial";
  EXPECT_EQ(allocations.Claim("a1", {.allocation = "5.beef.1", .trial_id = 5, .node_rank = 2}),
            ClaimOutcome::kMismatch)
      << "no node 2";
  EXPECT_EQ(allocations.Claim("a1", {.allocation = "9.beef.1", .trial_id = 9}),
            ClaimOutcome::kUnknown);
  EXPECT_EQ(allocations.Claim("a1", node0), ClaimOutcome::kAdopted);
  EXPECT_EQ(a.state, AllocationState::kRecovering) << "node 1 is not claimed yet";
  EXPECT_TRUE(a.HeardFrom());
  EXPECT_EQ(allocations.Claim("a2", {.allocation = "5.beef.1", .trial_id = 5, .node_rank = 1}),
            ClaimOutcome::kAdopted);
  EXPECT_EQ(a.state, AllocationState::kRunning);
  EXPECT_EQ(allocations.Claim("a1", node0), ClaimOutcome::kKept) << "a later re-registration";
  EXPECT_THAT(allocations.RecoveryExpired(deadline), IsEmpty()) << "it runs: no deadline";
}

TEST(AllocationsTest, ARecoveringAllocationExpiresAtItsDeadlineAndItsUnclaimedNodesAreLost) {
  Allocations allocations("c0de");
  const absl::Time deadline = absl::FromUnixSeconds(100);
  Allocation& a = allocations.Restore(5, "5.beef.1", "hash", {{"a1", 1}, {"a2", 1}}, deadline);
  EXPECT_THAT(allocations.RecoveryExpired(deadline - absl::Seconds(1)), IsEmpty());
  EXPECT_EQ(allocations.Claim("a1", {.allocation = "5.beef.1", .trial_id = 5}),
            ClaimOutcome::kAdopted);
  EXPECT_THAT(allocations.RecoveryExpired(deadline), ElementsAre("5.beef.1"));
  allocations.EndRecovery("5.beef.1");
  EXPECT_FALSE(a.exits[0].has_value()) << "node 0 was claimed: it runs until stopped";
  EXPECT_EQ(a.exits[1], -1);
  EXPECT_THAT(allocations.RecoveryExpired(deadline), IsEmpty()) << "its recovery ended";
  a.exits[0] = 143;
  EXPECT_TRUE(a.AllExited());
  EXPECT_EQ(allocations.Claim("a1", {.allocation = "5.beef.1", .trial_id = 5}),
            ClaimOutcome::kMismatch)
      << "an exited node is not adopted again";
}

TEST(AllocationsTest, ARegisteringAgentLosesOnlyTheNodesItDoesNotClaim) {
  Allocations allocations("beef");
  const std::string kept = allocations.Add(1, {"1", {{"a1", 1}}}, "t1", "t1").id;
  const std::string lost = allocations.Add(2, {"2", {{"a1", 1}}}, "t2", "t2").id;
  EXPECT_THAT(allocations.MarkAgentLost("a1", {{kept, 0}}), ElementsAre(lost));
  EXPECT_FALSE(allocations.Find(kept)->exits[0].has_value());
  EXPECT_EQ(allocations.Find(lost)->exits[0], -1);
}

}  // namespace
}  // namespace cohort::master
