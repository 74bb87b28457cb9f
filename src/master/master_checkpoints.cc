// Master: checkpoint garbage collection (master.h, "Checkpoints"): when an experiment ends, the
// checkpoints its storage's save_* counts let go (experiments/checkpoint_gc.h) are marked
// DELETED and deleted from the storage (checkpoints/checkpoints.h); each deletion is a line in
// its trial's log.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/json_bounded.h"
#include "common/logging.h"
#include "master/experiments/checkpoint_gc.h"
#include "master/master.h"
#include "wire/limits.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

// The searcher metric in a validation's metrics (the name, or the name without its
// "validation_" prefix, as the Trial API reads it); absent when it has none.
std::optional<double> SearcherMetric(const std::string& metrics_json, const std::string& metric) {
  absl::StatusOr<nlohmann::json> json = ParseJsonBounded(metrics_json);
  if (!json.ok() || !json->is_object()) return std::nullopt;
  const std::string bare = metric.rfind("validation_", 0) == 0 ? metric.substr(11) : metric;
  for (const std::string& name : {metric, bare}) {
    if (json->contains(name) && (*json)[name].is_number()) return (*json)[name].get<double>();
  }
  return std::nullopt;
}

}  // namespace

absl::Status Master::CheckStorageAllowed(const config::CheckpointStorage& storage) const {
  // A `directory` storage's container_path is a path inside the agents' containers, which the
  // master may not have at all: it is not refused here, and the master acts on it only where it
  // lies beneath an allowed root (storage_roots_ at each use), like any other.
  if (storage.type == "s3") {
    // The master deletes (GC) and serves (downloads) them: it must have keys for the bucket.
    absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> reached =
        checkpoints_.StorageFor(storage);
    if (!reached.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint_storage: ", reached.status().message(),
                       " (give access_key and secret_key, or start the master with "
                       "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials)"));
    }
    return absl::OkStatus();
  }
  if (storage.type != "shared_fs") return absl::OkStatus();
  const std::string field = storage.storage_path ? "checkpoint_storage.host_path + storage_path"
                                                 : "checkpoint_storage.host_path";
  return storage_roots_.CheckStorageDir(field, checkpoints::StorageDir(storage));
}

absl::StatusOr<std::vector<GcCheckpoint>> Master::GcCandidatesLocked(const ExperimentRow& exp,
                                                                     const std::string& metric) {
  COHORT_ASSIGN_OR_RETURN(std::vector<GcCheckpointRow> rows, db_->ListActiveCheckpoints(exp.id));
  std::vector<GcCheckpoint> out;
  out.reserve(rows.size());
  for (const GcCheckpointRow& row : rows) {
    const CheckpointRow& c = row.checkpoint;
    out.push_back({c.storage_id, c.trial_id, c.steps_completed,
                   row.validation_metrics_json
                       ? SearcherMetric(*row.validation_metrics_json, metric)
                       : std::nullopt});
  }
  return out;
}

void Master::DeleteCheckpoints(const Doomed& doomed) {
  for (const auto& [storage, id] : doomed) {
    if (absl::Status s = storage->Delete(id); !s.ok()) {
      COHORT_LOG(ERROR) << "checkpoint GC: deleting checkpoint " << id << " of "
                        << storage->Describe() << ": " << s
                        << " (a restart of the master tries again)";
    }
  }
}

