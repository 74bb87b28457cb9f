#pragma once
// TrialBook: what every searcher keeps about its trials: the samples and seeds it creates them
// with, how many it created, and whether each is still going, STOPPED or ended (the searcher's
// view of wire::TrialState). Shared by the Searcher implementations; not part of the interface.
// Thread-compatible.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "config/yaml_json.h"
#include "master/searcher/operation.h"
#include "master/searcher/searcher.h"
#include "wire/states.h"

namespace cohort::master::searcher::internal {

class TrialBook {
 public:
  enum class Phase {
    kGoing,    // QUEUED, RUNNING or PAUSED: it trains again
    kStopped,  // STOPPED: waits for a promotion
    kEnded,    // COMPLETED, CANCELED or ERROR
  };

  // `samples`: one per trial, in index order; trial i's seed is TrialSeed(experiment_seed, i).
  TrialBook(std::vector<config::Json> samples, uint32_t experiment_seed);

  int64_t planned() const { return static_cast<int64_t>(samples_.size()); }
  int64_t created() const { return static_cast<int64_t>(phases_.size()); }

  // Creates every trial not yet created (each kGoing), with `rungs(index)` as its rungs.
  std::vector<Operation> CreateRest(const std::function<std::vector<int64_t>(int64_t)>& rungs);

  // InvalidArgument naming `event` when `trial` was never created.
  absl::Status CheckCreated(int64_t trial, absl::string_view event) const;

  // Records the trial's state (Phase by state). The trial must be created.
  void SetState(int64_t trial, wire::TrialState state);
  Phase phase(int64_t trial) const { return phases_[static_cast<size_t>(trial)]; }
  void set_phase(int64_t trial, Phase phase) { phases_[static_cast<size_t>(trial)] = phase; }
  bool AnyGoing() const;

  // Restore: the trials created so far with their states. InvalidArgument (nothing changed)
  // when there are more than planned() or a report names a trial not in `states`.
  absl::Status Restore(const std::vector<wire::TrialState>& states,
                       const std::vector<RungReport>& reports);

 private:
  std::vector<config::Json> samples_;
  uint32_t experiment_seed_;
  std::vector<Phase> phases_;  // per created trial
};

}  // namespace cohort::master::searcher::internal
