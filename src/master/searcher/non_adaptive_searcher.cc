#include "master/searcher/non_adaptive_searcher.h"

#include "cohort/status.h"

namespace cohort::master::searcher {
namespace {

std::vector<int64_t> NoRungs(int64_t) { return {}; }

}  // namespace

NonAdaptiveSearcher::NonAdaptiveSearcher(std::vector<config::Json> samples,
                                         uint32_t experiment_seed)
    : book_(std::move(samples), experiment_seed) {}

std::vector<Operation> NonAdaptiveSearcher::Start() { return book_.CreateRest(NoRungs); }

absl::StatusOr<std::vector<Operation>> NonAdaptiveSearcher::ValidationReported(int64_t trial,
                                                                               int64_t, double) {
  COHORT_RETURN_IF_ERROR(book_.CheckCreated(trial, "a searcher metric reported"));
  return std::vector<Operation>{};
}

absl::StatusOr<std::vector<Operation>> NonAdaptiveSearcher::TrialExited(int64_t trial,
                                                                        wire::TrialState state) {
  COHORT_RETURN_IF_ERROR(book_.CheckCreated(trial, "a trial exited"));
  book_.SetState(trial, state);
  return std::vector<Operation>{};
}

absl::StatusOr<std::vector<Operation>> NonAdaptiveSearcher::Restore(
    const std::vector<wire::TrialState>& trials, const std::vector<RungReport>& reports) {
  COHORT_RETURN_IF_ERROR(book_.Restore(trials, reports));
  return book_.CreateRest(NoRungs);
}

}  // namespace cohort::master::searcher
