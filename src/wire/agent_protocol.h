#pragma once
// The protocol between cohort-agent and cohort-master (docs/design/0006-cluster.md):
//
//   POST /api/v1/agents                         AgentRegistration        -> {"ok": true}
//   GET  /api/v1/agents/{id}/actions?timeout=S  (long poll)              -> ActionBatch
//   POST /api/v1/allocations/{A}/logs           LogBatch                 -> {"ok": true}
//   POST /api/v1/allocations/{A}/reports        ReportBatch (node 0)     -> {"ok": true}
//   POST /api/v1/allocations/{A}/exit           ExitReport               -> {"ok": true}
//
// Each body writes itself (ToJson) and parses itself; a parse error names the body and the
// field ("start action: \"slots\" must be an integer >= 1, got \"two\""). Unknown fields are
// ignored, so either side may add one first. Batches are bounded (kMax*) so a body cannot make
// its reader keep unbounded data; the agent splits what it sends accordingly.
// Thread-compatible value types; the functions are thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "wire/reports.h"
#include "wire/step_profile.h"
#include "wire/system_metrics.h"

namespace cohort::wire {

using Json = nlohmann::json;

inline constexpr size_t kMaxLogLineBytes = 16 << 10;  // longer output lines are cut
inline constexpr size_t kMaxLogBatchLines = 5000;
inline constexpr size_t kMaxReportBatchLines = 1000;
// A step profile holds up to kMaxStepBuckets spans: fewer per batch keep a body small.
inline constexpr size_t kMaxStepProfilesPerBatch = 200;
inline constexpr size_t kMaxActions = 1000;
inline constexpr size_t kMaxOutputItems = 4096;  // allocations in one agent's OutputBatch
inline constexpr size_t kMaxConfigBytes = 1 << 20;  // an experiment config's YAML text

// A node of an allocation an agent still runs (or ran and has not delivered everything of), as
// its registration tells a restarted master: the master re-adopts the node when it knows the
// allocation with this trial and this node on this agent, and tells the agent to stop it
// otherwise (docs/design/0011-master-restart-readoption.md).
struct RunningAllocation {
  std::string allocation;  // "<trial>.<boot>.<n>"
  int64_t trial_id = 0;
  int node_rank = 0;
  int slots = 1;
  // What the agent holds for the master, delivered once the master answers (for its log).
  int64_t held_log_lines = 0;
  int64_t held_report_batches = 0;

  Json ToJson() const;
};
absl::StatusOr<RunningAllocation> ParseRunningAllocation(const Json& json,
                                                         const std::string& context);

// Registration (and re-registration after a master restart).
struct AgentRegistration {
  std::string id;
  int slots = 1;                   // >= 1
  std::string host = "127.0.0.1";  // optional: how other agents reach this one
  int port_lo = 29500;             // optional "port_range": [lo, hi], 1 <= lo <= hi <= 65535
  int port_hi = 29599;
  std::vector<std::string> running;  // optional: allocations whose processes still run here
  // optional: the same allocations with their nodes (agents before re-adoption sent only
  // `running`, whose allocations a restarted master always stopped).
  std::vector<RunningAllocation> allocations;
  // optional: the resource pool it joins (cohort-agent --resource-pool); the master refuses a
  // pool it does not have.
  std::string resource_pool = "default";

  Json ToJson() const;
};
absl::StatusOr<AgentRegistration> ParseAgentRegistration(const Json& json);

// Run node `node_rank` of an allocation: `slots` workers through cohort-launch.
struct StartAction {
  std::string allocation;  // "<trial>.<boot>.<n>"
  int64_t trial_id = 0;
  int64_t experiment_id = 0;
  int node_rank = 0;  // 0 <= node_rank < nnodes
  int nnodes = 1;
  int slots = 1;
  std::string chief_addr;         // host:port of the trial's rendezvous store (node 0's agent)
  std::string config;             // the experiment's effective config, YAML text
  Json hparams = Json::object();  // on the wire an object, or (older masters) its JSON text
  int64_t seed = 0;
  std::string latest_checkpoint;  // optional; empty: start fresh
  // optional: a checkpoint directory whose weights a fresh trial starts from (a warm start:
  // searcher.source_trial_id / source_checkpoint_uuid); ignored when latest_checkpoint is set.
  std::string warm_start;
  std::string context;   // URL path of the context archive
  bool reports = false;  // optional; true on node 0: forward metrics.jsonl and progress
  std::vector<int64_t> searcher_ops;  // optional; adaptive_asha's rungs, ascending
  // The allocation's own credential: its logs, reports and exit are posted with it (and only
  // while the allocation runs); the workers get it as COHORT_ALLOCATION_TOKEN.
  std::string allocation_token;

  Json ToJson() const;
};

enum class StopMode {
  kPreempt,  // SIGTERM: the trial checkpoints and exits
  kKill,     // SIGTERM, then SIGKILL after a grace period
};
// "preempt", "kill".
const char* Name(StopMode mode);
absl::StatusOr<StopMode> ParseStopMode(absl::string_view text);

struct StopAction {
  std::string allocation;
  StopMode mode = StopMode::kPreempt;  // optional: preempt

