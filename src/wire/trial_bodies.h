#pragma once
// The master's REST bodies about trials (docs/design/0006-cluster.md), written by the master
// and read by the CLI (and the web UI to come):
//
//   GET /api/v1/trials/{id}                    TrialDescription
//   GET /api/v1/trials/{id}/metrics?kind=K&after=N&limit=L   MetricList (a page: next_after
//                                              says where the next one starts)
//   GET /api/v1/trials/{id}/checkpoints        CheckpointList
//   GET /api/v1/trials/{id}/logs?after=SEQ...  LogsPage
//
// Field names and shapes are the API's; parsers name the body and the field in errors and
// ignore unknown fields. Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "wire/states.h"

namespace cohort::wire {

using Json = nlohmann::json;

// One agent's share of a running trial.
struct AllocationAgent {
  std::string agent;
  int slots = 0;
};

// What a log policy does when its pattern matches (experiment config `log_policies[].action`).
enum class LogPolicyAction { kNone, kCancelRetries, kExcludeNode };
// "", "cancel_retries", "exclude_node".
const char* Name(LogPolicyAction action);
absl::StatusOr<LogPolicyAction> ParseLogPolicyAction(absl::string_view text);

// The most log policy matches a trial keeps (the first ones).
inline constexpr size_t kMaxLogPolicyMatches = 200;

// A log line of a trial's run that matched one of its experiment's log policies: the first
// match of each policy in each run is kept.
struct LogPolicyMatch {
  std::string policy;  // the policy's name, or its pattern when it has none
  LogPolicyAction action = LogPolicyAction::kNone;
  std::string allocation;  // the run
  std::string agent;       // where the line was printed
  int rank = -1;           // the worker that printed it; -1: the launcher or the agent
  std::string line;        // at most kMaxLogLineBytes
  int64_t time_ms = 0;

  Json ToJson() const;
};
absl::StatusOr<LogPolicyMatch> ParseLogPolicyMatch(const Json& json, absl::string_view context);

struct TrialDescription {
  int64_t id = 0;
  int64_t experiment_id = 0;
  TrialState state = TrialState::kQueued;
  Json hparams = Json::object();
  int64_t seed = 0;
  int64_t batches = 0;        // trained so far
  int64_t total_batches = 0;  // the searcher's length in batches (0: unknown)
  int restarts = 0;
  std::string latest_checkpoint;              // storage id; empty: none
  std::optional<double> searcher_metric;      // null until the trial reports one
  std::optional<std::string> waiting_reason;  // QUEUED: why it waits
  std::optional<std::string> allocation;      // while it runs
  std::vector<AllocationAgent> agents;        // with `allocation`: where it runs
  std::optional<std::string> error_lines;     // ERROR: the last lines of its log
  std::vector<LogPolicyMatch> log_policy_matches;  // oldest first

  Json ToJson() const;
};
absl::StatusOr<TrialDescription> ParseTrialDescription(const Json& json,
                                                       absl::string_view context = "trial");

// The kinds of metric rows the master keeps: the trial's reports, and the searcher's record of
// each adaptive_asha rung.
enum class MetricKind { kTraining, kValidation, kSearcher };
// "training", "validation", "searcher".
const char* Name(MetricKind kind);
absl::StatusOr<MetricKind> ParseMetricKind(absl::string_view text);

struct MetricEntry {
  MetricKind kind = MetricKind::kTraining;
  int64_t steps_completed = 0;
  Json metrics = Json::object();
  double time = 0;  // unix seconds
};

struct MetricList {
  std::vector<MetricEntry> metrics;
  // More rows follow: ask again with ?after=next_after. Absent: this page is the last.
  std::optional<int64_t> next_after;
  Json ToJson() const;
};
absl::StatusOr<MetricList> ParseMetricList(const Json& json);

struct CheckpointEntry {
  std::string storage_id;
  int64_t steps_completed = 0;
  std::string path;
  Json metadata = Json::object();
  CheckpointState state = CheckpointState::kActive;  // optional on the wire: ACTIVE
};

struct CheckpointList {
  std::vector<CheckpointEntry> checkpoints;
  Json ToJson() const;
};
absl::StatusOr<CheckpointList> ParseCheckpointList(const Json& json);

// One checkpoint with where it came from and what holds it (GET /api/v1/checkpoints/{uuid},
// `cohort checkpoint describe`): its fields as CheckpointList's, plus its trial, its experiment
// and the model versions it is registered as ("resnet:3"), which keep it from the GC.
struct CheckpointDescription {
  CheckpointEntry checkpoint;
  int64_t trial_id = 0;
  int64_t experiment_id = 0;
  std::vector<std::string> registered_as;
  Json ToJson() const;
};
absl::StatusOr<CheckpointDescription> ParseCheckpointDescription(const Json& json);

struct LogEntry {
  int64_t seq = 0;
  int rank = -1;  // -1: the launcher's, the agent's or the master's own line
  std::string line;
  double time = 0;  // unix seconds when the master stored it; 0: unknown (optional on the wire)
};

// One page of a trial's log, after a sequence number.
struct LogsPage {
  std::vector<LogEntry> logs;
  int64_t next = 0;   // the sequence number to ask for lines after
  bool done = false;  // the trial ended and this page has its last lines
  TrialState state = TrialState::kQueued;

  Json ToJson() const;
};
absl::StatusOr<LogsPage> ParseLogsPage(const Json& json);

}  // namespace cohort::wire
