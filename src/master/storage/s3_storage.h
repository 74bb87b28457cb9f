#pragma once
// S3Storage: a CheckpointStorage (checkpoint_storage.h) in an S3 bucket, for the config's
// `checkpoint_storage: {type: s3, bucket, prefix, ...}`. The layout (files under PREFIX/ID/,
// published by the manifest PREFIX/ID.cohort-checkpoint, written last) is
// objstore/s3_checkpoints.h's, shared with the trials' chiefs that write them. Open copies the
// files into a private temporary directory, removed when the listing's `keep` is released.
//
// Thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "master/storage/checkpoint_storage.h"
#include "objstore/s3_checkpoints.h"

namespace cohort::master::storage {

class S3Storage final : public CheckpointStorage {
 public:
  explicit S3Storage(objstore::S3Checkpoints checkpoints) : checkpoints_(std::move(checkpoints)) {}

  StorageKind kind() const override { return StorageKind::kObjectStore; }
  std::string Describe() const override { return checkpoints_.Describe(); }
  std::string Location(const std::string& id) const override { return checkpoints_.Location(id); }
  absl::Status Check(const std::string& id) override { return checkpoints_.Check(id); }
  absl::Status Store(const std::string& id, const std::string& from_dir) override {
    return checkpoints_.Store(id, from_dir);
  }
  absl::StatusOr<CheckpointListing> Open(const std::string& id, int64_t max_entries) override;
  absl::Status Fetch(const std::string& id, const std::string& into_dir) override {
    return checkpoints_.Fetch(id, into_dir);
  }
  absl::StatusOr<std::vector<std::string>> List() override { return checkpoints_.List(); }
  absl::Status Delete(const std::string& id) override { return checkpoints_.Delete(id); }
  absl::Status DeleteFiles(const std::string& relative_dir) override {
    return checkpoints_.DeleteFiles(relative_dir);
  }
  absl::StatusOr<std::vector<std::string>> SweepLeftovers() override {
    return checkpoints_.SweepLeftovers();
  }

 private:
  objstore::S3Checkpoints checkpoints_;
};

}  // namespace cohort::master::storage
