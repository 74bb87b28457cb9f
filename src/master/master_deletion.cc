// Master: deleting ended experiments (master.h, DeleteExperiment; Determined's `det experiment
// delete`). The request moves the experiment to DELETING and queues it; the monitor thread then
// removes its checkpoints' directories and its context archive, and deletes its rows in bounded
// transactions (Database::DeleteExperimentRows), all without the master's lock, so neither a
// request nor an agent waits on a large experiment's deletion. A master restarted meanwhile
// queues its DELETING experiments again and starts over: the files first, so by the time a
// row is deleted the files it named are gone already, and nothing is left behind unnamed.

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"
#include "wire/storage_layout.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

// Rows per transaction, and how long one turn of the monitor thread deletes before it looks
// after the agents again (a turn's last transaction may run past it).
constexpr int64_t kDeletionBatchRows = 5000;
constexpr absl::Duration kDeletionSlice = absl::Milliseconds(200);

// Whether `path` lies in `dir` (both made absolute and normal; no link is followed).
bool IsInside(const fs::path& path, const fs::path& dir) {
  const fs::path p = fs::absolute(path).lexically_normal();
  const fs::path d = fs::absolute(dir).lexically_normal();
  const fs::path rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

// The trials' TensorBoard event files, in the checkpoint storage beside the checkpoints; only
// through the storage (a directory beneath an allowed root: a storage elsewhere is left alone).
absl::Status RemoveTensorBoardDirs(storage::CheckpointStorage* storage,
                                   const std::vector<int64_t>& trials) {
  if (storage == nullptr) return absl::OkStatus();
  for (int64_t trial : trials) {
    absl::Status removed = storage->DeleteFiles(wire::TensorBoardRelativeDir(std::to_string(trial)));
    if (absl::IsFailedPrecondition(removed)) {
      COHORT_LOG(WARNING) << "trial " << trial
                          << "'s TensorBoard files are left: " << removed.message();
    } else if (!removed.ok()) {
      return absl::UnavailableError(
          absl::StrCat("removing trial ", trial, "'s TensorBoard files: ", removed.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Master::DeleteExperiment(int64_t id, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "delete"));
  if (e.state == ExperimentState::kDeleting) return absl::OkStatus();  // already under way
  if (!wire::IsTerminal(e.state)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", id, " is ", wire::Name(e.state),
        ": only an ended experiment can be deleted; kill it first (`cohort experiment kill ", id,
        "`), then delete it"));
  }
  // Everything the deletion needs is read before the state moves: an error leaves it as it was.
  COHORT_ASSIGN_OR_RETURN(PendingDeletion deletion, DeletionOfLocked(e));
  COHORT_RETURN_IF_ERROR(CheckNoWarmStartFromLocked(deletion));
  // The database refuses while a model version holds one of its checkpoints (database.h).
  if (absl::Status moved = MoveExperimentLocked(e, ExperimentState::kDeleting); !moved.ok()) {
    if (!absl::IsFailedPrecondition(moved)) return moved;
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", id, " cannot be deleted: ", moved.message(),
        ": delete those versions first (`cohort model delete-version MODEL VERSION`), or keep "
        "the experiment"));
  }
  deletions_.push_back(std::move(deletion));
  monitor_cv_.SignalAll();
  COHORT_LOG(INFO) << "experiment " << id << ": deleting (asked by '" << actor.user << "')";
  return absl::OkStatus();
}

absl::StatusOr<Master::PendingDeletion> Master::DeletionOfLocked(const ExperimentRow& e) {
  PendingDeletion deletion{.experiment = e.id, .context_path = e.context_path};
  // A storage the master cannot reach (s3 without keys) leaves its checkpoints, logged.
  absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> storage =
      CheckpointStorageLocked(e.id);
  if (storage.ok()) {
    deletion.checkpoint_storage = *std::move(storage);
  } else {
    COHORT_LOG(WARNING) << "deleting experiment " << e.id << ": its checkpoints are left: "
                        << storage.status();
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(e.id));
  for (const TrialRow& t : trials) deletion.trials.push_back(t.id);
  return deletion;
}

