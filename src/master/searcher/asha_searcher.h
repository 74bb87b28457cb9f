#pragma once
// AshaSearcher: Determined's adaptive asynchronous successive halving (adaptive_asha; Li et al.,
// arXiv:1810.05934), the brackets and rungs of config/asha.h turned into decisions.
//
// Trials: searcher.max_trials random samples; trial i belongs to bracket i % brackets and trains
// in one searcher operation per rung of its bracket (Create::rungs). At each rung but the last
// it reports the searcher metric, and the first report of that rung decides: among the best
// ceil(n / divisor) of the n trials of its bracket with a metric at that rung (itself included;
// config::AshaPromotes; a missing or non-finite metric ranks last), it goes on (Continue),
// otherwise it stops (Stop). Later reports of a rung the trial already reported change nothing.
//   stop_once: true   a stopped trial is stopped for good (Stop::final: COMPLETED).
//   stop_once: false  (Determined's default) it is STOPPED: whenever a trial of its bracket
//                     reports at that rung, or a trial exits, the STOPPED trials are ranked
//                     again at the highest rung where they have a metric, and one now among
//                     the best is promoted (Promote: it resumes from its checkpoint). Once no
//                     trial is QUEUED, RUNNING or PAUSED, the STOPPED ones are completed
//                     (Complete).
//
// Example (seed 5, max_trials 4, max_rungs 2, divisor 2, aggressive, rungs 200 and 400 batches;
// the metric is 200 * increment: 2400, 4200, 4600, 4000, smaller is better):
//   trial 0 at 200: 2400, best 1 of 1            -> Continue
//   trial 1 at 200: 4200, not best 1 of 2        -> Stop (STOPPED after its exit)
//   trial 2 at 200: 4600, not best 2 of 3        -> Stop; trial 1 is now 2nd of 3: Promote
//   trial 3 at 200: 4000, best 2 of 4            -> Continue; trial 2 stays STOPPED
//   trial 3 exits COMPLETED, nothing else goes on -> Complete trial 2
// Thread-compatible.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohort/config/experiment_config.h"
#include "master/searcher/internal/trial_book.h"
#include "master/searcher/searcher.h"

namespace cohort::master::searcher {

class AshaSearcher : public Searcher {
 public:
  // `searcher`: the config's adaptive_asha settings; `samples`: one per trial, creation order.
  AshaSearcher(config::SearcherConfig searcher, std::vector<config::Json> samples,
               uint32_t experiment_seed);

  std::vector<Operation> Start() override;
  absl::StatusOr<std::vector<Operation>> ValidationReported(int64_t trial, int64_t length,
                                                            double metric) override;
  absl::StatusOr<std::vector<Operation>> TrialExited(int64_t trial,
                                                     wire::TrialState state) override;
  absl::StatusOr<std::vector<Operation>> Restore(const std::vector<wire::TrialState>& trials,
                                                 const std::vector<RungReport>& reports) override;
  std::vector<int64_t> Rungs(int64_t trial) const override;
  int64_t TrialCount() const override { return book_.planned(); }

 private:
  std::vector<Operation> CreateRest();
  // Where `trial` stands at the rung of `length`, where it has a metric.
  Standing StandingAt(int64_t trial, int64_t length) const;
  // Without stop_once: the STOPPED trials now among the best where they stopped, promoted.
  std::vector<Operation> PromoteStopped();
  // When no trial goes on: every STOPPED trial, completed.
  std::vector<Operation> CompleteStoppedWhenSettled();

  config::SearcherConfig config_;
  std::vector<std::vector<int64_t>> brackets_;  // config::AshaBrackets
  std::string unit_;                            // searcher.max_length's
  internal::TrialBook book_;
  std::vector<std::map<int64_t, double>> metrics_;  // per created trial: rung -> first metric
};

}  // namespace cohort::master::searcher
