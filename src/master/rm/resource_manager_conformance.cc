#include "master/rm/resource_manager_conformance.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"

namespace cohort::master::rm {

void RecordingEvents::NodeJoined(const std::string& where,
                                 const std::vector<wire::RunningAllocation>& claims,
                                 const std::vector<std::string>& /*running*/) {
  MutexLock lock(&mu_);
  joined_.push_back({where, claims});
}

bool RecordingEvents::NodeLeaving(const std::string& where) {
  MutexLock lock(&mu_);
  leaving_.push_back(where);
  return still_running_;
}

void RecordingEvents::OffersChanged() {
  MutexLock lock(&mu_);
  ++offers_changed_;
}

std::vector<RecordingEvents::Joined> RecordingEvents::joined() const {
  MutexLock lock(&mu_);
  return joined_;
}

std::vector<std::string> RecordingEvents::leaving() const {
  MutexLock lock(&mu_);
  return leaving_;
}

int RecordingEvents::offers_changed() const {
  MutexLock lock(&mu_);
  return offers_changed_;
}

void RecordingEvents::set_still_running(bool running) {
  MutexLock lock(&mu_);
  still_running_ = running;
}

namespace {

using ::cohort::testing_support::IsOk;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr absl::Duration kNoWait = absl::ZeroDuration();
constexpr absl::Duration kArrives = absl::Seconds(10);  // what was sent arrives by then

std::optional<AgentState> OfferOf(ResourceManager& rm, const std::string& node) {
  for (const AgentState& offer : rm.Offers()) {
    if (offer.id == node) return offer;
  }
  return std::nullopt;
}

// One start per node of `placement`, as the master makes them.
std::vector<wire::StartAction> StartsFor(const std::string& allocation, int64_t trial,
                                         const Placement& placement) {
  std::vector<wire::StartAction> starts;
  for (size_t node = 0; node < placement.agents.size(); ++node) {
    starts.push_back({.allocation = allocation,
                      .trial_id = trial,
                      .node_rank = static_cast<int>(node),
                      .nnodes = static_cast<int>(placement.agents.size()),
                      .slots = placement.agents[node].second,
                      .reports = node == 0});
  }
  return starts;
}

template <typename T>
std::vector<T> Only(const std::vector<wire::Action>& actions) {
  std::vector<T> out;
  for (const wire::Action& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

TEST_P(ResourceManagerConformance, OffersEveryJoinedNodeWithItsSlotsFree) {
  ASSERT_OK(harness_->Join("n1", 2, {}));
  ASSERT_OK(harness_->Join("n2", 1, {}));
  const std::optional<AgentState> n1 = OfferOf(rm(), "n1");
  const std::optional<AgentState> n2 = OfferOf(rm(), "n2");
  ASSERT_TRUE(n1.has_value() && n2.has_value());
  EXPECT_EQ(n1->slots, 2);
  EXPECT_EQ(n1->used, 0);
  EXPECT_TRUE(n1->enabled);
  EXPECT_EQ(n2->slots, 1);
  EXPECT_THAT(harness_->events().joined(),
              ElementsAre(Field(&RecordingEvents::Joined::where, "n1"),
                          Field(&RecordingEvents::Joined::where, "n2")));
  EXPECT_TRUE(rm().Fits({"1", {{"n1", 2}, {"n2", 1}}}, {}));
  EXPECT_FALSE(rm().Fits({"1", {{"n1", 3}}}, {})) << "n1 has two slots";
  EXPECT_FALSE(rm().Fits({"1", {{"n1", 1}}}, {"n1"})) << "n1 is excluded";
  EXPECT_FALSE(rm().Fits({"1", {{"n9", 1}}}, {})) << "there is no n9";
}

TEST_P(ResourceManagerConformance, StartSendsEachNodeItsPartWithOneRendezvousAndHoldsTheSlots) {
  ASSERT_OK(harness_->Join("n1", 2, {}));
  ASSERT_OK(harness_->Join("n2", 2, {}));
  const Placement placement{"7", {{"n1", 2}, {"n2", 1}}};
  ASSERT_OK(rm().Start(placement, StartsFor("7.b.1", 7, placement)));

  ASSERT_OK_AND_ASSIGN(std::vector<wire::Action> at_n1, harness_->Received("n1", kArrives));
  ASSERT_OK_AND_ASSIGN(std::vector<wire::Action> at_n2, harness_->Received("n2", kArrives));
  const std::vector<wire::StartAction> s1 = Only<wire::StartAction>(at_n1);
  const std::vector<wire::StartAction> s2 = Only<wire::StartAction>(at_n2);
  ASSERT_THAT(s1, SizeIs(1));
  ASSERT_THAT(s2, SizeIs(1));
  EXPECT_EQ(s1[0].allocation, "7.b.1");
  EXPECT_EQ(s1[0].node_rank, 0);
  EXPECT_EQ(s2[0].node_rank, 1);
  EXPECT_EQ(s2[0].slots, 1);
  EXPECT_FALSE(s1[0].chief_addr.empty()) << "node 0's rendezvous address";
  EXPECT_EQ(s1[0].chief_addr, s2[0].chief_addr) << "one rendezvous for every node";

  EXPECT_EQ(OfferOf(rm(), "n1")->used, 2);
  EXPECT_EQ(OfferOf(rm(), "n2")->used, 1);
  EXPECT_FALSE(rm().Fits({"8", {{"n1", 1}}}, {})) << "n1's slots are held";
  EXPECT_TRUE(rm().Fits({"8", {{"n2", 1}}}, {}));
  int held = 0;
  for (const wire::SlotEntry& slot : rm().Slots().slots) {
    if (slot.allocation.has_value()) {
      EXPECT_EQ(*slot.allocation, "7.b.1");
      EXPECT_EQ(slot.trial_id, 7);
      ++held;
    }
  }
  EXPECT_EQ(held, 3);
}

TEST_P(ResourceManagerConformance, StartOnAGoneNodeStartsNothingAndHoldsNothing) {
  ASSERT_OK(harness_->Join("n1", 2, {}));
  const Placement placement{"7", {{"n1", 1}, {"gone", 1}}};
  const absl::Status started = rm().Start(placement, StartsFor("7.b.1", 7, placement));
  EXPECT_TRUE(absl::IsFailedPrecondition(started)) << started;
  EXPECT_THAT(std::string(started.message()), testing::HasSubstr("gone"));
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<wire::Action> at_n1, harness_->Received("n1", kNoWait));
  EXPECT_THAT(at_n1, IsEmpty());
}

TEST_P(ResourceManagerConformance, StopReachesTheNodeWithItsMode) {
  ASSERT_OK(harness_->Join("n1", 1, {}));
  const Placement placement{"7", {{"n1", 1}}};
  ASSERT_OK(rm().Start(placement, StartsFor("7.b.1", 7, placement)));
  ASSERT_OK(harness_->Received("n1", kArrives).status());
  rm().Stop("7.b.1", "n1", wire::StopMode::kKill);
  rm().Stop("unknown.b.9", "n1", wire::StopMode::kPreempt);  // one the node claims, say
  rm().Stop("7.b.1", "nowhere", wire::StopMode::kKill);      // nothing to tell
  ASSERT_OK_AND_ASSIGN(std::vector<wire::Action> at_n1, harness_->Received("n1", kArrives));
  const std::vector<wire::StopAction> stops = Only<wire::StopAction>(at_n1);
  ASSERT_THAT(stops, SizeIs(2));
  EXPECT_EQ(stops[0].allocation, "7.b.1");
  EXPECT_EQ(stops[0].mode, wire::StopMode::kKill);
  EXPECT_EQ(stops[1].allocation, "unknown.b.9");
  EXPECT_EQ(stops[1].mode, wire::StopMode::kPreempt);
}

TEST_P(ResourceManagerConformance, ReleaseFreesTheSlotsOnce) {
  ASSERT_OK(harness_->Join("n1", 2, {}));
  const Placement placement{"7", {{"n1", 2}}};
  ASSERT_OK(rm().Start(placement, StartsFor("7.b.1", 7, placement)));
  rm().Release("7.b.1");
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 0);
  EXPECT_TRUE(rm().Fits({"8", {{"n1", 2}}}, {}));
  rm().Release("7.b.1");  // again: nothing
  rm().Release("never.b.1");
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 0);
  for (const wire::SlotEntry& slot : rm().Slots().slots) EXPECT_FALSE(slot.allocation.has_value());
}

TEST_P(ResourceManagerConformance, RestoredAllocationHoldsItsSlotsWhenItsNodeClaimsItBack) {
  rm().Restore("7.old.1", 7, {{"n1", 1}});
  const wire::RunningAllocation claim{.allocation = "7.old.1", .trial_id = 7, .node_rank = 0};
  ASSERT_OK(harness_->Join("n1", 2, {claim}));
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 1) << "the restored allocation holds a slot";
  const std::vector<RecordingEvents::Joined> joined = harness_->events().joined();
  ASSERT_THAT(joined, SizeIs(1));
  ASSERT_THAT(joined[0].claims, SizeIs(1));
  EXPECT_EQ(joined[0].claims[0].allocation, "7.old.1");
  rm().Release("7.old.1");
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 0);
}

