#pragma once
// CheckpointContext: storing and finding checkpoints (Determined's core.CheckpointContext).
// A checkpoint is a directory named by a storage id (a UUID) under the experiment's checkpoint
// storage: `checkpoint_storage.host_path`/`storage_path` (shared_fs), `container_path`
// (directory), or <run dir>/checkpoints when the config names none. Next to the trial's files
// it holds metadata.json: the caller's metadata plus "storage_id".
//
// With an object store (`checkpoint_storage: {type: s3, ...}`) the directory only stages:
// Commit uploads the checkpoint (whole, published last: CheckpointRemote), removes the local
// files and reports it; RestorePath downloads it into the directory (once per node).
//
// Only the chief stores (StorePath on another rank is FailedPrecondition); every rank may
// restore. A stored checkpoint appears atomically: files are written under a hidden temporary
// name and renamed by Commit, so a reader (or a resumed run) never sees half of one. A write
// that fails (the storage full, say) fails the checkpoint: its temporary directory is removed,
// nothing is reported, and the latest checkpoint stays the one before. Files written through
// Writer::WriteFile are checked write by write; Commit syncs every file before the rename, which
// catches what a file system reports late (ENOSPC at fsync on NFS or delayed allocation), but a
// program that writes files itself must check its own writes.
// Thread-compatible.
//
// Example:
//   if (ctx.distributed().is_chief()) {
//     COHORT_ASSIGN_OR_RETURN(auto ckpt, ctx.checkpoint().StorePath({{"steps_completed", n}}));
//     COHORT_RETURN_IF_ERROR(ckpt.WriteFile("state", SerializeState()));
//     COHORT_ASSIGN_OR_RETURN(std::string id, ckpt.Commit());
//   }
//   ...
//   COHORT_ASSIGN_OR_RETURN(std::string dir, ctx.checkpoint().RestorePath(id));

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cohort/core/reporter.h"
#include "nlohmann/json.hpp"

namespace cohort::core {

// Where checkpoints are kept beyond the local directory: an object store. Implemented inside
// Cohort (core::Init makes one from the config's checkpoint_storage); thread-safe.
class CheckpointRemote {
 public:
  virtual ~CheckpointRemote() = default;
  // "s3://bucket at http://... prefix p": for messages.
  virtual std::string Describe() const = 0;
  // Where checkpoint `storage_id` lives, as reported: "s3://bucket/prefix/ID".
  virtual std::string Location(const std::string& storage_id) const = 0;
  // Publishes the local directory `from_dir` as checkpoint `storage_id`, whole or not at all.
  virtual absl::Status Store(const std::string& storage_id, const std::string& from_dir) = 0;
  // Downloads checkpoint `storage_id` into the existing, empty local directory `into_dir`;
  // NotFound when it is not stored.
  virtual absl::Status Fetch(const std::string& storage_id, const std::string& into_dir) = 0;
  // Copies the local file `path`, which is no checkpoint (a TensorBoard event file), to
  // `relative` (plain names, e.g. "tensorboard/trial_7/events...") in the storage, replacing
  // what was there.
  virtual absl::Status PublishFile(const std::string& path, const std::string& relative) = 0;
};

class CheckpointContext {
 public:
  // A checkpoint being written. Dropping it without Commit deletes what was written.
  class Writer {
   public:
    Writer(Writer&& other) noexcept;
    Writer& operator=(Writer&&) = delete;
    ~Writer();
    // Where to write the checkpoint's files (exists, empty at first).
    const std::string& path() const { return tmp_path_; }
    const std::string& storage_id() const { return storage_id_; }
    // Writes `bytes` to the file `name` (a relative path, its folders created) in the
    // checkpoint. Unavailable names the file and the system's reason ("No space left on
    // device"); the checkpoint is then best dropped (not committed).
    absl::Status WriteFile(const std::string& name, const std::string& bytes);
    // Writes metadata.json, syncs every file, publishes the directory under its storage id and
    // reports it. Returns the storage id. Errors (Unavailable) name the file and what failed;
    // after one nothing was published or reported, and dropping the Writer removes the files.
    absl::StatusOr<std::string> Commit();

   private:
    friend class CheckpointContext;
    Writer(CheckpointContext* owner, std::string storage_id, std::string tmp_path,
           nlohmann::json metadata);
    // fsync of every file and folder under path(); Unavailable names the one that failed.
    absl::Status SyncAll() const;
    // Commit's end with a remote: uploads, drops the local files, reports.
    absl::StatusOr<std::string> CommitRemote(const nlohmann::json& metadata);
    CheckpointContext* owner_;
    std::string storage_id_;
    std::string tmp_path_;
    nlohmann::json metadata_;
    bool done_ = false;
  };

  // `reporter`: the chief's (null elsewhere); not owned. `remote`: the object store the
  // checkpoints go to (null: `storage_dir` is the storage itself).
  CheckpointContext(int rank, std::string storage_dir, Reporter* reporter,
                    std::shared_ptr<CheckpointRemote> remote = nullptr)
      : rank_(rank),
        storage_dir_(std::move(storage_dir)),
        reporter_(reporter),
        remote_(std::move(remote)) {}

  // Starts a checkpoint. `metadata`: a JSON object (conventionally with "steps_completed").
  absl::StatusOr<Writer> StorePath(const nlohmann::json& metadata);
  // The directory of checkpoint `storage_id`. NotFound names the storage directory and says how
  // to list what is there. With an object store `storage_id` may also be a checkpoint's
  // location ("s3://bucket/prefix/ID", as the master names a warm start's source) in the same
  // storage; FailedPrecondition for one in another.
  absl::StatusOr<std::string> RestorePath(const std::string& storage_id) const;
  // The checkpoint's metadata.json.
  absl::StatusOr<nlohmann::json> GetMetadata(const std::string& storage_id) const;

  const std::string& storage_dir() const { return storage_dir_; }

 private:
  // RestorePath with a remote: downloads the checkpoint into the cache (a temporary name,
  // renamed; a rank of the same node that won the rename is as good).
  absl::StatusOr<std::string> FetchIntoCache(const std::string& storage_id) const;

  int rank_;
  std::string storage_dir_;
  Reporter* reporter_;
  std::shared_ptr<CheckpointRemote> remote_;
};

// A random (version 4) UUID, e.g. "3f2b8c1e-9a4d-4e6f-b1a2-7c8d9e0f1a2b".
std::string NewStorageId();

}  // namespace cohort::core
