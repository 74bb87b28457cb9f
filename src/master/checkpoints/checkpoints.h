#pragma once
// Checkpoints: what the master serves of the checkpoints trials report (Determined's
// `det checkpoint`): a trial's list, and one checkpoint's files for `cohort checkpoint
// download`, read through its experiment's checkpoint storage (storage/checkpoint_storage.h).
// A checkpoint's path came from a trial, so only its storage's own <dir>/<storage id> is ever
// read; a checkpoint the GC deleted is never read again.
//
// Thread-safe: no state beyond the Database and the immutable StorageRoots; never needs the
// master's lock (an experiment's config is read from its row).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(checkpoints::CheckpointFiles files, checkpoints.Files("3f2b..."));
//   ... pack files.entries from files.dir while files.handle lives ...

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "master/db/database.h"
#include "master/storage/directory_storage.h"
#include "master/storage/s3_storage.h"
#include "master/storage/storage_roots.h"
#include "wire/trial_bodies.h"

namespace cohort::master::checkpoints {

// The directory an experiment's checkpoints are stored in, as the workers compute it
// (core::CheckpointStorageDir): shared_fs host_path[/storage_path], directory container_path;
// empty for a storage the master cannot reach (s3, gcs, azure).
std::string StorageDir(const config::CheckpointStorage& storage);

// Whether `row` names its storage's own location of its storage id (its path came from a
// trial): <dir>/<storage id>, s3://bucket/prefix/<storage id>.
bool IsOwnEntry(const storage::CheckpointStorage& storage, const CheckpointRow& row);

// One checkpoint's files, for a download.
struct CheckpointFiles {
  std::string storage_id;
  int64_t trial_id = 0;
  int64_t steps_completed = 0;
  std::string dir;                   // a local directory holding the files
  std::vector<std::string> entries;  // paths relative to dir, each directory before its files
  int64_t bytes = 0;                 // the files' sizes together
  // Keeps `dir` valid (storage::CheckpointListing::keep): for a directory storage the
  // checkpoint's directory, open, which `dir` names as /proc/self/fd/N, so the files are read
  // from the directory checked, whatever its path becomes meanwhile.
  std::shared_ptr<const void> handle;
};

class Checkpoints {
 public:
  // `roots` must outlive it.
  Checkpoints(Database& db, const storage::StorageRoots& roots) : db_(db), roots_(roots) {}

  // The trial's checkpoints, in the order they were reported; NotFound for an unknown trial.
  absl::StatusOr<wire::CheckpointList> OfTrial(int64_t trial_id);
  // One checkpoint, its trial and experiment, and the model versions holding it; NotFound.
  absl::StatusOr<wire::CheckpointDescription> Describe(const std::string& storage_id);
  // Checkpoint `storage_id`'s files. NotFound for an unknown checkpoint; FailedPrecondition,
  // saying why and what to do, for one the checkpoint GC deleted, one stored outside its
  // experiment's checkpoint storage, or one this master cannot see (a storage on the agents'
  // hosts only), or one with more files than a download packs.
  absl::StatusOr<CheckpointFiles> Files(const std::string& storage_id);
  // The checkpoints in the directory `dir`, reached only through the allowed roots.
  storage::DirectoryStorage StorageAt(const std::string& dir) const {
    return storage::DirectoryStorage(roots_, "checkpoint storage", dir);
  }
  // The storage an experiment's checkpoints live in, from its config's checkpoint_storage: a
  // directory (shared_fs, directory) reached through the allowed roots, or an S3 bucket (keys
  // from the config, else the master's AWS_* environment or ~/.aws/credentials). Null for none
  // (the type unset). FailedPrecondition for one the master cannot reach (gcs, azure; s3
  // without credentials), saying why.
  absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> StorageFor(
      const config::CheckpointStorage& storage) const;

 private:
  // The experiment's checkpoint storage (StorageFor), from its stored config.
  absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> StorageOf(int64_t experiment_id);

  Database& db_;
  const storage::StorageRoots& roots_;
};

}  // namespace cohort::master::checkpoints
