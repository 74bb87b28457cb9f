#include "wire/agent_protocol.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "common/utf8_text.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;
using internal::Shown;

constexpr size_t kMaxIdBytes = 256;
constexpr size_t kMaxRunning = 10000;
constexpr size_t kMaxSearcherOps = 64;
constexpr int kMaxSlots = 1 << 16;
constexpr int kMaxNodes = 1 << 16;

// hparams: an object, or the JSON text of one (what masters before wire sent).
void ReadHparams(FieldReader& r, const Json& json, Json* out) {
  if (!r.ok() || !json.is_object() || !json.contains("hparams") || !json["hparams"].is_string()) {
    r.Object("hparams", out, FieldReader::kRequired);
    return;
  }
  absl::StatusOr<Json> parsed = ParseJsonBounded(json["hparams"].get<std::string>());
  if (!parsed.ok() || !parsed->is_object()) {
    return r.Fail("hparams", absl::StrCat("must be a JSON object, got ", Shown(json["hparams"])));
  }
  *out = *std::move(parsed);
}

}  // namespace

Json RunningAllocation::ToJson() const {
  return {{"allocation", allocation},         {"trial_id", trial_id},
          {"node_rank", node_rank},           {"slots", slots},
          {"held_log_lines", held_log_lines}, {"held_report_batches", held_report_batches}};
}

