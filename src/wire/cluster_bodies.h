#pragma once
// The master's REST bodies about the cluster (docs/design/0006-cluster.md), written by the
// master and read by the CLI (and the web UI to come), and the bodies every endpoint shares:
//
//   GET /api/v1/agents   AgentList
//   GET /api/v1/slots    SlotList
//   GET /api/v1/tasks    TaskList
//   any failed request   ErrorBody   {"error": "...", "errors": ["...", ...]} with a 4xx/5xx
//   any plain success    OkBody      {"ok": true}
//
// Field names and shapes are the API's; parsers name the body and the field in errors and
// ignore unknown fields. Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wire/states.h"

namespace cohort::wire {

using Json = nlohmann::json;

struct AgentSummary {
  std::string id;
  std::string host;
  int slots = 0;
  int used = 0;  // slots given to allocations
  bool enabled = true;
  bool connected = false;  // it polls this master now
  std::string resource_pool = "default";  // the pool it joined (while connected)
};

struct AgentList {
  std::vector<AgentSummary> agents;
  Json ToJson() const;
};
absl::StatusOr<AgentList> ParseAgentList(const Json& json);

struct SlotEntry {
  std::string agent;
  int slot = 0;
  bool enabled = true;
  std::optional<std::string> allocation;  // with trial_id: what runs on it
  std::optional<int64_t> trial_id;
};

struct SlotList {
  std::vector<SlotEntry> slots;
  Json ToJson() const;
};
absl::StatusOr<SlotList> ParseSlotList(const Json& json);

// A trial waiting or running.
struct TaskEntry {
  int64_t trial_id = 0;
  int64_t experiment_id = 0;
  int slots = 1;
  int priority = 42;
  TrialState state = TrialState::kQueued;
  std::optional<std::string> reason;               // why it waits
  std::optional<std::vector<std::string>> agents;  // where it runs
};

struct TaskList {
  std::vector<TaskEntry> tasks;
  Json ToJson() const;
};
absl::StatusOr<TaskList> ParseTaskList(const Json& json);

// A failed request: the first line of the Status message is `error`, the others (one per
// config error, say) are `errors`.
struct ErrorBody {
  std::string error;
  std::vector<std::string> errors;

  static ErrorBody FromStatus(const absl::Status& status);
  Json ToJson() const;
};
absl::StatusOr<ErrorBody> ParseErrorBody(const Json& json);

// {"ok": true}
Json OkBody();

}  // namespace cohort::wire
