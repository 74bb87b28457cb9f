#pragma once
// GET /api/v1/experiments/{id}/trials: an experiment's trials as one table, the view that
// answers "which settings matter, and which trial is best?" (issue 38): each trial's
// hyperparameters beside its validation metrics, written by the master, read by the CLI
// (`cohort experiment trials`, `cohort trial compare`) and the web page.
//
// A trial's "best" validation is its validation report whose searcher metric is best (lowest,
// or highest with searcher.smaller_is_better: false), as Determined's; its "latest" the last
// one. Both carry every metric of that report. The table's best trial is the one whose best
// searcher metric is best (none while no trial has validated).
//
// Parsers name the body and the field in errors and ignore unknown fields. Thread-compatible
// value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wire/states.h"

namespace cohort::wire {

using Json = nlohmann::json;

// One validation report of a trial: its batch and its metrics (an object of numbers).
struct ValidationPoint {
  int64_t batches = 0;
  Json metrics = Json::object();
};

struct TrialTableRow {
  int64_t trial_id = 0;
  TrialState state = TrialState::kQueued;
  Json hparams = Json::object();  // as the trial got them (groups nested)
  int64_t batches = 0;
  int restarts = 0;
  int64_t checkpoints = 0;  // ACTIVE ones
  std::optional<ValidationPoint> best_validation;    // none before its first validation
  std::optional<ValidationPoint> latest_validation;  // none before its first validation
};

struct TrialTable {
  std::string metric;             // the searcher's metric
  bool smaller_is_better = true;  // its direction
  std::optional<int64_t> best_trial;
  std::vector<TrialTableRow> trials;  // by trial id
  Json ToJson() const;
};
absl::StatusOr<TrialTable> ParseTrialTable(const Json& json);

// The hyperparameters of `hparams` as (name, value) with groups' names joined by '.'
// ("optimizer.lr"), in name order (wire::Json keeps an object's names sorted).
std::vector<std::pair<std::string, Json>> FlattenHparams(const Json& hparams);

}  // namespace cohort::wire
