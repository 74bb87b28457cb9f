#include "wire/trial_bodies.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

Json Wire(const Json& json) { return Json::parse(json.dump()); }

TrialDescription SampleTrial() {
  TrialDescription t;
  t.id = 4;
  t.experiment_id = 2;
  t.state = TrialState::kRunning;
  t.hparams = {{"lr", 0.1}};
  t.seed = 77;
  t.batches = 10;
  t.total_batches = 40;
  t.restarts = 1;
  t.latest_checkpoint = "uuid";
  t.searcher_metric = 0.3;
  t.allocation = "4.ab.1";
  t.agents = {{"agent-1", 2}, {"agent-2", 2}};
  return t;
}

TEST(TrialBodiesTest, ARunningTrialRoundTrips) {
  const TrialDescription t = SampleTrial();
  absl::StatusOr<TrialDescription> back = ParseTrialDescription(Wire(t.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->id, 4);
  EXPECT_EQ(back->experiment_id, 2);
  EXPECT_EQ(back->state, TrialState::kRunning);
  EXPECT_EQ(back->hparams, t.hparams);
  EXPECT_EQ(back->seed, 77);
  EXPECT_EQ(back->batches, 10);
  EXPECT_EQ(back->total_batches, 40);
  EXPECT_EQ(back->restarts, 1);
  EXPECT_EQ(back->latest_checkpoint, "uuid");
  EXPECT_EQ(back->searcher_metric, 0.3);
  EXPECT_EQ(back->allocation, "4.ab.1");
  ASSERT_EQ(back->agents.size(), 2u);
  EXPECT_EQ(back->agents[1].agent, "agent-2");
  EXPECT_EQ(back->agents[1].slots, 2);
  EXPECT_FALSE(back->waiting_reason.has_value());
}

TEST(TrialBodiesTest, AQueuedOrFailedTrialKeepsItsOptionalFieldsAndNullMetric) {
  TrialDescription t = SampleTrial();
  t.state = TrialState::kError;
  t.allocation.reset();
  t.agents.clear();
  t.searcher_metric.reset();
  t.waiting_reason = "needs 4 slots";
  t.error_lines = "boom";
  const Json json = t.ToJson();
  EXPECT_TRUE(json["searcher_metric"].is_null());
  EXPECT_FALSE(json.contains("allocation"));
  absl::StatusOr<TrialDescription> back = ParseTrialDescription(Wire(json));
  ASSERT_OK(back);
  EXPECT_FALSE(back->searcher_metric.has_value());
  EXPECT_EQ(back->waiting_reason, "needs 4 slots");
  EXPECT_EQ(back->error_lines, "boom");
}

TEST(TrialBodiesTest, LogPolicyMatchesRoundTripAndBadOnesNameTheField) {
  TrialDescription t = SampleTrial();
  t.log_policy_matches = {{.policy = "CUDA OOM",
                           .action = LogPolicyAction::kNone,
                           .allocation = "4.ab.1",
                           .agent = "agent-1",
                           .rank = 1,
                           .line = "CUDA out of memory",
                           .time_ms = 1700000000000},
                          {.policy = "ecc",
                           .action = LogPolicyAction::kExcludeNode,
                           .allocation = "4.ab.2",
                           .agent = "agent-2",
                           .rank = -1,
                           .line = "ECC",
                           .time_ms = 5}};
  absl::StatusOr<TrialDescription> back = ParseTrialDescription(Wire(t.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->log_policy_matches.size(), 2u);
  EXPECT_EQ(back->log_policy_matches[0].action, LogPolicyAction::kNone);
  EXPECT_EQ(back->log_policy_matches[0].line, "CUDA out of memory");
  EXPECT_EQ(back->log_policy_matches[1].action, LogPolicyAction::kExcludeNode);
  EXPECT_EQ(back->log_policy_matches[1].rank, -1);
  EXPECT_FALSE(SampleTrial().ToJson().contains("log_policy_matches"));

  Json json = t.ToJson();
  json["log_policy_matches"][1]["action"] = "reboot";
  EXPECT_THAT(std::string(ParseTrialDescription(json).status().message()),
              ::testing::HasSubstr("reboot"));
}

TEST(TrialBodiesTest, BadTrialsNameTheField) {
  Json json = SampleTrial().ToJson();
  json.erase("state");
  EXPECT_EQ(ParseTrialDescription(json).status().message(), "trial: missing \"state\"");
  json = SampleTrial().ToJson();
  json["state"] = "SLEEPING";
  EXPECT_THAT(ParseTrialDescription(json).status().message(),
              HasSubstr("\"state\" 'SLEEPING' is not a trial state"));
  json = SampleTrial().ToJson();
  json["batches"] = -1;
  EXPECT_THAT(ParseTrialDescription(json).status().message(),
              HasSubstr("\"batches\" must be an integer >= 0, got -1"));
  json = SampleTrial().ToJson();
  json["agents"][0]["slots"] = "2";
  EXPECT_THAT(ParseTrialDescription(json).status().message(),
              HasSubstr("trial: \"agents\"[0]: \"slots\" must be an integer >= 1"));
}

TEST(TrialBodiesTest, MetricListRoundTripsAndNamesBadFields) {
  MetricList list{{{MetricKind::kValidation, 40, {{"loss", 0.2}}, 3.5},
                   {MetricKind::kSearcher, 20, {{"searcher_metric", nullptr}}, 4}}};
  absl::StatusOr<MetricList> back = ParseMetricList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->metrics.size(), 2u);
  EXPECT_EQ(back->metrics[0].kind, MetricKind::kValidation);
  EXPECT_EQ(back->metrics[0].steps_completed, 40);
  EXPECT_EQ(back->metrics[0].metrics, list.metrics[0].metrics);
  EXPECT_EQ(back->metrics[0].time, 3.5);
  EXPECT_EQ(back->metrics[1].kind, MetricKind::kSearcher);
  EXPECT_EQ(ParseMetricList(Json::object()).status().message(), "metric list: missing \"metrics\"");
  Json bad = list.ToJson();
  bad["metrics"][1]["kind"] = "test";
  EXPECT_THAT(ParseMetricList(bad).status().message(),
              HasSubstr("\"metrics\"[1]: \"kind\" 'test' is not a metric kind"));
  bad = list.ToJson();
  bad["metrics"][0]["steps_completed"] = -5;
  EXPECT_THAT(ParseMetricList(bad).status().message(),
              HasSubstr("\"steps_completed\" must be an integer >= 0"));
}

TEST(TrialBodiesTest, CheckpointListRoundTripsAndNamesBadFields) {
  CheckpointList list{{{"uuid-1", 40, "/ckpt/uuid-1", {{"steps_completed", 40}}}}};
  absl::StatusOr<CheckpointList> back = ParseCheckpointList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->checkpoints.size(), 1u);
  EXPECT_EQ(back->checkpoints[0].storage_id, "uuid-1");
  EXPECT_EQ(back->checkpoints[0].steps_completed, 40);
  EXPECT_EQ(back->checkpoints[0].path, "/ckpt/uuid-1");
  EXPECT_EQ(back->checkpoints[0].metadata, list.checkpoints[0].metadata);
  Json bad = list.ToJson();
  bad["checkpoints"][0].erase("storage_id");
  EXPECT_EQ(ParseCheckpointList(bad).status().message(),
            "checkpoint list: \"checkpoints\"[0]: missing \"storage_id\"");
  bad = list.ToJson();
  bad["checkpoints"][0]["metadata"] = "x";
  EXPECT_THAT(ParseCheckpointList(bad).status().message(),
              HasSubstr("\"metadata\" must be a JSON object"));
  bad = list.ToJson();
  bad["checkpoints"][0]["steps_completed"] = -1;
  EXPECT_THAT(ParseCheckpointList(bad).status().message(), HasSubstr(">= 0"));
}