absl::StatusOr<RunningAllocation> ParseRunningAllocation(const Json& json,
                                                         const std::string& context) {
  FieldReader r(json, context);
  RunningAllocation a;
  r.Required("allocation", &a.allocation, kMaxIdBytes);
  r.RequiredId("trial_id", &a.trial_id);
  r.Required("node_rank", &a.node_rank, {.min = 0, .max = kMaxNodes - 1});
  r.Required("slots", &a.slots, {.min = 1, .max = kMaxSlots});
  r.Optional("held_log_lines", &a.held_log_lines, {.min = 0});
  r.Optional("held_report_batches", &a.held_report_batches, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return a;
}

Json AgentRegistration::ToJson() const {
  Json list = Json::array();
  for (const RunningAllocation& a : allocations) list.push_back(a.ToJson());
  return {{"id", id},
          {"slots", slots},
          {"host", host},
          {"port_range", {port_lo, port_hi}},
          {"running", running},
          {"allocations", list},
          {"resource_pool", resource_pool}};
}

absl::StatusOr<AgentRegistration> ParseAgentRegistration(const Json& json) {
  FieldReader r(json, "agent registration");
  AgentRegistration a;
  r.Required("id", &a.id, kMaxIdBytes);
  if (r.ok() && a.id.empty()) r.Fail("id", "must not be empty");
  if (r.ok()) {
    // The id names the agent in URLs (/api/v1/agents/{id}) and in file names.
    if (!IsSafeName(a.id)) r.Fail("id", SafeNameError(a.id));
  }
  r.Required("slots", &a.slots, {.min = 1, .max = kMaxSlots});
  r.Optional("host", &a.host, kMaxIdBytes);
  std::vector<int64_t> range;
  r.Array("port_range", &range, 2, FieldReader::kOptional,
          [](const Json& j, const std::string& context) -> absl::StatusOr<int64_t> {
            if (!j.is_number_integer() || j.get<int64_t>() < 1 || j.get<int64_t>() > 65535) {
              return absl::InvalidArgumentError(
                  absl::StrCat(context, ": must be a port in [1, 65535], got ", Shown(j)));
            }
            return j.get<int64_t>();
          });
  if (r.ok() && r.Has("port_range")) {
    if (range.size() != 2 || range[0] > range[1]) {
      r.Fail("port_range",
             absl::StrCat("must be [lo, hi] with lo <= hi, got ", Shown(json["port_range"])));
    } else {
      a.port_lo = static_cast<int>(range[0]);
      a.port_hi = static_cast<int>(range[1]);
    }
  }
  r.Array("running", &a.running, kMaxRunning, FieldReader::kOptional, internal::ParseStringElement);
  r.Array("allocations", &a.allocations, kMaxRunning, FieldReader::kOptional,
          ParseRunningAllocation);
  r.Optional("resource_pool", &a.resource_pool, kMaxIdBytes);
  if (r.ok() && !IsSafeName(a.resource_pool)) {
    r.Fail("resource_pool", SafeNameError(a.resource_pool));
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return a;
}

Json StartAction::ToJson() const {
  return {{"type", "start"},
          {"allocation", allocation},
          {"trial_id", trial_id},
          {"experiment_id", experiment_id},
          {"node_rank", node_rank},
          {"nnodes", nnodes},
          {"slots", slots},
          {"chief_addr", chief_addr},
          {"config", config},
          {"hparams", hparams},
          {"seed", seed},
          {"latest_checkpoint", latest_checkpoint},
          {"warm_start", warm_start},
          {"context", context},
          {"reports", reports},
          {"searcher_ops", searcher_ops},
          {"allocation_token", allocation_token}};
}

absl::StatusOr<StartAction> ParseStartAction(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  StartAction a;
  r.Required("allocation", &a.allocation, kMaxIdBytes);
  r.RequiredId("trial_id", &a.trial_id);
  r.RequiredId("experiment_id", &a.experiment_id);
  r.Required("nnodes", &a.nnodes, {.min = 1, .max = kMaxNodes});
  r.Required("node_rank", &a.node_rank, {.min = 0, .max = a.nnodes - 1});
  r.Required("slots", &a.slots, {.min = 1, .max = kMaxSlots});
  r.Required("chief_addr", &a.chief_addr, kMaxIdBytes);
  r.Required("config", &a.config, kMaxConfigBytes);
  ReadHparams(r, json, &a.hparams);
  r.Required("seed", &a.seed, {.min = 0});
  r.Optional("latest_checkpoint", &a.latest_checkpoint, 4096);
  r.Optional("warm_start", &a.warm_start, 4096);
  r.Required("context", &a.context, 4096);
  r.Optional("reports", &a.reports);
  r.Required("allocation_token", &a.allocation_token, 256);
  r.Array("searcher_ops", &a.searcher_ops, kMaxSearcherOps, FieldReader::kOptional,
          internal::ParsePositiveIntElement);
  for (size_t i = 1; r.ok() && i < a.searcher_ops.size(); ++i) {
    if (a.searcher_ops[i] <= a.searcher_ops[i - 1]) {
      r.Fail("searcher_ops", absl::StrCat("must be ascending, got ", Shown(json["searcher_ops"])));
    }
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return a;
}

const char* Name(StopMode mode) {
  switch (mode) {
    case StopMode::kPreempt:
      return "preempt";
    case StopMode::kKill:
      return "kill";
  }
  return "unknown";
}

absl::StatusOr<StopMode> ParseStopMode(absl::string_view text) {
  if (text == "preempt") return StopMode::kPreempt;
  if (text == "kill") return StopMode::kKill;
  return absl::InvalidArgumentError(
      absl::StrCat("'", text.substr(0, 40), "' is not a stop mode (one of preempt, kill)"));
}

Json StopAction::ToJson() const {
  return {{"type", "stop"}, {"allocation", allocation}, {"mode", Name(mode)}};
}

absl::StatusOr<StopAction> ParseStopAction(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  StopAction a;
  r.Required("allocation", &a.allocation, kMaxIdBytes);
  r.Enum("mode", &a.mode, ParseStopMode, FieldReader::kOptional);
  COHORT_RETURN_IF_ERROR(r.status());
  return a;
}

Json ToJson(const Action& action) {
  return std::visit([](const auto& a) { return a.ToJson(); }, action);
}

absl::StatusOr<Action> ParseAction(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  std::string type;
  r.Required("type", &type, 64);
  COHORT_RETURN_IF_ERROR(r.status());
  if (type == "start") {
    COHORT_ASSIGN_OR_RETURN(StartAction start,
                            ParseStartAction(json, absl::StrCat(context, " (start)")));
    return Action(std::move(start));
  }
  if (type == "stop") {
    COHORT_ASSIGN_OR_RETURN(StopAction stop,
                            ParseStopAction(json, absl::StrCat(context, " (stop)")));
    return Action(std::move(stop));
  }
  r.Fail("type", absl::StrCat("must be \"start\" or \"stop\", got ", Shown(json["type"])));
  return r.status();
}

Json ActionBatch::ToJson() const {
  Json list = Json::array();
  for (const Action& a : actions) list.push_back(wire::ToJson(a));
  return {{"actions", list}};
}

absl::StatusOr<std::vector<absl::StatusOr<Action>>> ParseActionBatch(const Json& json) {
  FieldReader r(json, "action batch");
  std::vector<Json> raw;
  r.Array("actions", &raw, kMaxActions, FieldReader::kRequired,
          [](const Json& j, const std::string&) -> absl::StatusOr<Json> { return j; });
  COHORT_RETURN_IF_ERROR(r.status());
  std::vector<absl::StatusOr<Action>> actions;
  for (size_t i = 0; i < raw.size(); ++i) {
    actions.push_back(ParseAction(raw[i], r.ElementContext("actions", i)));
  }
  return actions;
}

Json LogBatch::ToJson() const {
  Json list = Json::array();
  for (const LogLine& l : lines) list.push_back({{"rank", l.rank}, {"line", l.line}});
  return {{"trial_id", trial_id}, {"node", node}, {"lines", list}};
}

absl::StatusOr<LogBatch> ParseLogBatch(const Json& json) {
  FieldReader r(json, "log batch");
  LogBatch b;
  r.RequiredId("trial_id", &b.trial_id);
  r.Optional("node", &b.node, {.min = 0, .max = kMaxNodes - 1});
  r.Array("lines", &b.lines, kMaxLogBatchLines, FieldReader::kRequired,
          [](const Json& j, const std::string& context) -> absl::StatusOr<LogLine> {
            FieldReader line(j, context);
            LogLine l;
            line.Required("rank", &l.rank, {.min = -1});
            line.Required("line", &l.line, kMaxLogLineBytes);
            COHORT_RETURN_IF_ERROR(line.status());
            return l;
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return b;
}

std::string CleanLogLine(std::string line) {
  constexpr absl::string_view kMark = " [cut]";
  // NUL is valid JSON ("\u0000") but ends C strings (terminals) and PostgreSQL refuses it.
  if (!IsCleanUtf8(line)) line = CleanUtf8(line);
  if (line.size() <= kMaxLogLineBytes) return line;
  size_t end = kMaxLogLineBytes - kMark.size();
  // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) --end;
  line.resize(end);
  line.append(kMark.data(), kMark.size());
  return line;
}

Json ReportBatch::ToJson() const {
  Json list = Json::array();
  for (const ReportRecord& rec : lines) list.push_back(rec.ToJson());
  Json j = {{"trial_id", trial_id}, {"lines", list}};
  if (progress) j["progress"] = progress->ToJson();
  if (stalled) j["stalled"] = *stalled;
  if (!system_metrics.empty()) {
    Json system = Json::array();
    for (const SystemMetricsRecord& rec : system_metrics) system.push_back(rec.ToJson());
    j["system_metrics"] = system;
  }
  if (!step_profiles.empty()) {
    Json steps = Json::array();
    for (const StepProfileRecord& rec : step_profiles) steps.push_back(rec.ToJson());
    j["step_profiles"] = steps;
  }
  return j;
}

absl::StatusOr<ReportBatch> ParseReportBatch(const Json& json) {
  FieldReader r(json, "report batch");
  ReportBatch b;
  r.RequiredId("trial_id", &b.trial_id);
  r.Array("lines", &b.lines, kMaxReportBatchLines, FieldReader::kOptional,
          [](const Json& j, const std::string& context) { return ParseReportRecord(j, context); });
  r.Array("system_metrics", &b.system_metrics, kMaxReportBatchLines, FieldReader::kOptional,
          [](const Json& j, const std::string& context) {
            return ParseSystemMetricsRecord(j, context);
          });
  r.Array(
      "step_profiles", &b.step_profiles, kMaxStepProfilesPerBatch, FieldReader::kOptional,
      [](const Json& j, const std::string& context) { return ParseStepProfileRecord(j, context); });
  if (r.Has("stalled")) r.Required("stalled", &b.stalled.emplace(), 1024);
  COHORT_RETURN_IF_ERROR(r.status());
  if (r.Has("progress")) {
    COHORT_ASSIGN_OR_RETURN(b.progress,
                            ParseProgressRecord(json["progress"], "report batch: \"progress\""));
  }
  return b;
}

Json ExitReport::ToJson() const { return {{"node", node}, {"status", status}}; }

absl::StatusOr<ExitReport> ParseExitReport(const Json& json) {
  FieldReader r(json, "exit report");
  ExitReport e;
  r.Required("node", &e.node, {.min = 0, .max = kMaxNodes - 1});
  r.Required("status", &e.status, {.min = 0, .max = 255});
  COHORT_RETURN_IF_ERROR(r.status());
  return e;
}

Json AllocationOutput::ToJson() const {
  Json json = {{"allocation", allocation}, {"token", token}};
  if (logs) json["logs"] = logs->ToJson();
  if (reports) json["reports"] = reports->ToJson();
  if (exit) json["exit"] = exit->ToJson();
  return json;
}

Json OutputBatch::ToJson() const {
  Json list = Json::array();
  for (const AllocationOutput& item : items) list.push_back(item.ToJson());
  return {{"outputs", std::move(list)}};
}

namespace {

// `parse` of `json[key]` when present, its error prefixed with the item's context.
template <typename T>
absl::Status ParsePart(const Json& json, const char* key, const std::string& context,
                       absl::StatusOr<T> (*parse)(const Json&), std::optional<T>* out) {
  if (!json.contains(key)) return absl::OkStatus();
  absl::StatusOr<T> part = parse(json[key]);
  if (!part.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ".", key, ": ", part.status().message()));
  }
  *out = *std::move(part);
  return absl::OkStatus();
}

absl::StatusOr<AllocationOutput> ParseAllocationOutput(const Json& json, std::string context) {
  FieldReader r(json, context);
  AllocationOutput item;
  r.Required("allocation", &item.allocation, kMaxSafeNameBytes);
  r.Required("token", &item.token, 256);
  COHORT_RETURN_IF_ERROR(r.status());
  if (!IsSafeName(item.allocation)) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": '", item.allocation, "' is not an allocation id"));
  }
  absl::StrAppend(&context, " (allocation ", item.allocation, ")");
  COHORT_RETURN_IF_ERROR(ParsePart(json, "logs", context, &ParseLogBatch, &item.logs));
  COHORT_RETURN_IF_ERROR(ParsePart(json, "reports", context, &ParseReportBatch, &item.reports));
  COHORT_RETURN_IF_ERROR(ParsePart(json, "exit", context, &ParseExitReport, &item.exit));
  return item;
}

}  // namespace

