#include <string>

#include "common/clock.h"
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
  ASSERT_TRUE(registry.Touch("a2").ok());
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
  Allocation& first = allocations.Add(7, {"7", {{"a1", 2}}}, "t1");
  EXPECT_EQ(first.id, "7.beef.1");
  const std::string first_id = first.id;
  EXPECT_TRUE(allocations.CheckBelongs(first_id, 7, true).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(allocations.CheckBelongs(first_id, 8, false)));
  allocations.Remove(first_id);
  EXPECT_EQ(allocations.OfTrial(7), nullptr);
  const std::string second_id = allocations.Add(7, {"7", {{"a2", 2}}}, "t2").id;
  EXPECT_EQ(second_id, "7.beef.2");
  absl::Status stale = allocations.CheckBelongs(first_id, 7, /*latest=*/true);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("superseded by allocation 7.beef.2"));
  EXPECT_TRUE(allocations.CheckBelongs(first_id, 7, /*latest=*/false).ok()) << "logs still count";
}

TEST(AllocationsTest, OnlyARunningAllocationsOwnTokenIsAccepted) {
  Allocations allocations("beef");
  const std::string a = allocations.Add(1, {"1", {{"a1", 1}}}, "token-a").id;
  const std::string b = allocations.Add(2, {"2", {{"a1", 1}}}, "token-b").id;
  EXPECT_TRUE(allocations.CheckToken(a, "token-a").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(allocations.CheckToken(a, "token-b")));
  EXPECT_TRUE(absl::IsUnauthenticated(allocations.CheckToken(b, "")));
  allocations.Remove(a);
  EXPECT_TRUE(absl::IsNotFound(allocations.CheckToken(a, "token-a"))) << "not after it ended";
}

TEST(AllocationsTest, ALostAgentMarksItsNodesExitedAndAnAllocationEndsWhenAllNodesHave) {
  Allocations allocations("beef");
  Allocation& a = allocations.Add(3, {"3", {{"a1", 4}, {"a2", 4}}}, "t3");
  EXPECT_THAT(allocations.SlotOwners("a1"), testing::SizeIs(4));
  EXPECT_THAT(allocations.MarkAgentLost("a2"), ElementsAre(a.id));
  EXPECT_FALSE(a.AllExited());
  a.exits[0] = 0;
  EXPECT_TRUE(a.AllExited());
  EXPECT_FALSE(a.AllExitedOk()) << "a lost node is not a clean exit";
  EXPECT_THAT(allocations.MarkAgentLost("a2"), IsEmpty()) << "already marked";
}

}  // namespace
}  // namespace cohort::master
