#include "cohort/core/train_context.h"

#include "absl/strings/str_cat.h"
#include "core/progress_beacon.h"

namespace cohort::core {

absl::Status NotChiefError(int rank, const char* what) {
  return absl::FailedPreconditionError(absl::StrCat(
      "rank ", rank, ": only the chief (rank 0) ", what,
      "; gather the values to the chief first (distributed().Gather) and call it under "
      "`if (distributed().is_chief())`"));
}

absl::Status TrainContext::ReportTrainingMetrics(int64_t steps_completed,
                                                 const nlohmann::json& metrics) {
  if (beacon_ != nullptr) beacon_->Step(steps_completed);
  return Report("training", steps_completed, metrics);
}

absl::Status TrainContext::ReportValidationMetrics(int64_t steps_completed,
                                                   const nlohmann::json& metrics) {
  return Report("validation", steps_completed, metrics);
}

absl::Status TrainContext::Report(const char* kind, int64_t steps_completed,
                                  const nlohmann::json& metrics) {
  if (reporter_ == nullptr) return NotChiefError(rank_, "reports metrics");
  if (!metrics.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " metrics must be a JSON object of name -> value, got ", metrics.dump().substr(0, 100)));
  }
  if (steps_completed < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " metrics: steps_completed must be >= 0, got ", steps_completed));
  }
  return reporter_->ReportMetrics(kind, steps_completed, metrics);
}

}  // namespace cohort::core
