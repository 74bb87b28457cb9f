#pragma once
// The trial's reports, as its chief writes them into the run directory (core::LocalReporter)
// and as the agent and the local runner read them back:
//
//   metrics.jsonl  one ReportRecord per line, appended as reported:
//     {"kind":"training","steps_completed":100,"metrics":{"loss":0.41},"time":...}
//     {"kind":"validation","steps_completed":100,"metrics":{...},"time":...}
//     {"kind":"checkpoint","storage_id":"<uuid>","path":"...","metadata":{...},
//      "steps_completed":100,"time":...}            (steps_completed: when the metadata has it)
//     {"kind":"completed","searcher_metric":0.31,"length":100,"time":...}  (NaN: null)
//     {"kind":"preempted","time":...}
//   progress.json  one ProgressRecord, replaced as the trial goes:
//     {"completed":1200,"total":2000,"unit":"batches","training":{...},
//      "training_steps_completed":1200,"validation":{...},"validation_steps_completed":1000,
//      "latest_checkpoint":"<uuid>","searcher_metric":0.31,"preempted":true,"time":...}
//
// The agent forwards both to the master in a ReportBatch (agent_protocol.h). Parsers name the
// record ("metrics.jsonl line 3: missing \"kind\""); unknown fields are ignored.
// Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

enum class ReportKind {
  kTraining,    // training metrics at steps_completed
  kValidation,  // validation metrics at steps_completed
  kCheckpoint,  // a checkpoint complete in storage
  kCompleted,   // a searcher operation of `length` finished with searcher_metric
  kPreempted,   // the workers agreed to stop early; the latest checkpoint resumes the trial
};

// "training", "validation", "checkpoint", "completed", "preempted".
const char* Name(ReportKind kind);
// The inverse of Name; InvalidArgument naming the text and the kinds otherwise.
absl::StatusOr<ReportKind> ParseReportKind(absl::string_view text);

// One line of metrics.jsonl. Which fields a kind carries is listed with each field; the others
// keep their defaults and are not written.
struct ReportRecord {
  ReportKind kind = ReportKind::kTraining;
  double time = 0;  // unix seconds; every kind (optional when parsed: 0)
  // training, validation: required; checkpoint: optional (from the checkpoint's metadata).
  std::optional<int64_t> steps_completed;
  Json metrics = Json::object();  // training, validation: a JSON object (required)
  // checkpoint: storage_id (required), path and metadata (optional).
  std::string storage_id;
  std::string path;
  Json metadata = Json::object();
  // completed: the config's searcher.metric (NaN when the trial had none; null on the wire)
  // and the operation's length (optional: older trials did not write it).
  double searcher_metric = 0;
  std::optional<double> length;

  Json ToJson() const;
};

// `context` names the record in errors, e.g. "metrics.jsonl line 3".
// The numbers of a training or validation record's metrics as series names
// "<kind>/<name>[/<nested name>...]": {"loss": 0.3, "acc": {"top1": 0.9}} at kind "validation"
// is validation/loss and validation/acc/top1. Booleans count as 0 and 1; other values, non-finite
// numbers and nesting past 8 levels are left out. The master's time series and the TensorBoard
// event files name their series this way.
std::map<std::string, double> MetricSeries(absl::string_view kind, const Json& metrics);

absl::StatusOr<ReportRecord> ParseReportRecord(const Json& json,
                                               absl::string_view context = "report record");

// progress.json. Before the first ReportProgress the counts are absent (unit empty).
struct ProgressRecord {
  double completed = 0;  // in `unit`s of the current searcher operation
  double total = 0;
  std::string unit;  // "batches", "records" or "epochs"; empty: no counts yet
  Json training;     // the latest training metrics (null: none yet)
  std::optional<int64_t> training_steps_completed;
  Json validation;  // the latest validation metrics (null: none yet)
  std::optional<int64_t> validation_steps_completed;
  std::string latest_checkpoint;          // storage id; empty: none
  std::optional<double> searcher_metric;  // once completed (NaN: null on the wire)
  bool preempted = false;
  double time = 0;  // unix seconds of the write

  bool has_counts() const { return !unit.empty(); }
  Json ToJson() const;
};

// "completed" without "total" is an error; "unit" defaults to "batches" when counts are there.
absl::StatusOr<ProgressRecord> ParseProgressRecord(const Json& json,
                                                   absl::string_view context = "progress");
// A trial's progress.json (rewritten whole by the runtime; read by the agent and by
// `cohort experiment create --local`), outside input: NotFound while there is none; else its
// record, or an error starting "progress.json: " that says what is wrong (larger than
// kMaxProgressFileBytes, not JSON or nested too deep, not a progress record).
absl::StatusOr<ProgressRecord> ReadProgressFile(const std::string& path);

}  // namespace cohort::wire
