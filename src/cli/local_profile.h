#pragma once
// A local run's profile (`cohort trial profile --run-dir DIR`): the step timelines a trial run
// by `cohort experiment create --local` wrote to DIR/profile/rank-<R>.jsonl (one
// wire::StepProfileRecord a line, runtime/step_profiler.h), summed up as the master serves a
// cluster trial's (wire::StepTimings) and kept for a trace (wire::TraceEvents). Files are
// untrusted: a line that does not parse is counted and skipped, a line longer than 1 MiB
// likewise, and at most kMaxLocalRecords records are read (the rest counted as cut).
// Thread-safe (no state).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(LocalProfile p, ReadLocalProfile("cohort-runs/x/trial-1", {}, {}));
//   PrintTimings(p.timings);

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/profile_bodies.h"
#include "wire/step_profile.h"

namespace cohort::cli {

inline constexpr int64_t kMaxLocalRecords = 200000;

struct LocalProfile {
  wire::StepTimings timings;                     // every record read, per rank and phase
  std::vector<wire::StepProfileRecord> records;  // those in [from_batch, to_batch]
  int64_t skipped_lines = 0;                     // lines that did not parse
  bool truncated = false;                        // more than kMaxLocalRecords records
};

// NotFound naming the directory when it holds no profile/rank-*.jsonl (saying how to profile a
// run); Unavailable when a file cannot be read.
absl::StatusOr<LocalProfile> ReadLocalProfile(const std::string& run_dir,
                                              std::optional<int64_t> from_batch,
                                              std::optional<int64_t> to_batch);

}  // namespace cohort::cli
