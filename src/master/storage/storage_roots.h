#pragma once
// StorageRoots: the only directories in which the master reads, streams or deletes checkpoint
// files (docs/security.md, "Checkpoint storage"). Users run code on the agents, never on the
// master's machine; yet an experiment's config names its checkpoint storage and its trials
// report the checkpoints they wrote, so both are untrusted. The master acts only
//   * inside the roots an administrator allowed: the default storage DATA_DIR/checkpoints and
//     `cohort-master --checkpoint-storage-roots DIR,...`. No root may hold the master's data
//     directory or lie inside it (but the default one), so nothing of the master is ever
//     reachable from a storage;
//   * for an experiment whose storage directory lies in one of them: CheckStorageDir refuses
//     any other at creation, naming the allowed roots, and every use checks again (an
//     experiment stored by an older master is refused there, not acted on);
//   * on an entry of that directory named by plain components (a checkpoint id: no separator,
//     no '..'), reached from the root's descriptor one component at a time, following no
//     symbolic link (common/beneath.h): a link a trial planted, or a directory it swapped for one
//     between a check and its use, cannot lead anywhere else.
// Every read, download and deletion of checkpoint files goes through OpenDir, Remove or Rename.
//
// Thread-safe: immutable after Create.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(StorageRoots roots, StorageRoots::Create(data_dir, {"/mnt/ckpt"}));
//   COHORT_RETURN_IF_ERROR(roots.CheckStorageDir("checkpoint_storage.host_path", "/mnt/ckpt/a"));
//   COHORT_RETURN_IF_ERROR(roots.Remove("/mnt/ckpt/a", storage_id));

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/beneath.h"

namespace cohort::master::storage {

class StorageRoots {
 public:
  // `data_dir` must exist; DATA_DIR/checkpoints is created (0700) when missing. Each of
  // `extra_roots` must be an existing absolute directory that neither holds `data_dir` nor lies
  // inside it; InvalidArgument naming the root and the rule otherwise.
  static absl::StatusOr<StorageRoots> Create(const std::string& data_dir,
                                             const std::vector<std::string>& extra_roots);

  // The allowed roots, absolute and normal, as given (the default one first).
  std::vector<std::string> roots() const;
  // "A, B": the roots for an error message.
  std::string Describe() const;

  // OK when `dir` (an experiment's storage directory, given by its config's `field`) is an
  // allowed root or lies inside one, and no symbolic link in it leads elsewhere; InvalidArgument
  // naming the field, the directory and the allowed roots otherwise.
  absl::Status CheckStorageDir(absl::string_view field, const std::string& dir) const;

  // The directory `relative` (plain components; "": the storage directory itself) of the
  // storage directory `storage_dir`, opened. FailedPrecondition when `storage_dir` is outside
  // every root or the path crosses a symbolic link; NotFound when it is missing (a storage the
  // master cannot see); InvalidArgument for a path that is not plain.
  absl::StatusOr<UniqueFd> OpenDir(const std::string& storage_dir,
                                   absl::string_view relative) const;
  // Removes `relative` (plain components) of `storage_dir` with everything under it, following
  // no link; OK when it is already gone, or when `storage_dir` does not exist. Errors as
  // OpenDir's; Unavailable when something cannot be removed.
  absl::Status Remove(const std::string& storage_dir, absl::string_view relative) const;
  // Renames the entry `from` of `storage_dir` to `to` (both one plain name).
  absl::Status Rename(const std::string& storage_dir, const std::string& from,
                      const std::string& to) const;

 private:
  struct Root {
    std::string given;      // absolute, normal
    std::string canonical;  // links resolved
  };
  explicit StorageRoots(std::vector<Root> roots) : roots_(std::move(roots)) {}
  // The root `dir` lies in (as given, or by its canonical path), and the plain path from it to
  // `dir`; FailedPrecondition naming the roots when none holds it.
  absl::StatusOr<std::pair<std::string, std::string>> Locate(const std::string& dir) const;

  std::vector<Root> roots_;
};

}  // namespace cohort::master::storage
