#pragma once
// The trials table of an experiment (wire/trial_table.h; issue 38): every trial's
// hyperparameters, state, progress and checkpoints beside its best and latest validation,
// assembled from the database's rows. Read-only: it keeps no state and takes no lock of the
// master's (rows are read as they are; a trial that reports meanwhile shows in the next read).
//
// Cost: one query for the trials, one for the experiment's ACTIVE checkpoints and one per trial
// (its validations).
//
// Thread-safe (the database is).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "master/db/database.h"
#include "wire/trial_table.h"

namespace cohort::master::views {

// The best and the latest of `validations` (in report order) by `metric`: best is lowest (or
// highest when !smaller_is_better) among the reports that hold it as a finite number; latest is
// the last report. Reports that are not objects are skipped.
struct BestAndLatest {
  std::optional<wire::ValidationPoint> best;
  std::optional<wire::ValidationPoint> latest;
};
BestAndLatest PickValidations(const std::vector<wire::ValidationPoint>& validations,
                              const std::string& metric, bool smaller_is_better);

// The searcher's metric and direction from an experiment's effective config (YAML);
// ("", true) when it cannot be read.
std::pair<std::string, bool> SearcherMetric(const std::string& config_yaml);

// The table of experiment `experiment_id` (NotFound when there is none).
absl::StatusOr<wire::TrialTable> BuildTrialTable(Database& db, int64_t experiment_id);

}  // namespace cohort::master::views
