#include "wire/agent_protocol.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

// The JSON text and back, as it crosses the network.
Json Wire(const Json& json) { return Json::parse(json.dump()); }

StartAction SampleStart() {
  StartAction a;
  a.allocation = "3.ab12.1";
  a.trial_id = 3;
  a.experiment_id = 1;
  a.node_rank = 1;
  a.nnodes = 2;
  a.slots = 4;
  a.chief_addr = "10.0.0.1:29500";
  a.config = "name: x\n";
  a.hparams = {{"lr", 0.1}};
  a.seed = 99;
  a.latest_checkpoint = "uuid";
  a.context = "/api/v1/experiments/1/context";
  a.reports = false;
  a.searcher_ops = {10, 30};
  return a;
}

TEST(AgentProtocolTest, RegistrationRoundTrips) {
  AgentRegistration a{"agent-1", 8, "10.0.0.2", 30000, 30099, {"1.x.1", "2.x.1"}};
  absl::StatusOr<AgentRegistration> back = ParseAgentRegistration(Wire(a.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->id, "agent-1");
  EXPECT_EQ(back->slots, 8);
  EXPECT_EQ(back->host, "10.0.0.2");
  EXPECT_EQ(back->port_lo, 30000);
  EXPECT_EQ(back->port_hi, 30099);
  EXPECT_EQ(back->running, a.running);
}

TEST(AgentProtocolTest, RegistrationCarriesTheNodesTheAgentRuns) {
  AgentRegistration a{.id = "a1", .slots = 2};
  a.allocations.push_back({.allocation = "7.beef.1",
                           .trial_id = 7,
                           .node_rank = 1,
                           .slots = 2,
                           .held_log_lines = 40,
                           .held_report_batches = 3});
  absl::StatusOr<AgentRegistration> back = ParseAgentRegistration(Wire(a.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->allocations.size(), 1u);
  const RunningAllocation& node = back->allocations[0];
  EXPECT_EQ(node.allocation, "7.beef.1");
  EXPECT_EQ(node.trial_id, 7);
  EXPECT_EQ(node.node_rank, 1);
  EXPECT_EQ(node.slots, 2);
  EXPECT_EQ(node.held_log_lines, 40);
  EXPECT_EQ(node.held_report_batches, 3);
  Json bad = a.ToJson();
  bad["allocations"][0].erase("trial_id");
  EXPECT_THAT(ParseAgentRegistration(bad).status().message(), HasSubstr("\"allocations\"[0]"));
  EXPECT_TRUE(ParseAgentRegistration(Json{{"id", "a"}, {"slots", 1}})->allocations.empty())
      << "an older agent's registration has none";
}

TEST(AgentProtocolTest, RegistrationDefaultsAndErrors) {
  absl::StatusOr<AgentRegistration> minimal =
      ParseAgentRegistration(Json{{"id", "a"}, {"slots", 1}});
  ASSERT_OK(minimal);
  EXPECT_EQ(minimal->host, "127.0.0.1");
  EXPECT_EQ(minimal->port_lo, 29500);
  EXPECT_EQ(ParseAgentRegistration(Json{{"slots", 1}}).status().message(),
            "agent registration: missing \"id\"");
  EXPECT_EQ(ParseAgentRegistration(Json{{"id", "a"}, {"slots", "two"}}).status().message(),
            "agent registration: \"slots\" must be an integer in [1, 65536], got \"two\"");
  EXPECT_THAT(ParseAgentRegistration(Json{{"id", "a"}, {"slots", 1}, {"port_range", {9, 5}}})
                  .status()
                  .message(),
              HasSubstr("\"port_range\" must be [lo, hi] with lo <= hi"));
  EXPECT_THAT(ParseAgentRegistration(Json{{"id", "a"}, {"slots", 1}, {"port_range", {0, 5}}})
                  .status()
                  .message(),
              HasSubstr("\"port_range\"[0]: must be a port"));
}

TEST(AgentProtocolTest, StartActionRoundTrips) {
  const StartAction a = SampleStart();
  absl::StatusOr<Action> back = ParseAction(Wire(ToJson(Action(a))));
  ASSERT_OK(back);
  const StartAction* s = std::get_if<StartAction>(&*back);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->allocation, a.allocation);
  EXPECT_EQ(s->trial_id, 3);
  EXPECT_EQ(s->experiment_id, 1);
  EXPECT_EQ(s->node_rank, 1);
  EXPECT_EQ(s->nnodes, 2);
  EXPECT_EQ(s->slots, 4);
  EXPECT_EQ(s->chief_addr, a.chief_addr);
  EXPECT_EQ(s->config, a.config);
  EXPECT_EQ(s->hparams, a.hparams);
  EXPECT_EQ(s->seed, 99);
  EXPECT_EQ(s->latest_checkpoint, "uuid");
  EXPECT_EQ(s->context, a.context);
  EXPECT_FALSE(s->reports);
  EXPECT_EQ(s->searcher_ops, a.searcher_ops);
}

TEST(AgentProtocolTest, StartActionTakesHyperparametersAsJsonText) {
  Json json = SampleStart().ToJson();
  json["hparams"] = R"({"lr": 0.2})";
  absl::StatusOr<StartAction> a = ParseStartAction(json);
  ASSERT_OK(a);
  EXPECT_EQ(a->hparams, (Json{{"lr", 0.2}}));
  json["hparams"] = "[1]";
  EXPECT_THAT(ParseStartAction(json).status().message(),
              HasSubstr("\"hparams\" must be a JSON object"));
}

TEST(AgentProtocolTest, BadStartActionsNameTheField) {
  Json json = SampleStart().ToJson();
  json.erase("allocation");
  EXPECT_EQ(ParseStartAction(json).status().message(), "start action: missing \"allocation\"");
  json = SampleStart().ToJson();
  json["slots"] = "two";
  EXPECT_EQ(ParseStartAction(json).status().message(),
            "start action: \"slots\" must be an integer in [1, 65536], got \"two\"");
  json = SampleStart().ToJson();
  json["node_rank"] = 2;
  EXPECT_THAT(ParseStartAction(json).status().message(),
              HasSubstr("\"node_rank\" must be an integer in [0, 1], got 2"));
  json = SampleStart().ToJson();
  json["searcher_ops"] = {20, 10};
  EXPECT_THAT(ParseStartAction(json).status().message(),
              HasSubstr("\"searcher_ops\" must be ascending"));
}

TEST(AgentProtocolTest, StopActionRoundTripsAndDefaultsToPreempt) {
  absl::StatusOr<Action> back =
      ParseAction(Wire(ToJson(Action(StopAction{"1.a.1", StopMode::kKill}))));
  ASSERT_OK(back);
  ASSERT_TRUE(std::holds_alternative<StopAction>(*back));
  EXPECT_EQ(std::get<StopAction>(*back).allocation, "1.a.1");
  EXPECT_EQ(std::get<StopAction>(*back).mode, StopMode::kKill);
  absl::StatusOr<StopAction> plain = ParseStopAction(Json{{"allocation", "x"}});
  ASSERT_OK(plain);
  EXPECT_EQ(plain->mode, StopMode::kPreempt);
}

TEST(AgentProtocolTest, BadStopActionsNameTheField) {
  EXPECT_EQ(ParseStopAction(Json{{"mode", "kill"}}).status().message(),
            "stop action: missing \"allocation\"");
  EXPECT_THAT(ParseStopAction(Json{{"allocation", 3}}).status().message(),
              HasSubstr("\"allocation\" must be a string, got 3"));
  EXPECT_THAT(ParseStopAction(Json{{"allocation", "a"}, {"mode", "pause"}}).status().message(),
              HasSubstr("\"mode\" 'pause' is not a stop mode (one of preempt, kill)"));
}

TEST(AgentProtocolTest, OneMalformedActionDoesNotHideTheOthers) {
  ActionBatch batch;
  batch.actions = {SampleStart(), StopAction{"1.a.1", StopMode::kPreempt}};
  Json json = Wire(batch.ToJson());
  json["actions"].push_back({{"type", "reboot"}});
  json["actions"].push_back({{"type", "stop"}});
  absl::StatusOr<std::vector<absl::StatusOr<Action>>> actions = ParseActionBatch(json);
  ASSERT_OK(actions);
  ASSERT_EQ(actions->size(), 4u);
  EXPECT_OK((*actions)[0]);
  EXPECT_OK((*actions)[1]);
  EXPECT_THAT((*actions)[2].status().message(),
              HasSubstr("\"actions\"[2]: \"type\" must be \"start\" or \"stop\", got \"reboot\""));
  EXPECT_THAT((*actions)[3].status().message(),
              HasSubstr("\"actions\"[3] (stop): missing \"allocation\""));
  EXPECT_EQ(ParseActionBatch(Json::object()).status().message(),
            "action batch: missing \"actions\"");
}

TEST(AgentProtocolTest, LogBatchRoundTrips) {
  LogBatch batch{.trial_id = 5, .lines = {{0, "hello"}, {-1, "launcher line"}}, .node = 2};
  absl::StatusOr<LogBatch> back = ParseLogBatch(Wire(batch.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->trial_id, 5);
  EXPECT_EQ(back->node, 2);
  // An agent that does not say its node (an older one) posts node 0's lines.
  Json without = batch.ToJson();
  without.erase("node");
  EXPECT_EQ(ParseLogBatch(Wire(without))->node, 0);
  ASSERT_EQ(back->lines.size(), 2u);
  EXPECT_EQ(back->lines[0].rank, 0);
  EXPECT_EQ(back->lines[0].line, "hello");
  EXPECT_EQ(back->lines[1].rank, -1);
}

TEST(AgentProtocolTest, BadLogBatchesNameTheField) {
  EXPECT_EQ(ParseLogBatch(Json{{"lines", Json::array()}}).status().message(),
            "log batch: missing \"trial_id\"");
  EXPECT_THAT(ParseLogBatch(Json{{"trial_id", 1}, {"lines", {{{"rank", "0"}, {"line", "x"}}}}})
                  .status()
                  .message(),
              HasSubstr("log batch: \"lines\"[0]: \"rank\" must be an integer >= -1"));
  EXPECT_THAT(
      ParseLogBatch(
          Json{{"trial_id", 1},
               {"lines", {{{"rank", 0}, {"line", std::string(kMaxLogLineBytes + 1, 'x')}}}}})
          .status()
          .message(),
      HasSubstr("\"line\" must be at most"));
  Json many = {{"trial_id", 1}, {"lines", Json::array()}};
  for (size_t i = 0; i <= kMaxLogBatchLines; ++i)
    many["lines"].push_back({{"rank", 0}, {"line", ""}});
  EXPECT_THAT(ParseLogBatch(many).status().message(), HasSubstr("\"lines\" must have at most"));
}

TEST(AgentProtocolTest, LongLogLinesAreCutAtACharacterBoundary) {
  EXPECT_EQ(CleanLogLine("short"), "short");
  std::string line(kMaxLogLineBytes + 100, 'x');
  for (size_t i = kMaxLogLineBytes - 20; i < line.size(); i += 2) line.replace(i, 2, "\xc3\xa9");
  const std::string cut = CleanLogLine(line);
  EXPECT_LE(cut.size(), kMaxLogLineBytes);
  EXPECT_EQ(cut.substr(cut.size() - 6), " [cut]");
  EXPECT_NO_THROW(Json(cut).dump());
}

TEST(AgentProtocolTest, NulInALogLineIsReplaced) {
  const std::string replacement = "\xef\xbf\xbd";
  EXPECT_EQ(CleanLogLine(std::string("a\0b\0", 4)), "a" + replacement + "b" + replacement);
}

TEST(AgentProtocolTest, InvalidUtf8InALogLineIsReplacedSoTheBatchCanBeSent) {
  const std::string clean = CleanLogLine("caf\xe9 \xff!");
  EXPECT_EQ(clean, "caf\xef\xbf\xbd \xef\xbf\xbd!");
  LogBatch batch{.trial_id = 1, .lines = {{0, clean}}};
  EXPECT_NO_THROW(batch.ToJson().dump());
}

TEST(AgentProtocolTest, ReportBatchRoundTrips) {
  ReportBatch batch;
  batch.trial_id = 2;
  ReportRecord rec;
  rec.kind = ReportKind::kTraining;
  rec.steps_completed = 10;
  rec.metrics = {{"loss", 1.5}};
  batch.lines = {rec};
  batch.progress = ProgressRecord{};
  batch.progress->completed = 10;
  batch.progress->total = 20;
  batch.progress->unit = "batches";
  absl::StatusOr<ReportBatch> back = ParseReportBatch(Wire(batch.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->trial_id, 2);
  ASSERT_EQ(back->lines.size(), 1u);
  EXPECT_EQ(back->lines[0].metrics, rec.metrics);
  ASSERT_TRUE(back->progress.has_value());
  EXPECT_EQ(back->progress->total, 20);
  EXPECT_TRUE(back->system_metrics.empty());
  EXPECT_FALSE(batch.ToJson().contains("system_metrics")) << "absent when there are none";

  batch.system_metrics = {
      {1700000000.5, "agent-1", {{"cpu_util_simple", 42}}, {{"GPU-1", 90, 1e9}}}};
  back = ParseReportBatch(Wire(batch.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->system_metrics.size(), 1u);
  EXPECT_EQ(back->system_metrics[0].agent, "agent-1");
  EXPECT_EQ(back->system_metrics[0].metrics.at("cpu_util_simple"), 42);
  EXPECT_EQ(back->system_metrics[0].gpus.at(0).uuid, "GPU-1");
}

TEST(AgentProtocolTest, BadReportBatchesNameTheLineAndTheField) {
  EXPECT_EQ(
      ParseReportBatch(Json{{"trial_id", 2}, {"lines", {{{"kind", "training"}}, {{"time", 1}}}}})
          .status()
          .message(),
      "report batch: \"lines\"[0]: missing \"steps_completed\"");
  EXPECT_THAT(ParseReportBatch(Json{{"trial_id", "2"}}).status().message(),
              HasSubstr("\"trial_id\" must be an integer >= 1, got \"2\""));
  EXPECT_THAT(
      ParseReportBatch(Json{{"trial_id", 2}, {"progress", {{"completed", 1}}}}).status().message(),
      HasSubstr("report batch: \"progress\": missing \"total\""));
}

TEST(AgentProtocolTest, ExitReportRoundTripsAndChecksItsRanges) {
  absl::StatusOr<ExitReport> back = ParseExitReport(Wire(ExitReport{1, 143}.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->node, 1);
  EXPECT_EQ(back->status, 143);
  EXPECT_EQ(ParseExitReport(Json{{"node", 0}}).status().message(),
            "exit report: missing \"status\"");
  EXPECT_THAT(ParseExitReport(Json{{"node", "0"}, {"status", 0}}).status().message(),
              HasSubstr("\"node\" must be an integer"));
  EXPECT_THAT(ParseExitReport(Json{{"node", 0}, {"status", 300}}).status().message(),
              HasSubstr("\"status\" must be an integer in [0, 255], got 300"));
}

TEST(AgentProtocolTest, AgentIdsAreSafeNames) {
  EXPECT_OK(ParseAgentRegistration(Json{{"id", "gpu-node_3.lab"}, {"slots", 1}}));
  EXPECT_THAT(ParseAgentRegistration(Json{{"id", "../etc"}, {"slots", 1}}).status().message(),
              HasSubstr("agent registration: \"id\" must be 1 to 128 characters of "
                        "[A-Za-z0-9._-], not starting with '.' or '-', got \"../etc\""));
  EXPECT_THAT(
      ParseAgentRegistration(Json{{"id", std::string(129, 'a')}, {"slots", 1}}).status().message(),
      HasSubstr("(129 bytes)"));
}

TEST(AgentProtocolTest, TrialIdsAreBelowTwoToThe53) {
  const int64_t too_big = int64_t{1} << 53;
  EXPECT_EQ(ParseReportBatch(Json{{"trial_id", too_big}}).status().message(),
            "report batch: \"trial_id\" must be an id in [1, 9007199254740991] (2^53 - 1), got "
            "9007199254740992");
  EXPECT_THAT(
      ParseLogBatch(Json{{"trial_id", too_big}, {"lines", Json::array()}}).status().message(),
      HasSubstr("\"trial_id\" must be an id in [1, 9007199254740991]"));
  EXPECT_OK(ParseReportBatch(Json{{"trial_id", too_big - 1}}));
}

TEST(AgentProtocolTest, ProgressInAReportBatchIsRangeChecked) {
  EXPECT_THAT(
      ParseReportBatch(Json{{"trial_id", 2}, {"progress", {{"completed", 1e300}, {"total", 1}}}})
          .status()
          .message(),
      HasSubstr("report batch: \"progress\": \"completed\" must be a number <= 1e+15"));
}

TEST(AgentProtocolTest, OutputBatchRoundTripsAndEachItemFailsOnItsOwn) {
  OutputBatch batch;
  batch.items.push_back({.allocation = "a-1",
                         .token = "t1",
                         .logs = LogBatch{.trial_id = 3, .lines = {{0, "hello"}}, .node = 0},
                         .exit = ExitReport{0, 1}});
  batch.items.push_back(
      {.allocation = "a-2", .token = "t2", .reports = ReportBatch{.trial_id = 4}});
  Json json = batch.ToJson();
  json["outputs"].push_back({{"allocation", "../etc"}, {"token", "t"}});
  json["outputs"].push_back({{"allocation", "a-4"}, {"token", "t"}, {"exit", {{"node", -1}}}});
  absl::StatusOr<std::vector<absl::StatusOr<AllocationOutput>>> items = ParseOutputBatch(json);
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 4u);
  ASSERT_OK((*items)[0]);
  EXPECT_EQ((*items)[0]->token, "t1");
  EXPECT_EQ((*items)[0]->logs->lines.at(0).line, "hello");
  EXPECT_EQ((*items)[0]->exit->status, 1);
  EXPECT_FALSE((*items)[0]->reports.has_value());
  ASSERT_OK((*items)[1]);
  EXPECT_EQ((*items)[1]->reports->trial_id, 4);
  EXPECT_THAT((*items)[2].status().message(), HasSubstr("'../etc' is not an allocation id"));
  EXPECT_THAT((*items)[3].status().message(), HasSubstr("[3] (allocation a-4).exit: "));
  EXPECT_THAT(ParseOutputBatch(Json{{"outputs", 7}}).status().message(), HasSubstr("outputs"));
}

TEST(AgentProtocolTest, OutputResultsRoundTrip) {
  OutputResults results{{{}, {404, "logs", "allocation a-2 is not running"}}};
  absl::StatusOr<OutputResults> parsed = ParseOutputResults(results.ToJson());
  ASSERT_OK(parsed);
  ASSERT_EQ(parsed->results.size(), 2u);
  EXPECT_EQ(parsed->results[0].code, 200);
  EXPECT_EQ(parsed->results[1].code, 404);
  EXPECT_EQ(parsed->results[1].part, "logs");
  EXPECT_EQ(parsed->results[1].error, "allocation a-2 is not running");
  EXPECT_FALSE(ParseOutputResults(Json{{"results", {{{"code", 42}}}}}).ok());
}

}  // namespace
}  // namespace cohort::wire
