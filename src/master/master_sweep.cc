// Master: at start, what a master killed half way through left behind (docs/reliability.md):
// a context upload cut short (its .tmp-PID file, or an archive no experiment names: the row
// was never written), and in the checkpoint storages what the GC had renamed aside
// (.deleted-ID) but not yet removed or a store cut short (.tmp-ID-PID). Each is removed through
// what owns it (the checkpoint storage, storage/directory_storage.h), and said once in the
// master's log.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

// The names in `dir` that start with `prefix` (none when it cannot be listed).
std::vector<std::string> NamesStartingWith(const fs::path& dir, absl::string_view prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (absl::StartsWith(name, prefix)) names.push_back(name);
  }
  return names;
}

}  // namespace

absl::Status Master::SweepLeftoversLocked() {
  COHORT_ASSIGN_OR_RETURN(std::vector<ExperimentRow> experiments, db_->ListExperiments());
  std::set<std::string> named;
  for (const ExperimentRow& e : experiments) {
    named.insert(fs::path(e.context_path).filename().string());
  }
  const fs::path contexts = fs::path(options_.data_dir) / "contexts";
  int contexts_removed = 0;
  // context-*: the per-upload names of earlier versions; sha256-*: by content (SaveContext).
  for (const char* prefix : {"context-", "sha256-"}) {
    for (const std::string& name : NamesStartingWith(contexts, prefix)) {
      if (named.count(name) > 0) continue;  // an experiment's (a .tmp-PID one never is)
      std::error_code ec;
      if (fs::remove(contexts / name, ec)) ++contexts_removed;
    }
  }
  if (contexts_removed > 0) {
    COHORT_LOG(WARNING) << "removed " << contexts_removed << " context upload(s) in "
                        << contexts.string()
                        << " that no experiment names (an upload the last run did not finish)";
  }
  // Experiments often share one (DATA_DIR/checkpoints): each storage is swept once.
  std::map<std::string, std::shared_ptr<storage::CheckpointStorage>> storages;
  for (const ExperimentRow& e : experiments) {
    absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> s = CheckpointStorageLocked(e.id);
    if (s.ok() && *s != nullptr) storages.emplace((*s)->Describe(), *s);
  }
  for (const auto& [name, storage] : storages) SweepStorageLocked(storage);
  return absl::OkStatus();
}

void Master::SweepStorageLocked(const std::shared_ptr<storage::CheckpointStorage>& storage) {
  const std::string root = storage->Describe();
  // What a delete or a store cut short left (a directory's .deleted-ID and .tmp-ID-PID, an
  // object store's marked deletions).
  absl::StatusOr<std::vector<std::string>> swept = storage->SweepLeftovers();
  if (!swept.ok()) {
    COHORT_LOG(WARNING) << "checkpoint storage " << root
                        << ": the last run's leftovers are left: " << swept.status();
    return;
  }
  for (const std::string& name : *swept) {
    COHORT_LOG(WARNING) << "checkpoint storage " << root << ": " << name
                        << ", left by the last run (a checkpoint deleted or stored half way), "
                           "removed now";
  }
  // Checkpoints the last run's GC marked DELETED but did not get to delete: the monitor thread
  // deletes them now.
  absl::StatusOr<std::vector<std::string>> ids = storage->List();
  if (!ids.ok()) return;
  for (const std::string& id : *ids) {
    absl::StatusOr<CheckpointRow> row = db_->GetCheckpoint(id);
    if (!row.ok() || row->state != wire::CheckpointState::kDeleted) continue;
    COHORT_LOG(WARNING) << "checkpoint storage " << root << ": checkpoint " << id
                        << ", deleted by the checkpoint GC of the last run, is deleted now";
    doomed_checkpoints_.emplace_back(storage, id);
  }
}

}  // namespace cohort::master