  Json ToJson() const;
};

// {"type": "start", ...} or {"type": "stop", ...}.
using Action = std::variant<StartAction, StopAction>;
Json ToJson(const Action& action);
// `context` names the action in errors ("action 2").
absl::StatusOr<Action> ParseAction(const Json& json, absl::string_view context = "action");
absl::StatusOr<StartAction> ParseStartAction(const Json& json,
                                             absl::string_view context = "start action");
absl::StatusOr<StopAction> ParseStopAction(const Json& json,
                                           absl::string_view context = "stop action");

// The long poll's answer: {"actions": [...]}.
struct ActionBatch {
  std::vector<Action> actions;
  Json ToJson() const;
};
// Each action is parsed on its own, so one malformed action does not hide the others: the
// outer error is for a body that is not {"actions": [...]} at all.
absl::StatusOr<std::vector<absl::StatusOr<Action>>> ParseActionBatch(const Json& json);

struct LogLine {
  int rank = -1;     // the worker's rank; -1: the launcher's or the agent's own line
  std::string line;  // at most kMaxLogLineBytes
};

struct LogBatch {
  int64_t trial_id = 0;
  std::vector<LogLine> lines;  // at most kMaxLogBatchLines
  int node = 0;  // the node rank of the agent that read the lines (optional; default 0)

  Json ToJson() const;
};
absl::StatusOr<LogBatch> ParseLogBatch(const Json& json);
// `line` made fit for a LogBatch: invalid UTF-8 and NUL bytes replaced by U+FFFD (JSON text
// must be UTF-8; NUL ends C strings) and cut to kMaxLogLineBytes at a character boundary,
// marked " [cut]".
std::string CleanLogLine(std::string line);

// New lines of the chief's metrics.jsonl and its latest progress.json.
struct ReportBatch {
  int64_t trial_id = 0;
  std::vector<ReportRecord> lines;  // at most kMaxReportBatchLines
  std::optional<ProgressRecord> progress;
  // The profiler's samples of this node's machine (profiling.enabled), at most
  // kMaxReportBatchLines; any node's agent sends them.
  std::vector<SystemMetricsRecord> system_metrics;
  // The profiled batches of this node's ranks (their profile/rank-<R>.jsonl records), at most
  // kMaxStepProfilesPerBatch; any node's agent sends them.
  std::vector<StepProfileRecord> step_profiles;
  // The agent's word on a rank that makes no progress ("rank 1 has made no progress for 62 s
  // ..."; agent/stall_watch.h), at most 1,024 bytes; "" once it makes progress again. Absent:
  // no change.
  std::optional<std::string> stalled;

  Json ToJson() const;
};
absl::StatusOr<ReportBatch> ParseReportBatch(const Json& json);

// One node's launcher exited.
struct ExitReport {
  int node = 0;    // the node rank
  int status = 0;  // cohort-launch's exit status (128 + signal when killed); 0: success

  Json ToJson() const;
};
absl::StatusOr<ExitReport> ParseExitReport(const Json& json);

// One allocation's output in an agent's combined post: its new log lines, its report batch and
// its node's exit, any of them, stored in that order (as its own posts to /logs, /reports and
// /exit would be).
struct AllocationOutput {
  std::string allocation;  // a safe name (IsSafeName)
  std::string token;       // the allocation's own token (its start action's), checked per item
  std::optional<LogBatch> logs;
  std::optional<ReportBatch> reports;
  std::optional<ExitReport> exit;

  Json ToJson() const;
};

// POST /api/v1/agents/{id}/outputs: what an agent's allocations produced since its last flush,
// in one request instead of one per allocation and kind (docs/design/0014, way 2). The request
// carries the agent's credential, each item its allocation's token: an item with a wrong token
// is refused (401) as its own post would be.
struct OutputBatch {
  std::vector<AllocationOutput> items;  // at most kMaxOutputItems

  Json ToJson() const;
};
// Each item parsed on its own, so one malformed item fails only itself (its error names it:
// "outputs[2] (allocation a-7): ..."); the outer error is for a body that is not
// {"outputs": [...]} at all.
absl::StatusOr<std::vector<absl::StatusOr<AllocationOutput>>> ParseOutputBatch(const Json& json);

// What became of one item. Its parts are stored in order (logs, reports, exit) and the first
// that fails ends the item: `part` names it ("logs", "reports", "exit"; empty when the item did
// not parse), `code` is the HTTP status its own post would have had (400 malformed, 404 the
// allocation or its node has ended, 409, 503...) and `error` says why. The parts before it were
// stored, those after it were not tried. All stored: code 200.
struct OutputResult {
  int code = 200;
  std::string part;
  std::string error;
};
// The answer to an OutputBatch: {"results": [{"code", "error"}...]}, one per item, in order.
struct OutputResults {
  std::vector<OutputResult> results;

  Json ToJson() const;
};
absl::StatusOr<OutputResults> ParseOutputResults(const Json& json);

}  // namespace cohort::wire
