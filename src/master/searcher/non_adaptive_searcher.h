#pragma once
// NonAdaptiveSearcher: single, random and grid search. Its trials are the config's
// hyperparameter samples (config/hparam_sampler.h: single one, random max_trials, grid every
// point), each trains searcher.max_length in one searcher operation, and nothing is decided on
// the way: no event yields an operation but Start's and Restore's Creates.
// Thread-compatible.

#include <cstdint>
#include <vector>

#include "master/searcher/internal/trial_book.h"
#include "master/searcher/searcher.h"

namespace cohort::master::searcher {

class NonAdaptiveSearcher : public Searcher {
 public:
  // `samples`: one per trial, in creation order.
  NonAdaptiveSearcher(std::vector<config::Json> samples, uint32_t experiment_seed);

  std::vector<Operation> Start() override;
  absl::StatusOr<std::vector<Operation>> ValidationReported(int64_t trial, int64_t length,
                                                            double metric) override;
  absl::StatusOr<std::vector<Operation>> TrialExited(int64_t trial,
                                                     wire::TrialState state) override;
  absl::StatusOr<std::vector<Operation>> Restore(const std::vector<wire::TrialState>& trials,
                                                 const std::vector<RungReport>& reports) override;
  std::vector<int64_t> Rungs(int64_t) const override { return {}; }
  int64_t TrialCount() const override { return book_.planned(); }

 private:
  internal::TrialBook book_;
};

}  // namespace cohort::master::searcher
