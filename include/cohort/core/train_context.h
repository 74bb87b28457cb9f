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

class TrainContext {
 public:
  // `reporter` is the chief's (null on other ranks); not owned.
  TrainContext(int rank, Reporter* reporter) : rank_(rank), reporter_(reporter) {}

  // `metrics`: a JSON object (name -> number, or nested objects such as timings). Errors:
  // InvalidArgument for a non-object or a negative step count; FailedPrecondition on a rank
  // other than the chief; Unavailable when the report cannot be written.
  absl::Status ReportTrainingMetrics(int64_t steps_completed, const nlohmann::json& metrics);
  absl::Status ReportValidationMetrics(int64_t steps_completed, const nlohmann::json& metrics);

 private:
  absl::Status Report(const char* kind, int64_t steps_completed, const nlohmann::json& metrics);
  int rank_;
  Reporter* reporter_;
};

// FailedPrecondition explaining that only the chief may do `what` (shared by the contexts).
absl::Status NotChiefError(int rank, const char* what);

}  // namespace cohort::core
