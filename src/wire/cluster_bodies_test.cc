#include "wire/cluster_bodies.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

Json Wire(const Json& json) { return Json::parse(json.dump()); }

TEST(ClusterBodiesTest, AgentListRoundTripsAndNamesBadFields) {
  AgentList list{{{"agent-1", "10.0.0.1", 8, 3, true, false}}};
  absl::StatusOr<AgentList> back = ParseAgentList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->agents.size(), 1u);
  const AgentSummary& a = back->agents[0];
  EXPECT_EQ(a.id, "agent-1");
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.slots, 8);
  EXPECT_EQ(a.used, 3);
  EXPECT_TRUE(a.enabled);
  EXPECT_FALSE(a.connected);
  Json bad = list.ToJson();
  bad["agents"][0].erase("connected");
  EXPECT_EQ(ParseAgentList(bad).status().message(),
            "agent list: \"agents\"[0]: missing \"connected\"");
  bad = list.ToJson();
  bad["agents"][0]["enabled"] = "yes";
  EXPECT_THAT(ParseAgentList(bad).status().message(),
              HasSubstr("\"enabled\" must be true or false, got \"yes\""));
  bad = list.ToJson();
  bad["agents"][0]["used"] = -1;
  EXPECT_THAT(ParseAgentList(bad).status().message(),
              HasSubstr("\"used\" must be an integer >= 0"));
}

TEST(ClusterBodiesTest, SlotListRoundTripsWithAndWithoutAnOwner) {
  SlotList list{{{"agent-1", 0, true, "3.ab.1", 3}, {"agent-1", 1, false, {}, {}}}};
  const Json json = list.ToJson();
  EXPECT_FALSE(json["slots"][1].contains("trial_id"));
  absl::StatusOr<SlotList> back = ParseSlotList(Wire(json));
  ASSERT_OK(back);
  ASSERT_EQ(back->slots.size(), 2u);
  EXPECT_EQ(back->slots[0].agent, "agent-1");
  EXPECT_EQ(back->slots[0].allocation, "3.ab.1");
  EXPECT_EQ(back->slots[0].trial_id, 3);
  EXPECT_EQ(back->slots[1].slot, 1);
  EXPECT_FALSE(back->slots[1].enabled);
  EXPECT_FALSE(back->slots[1].trial_id.has_value());
}

TEST(ClusterBodiesTest, BadSlotListsNameTheField) {
  EXPECT_EQ(ParseSlotList(Json{{"slots", {{{"slot", 0}, {"enabled", true}}}}}).status().message(),
            "slot list: \"slots\"[0]: missing \"agent\"");
  EXPECT_THAT(ParseSlotList(Json{{"slots", {{{"agent", "a"}, {"slot", "0"}, {"enabled", true}}}}})
                  .status()
                  .message(),
              HasSubstr("\"slot\" must be an integer >= 0"));
  EXPECT_THAT(ParseSlotList(Json{{"slots", {{{"agent", "a"}, {"slot", -1}, {"enabled", true}}}}})
                  .status()
                  .message(),
              HasSubstr("got -1"));
}

TEST(ClusterBodiesTest, TaskListRoundTripsAndNamesBadFields) {
  TaskList list{{{5, 2, 4, 42, TrialState::kQueued, "needs 4 slots", {}},
                 {6, 2, 4, 42, TrialState::kRunning, {}, std::vector<std::string>{"a", "b"}}}};
  absl::StatusOr<TaskList> back = ParseTaskList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->tasks.size(), 2u);
  EXPECT_EQ(back->tasks[0].trial_id, 5);
  EXPECT_EQ(back->tasks[0].experiment_id, 2);
  EXPECT_EQ(back->tasks[0].slots, 4);
  EXPECT_EQ(back->tasks[0].priority, 42);
  EXPECT_EQ(back->tasks[0].state, TrialState::kQueued);
  EXPECT_EQ(back->tasks[0].reason, "needs 4 slots");
  EXPECT_FALSE(back->tasks[0].agents.has_value());
  EXPECT_EQ(back->tasks[1].agents, (std::vector<std::string>{"a", "b"}));
  Json bad = list.ToJson();
  bad["tasks"][0].erase("state");
  EXPECT_EQ(ParseTaskList(bad).status().message(), "task list: \"tasks\"[0]: missing \"state\"");
  bad = list.ToJson();
  bad["tasks"][1]["agents"] = {"a", 2};
  EXPECT_THAT(ParseTaskList(bad).status().message(),
              HasSubstr("\"tasks\"[1]: \"agents\"[1]: must be a string"));
  bad = list.ToJson();
  bad["tasks"][0]["slots"] = 0;
  EXPECT_THAT(ParseTaskList(bad).status().message(),
              HasSubstr("\"slots\" must be an integer >= 1"));
}

TEST(ClusterBodiesTest, ErrorBodySplitsAStatusIntoItsLines) {
  const ErrorBody body =
      ErrorBody::FromStatus(absl::InvalidArgumentError("invalid config:\na: bad\nb: worse"));
  EXPECT_EQ(body.error, "invalid config:");
  EXPECT_EQ(body.errors, (std::vector<std::string>{"a: bad", "b: worse"}));
  absl::StatusOr<ErrorBody> back = ParseErrorBody(Wire(body.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->error, body.error);
  EXPECT_EQ(back->errors, body.errors);
  EXPECT_FALSE(ErrorBody::FromStatus(absl::NotFoundError("x")).ToJson().contains("errors"));
  EXPECT_EQ(ParseErrorBody(Json::object()).status().message(), "error body: missing \"error\"");
  EXPECT_THAT(ParseErrorBody(Json{{"error", 1}}).status().message(),
              HasSubstr("\"error\" must be a string"));
  EXPECT_THAT(ParseErrorBody(Json{{"error", "x"}, {"errors", {1}}}).status().message(),
              HasSubstr("\"errors\"[0]: must be a string"));
  EXPECT_EQ(OkBody().dump(), R"({"ok":true})");
}

}  // namespace
}  // namespace cohort::wire
