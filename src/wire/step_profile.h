#pragma once
// StepProfileRecord: one rank's timeline of one training batch while the trial is profiled
// (profiling.enabled and the batch inside [begin_on_batch, end_after_batch]). Each rank of a
// Trial API run appends one per batch to RUN_DIR/profile/rank-<R>.jsonl (runtime/step_profiler.h);
// the agent of its node forwards them in report batches; the master stores them and serves the
// per-rank timings and the trace timeline (docs/observability.md):
//
//   {"rank":1,"batch":12,"time":1700000000.123456,
//    "phases":[["step",0,45123],["dataloader_next",3,230],["train_batch",240,44700],
//              ["forward",251,21100],...],
//    "buckets":[[0,1048576,20950,812],[1,4194304,23001,2950]]}
//
// "time" is the unix time (seconds) at which the batch began on that rank; every span is
// [start, start + duration) in whole microseconds after it. "phases" are the training
// thread's spans (names as runtime/trial_runner.h's timings, plus "step": the whole batch);
// a phase may contain others (train_batch contains forward, backward, gradient_wait and
// optimizer_step). "buckets" are the gradient reducer's communication thread's spans: bucket
// index, bytes on the wire, start, duration.
// Parsers name the record and the field ("step profile: \"phases\"[2]: the duration must be an
// integer in [0, 86400000000], got -1"); unknown fields are ignored.
// Thread-compatible value types; the functions are thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

inline constexpr size_t kMaxStepPhases = 64;
inline constexpr size_t kMaxStepBuckets = 1024;
inline constexpr size_t kMaxPhaseNameBytes = 64;
// A span lasts at most a day, and starts within a day of its batch's start.
inline constexpr int64_t kMaxSpanMicros = int64_t{86400} * 1000000;

struct PhaseSpan {
  std::string name;  // a safe name (wire/limits.h), at most kMaxPhaseNameBytes
  int64_t start_us = 0;
  int64_t duration_us = 0;
};

struct BucketSpan {
  int bucket = 0;     // the reducer's bucket index, in reduction order
  int64_t bytes = 0;  // on the wire (half of the fp32 bytes with fp16 compression)
  int64_t start_us = 0;
  int64_t duration_us = 0;
};

struct StepProfileRecord {
  int rank = 0;  // >= 0
  // The batch's number, >= 1: batches completed once it is done (Determined's numbering, as
  // profiling's begin_on_batch/end_after_batch and the series' batches).
  int64_t batch = 1;
  double time = 0;                  // unix seconds of the batch's start
  std::vector<PhaseSpan> phases;    // at most kMaxStepPhases
  std::vector<BucketSpan> buckets;  // at most kMaxStepBuckets

  Json ToJson() const;
};

// `context` names the record in errors, e.g. "rank-1.jsonl line 3".
absl::StatusOr<StepProfileRecord> ParseStepProfileRecord(
    const Json& json, absl::string_view context = "step profile");

// The file a rank appends its records to, relative to the run directory.
std::string StepProfilePath(int rank);  // "profile/rank-<rank>.jsonl"
inline constexpr absl::string_view kStepProfileDir = "profile";

}  // namespace cohort::wire