absl::StatusOr<std::vector<absl::StatusOr<AllocationOutput>>> ParseOutputBatch(const Json& json) {
  FieldReader r(json, "output batch");
  std::vector<Json> raw;
  r.Array("outputs", &raw, kMaxOutputItems, FieldReader::kRequired,
          [](const Json& j, const std::string&) -> absl::StatusOr<Json> { return j; });
  COHORT_RETURN_IF_ERROR(r.status());
  std::vector<absl::StatusOr<AllocationOutput>> items;
  items.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    items.push_back(ParseAllocationOutput(raw[i], r.ElementContext("outputs", i)));
  }
  return items;
}

Json OutputResults::ToJson() const {
  Json list = Json::array();
  for (const OutputResult& result : results) {
    Json item = {{"code", result.code}};
    if (!result.part.empty()) item["part"] = result.part;
    if (!result.error.empty()) item["error"] = result.error;
    list.push_back(std::move(item));
  }
  return {{"results", std::move(list)}};
}

absl::StatusOr<OutputResults> ParseOutputResults(const Json& json) {
  FieldReader r(json, "output results");
  OutputResults out;
  r.Array("results", &out.results, kMaxOutputItems, FieldReader::kRequired,
          [](const Json& j, const std::string& context) -> absl::StatusOr<OutputResult> {
            FieldReader item(j, context);
            OutputResult result;
            item.Required("code", &result.code, {.min = 100, .max = 599});
            item.Optional("part", &result.part, 16);
            item.Optional("error", &result.error);
            COHORT_RETURN_IF_ERROR(item.status());
            return result;
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

}  // namespace cohort::wire
