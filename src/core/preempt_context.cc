#include "cohort/core/preempt_context.h"

#include <cstdint>

#include "cohort/status.h"

namespace cohort::core {

absl::StatusOr<bool> PreemptContext::ShouldPreempt() {
  if (preempted_) return true;
  int32_t votes = requested_() ? 1 : 0;
  if (comm_.size() > 1) {
    COHORT_RETURN_IF_ERROR(comm_.Allreduce(&votes, 1, comm::DataType::kInt32, comm::ReduceOp::kSum));
  }
  preempted_ = votes > 0;
  if (preempted_ && reporter_ != nullptr) COHORT_RETURN_IF_ERROR(reporter_->ReportPreempted());
  return preempted_;
}

}  // namespace cohort::core
