#pragma once
// CheckpointsToDelete: which of an ended experiment's checkpoints its checkpoint storage's
// save_* counts let go (Determined's checkpoint garbage collection). Kept: each trial's
// `save_trial_latest` newest (by batches), each trial's `save_trial_best` best and the
// experiment's `save_experiment_best` best, by the searcher metric of the validation at the
// checkpoint's batch (a checkpoint without one is never "best"). Everything else is deleted.
// Pure; thread-safe.
//
// Example (Determined's defaults 0 / 1 / 1: each trial keeps its newest and its best):
//   std::vector<std::string> gone = CheckpointsToDelete(checkpoints, {.smaller_is_better = true});

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cohort::master {

struct GcCheckpoint {
  std::string storage_id;
  int64_t trial_id = 0;
  int64_t steps_completed = 0;
  std::optional<double> metric;  // the searcher metric at its batch; none: not validated there
};

struct GcPolicy {
  int64_t save_experiment_best = 0;
  int64_t save_trial_best = 1;
  int64_t save_trial_latest = 1;
  bool smaller_is_better = true;
};

// The storage ids to delete, in the order of `checkpoints`.
std::vector<std::string> CheckpointsToDelete(const std::vector<GcCheckpoint>& checkpoints,
                                             const GcPolicy& policy);

}  // namespace cohort::master
