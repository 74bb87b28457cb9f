#pragma once
// The CheckpointRemote of `checkpoint_storage: {type: s3, ...}`: checkpoints laid out as
// objstore/s3_checkpoints.h says (the master reads them the same way), through an S3Client
// whose keys come from the config, else the environment or ~/.aws/credentials.

#include <memory>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "cohort/core/checkpoint_context.h"

namespace cohort::core {

// The remote for `storage`; null for a storage that is a directory (shared_fs, directory, the
// default). FailedPrecondition for a type Cohort cannot write (gcs, azure); an error from the
// credentials' resolution names where it looked.
absl::StatusOr<std::shared_ptr<CheckpointRemote>> MakeCheckpointRemote(
    const config::CheckpointStorage& storage);

}  // namespace cohort::core
