#include "master/checkpoints/checkpoints.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "nlohmann/json.hpp"
#include "wire/limits.h"

namespace cohort::master::checkpoints {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string StorageDir(const config::CheckpointStorage& s) {
  if (s.type == "shared_fs") {
    return s.storage_path ? (fs::path(s.host_path) / *s.storage_path).string() : s.host_path;
  }
  if (s.type == "directory") return s.container_path;
  return "";
}

bool IsOwnEntry(const std::string& dir, const CheckpointRow& row) {
  return !dir.empty() && wire::IsSafeName(row.storage_id) &&
         fs::path(row.path).lexically_normal() ==
             (fs::path(dir) / row.storage_id).lexically_normal();
}

absl::StatusOr<wire::CheckpointList> Checkpoints::OfTrial(int64_t trial_id) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(trial_id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<CheckpointRow> rows, db_.ListCheckpoints(trial_id));
  wire::CheckpointList out;
  for (const CheckpointRow& c : rows) {
    out.checkpoints.push_back({c.storage_id, c.steps_completed, c.path,
                               nlohmann::json::parse(c.metadata_json, nullptr, false), c.state});
  }
  return out;
}

absl::StatusOr<std::string> Checkpoints::StorageDirOf(int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_.GetExperiment(experiment_id));
  absl::StatusOr<config::Json> tree = config::ParseYaml(e.config_yaml);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (!cfg.ok()) {
    return absl::DataLossError(
        absl::StrCat("experiment ", experiment_id, "'s stored config: ", cfg.status().message()));
  }
  return cfg->checkpoint_storage ? StorageDir(*cfg->checkpoint_storage) : "";
}

absl::StatusOr<CheckpointFiles> Checkpoints::Files(const std::string& storage_id) {
  absl::StatusOr<CheckpointRow> row = db_.GetCheckpoint(storage_id);
  if (absl::IsNotFound(row.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", storage_id,
                                            " (`cohort checkpoint list EXPERIMENT` lists them)"));
  }
  COHORT_RETURN_IF_ERROR(row.status());
  if (row->state == wire::CheckpointState::kDeleted) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", storage_id,
                     " was deleted by the checkpoint GC (checkpoint_storage's "
                     "save_* counts keep more)"));
  }
  COHORT_ASSIGN_OR_RETURN(const TrialRow trial, db_.GetTrial(row->trial_id));
  COHORT_ASSIGN_OR_RETURN(const std::string dir, StorageDirOf(trial.experiment_id));
  if (!IsOwnEntry(dir, *row)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", storage_id, " is at ", row->path,
                     ", outside its experiment's checkpoint storage (",
                     dir.empty() ? "none the master can read" : dir, "): copy it from there"));
  }
  // Through the storage (a directory beneath an allowed root, opened following no link), then
  // read only through what it opened, whatever the path becomes.
  absl::StatusOr<storage::CheckpointListing> listing =
      StorageAt(dir).Open(storage_id, kMaxContextEntries);
  if (absl::IsNotFound(listing.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", storage_id, " is stored at ", (fs::path(dir) / storage_id).string(),
        ", which this master cannot see (a storage on the agents' hosts only?): copy it from "
        "there, or use a checkpoint_storage the master shares (shared_fs)"));
  }
  if (!listing.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", storage_id, " is not read: ", listing.status().message()));
  }
  CheckpointFiles files{.storage_id = storage_id,
                        .trial_id = row->trial_id,
                        .steps_completed = row->steps_completed,
                        .dir = listing->local_dir,
                        .entries = std::move(listing->entries),
                        .bytes = listing->bytes,
                        .handle = std::move(listing->keep)};
  return files;
}

}  // namespace cohort::master::checkpoints
