#include "cohort/core/searcher_context.h"

#include "absl/strings/str_cat.h"
#include "cohort/core/train_context.h"

namespace cohort::core {

absl::Status SearcherOperation::ReportProgress(double completed) {
  if (owner_->reporter_ == nullptr)
    return NotChiefError(owner_->rank_, "reports searcher progress");
  if (completed < 0 || completed > static_cast<double>(length_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("searcher progress ", completed, " is outside [0, ", length_, "] ", unit_));
  }
  return owner_->reporter_->ReportProgress(
      {.completed = completed, .total = static_cast<double>(length_), .unit = unit_});
}

absl::Status SearcherOperation::ReportCompleted(double searcher_metric) {
  if (owner_->reporter_ == nullptr)
    return NotChiefError(owner_->rank_, "completes searcher operations");
  owner_->completed_ = true;
  return owner_->reporter_->ReportCompleted(searcher_metric, static_cast<double>(length_));
}

absl::StatusOr<std::optional<SearcherOperation>> SearcherContext::Next() {
  if (lengths_.empty()) {
    return absl::FailedPreconditionError(
        "the searcher has no length: run with an experiment config (COHORT_CONFIG or "
        "InitOptions::config_path) that sets searcher.max_length");
  }
  if (handed_out_ > 0 && reporter_ != nullptr && !completed_) {
    return absl::FailedPreconditionError(
        "the searcher operation was not completed: call ReportCompleted(metric) on the chief "
        "before asking for the next one");
  }
  if (handed_out_ >= lengths_.size()) return std::nullopt;
  completed_ = false;
  return SearcherOperation(this, lengths_[handed_out_++], unit_);
}

}  // namespace cohort::core
