#pragma once
// DirectoryStorage: a CheckpointStorage (checkpoint_storage.h) in a directory the master
// reaches, for the shared_fs and directory storage types: checkpoint ID is the directory
// DIR/ID. Every access goes through StorageRoots (storage_roots.h): DIR must lie beneath an
// allowed root, and every path is opened from the root's descriptor one plain component at a
// time following no symbolic link, so a link a trial planted in its storage (which it shares)
// leads nowhere.
//
// Store copies into DIR/.tmp-ID-PID and renames it to DIR/ID (no replace) once whole; Delete
// renames DIR/ID to DIR/.deleted-ID and then removes it. Either, cut short by a crash, leaves
// a dot-entry List never names and SweepLeftovers removes.
//
// Thread-safe: immutable; `roots` must outlive it.
//
// Example:
//   DirectoryStorage storage(roots, "shared_fs", "/mnt/checkpoints/exp-3");
//   COHORT_ASSIGN_OR_RETURN(CheckpointListing files, storage.Open("9f2c...", 100000));

#include <string>
#include <vector>

#include "master/storage/checkpoint_storage.h"
#include "master/storage/storage_roots.h"

namespace cohort::master::storage {

class DirectoryStorage final : public CheckpointStorage {
 public:
  // `type` names the config's storage type in messages; `dir` is the storage directory (shared_fs
  // host_path[/storage_path], directory container_path).
  DirectoryStorage(const StorageRoots& roots, std::string type, std::string dir)
      : roots_(roots), type_(std::move(type)), dir_(std::move(dir)) {}

  StorageKind kind() const override { return StorageKind::kDirectory; }
  std::string Describe() const override { return type_ + " " + dir_; }
  std::string Location(const std::string& id) const override;
  absl::Status Check(const std::string& id) override;
  absl::Status Store(const std::string& id, const std::string& from_dir) override;
  absl::StatusOr<CheckpointListing> Open(const std::string& id, int64_t max_entries) override;
  absl::Status Fetch(const std::string& id, const std::string& into_dir) override;
  absl::StatusOr<std::vector<std::string>> List() override;
  absl::Status Delete(const std::string& id) override;

  // Removes what a Store or Delete cut short left (.tmp-* and .deleted-* entries); returns
  // their names. OK with none when the directory does not exist.
  absl::StatusOr<std::vector<std::string>> SweepLeftovers() override;
  absl::Status DeleteFiles(const std::string& relative_dir) override {
    return roots_.Remove(dir_, relative_dir);
  }

  const std::string& dir() const { return dir_; }

 private:
  absl::Status CheckId(const std::string& id) const;

  const StorageRoots& roots_;
  const std::string type_;
  const std::string dir_;
};

}  // namespace cohort::master::storage
