#include "wire/trial_bodies.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/agent_protocol.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxAgents = 1 << 16;
constexpr size_t kMaxRows = 1 << 20;  // metrics and checkpoints of one trial
constexpr size_t kMaxLogPage = 100000;
constexpr size_t kMaxErrorLines = 1 << 20;
constexpr size_t kMaxLogPatternBytes = 4096;  // config/limits.h's kMaxLogPatternBytes

Json Number(double value) { return std::isnan(value) ? Json(nullptr) : Json(value); }

}  // namespace

Json TrialDescription::ToJson() const {
  Json j = {{"id", id},
            {"experiment_id", experiment_id},
            {"state", Name(state)},
            {"hparams", hparams},
            {"seed", seed},
            {"batches", batches},
            {"total_batches", total_batches},
            {"restarts", restarts},
            {"latest_checkpoint", latest_checkpoint},
            {"searcher_metric", searcher_metric ? Number(*searcher_metric) : Json(nullptr)}};
  if (waiting_reason) j["waiting_reason"] = *waiting_reason;
  if (allocation) {
    j["allocation"] = *allocation;
    Json list = Json::array();
    for (const AllocationAgent& a : agents)
      list.push_back({{"agent", a.agent}, {"slots", a.slots}});
    j["agents"] = list;
  }
  if (error_lines) j["error_lines"] = *error_lines;
  if (!log_policy_matches.empty()) {
    Json list = Json::array();
    for (const LogPolicyMatch& m : log_policy_matches) list.push_back(m.ToJson());
    j["log_policy_matches"] = list;
  }
  return j;
}

const char* Name(LogPolicyAction action) {
  switch (action) {
    case LogPolicyAction::kNone:
      return "";
    case LogPolicyAction::kCancelRetries:
      return "cancel_retries";
    case LogPolicyAction::kExcludeNode:
      return "exclude_node";
  }
  return "";
}

