#include "wire/cluster_bodies.h"

#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxIdBytes = 256;
constexpr size_t kMaxEntries = 1 << 20;
constexpr size_t kMaxErrors = 1000;

absl::StatusOr<AgentSummary> ParseAgent(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  AgentSummary a;
  r.Required("id", &a.id, kMaxIdBytes);
  r.Required("host", &a.host, kMaxIdBytes);
  r.Required("slots", &a.slots, {.min = 0});
  r.Required("used", &a.used, {.min = 0});
  r.Required("enabled", &a.enabled);
  r.Required("connected", &a.connected);
  r.Optional("resource_pool", &a.resource_pool, kMaxIdBytes);
  COHORT_RETURN_IF_ERROR(r.status());
  return a;
}

absl::StatusOr<SlotEntry> ParseSlot(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  SlotEntry s;
  r.Required("agent", &s.agent, kMaxIdBytes);
  r.Required("slot", &s.slot, {.min = 0});
  r.Required("enabled", &s.enabled);
  if (r.Has("allocation")) r.Required("allocation", &s.allocation.emplace(), kMaxIdBytes);
  if (r.Has("trial_id")) r.Required("trial_id", &s.trial_id.emplace(), {.min = 1});
  COHORT_RETURN_IF_ERROR(r.status());
  return s;
}

absl::StatusOr<TaskEntry> ParseTask(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  TaskEntry t;
  r.Required("trial_id", &t.trial_id, {.min = 1});
  r.Required("experiment_id", &t.experiment_id, {.min = 1});
  r.Required("slots", &t.slots, {.min = 1});
  r.Required("priority", &t.priority);
  r.Enum("state", &t.state, ParseTrialState, FieldReader::kRequired);
  if (r.Has("reason")) r.Required("reason", &t.reason.emplace());
  if (r.Has("agents")) {
    r.Array("agents", &t.agents.emplace(), kMaxEntries, FieldReader::kRequired,
            internal::ParseStringElement);
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

}  // namespace

Json AgentList::ToJson() const {
  Json list = Json::array();
  for (const AgentSummary& a : agents) {
    list.push_back({{"id", a.id},
                    {"host", a.host},
                    {"slots", a.slots},
                    {"used", a.used},
                    {"enabled", a.enabled},
                    {"connected", a.connected},
                    {"resource_pool", a.resource_pool}});
  }
  return {{"agents", list}};
}

absl::StatusOr<AgentList> ParseAgentList(const Json& json) {
  FieldReader r(json, "agent list");
  AgentList out;
  r.Array("agents", &out.agents, kMaxEntries, FieldReader::kRequired, ParseAgent);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json SlotList::ToJson() const {
  Json list = Json::array();
  for (const SlotEntry& s : slots) {
    Json j = {{"agent", s.agent}, {"slot", s.slot}, {"enabled", s.enabled}};
    if (s.allocation) j["allocation"] = *s.allocation;
    if (s.trial_id) j["trial_id"] = *s.trial_id;
    list.push_back(std::move(j));
  }
  return {{"slots", list}};
}

absl::StatusOr<SlotList> ParseSlotList(const Json& json) {
  FieldReader r(json, "slot list");
  SlotList out;
  r.Array("slots", &out.slots, kMaxEntries, FieldReader::kRequired, ParseSlot);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json TaskList::ToJson() const {
  Json list = Json::array();
  for (const TaskEntry& t : tasks) {
    Json j = {{"trial_id", t.trial_id},
              {"experiment_id", t.experiment_id},
              {"slots", t.slots},
              {"priority", t.priority},
              {"state", Name(t.state)}};
    if (t.reason) j["reason"] = *t.reason;
    if (t.agents) j["agents"] = *t.agents;
    list.push_back(std::move(j));
  }
  return {{"tasks", list}};
}

absl::StatusOr<TaskList> ParseTaskList(const Json& json) {
  FieldReader r(json, "task list");
  TaskList out;
  r.Array("tasks", &out.tasks, kMaxEntries, FieldReader::kRequired, ParseTask);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

ErrorBody ErrorBody::FromStatus(const absl::Status& status) {
  std::vector<std::string> lines = absl::StrSplit(status.message(), '\n');
  ErrorBody body;
  body.error = lines.front();
  body.errors.assign(lines.begin() + 1, lines.end());
  return body;
}

Json ErrorBody::ToJson() const {
  Json j = {{"error", error}};
  if (!errors.empty()) j["errors"] = errors;
  return j;
}

absl::StatusOr<ErrorBody> ParseErrorBody(const Json& json) {
  FieldReader r(json, "error body");
  ErrorBody e;
  r.Required("error", &e.error);
  r.Array("errors", &e.errors, kMaxErrors, FieldReader::kOptional, internal::ParseStringElement);
  COHORT_RETURN_IF_ERROR(r.status());
  return e;
}

Json OkBody() { return {{"ok", true}}; }

}  // namespace cohort::wire
