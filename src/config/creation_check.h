#pragma once
// CheckRunnable: what `experiment create` (on the master and with --local) refuses although the
// config is valid. A config may name things Determined supports and Cohort cannot do at all
// (checkpoints in s3, gcs or azure; the pbt, async_halving and custom searchers);
// ParseExperimentConfig accepts them with a warning, so that `cohort experiment validate` reads
// every Determined config, and creation refuses them here. Thread-safe (a pure function).
//
// Example:
//   COHORT_RETURN_IF_ERROR(config::CheckRunnable(cfg));

#include "absl/status/status.h"
#include "cohort/config/experiment_config.h"

namespace cohort::config {

// OK when Cohort can run `config`; otherwise InvalidArgument with one line per refusal, each
// "<path>: <what> is not supported by Cohort: <what to use instead>", e.g.
//   checkpoint_storage.type: checkpoint storage type s3 is not supported by Cohort: use shared_fs
//   or directory
absl::Status CheckRunnable(const ExperimentConfig& config);

}  // namespace cohort::config
