#pragma once
// TrainContext: reporting training and validation metrics (Determined's core.TrainContext).
// Only the chief reports: average or gather the workers' values first (DistributedContext),
// then report under `if (dist.is_chief())`. Locally the reports land in the run directory's
// metrics.jsonl (see LocalReporter). Thread-compatible.
//
// Example:
//   if (ctx.distributed().is_chief()) {
//     COHORT_RETURN_IF_ERROR(ctx.train().ReportTrainingMetrics(batch, {{"loss", loss}}));
//   }

#include <cstdint>

#include "absl/status/status.h"
#include "cohort/core/reporter.h"
#include "nlohmann/json.hpp"

namespace cohort::core {

class ProgressBeacon;  // internal to Cohort: this worker's progress beats for its agent

class TrainContext {
 public:
  // `reporter` is the chief's (null on other ranks); `beacon` (may be null) is told of every
  // reported step, for the agent. Neither is owned.
  TrainContext(int rank, Reporter* reporter, ProgressBeacon* beacon = nullptr)
      : rank_(rank), reporter_(reporter), beacon_(beacon) {}

  // `metrics`: a JSON object (name -> number, or nested objects such as timings). Errors:
  // InvalidArgument for a non-object or a negative step count; FailedPrecondition on a rank
  // other than the chief; Unavailable when the report cannot be written.
  absl::Status ReportTrainingMetrics(int64_t steps_completed, const nlohmann::json& metrics);
  absl::Status ReportValidationMetrics(int64_t steps_completed, const nlohmann::json& metrics);

 private:
  absl::Status Report(const char* kind, int64_t steps_completed, const nlohmann::json& metrics);
  int rank_;
  Reporter* reporter_;
  ProgressBeacon* beacon_;
};

// FailedPrecondition explaining that only the chief may do `what` (shared by the contexts).
absl::Status NotChiefError(int rank, const char* what);

}  // namespace cohort::core
