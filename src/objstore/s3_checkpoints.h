#pragma once
// S3Checkpoints: how checkpoints are laid out in an S3 bucket, defined once for whoever writes
// or reads them (a trial's chief stores and restores, the master lists, downloads and deletes).
// Checkpoint ID's files are the objects PREFIX/ID/<path>; it is published by its manifest,
// PREFIX/ID.cohort-checkpoint, a small JSON document written last:
//   {"version": 1, "entries": [{"path": "meta", "dir": true},
//                              {"path": "meta/step.json", "bytes": 12}, ...]}
// (directories before what they hold). Without its manifest a checkpoint does not exist: a
// Store cut short leaves objects that List never names and no reader opens. A Delete marks the
// checkpoint first (PREFIX/ID.cohort-deleting), so one cut short is finished by
// SweepLeftovers. A manifest is untrusted (a trial writes it): a path that is
// not relative plain components, or a malformed document, is DataLoss naming the checkpoint.
//
// Thread-safe: immutable beyond the client, which is thread-safe.

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "objstore/s3_client.h"

namespace cohort::objstore {

class S3Checkpoints {
 public:
  struct Entry {
    std::string path;  // relative to the checkpoint
    bool dir = false;
    int64_t bytes = 0;
  };
  static constexpr char kManifestSuffix[] = ".cohort-checkpoint";
  static constexpr char kDeletingSuffix[] = ".cohort-deleting";

  // `prefix` may be empty (checkpoints at the bucket's top); a trailing '/' is dropped.
  S3Checkpoints(std::shared_ptr<S3Client> client, std::string prefix);

  // "s3://bucket at ENDPOINT prefix P".
  std::string Describe() const;
  // Where checkpoint `id` lives: "s3://bucket/P/ID".
  std::string Location(const std::string& id) const;
  // InvalidArgument unless `id` is one plain name not starting with '.'.
  absl::Status CheckId(const std::string& id) const;
  // OK when published; NotFound otherwise.
  absl::Status Check(const std::string& id);
  // Uploads the tree under `from_dir` (regular files and directories only: anything else is
  // InvalidArgument naming it), then the manifest; AlreadyExists for a published id. A failure
  // removes what was uploaded (best effort) and publishes nothing.
  absl::Status Store(const std::string& id, const std::string& from_dir);
  // The published checkpoint's entries; NotFound, DataLoss (a bad manifest), or
  // FailedPrecondition with more than `max_entries`.
  absl::StatusOr<std::vector<Entry>> Manifest(const std::string& id, int64_t max_entries);
  // Downloads the checkpoint into the existing local directory `into_dir`.
  absl::Status Fetch(const std::string& id, const std::string& into_dir);
  // The published ids under the prefix, sorted.
  absl::StatusOr<std::vector<std::string>> List();
  // Marks the checkpoint as being deleted (PREFIX/ID.cohort-deleting), unpublishes it (the
  // manifest), removes every object, then the mark; OK when it was not there.
  absl::Status Delete(const std::string& id);
  // Files beside the checkpoints that are not checkpoints (a trial's TensorBoard event files):
  // the local file `path` as PREFIX/`relative` (plain components), replacing what was there;
  // and every object under PREFIX/`relative_dir`/ removed.
  absl::Status PutFile(const std::string& relative, const std::string& path);
  absl::Status DeleteFiles(const std::string& relative_dir);
  // Finishes every Delete a crash cut short (a mark left); returns their ids.
  absl::StatusOr<std::vector<std::string>> SweepLeftovers();

  S3Client& client() { return *client_; }

 private:
  std::string KeyOf(const std::string& id, const std::string& path = "") const;
  std::string ManifestKey(const std::string& id) const;
  std::string TopKey(const std::string& id, const char* suffix) const;
  // Per suffix, the ids under the prefix with a top-level object ending in it, sorted: one
  // listing of the prefix for all of them.
  absl::StatusOr<std::map<std::string, std::vector<std::string>>> IdsBySuffix(
      std::initializer_list<const char*> suffixes);
  static absl::StatusOr<std::vector<Entry>> LocalEntries(const std::string& from_dir);
  absl::Status DeleteObjects(const std::string& id);

  std::shared_ptr<S3Client> client_;
  std::string prefix_;
};

}  // namespace cohort::objstore
