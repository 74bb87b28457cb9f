// AgentManager: the ResourceManager contract (rm/resource_manager_conformance.h) with in-process
// agents on a FakeClock and a real SQLite database, then what only agents do: long polls, their
// supersession and shutdown, enabling, the agents' list.
#include "master/agents/agent_manager.h"

#include <future>
#include <thread>
#include <variant>

#include "cohort/status.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/rm/resource_manager_conformance.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr absl::Duration kTimeout = absl::Seconds(30);

class AgentHarness : public rm::ResourceManagerHarness {
 public:
  AgentHarness()
      : db_(SqliteDatabase::Open(dir_.path() + "/master.db").value()),
        manager_(*db_, clock_, kTimeout, events()) {}

  AgentManager& agents() { return manager_; }
  FakeClock& clock() { return clock_; }

  rm::ResourceManager& manager() override { return manager_; }
  absl::Status Join(const std::string& name, int slots,
                    const std::vector<wire::RunningAllocation>& claims) override {
    return manager_.Register(
        {.id = name, .slots = slots, .host = "127.0.0.1", .allocations = claims});
  }
  absl::StatusOr<std::vector<wire::Action>> Received(const std::string& name,
                                                     absl::Duration wait) override {
    COHORT_ASSIGN_OR_RETURN(wire::ActionBatch batch, manager_.WaitForActions(name, wait));
    return batch.actions;
  }
  void Silence(const std::string& name) override {
    // Past the timeout, every agent but `name` heartbeats.
    clock_.Advance(kTimeout + absl::Seconds(1));
    for (const AgentState& offer : manager_.Offers()) {
      if (offer.id != name) {
        EXPECT_OK(manager_.Heartbeat(offer.id));
      }
    }
  }
  absl::StatusOr<bool> Leave(const std::string& name) override { return manager_.Leave(name); }

 private:
  testing_support::TempDir dir_{"agent_manager"};
  FakeClock clock_;
  std::unique_ptr<SqliteDatabase> db_;
  AgentManager manager_;
};

std::unique_ptr<rm::ResourceManagerHarness> MakeAgentHarness() {
  return std::make_unique<AgentHarness>();
}

using rm::ResourceManagerConformance;
INSTANTIATE_TEST_SUITE_P(Agents, ResourceManagerConformance,
                         ::testing::Values(&MakeAgentHarness));

// What only agents do.
class AgentManagerTest : public ::testing::Test {
 protected:
  // Waits up to 10 s for `n` long polls to be waiting.
  void AwaitWaitingPolls(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (agents_.WaitingPolls() < n && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    ASSERT_GE(agents_.WaitingPolls(), n) << "the poll never started waiting";
  }

  AgentHarness harness_;
  AgentManager& agents_ = harness_.agents();
};

TEST_F(AgentManagerTest, AWaitingPollIsAnsweredByAStartFromAnotherThread) {
  ASSERT_OK(harness_.Join("a1", 1, {}));
  auto poll = std::async(std::launch::async,
                         [&] { return agents_.WaitForActions("a1", absl::Seconds(60)); });
  AwaitWaitingPolls(1);
  const Placement placement{"3", {{"a1", 1}}};
  ASSERT_OK(agents_.Start(placement, {{.allocation = "3.b.1", .trial_id = 3}}));
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(wire::ActionBatch batch, poll.get());
  ASSERT_THAT(batch.actions, SizeIs(1));
  EXPECT_EQ(std::get<wire::StartAction>(batch.actions[0]).chief_addr, "127.0.0.1:29500");
}

TEST_F(AgentManagerTest, ANewerPollEndsTheOlderAndShutdownEndsEveryPoll) {
  ASSERT_OK(harness_.Join("a1", 1, {}));
  auto older = std::async(std::launch::async,
                          [&] { return agents_.WaitForActions("a1", absl::Seconds(60)); });
  AwaitWaitingPolls(1);
  auto newer = std::async(std::launch::async,
                          [&] { return agents_.WaitForActions("a1", absl::Seconds(60)); });
  ASSERT_EQ(older.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "a newer poll of the same agent ends the older one";
  EXPECT_OK(older.get().status());
  agents_.Shutdown();
  ASSERT_EQ(newer.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "shutdown answers a waiting poll at once";
  EXPECT_OK(newer.get().status());
}

TEST_F(AgentManagerTest, ADisabledAgentIsOfferedDisabledStaysDisabledAcrossRegistrations) {
  ASSERT_OK(harness_.Join("a1", 2, {}));
  const int changed = harness_.events().offers_changed();
  ASSERT_OK(agents_.SetEnabled("a1", false));
  EXPECT_GT(harness_.events().offers_changed(), changed);
  EXPECT_FALSE(agents_.Fits({"1", {{"a1", 1}}}, {}));
  ASSERT_OK(harness_.Join("a1", 2, {}));  // the agent restarts
  ASSERT_THAT(agents_.Offers(), SizeIs(1));
  EXPECT_FALSE(agents_.Offers()[0].enabled) << "disabled is stored, not forgotten";
  ASSERT_OK_AND_ASSIGN(wire::AgentList list, agents_.List());
  ASSERT_THAT(list.agents, SizeIs(1));
  EXPECT_TRUE(list.agents[0].connected);
  EXPECT_FALSE(list.agents[0].enabled);
}

TEST_F(AgentManagerTest, AnUnknownAgentMustRegisterAndALostOneIsListedAsDisconnected) {
  EXPECT_THAT(agents_.Heartbeat("nobody").message(), HasSubstr("register again"));
  EXPECT_TRUE(absl::IsNotFound(agents_.WaitForActions("nobody", absl::ZeroDuration()).status()));
  EXPECT_TRUE(absl::IsNotFound(agents_.Leave("nobody").status()));
  ASSERT_OK(harness_.Join("a1", 1, {}));
  harness_.Silence("a1");
  ASSERT_THAT(agents_.ExpireLost(), SizeIs(1));
  ASSERT_OK_AND_ASSIGN(wire::AgentList list, agents_.List());
  ASSERT_THAT(list.agents, SizeIs(1));
  EXPECT_FALSE(list.agents[0].connected);
  EXPECT_TRUE(absl::IsNotFound(agents_.Heartbeat("a1")));
}

}  // namespace
}  // namespace cohort::master