absl::StatusOr<LogPolicyAction> ParseLogPolicyAction(absl::string_view text) {
  for (LogPolicyAction a :
       {LogPolicyAction::kNone, LogPolicyAction::kCancelRetries, LogPolicyAction::kExcludeNode}) {
    if (text == Name(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected \"\", \"cancel_retries\" or \"exclude_node\", got \"", text, "\""));
}

Json LogPolicyMatch::ToJson() const {
  return {{"policy", policy},  {"action", Name(action)}, {"allocation", allocation},
          {"agent", agent},    {"rank", rank},           {"line", line},
          {"time_ms", time_ms}};
}

absl::StatusOr<LogPolicyMatch> ParseLogPolicyMatch(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  LogPolicyMatch m;
  r.Required("policy", &m.policy, kMaxLogPatternBytes);
  r.Enum("action", &m.action, ParseLogPolicyAction, FieldReader::kRequired);
  r.Required("allocation", &m.allocation, 256);
  r.Required("agent", &m.agent, kMaxSafeNameBytes);
  r.Required("rank", &m.rank, {.min = -1});
  r.Required("line", &m.line, kMaxLogLineBytes);
  r.Required("time_ms", &m.time_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return m;
}

absl::StatusOr<TrialDescription> ParseTrialDescription(const Json& json,
                                                       absl::string_view context) {
  FieldReader r(json, std::string(context));
  TrialDescription t;
  r.Required("id", &t.id, {.min = 1});
  r.Required("experiment_id", &t.experiment_id, {.min = 1});
  r.Enum("state", &t.state, ParseTrialState, FieldReader::kRequired);
  r.Object("hparams", &t.hparams, FieldReader::kRequired);
  r.Required("seed", &t.seed, {.min = 0});
  r.Required("batches", &t.batches, {.min = 0});
  r.Required("total_batches", &t.total_batches, {.min = 0});
  r.Required("restarts", &t.restarts, {.min = 0});
  r.Required("latest_checkpoint", &t.latest_checkpoint, 1024);
  r.Optional("searcher_metric", &t.searcher_metric);
  if (r.Has("waiting_reason")) r.Required("waiting_reason", &t.waiting_reason.emplace());
  if (r.Has("allocation")) r.Required("allocation", &t.allocation.emplace(), 256);
  r.Array("agents", &t.agents, kMaxAgents, FieldReader::kOptional,
          [](const Json& j, const std::string& where) -> absl::StatusOr<AllocationAgent> {
            FieldReader a(j, where);
            AllocationAgent agent;
            a.Required("agent", &agent.agent, 256);
            a.Required("slots", &agent.slots, {.min = 1});
            COHORT_RETURN_IF_ERROR(a.status());
            return agent;
          });
  if (r.Has("error_lines")) r.Required("error_lines", &t.error_lines.emplace(), kMaxErrorLines);
  r.Array("log_policy_matches", &t.log_policy_matches, kMaxLogPolicyMatches, FieldReader::kOptional,
          ParseLogPolicyMatch);
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

const char* Name(MetricKind kind) {
  switch (kind) {
    case MetricKind::kTraining:
      return "training";
    case MetricKind::kValidation:
      return "validation";
    case MetricKind::kSearcher:
      return "searcher";
  }
  return "unknown";
}

absl::StatusOr<MetricKind> ParseMetricKind(absl::string_view text) {
  for (MetricKind k : {MetricKind::kTraining, MetricKind::kValidation, MetricKind::kSearcher}) {
    if (text == Name(k)) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text.substr(0, 40), "' is not a metric kind (one of training, validation, searcher)"));
}

Json MetricList::ToJson() const {
  Json list = Json::array();
  for (const MetricEntry& m : metrics) {
    list.push_back({{"kind", Name(m.kind)},
                    {"steps_completed", m.steps_completed},
                    {"metrics", m.metrics},
                    {"time", m.time}});
  }
  Json body = {{"metrics", list}};
  if (next_after) body["next_after"] = *next_after;
  return body;
}

absl::StatusOr<MetricList> ParseMetricList(const Json& json) {
  FieldReader r(json, "metric list");
  MetricList out;
  r.Array("metrics", &out.metrics, kMaxRows, FieldReader::kRequired,
          [](const Json& j, const std::string& where) -> absl::StatusOr<MetricEntry> {
            FieldReader m(j, where);
            MetricEntry e;
            m.Enum("kind", &e.kind, ParseMetricKind, FieldReader::kRequired);
            m.Required("steps_completed", &e.steps_completed, {.min = 0});
            m.Object("metrics", &e.metrics, FieldReader::kRequired);
            m.Optional("time", &e.time);
            COHORT_RETURN_IF_ERROR(m.status());
            return e;
          });
  if (r.Has("next_after")) {
    int64_t next = 0;
    r.Required("next_after", &next, {.min = 0});
    out.next_after = next;
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

namespace {

void ReadCheckpointEntry(FieldReader& c, CheckpointEntry* e) {
  c.Required("storage_id", &e->storage_id, 1024);
  c.Required("steps_completed", &e->steps_completed, {.min = 0});
  c.Optional("path", &e->path, 4096);
  c.Object("metadata", &e->metadata, FieldReader::kOptional);
  c.Enum("state", &e->state, ParseCheckpointState, FieldReader::kOptional);
}

Json CheckpointEntryJson(const CheckpointEntry& c) {
  return {{"storage_id", c.storage_id},
          {"steps_completed", c.steps_completed},
          {"path", c.path},
          {"metadata", c.metadata},
          {"state", Name(c.state)}};
}

}  // namespace

Json CheckpointList::ToJson() const {
  Json list = Json::array();
  for (const CheckpointEntry& c : checkpoints) list.push_back(CheckpointEntryJson(c));
  return {{"checkpoints", list}};
}

absl::StatusOr<CheckpointList> ParseCheckpointList(const Json& json) {
  FieldReader r(json, "checkpoint list");
  CheckpointList out;
  r.Array("checkpoints", &out.checkpoints, kMaxRows, FieldReader::kRequired,
          [](const Json& j, const std::string& where) -> absl::StatusOr<CheckpointEntry> {
            FieldReader c(j, where);
            CheckpointEntry e;
            ReadCheckpointEntry(c, &e);
            COHORT_RETURN_IF_ERROR(c.status());
            return e;
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json CheckpointDescription::ToJson() const {
  Json json = CheckpointEntryJson(checkpoint);
  json["trial_id"] = trial_id;
  json["experiment_id"] = experiment_id;
  json["registered_as"] = registered_as;
  return json;
}

absl::StatusOr<CheckpointDescription> ParseCheckpointDescription(const Json& json) {
  FieldReader r(json, "checkpoint");
  CheckpointDescription d;
  ReadCheckpointEntry(r, &d.checkpoint);
  r.RequiredId("trial_id", &d.trial_id);
  r.RequiredId("experiment_id", &d.experiment_id);
  r.Array("registered_as", &d.registered_as, kMaxRows, FieldReader::kOptional,
          internal::ParseStringElement);
  COHORT_RETURN_IF_ERROR(r.status());
  return d;
}

Json LogsPage::ToJson() const {
  Json list = Json::array();
  for (const LogEntry& l : logs)
    list.push_back({{"seq", l.seq}, {"rank", l.rank}, {"line", l.line}, {"time", l.time}});
  return {{"logs", list}, {"next", next}, {"done", done}, {"state", Name(state)}};
}

absl::StatusOr<LogsPage> ParseLogsPage(const Json& json) {
  FieldReader r(json, "logs page");
  LogsPage page;
  r.Array("logs", &page.logs, kMaxLogPage, FieldReader::kRequired,
          [](const Json& j, const std::string& where) -> absl::StatusOr<LogEntry> {
            FieldReader l(j, where);
            LogEntry e;
            l.Required("seq", &e.seq, {.min = 1});
            l.Required("rank", &e.rank, {.min = -1});
            l.Required("line", &e.line);
            l.Optional("time", &e.time, {.min = 0});
            COHORT_RETURN_IF_ERROR(l.status());
            return e;
          });
  r.Required("next", &page.next, {.min = 0});
  r.Required("done", &page.done);
  r.Enum("state", &page.state, ParseTrialState, FieldReader::kRequired);
  COHORT_RETURN_IF_ERROR(r.status());
  return page;
}

}  // namespace cohort::wire