absl::Status Master::CollectCheckpointsLocked(const ExperimentRow& exp,
                                              std::optional<int64_t> ended_trial) {
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(exp.id));
  if (!facts.storage) return absl::OkStatus();
  const config::CheckpointStorage& storage = *facts.storage;
  COHORT_ASSIGN_OR_RETURN(std::vector<GcCheckpoint> candidates,
                          GcCandidatesLocked(exp, facts.searcher.metric));
  const GcPolicy policy{storage.save_experiment_best, storage.save_trial_best,
                        storage.save_trial_latest, facts.searcher.smaller_is_better};
  const std::vector<std::string> doomed = CheckpointsToDelete(candidates, policy);
  if (doomed.empty()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(const std::shared_ptr<storage::CheckpointStorage> store,
                          checkpoints_.StorageFor(storage));
  if (store == nullptr) return absl::OkStatus();
  for (const std::string& id : doomed) {
    COHORT_ASSIGN_OR_RETURN(CheckpointRow row, db_->GetCheckpoint(id));
    if (ended_trial && row.trial_id != *ended_trial) continue;
    // A kept one is said in its trial's log; the GC goes on with the others.
    DeleteCheckpointLocked(store, row, "checkpoint GC",
                           "checkpoint_storage's save_* counts keep the others")
        .IgnoreError();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> Master::CheckpointStorageLocked(
    int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(experiment_id));
  if (!facts.storage) return std::shared_ptr<storage::CheckpointStorage>();
  return checkpoints_.StorageFor(*facts.storage);
}

absl::Status Master::RemoveCheckpointDirs(
    int64_t experiment_id, const std::shared_ptr<storage::CheckpointStorage>& store) {
  if (store == nullptr) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::vector<GcCheckpointRow> rows,
                          db_->ListActiveCheckpoints(experiment_id));
  for (const GcCheckpointRow& row : rows) {
    // The path came from a trial: only the storage's own location of its id is ever removed,
    // and only through the storage (beneath an allowed root, no link followed or removed).
    const CheckpointRow& c = row.checkpoint;
    const absl::Status deleted =
        checkpoints::IsOwnEntry(*store, c)
            ? store->Delete(c.storage_id)
            : absl::FailedPreconditionError("its path is not in its storage");
    if (absl::IsFailedPrecondition(deleted) || absl::IsInvalidArgument(deleted)) {
      COHORT_LOG(WARNING) << "deleting experiment " << experiment_id << ": checkpoint "
                          << c.storage_id << " at " << c.path
                          << " is not in a storage this master reaches (" << deleted.message()
                          << "); delete it there";
      continue;
    }
    if (!deleted.ok()) {
      return absl::UnavailableError(
          absl::StrCat("removing checkpoint ", c.storage_id, ": ", deleted.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Master::DeleteCheckpointLocked(
    const std::shared_ptr<storage::CheckpointStorage>& store, const CheckpointRow& row,
    absl::string_view by, absl::string_view why) {
  const std::string what = absl::StrCat("master: ", by, ": checkpoint ", row.storage_id, " (batch ",
                                        row.steps_completed, ")");
  auto kept = [&](const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    AppendLogLocked(row.trial_id, absl::StrCat(what, " kept: ", reason));
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", row.storage_id, " is kept: ", reason));
  };
  // The path came from a trial: only the storage's own location of its id is ever removed,
  // and only through the storage (a directory beneath an allowed root).
  if (!checkpoints::IsOwnEntry(*store, row)) {
    return kept(absl::StrCat("its path ", row.path, " is not in the checkpoint storage ",
                             store->Describe()));
  }
  // A directory the master may not see (a storage on the agents' hosts) is checked first; an
  // object store is not asked under the master's lock (a request may take seconds): its
  // deletion, on the monitor thread, is done whether or not the checkpoint is there.
  const absl::Status present = store->kind() == storage::StorageKind::kDirectory
                                   ? store->Check(row.storage_id)
                                   : absl::OkStatus();
  if (absl::IsNotFound(present)) {
    return kept(absl::StrCat(row.path,
                             " cannot be seen from the master (storage on the agents "
                             "only?); delete it there"));
  }
  if (!present.ok()) return kept(std::string(present.message()));
  // Marked first: from now on nothing reads it (a download is refused) and a restart's sweep
  // deletes it if this run does not get to; the files go on the monitor thread, without the
  // master's lock (a checkpoint may be gigabytes). Refused while a model version holds it.
  if (absl::Status s = db_->MarkCheckpointDeleted(row.storage_id); !s.ok()) {
    return kept(absl::IsFailedPrecondition(s) ? absl::StrCat(s.message(), " (the model registry)")
                                              : absl::StrCat("marking it deleted: ", s.message()));
  }
  doomed_checkpoints_.emplace_back(store, row.storage_id);
  monitor_cv_.SignalAll();
  AppendLogLocked(row.trial_id, absl::StrCat(what, " deleted (", why, ")"));
  return absl::OkStatus();
}

absl::Status Master::DeleteCheckpoint(const std::string& storage_id, const Actor& actor) {
  MutexLock lock(&mu_);
  absl::StatusOr<CheckpointRow> row = db_->GetCheckpoint(storage_id);
  if (absl::IsNotFound(row.status())) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", storage_id));
  }
  COHORT_RETURN_IF_ERROR(row.status());
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(row->trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(trial.experiment_id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "delete a checkpoint of"));
  if (row->state == wire::CheckpointState::kDeleted) return absl::OkStatus();
  if (!wire::IsTerminal(e.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", storage_id, " belongs to experiment ", e.id, ", which is ",
                     wire::Name(e.state),
                     ": its trials may resume from it; delete it once the experiment "
                     "has ended"));
  }
  COHORT_ASSIGN_OR_RETURN(const std::shared_ptr<storage::CheckpointStorage> store,
                          CheckpointStorageLocked(e.id));
  if (store == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", e.id, " has no checkpoint storage the master can reach"));
  }
  return DeleteCheckpointLocked(store, *row, "checkpoint delete",
                                absl::StrCat("asked by '", actor.user, "'"));
}

}  // namespace cohort::master
