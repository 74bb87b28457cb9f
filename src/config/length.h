#pragma once
// LengthInBatches: a searcher or period length (batches, records or epochs) in global batches
// of `config`, as the trial loop and the master count progress; TrialGlobalBatchSize: a trial's
// batch. Thread-safe (pure).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"

namespace cohort::config {

// Records and epochs round down, to at least 1 batch. Epochs need records_per_epoch:
// InvalidArgument naming `field` ("min_validation_period is in epochs: set records_per_epoch").
absl::StatusOr<int64_t> LengthInBatches(const Length& length, const ExperimentConfig& config,
                                        const std::string& field);
// The same in batches of `global_batch_size` (a trial's: TrialGlobalBatchSize) instead of the
// config's.
absl::StatusOr<int64_t> LengthInBatches(const Length& length, const ExperimentConfig& config,
                                        int64_t global_batch_size, const std::string& field);

// The unit's name as configs spell it: "batches", "records" or "epochs".
const char* UnitName(Length::Unit unit);

// The global batch size of the trial with hyperparameters `hparams` (as sampled for it): the
// config's constant, else the trial's value of a searched hyperparameters.global_batch_size (a
// positive integer); 0 when there is neither.
int64_t TrialGlobalBatchSize(const ExperimentConfig& config, const Json& hparams);

}  // namespace cohort::config