absl::Status Master::CheckNoWarmStartFromLocked(const PendingDeletion& deletion) {
  const std::set<int64_t> trials(deletion.trials.begin(), deletion.trials.end());
  COHORT_ASSIGN_OR_RETURN(std::vector<ExperimentRow> experiments, db_->ListExperiments());
  for (const ExperimentRow& other : experiments) {
    if (wire::IsTerminal(other.state)) continue;
    COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(other.id));
    std::optional<int64_t> source = facts.searcher.source_trial_id;
    const char* field = "searcher.source_trial_id";
    if (facts.searcher.source_checkpoint_uuid) {
      absl::StatusOr<CheckpointRow> row =
          db_->GetCheckpoint(*facts.searcher.source_checkpoint_uuid);
      source = row.ok() ? std::optional<int64_t>(row->trial_id) : std::nullopt;
      field = "searcher.source_checkpoint_uuid";
    }
    if (source && trials.count(*source) > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "experiment ", other.id, " (", wire::Name(other.state), ") starts its trials from trial ",
          *source, " of experiment ", deletion.experiment, " (", field,
          "): kill it or let it end, then delete experiment ", deletion.experiment));
    }
  }
  return absl::OkStatus();
}

absl::Status Master::QueueDeletionsLocked() {
  COHORT_ASSIGN_OR_RETURN(std::vector<ExperimentRow> experiments, db_->ListExperiments());
  for (const ExperimentRow& e : experiments) {
    if (e.state != ExperimentState::kDeleting) continue;
    COHORT_ASSIGN_OR_RETURN(PendingDeletion deletion, DeletionOfLocked(e));
    deletions_.push_back(std::move(deletion));
    COHORT_LOG(INFO) << "experiment " << e.id << ": deleting (left DELETING by the last run)";
  }
  return absl::OkStatus();
}

bool Master::AdvanceDeletion() {
  if (deletions_.empty()) return false;
  const PendingDeletion deletion = deletions_.front();  // only this thread pops it
  // Its context goes first, under the lock, unless another experiment names the same file.
  if (!deletion.files_removed) {
    RemoveContextIfUnusedLocked(deletion.context_path, deletion.experiment);
  }
  mu_.Unlock();
  const absl::StatusOr<bool> done = DeleteSlice(deletion);
  mu_.Lock();
  if (!done.ok()) {
    COHORT_LOG(WARNING) << "experiment " << deletion.experiment << ": deleting: " << done.status()
                        << " (tried again in a second)";
    return false;
  }
  deletions_.front().files_removed = true;
  if (!*done) return true;
  deletions_.pop_front();
  // What this run kept of it: nothing of it can be asked for again.
  config_facts_.erase(deletion.experiment);
  searchers_.erase(deletion.experiment);
  for (int64_t trial : deletion.trials) policy_matches_.Forget(trial);
  webhooks_.ForgetTrials(deletion.trials);
  follows_.Notify();  // a follower of one of its trials ends (NotFound)
  COHORT_LOG(INFO) << "experiment " << deletion.experiment << " deleted";
  return !deletions_.empty();
}

void Master::RemoveContextIfUnusedLocked(const std::string& path, int64_t deleted) {
  // Only a context this master saved (under data_dir/contexts), and only when no experiment
  // names it any more: identical uploads share one file (SaveContext). Under the state lock, so
  // that an experiment created meanwhile either names it here or finds it gone and saves it
  // again (CreateExperiment).
  if (path.empty() || !IsInside(path, fs::path(options_.data_dir) / "contexts")) return;
  absl::StatusOr<int64_t> others = db_->CountExperimentsNamingContext(path, deleted);
  if (!others.ok()) {
    COHORT_LOG(WARNING) << "keeping the context " << path << ": " << others.status();
    return;
  }
  if (*others > 0) return;  // shared: another experiment names it
  std::error_code ec;
  if (!fs::remove(path, ec) && ec) {
    COHORT_LOG(WARNING) << "removing the context " << path << ": " << ec.message()
                        << " (swept at the next start)";
  }
}

absl::StatusOr<bool> Master::DeleteSlice(const PendingDeletion& deletion) {
  if (!deletion.files_removed) {
    COHORT_RETURN_IF_ERROR(
        RemoveCheckpointDirs(deletion.experiment, deletion.checkpoint_storage));
    COHORT_RETURN_IF_ERROR(
        RemoveTensorBoardDirs(deletion.checkpoint_storage.get(), deletion.trials));
  }
  const absl::Time until = absl::Now() + kDeletionSlice;
  do {
    COHORT_ASSIGN_OR_RETURN(int64_t deleted,
                            db_->DeleteExperimentRows(deletion.experiment, kDeletionBatchRows));
    if (deleted == 0) return true;
  } while (absl::Now() < until);
  return false;
}

}  // namespace cohort::master