TEST_P(ResourceManagerConformance, ASilentNodeIsReportedLostOnceAndOfferedNoMore) {
  ASSERT_OK(harness_->Join("n1", 1, {}));
  ASSERT_OK(harness_->Join("n2", 1, {}));
  const Placement placement{"7", {{"n1", 1}}};
  ASSERT_OK(rm().Start(placement, StartsFor("7.b.1", 7, placement)));
  harness_->Silence("n1");
  const std::vector<LostNode> lost = rm().ExpireLost();
  ASSERT_THAT(lost, SizeIs(1));
  EXPECT_EQ(lost[0].where, "n1");
  EXPECT_THAT(lost[0].why, testing::HasSubstr("n1"));
  EXPECT_THAT(rm().ExpireLost(), IsEmpty()) << "reported once";
  EXPECT_FALSE(OfferOf(rm(), "n1").has_value());
  EXPECT_TRUE(OfferOf(rm(), "n2").has_value());
  EXPECT_FALSE(rm().Fits({"8", {{"n1", 1}}}, {}));
  rm().Release("7.b.1");  // the master ends the allocation: nothing breaks
  // Back again, it is offered with nothing held.
  ASSERT_OK(harness_->Join("n1", 1, {}));
  EXPECT_EQ(OfferOf(rm(), "n1")->used, 0);
}

TEST_P(ResourceManagerConformance, ALeavingNodeIsOfferedNoMoreAndGoesOnceNothingRunsThere) {
  ASSERT_OK(harness_->Join("n1", 1, {}));
  harness_->events().set_still_running(true);
  ASSERT_OK_AND_ASSIGN(bool gone, harness_->Leave("n1"));
  EXPECT_FALSE(gone) << "something still runs there";
  EXPECT_THAT(harness_->events().leaving(), ElementsAre("n1"));
  EXPECT_FALSE(rm().Fits({"8", {{"n1", 1}}}, {})) << "nothing more is placed on it";
  const std::optional<AgentState> offer = OfferOf(rm(), "n1");
  EXPECT_TRUE(!offer.has_value() || !offer->enabled);
  harness_->events().set_still_running(false);
  const int changed = harness_->events().offers_changed();
  ASSERT_OK_AND_ASSIGN(gone, harness_->Leave("n1"));
  EXPECT_TRUE(gone);
  EXPECT_FALSE(OfferOf(rm(), "n1").has_value());
  EXPECT_GT(harness_->events().offers_changed(), changed);
}

}  // namespace
}  // namespace cohort::master::rm
