#pragma once
// CheckpointStorage: the seam between the master and where an experiment's checkpoints live
// (its config's checkpoint_storage). Everything the master does with checkpoint files goes
// through it: a download lists and reads one checkpoint (Open), the checkpoint GC and an
// experiment's deletion delete them (Delete), a restart's sweep lists them (List), and a
// checkpoint is stored (Store) or copied out (Fetch) whole. Today's implementation is
// DirectoryStorage (shared_fs and directory: a directory beneath an allowed root, reached only
// through StorageRoots); an object store (S3) is a second one, held to the same contract by the
// same tests (checkpoint_storage_conformance.h).
//
// The contract, for every implementation:
//   * a checkpoint is named by its storage id, one plain name (wire::IsSafeName's alphabet):
//     anything else is InvalidArgument, before anything is touched;
//   * Store publishes a checkpoint whole or not at all: a reader never sees half of one, and a
//     failed Store leaves nothing under the id; an id already stored is AlreadyExists;
//   * Open and Fetch of an id that is not stored are NotFound; Delete of one is OK (done);
//     something under the id that is not a checkpoint (a link a trial planted) is neither read
//     nor deleted: FailedPrecondition, left as it is;
//   * List names only published checkpoints (no half-written or half-deleted one), sorted;
//   * only regular files and directories are stored or read: a symbolic link (or any other
//     kind of file) in a checkpoint is InvalidArgument naming it, never followed;
//   * errors name the checkpoint and the storage (Describe), never a credential.
//
// Thread-safe: implementations keep no mutable state beyond what they store, so calls may run
// at once from any thread (without the master's lock: a checkpoint may be gigabytes).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cohort::master::storage {

// One stored checkpoint, open for reading.
struct CheckpointListing {
  std::string id;
  // Paths relative to the checkpoint, each directory before what it holds.
  std::vector<std::string> entries;
  int64_t bytes = 0;  // the regular files' sizes together
  // A local directory holding the files as `entries` names them, valid while `keep` lives: for
  // a directory storage the open directory itself (/proc/self/fd/N, so the files read are those
  // of the directory checked, whatever its path becomes), for a remote one a fetched copy.
  std::string local_dir;
  std::shared_ptr<const void> keep;
};

// Where a storage keeps checkpoints: what its calls cost. A directory's calls are file system
// calls; an object store's are requests over the network (retried, seconds when it is slow), so
// the master never makes them under its state lock.
enum class StorageKind { kDirectory, kObjectStore };

class CheckpointStorage {
 public:
  virtual ~CheckpointStorage() = default;

  virtual StorageKind kind() const = 0;

  // What and where, for messages: "shared_fs /mnt/checkpoints/exp". Two storages with the
  // same Describe() are the same storage.
  virtual std::string Describe() const = 0;
  // Where checkpoint `id` lives, as a trial reports it: "/mnt/checkpoints/exp/ID",
  // "s3://bucket/prefix/ID". A checkpoint row whose path is not this is not the storage's own.
  virtual std::string Location(const std::string& id) const = 0;
  // OK when checkpoint `id` is stored; NotFound when it is not; FailedPrecondition when what is
  // under the id is not a checkpoint (a link). Cheap: nothing is listed or read.
  virtual absl::Status Check(const std::string& id) = 0;
  // Stores the files under the local directory `from_dir` as checkpoint `id`.
  virtual absl::Status Store(const std::string& id, const std::string& from_dir) = 0;
  // Checkpoint `id`'s files, open for reading. FailedPrecondition when it holds more than
  // `max_entries` entries (a download would refuse it anyway).
  virtual absl::StatusOr<CheckpointListing> Open(const std::string& id, int64_t max_entries) = 0;
  // Copies checkpoint `id` into the local directory `into_dir` (which must exist and be empty).
  virtual absl::Status Fetch(const std::string& id, const std::string& into_dir) = 0;
  // The ids of the checkpoints stored, sorted.
  virtual absl::StatusOr<std::vector<std::string>> List() = 0;
  // Deletes checkpoint `id` with every file of it.
  virtual absl::Status Delete(const std::string& id) = 0;
  // Removes the files under `relative_dir` (plain components: a trial's TensorBoard event
  // files, wire::TensorBoardRelativeDir) that are not checkpoints; OK when there are none.
  virtual absl::Status DeleteFiles(const std::string& relative_dir) = 0;
  // Finishes or removes what a Store or a Delete cut short by a crash left (never anything
  // List names); returns what it removed, for the log. The master calls it once at start.
  virtual absl::StatusOr<std::vector<std::string>> SweepLeftovers() = 0;
};

}  // namespace cohort::master::storage