TEST(TrialBodiesTest, LogsPageRoundTripsAndNamesBadFields) {
  LogsPage page{{{1, 0, "hello", 1700000000.25}, {2, -1, "master: started"}}, 2, true,
                TrialState::kCompleted};
  absl::StatusOr<LogsPage> back = ParseLogsPage(Wire(page.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->logs.size(), 2u);
  EXPECT_EQ(back->logs[0].time, 1700000000.25);
  EXPECT_EQ(back->logs[1].time, 0);
  EXPECT_EQ(back->logs[1].seq, 2);
  EXPECT_EQ(back->logs[1].rank, -1);
  EXPECT_EQ(back->logs[1].line, "master: started");
  EXPECT_EQ(back->next, 2);
  EXPECT_TRUE(back->done);
  EXPECT_EQ(back->state, TrialState::kCompleted);
  Json bad = page.ToJson();
  bad.erase("done");
  EXPECT_EQ(ParseLogsPage(bad).status().message(), "logs page: missing \"done\"");
  bad = page.ToJson();
  bad["done"] = 1;
  EXPECT_THAT(ParseLogsPage(bad).status().message(), HasSubstr("\"done\" must be true or false"));
  bad = page.ToJson();
  bad["logs"][0]["rank"] = -2;
  EXPECT_THAT(ParseLogsPage(bad).status().message(),
              HasSubstr("\"logs\"[0]: \"rank\" must be an integer >= -1"));
}

}  // namespace
}  // namespace cohort::wire
