#include "master/checkpoints/checkpoints.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "nlohmann/json.hpp"
#include "objstore/s3_credentials.h"
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

bool IsOwnEntry(const storage::CheckpointStorage& storage, const CheckpointRow& row) {
  if (!wire::IsSafeName(row.storage_id)) return false;
  const std::string own = storage.Location(row.storage_id);
  return row.path == own || fs::path(row.path).lexically_normal().string() == own;
}

absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> Checkpoints::StorageFor(
    const config::CheckpointStorage& s) const {
  if (s.type == "shared_fs" || s.type == "directory") {
    return std::shared_ptr<storage::CheckpointStorage>(
        std::make_shared<storage::DirectoryStorage>(roots_, "checkpoint storage", StorageDir(s)));
  }
  if (s.type == "s3") {
    const objstore::CredentialSources sources = objstore::CredentialSources::FromProcess();
    objstore::S3Options options;
    options.bucket = s.bucket.value_or("");
    options.endpoint_url = s.endpoint_url.value_or("");
    options.region = objstore::ResolveS3Region(std::nullopt, sources);
    absl::StatusOr<objstore::S3Credentials> credentials =
        objstore::ResolveS3Credentials(s.access_key, s.secret_key, sources);
    if (!credentials.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the master cannot reach checkpoint storage s3://", options.bucket, ": ",
                       credentials.status().message()));
    }
    options.credentials = *std::move(credentials);
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<objstore::S3Client> client,
                            objstore::S3Client::Create(std::move(options)));
    return std::shared_ptr<storage::CheckpointStorage>(std::make_shared<storage::S3Storage>(
        objstore::S3Checkpoints(std::move(client), s.prefix.value_or(""))));
  }
  if (s.type.empty()) return std::shared_ptr<storage::CheckpointStorage>();
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint storage type ", s.type,
                   " is not supported by Cohort (use s3, shared_fs or "
                   "directory)"));
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

absl::StatusOr<wire::CheckpointDescription> Checkpoints::Describe(const std::string& storage_id) {
  absl::StatusOr<CheckpointRow> c = db_.GetCheckpoint(storage_id);
  if (absl::IsNotFound(c.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", storage_id,
                                            " (`cohort checkpoint list EXPERIMENT` shows them)"));
  }
  COHORT_RETURN_IF_ERROR(c.status());
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_.GetTrial(c->trial_id));
  wire::CheckpointDescription d;
  d.checkpoint = {c->storage_id, c->steps_completed, c->path,
                  nlohmann::json::parse(c->metadata_json, nullptr, false), c->state};
  d.trial_id = trial.id;
  d.experiment_id = trial.experiment_id;
  COHORT_ASSIGN_OR_RETURN(std::vector<ModelVersionRow> versions,
                          db_.ListVersionsOfCheckpoints({storage_id}));
  if (versions.empty()) return d;
  COHORT_ASSIGN_OR_RETURN(std::vector<ModelRow> models, db_.ListModels());
  for (const ModelVersionRow& v : versions) {
    for (const ModelRow& m : models) {
      if (m.id == v.model_id) d.registered_as.push_back(absl::StrCat(m.name, ":", v.version));
    }
  }
  return d;
}

absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> Checkpoints::StorageOf(
    int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_.GetExperiment(experiment_id));
  absl::StatusOr<config::Json> tree = config::ParseYaml(e.config_yaml);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (!cfg.ok()) {
    return absl::DataLossError(
        absl::StrCat("experiment ", experiment_id, "'s stored config: ", cfg.status().message()));
  }
  if (!cfg->checkpoint_storage) return std::shared_ptr<storage::CheckpointStorage>();
  return StorageFor(*cfg->checkpoint_storage);
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
  COHORT_ASSIGN_OR_RETURN(const std::shared_ptr<storage::CheckpointStorage> storage,
                          StorageOf(trial.experiment_id));
  if (storage == nullptr || !IsOwnEntry(*storage, *row)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", storage_id, " is at ", row->path,
                     ", outside its experiment's checkpoint storage (",
                     storage == nullptr ? "none the master can read" : storage->Describe(),
                     "): copy it from there"));
  }
  // Through the storage (a directory beneath an allowed root, opened following no link; an
  // object store's copy), then read only through what it opened, whatever the path becomes.
  absl::StatusOr<storage::CheckpointListing> listing =
      storage->Open(storage_id, kMaxContextEntries);
  if (absl::IsNotFound(listing.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", storage_id, " is stored at ", storage->Location(storage_id),
        ", which this master cannot see (a storage on the agents' hosts only?): copy it from "
        "there, or use a checkpoint_storage the master shares (shared_fs, s3)"));
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
