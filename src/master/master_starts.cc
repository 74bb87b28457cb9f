// Master: starting a scheduling pass's placements, a batch per hold of the lock
// (StartPlacementsLocked in master_scheduling.cc checks them; StartBatchLocked starts them).
// A batch reads its trials in one query and writes in three whatever its size: the allocations'
// rows, before any agent hears of them (a restarted master re-adopts only what it stored), then
// every started trial RUNNING with its line in one transaction. One by one, each start took
// eight round trips to the database under the lock (two reads, an allocation, the trial, a
// log line in a transaction of its own), which on PostgreSQL held the lock for tens of ms.
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"
#include "master/users/password.h"

namespace cohort::master {
namespace {

// What each node's agent is told to start.
std::vector<wire::StartAction> StartActions(const Allocation& allocation,
                                            const Placement& placement, const ExperimentRow& exp,
                                            const TrialRow& trial, const std::string& warm_start,
                                            const std::vector<int64_t>& ops) {
  std::vector<wire::StartAction> starts;
  for (size_t node = 0; node < placement.agents.size(); ++node) {
    starts.push_back({.allocation = allocation.id,
                      .trial_id = trial.id,
                      .experiment_id = exp.id,
                      .node_rank = static_cast<int>(node),
                      .nnodes = static_cast<int>(placement.agents.size()),
                      .slots = placement.agents[node].second,
                      .config = exp.config_yaml,
                      .hparams = Json::parse(trial.hparams_json, nullptr, false),
                      .seed = trial.seed,
                      .latest_checkpoint = trial.latest_checkpoint,
                      .warm_start = warm_start,
                      .context = absl::StrCat("/api/v1/experiments/", exp.id, "/context"),
                      .reports = node == 0,
                      .searcher_ops = ops,
                      .allocation_token = allocation.token});
  }
  return starts;
}

}  // namespace

// One placement on its way through StartBatchLocked.
struct Master::PreparedStart {
  const Placement* placement = nullptr;
  TrialRow trial;
  std::string allocation;                 // its id, in allocations_ from PrepareStartLocked on
  std::vector<wire::StartAction> starts;  // one per node
  std::string line;                       // the trial's log line once it started
};

void Master::StartBatchLocked(const std::vector<const Placement*>& batch) {
  if (batch.empty()) return;
  std::vector<int64_t> ids;
  for (const Placement* p : batch) ids.push_back(std::stoll(p->task_id));
  absl::StatusOr<std::vector<TrialRow>> rows = db_->GetTrials(ids);
  if (!rows.ok()) {
    COHORT_LOG(ERROR) << "starting trials " << absl::StrJoin(ids, ", ") << ": " << rows.status();
    return;
  }
  std::map<int64_t, TrialRow> trials;
  for (TrialRow& row : *rows) trials.emplace(row.id, std::move(row));
  std::map<int64_t, ExperimentRow> experiments;  // read once per batch
  std::vector<PreparedStart> prepared;
  for (const Placement* p : batch) {
    absl::StatusOr<PreparedStart> start = PrepareStartLocked(*p, trials, experiments);
    if (!start.ok()) {
      COHORT_LOG(ERROR) << "starting trial " << p->task_id << ": " << start.status();
      continue;
    }
    prepared.push_back(*std::move(start));
  }
  if (!StoreAllocationsLocked(prepared)) return;
  std::vector<std::pair<int64_t, std::string>> lines;
  std::vector<const TrialRow*> started;
  std::vector<std::string> not_started;
  for (PreparedStart& s : prepared) {
    // The resource manager fills in the rendezvous address and holds the slots until Release.
    if (absl::Status started = rm_->Start(*s.placement, std::move(s.starts)); !started.ok()) {
      COHORT_LOG(ERROR) << "starting trial " << s.trial.id << ": " << started;
      allocations_.Remove(s.allocation);
      not_started.push_back(s.allocation);
      continue;
    }
    lines.emplace_back(s.trial.id, s.line);
    started.push_back(&s.trial);
  }
  ForgetAllocationRows(not_started);
  // The agents run them whatever the database says: the queue follows what runs. A failure
  // leaves those trials QUEUED in the database beside their allocations' rows; their exits
  // write their state again, and a master restarted before that forgets the rows and queues
  // them again (master_recovery.cc).
  if (absl::Status s = db_->MarkTrialsRunning(lines); !s.ok()) {
    COHORT_LOG(ERROR) << "storing the start of " << lines.size() << " trial(s): " << s;
  }
  for (const TrialRow* trial : started) {
    TrialStoredLocked(*trial);
    preempted_.erase(trial->id);
  }
}

absl::StatusOr<Master::PreparedStart> Master::PrepareStartLocked(
    const Placement& placement, const std::map<int64_t, TrialRow>& trials,
    std::map<int64_t, ExperimentRow>& experiments) {
  const int64_t trial_id = std::stoll(placement.task_id);
  const auto found = trials.find(trial_id);
  if (found == trials.end()) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"));
  }
  PreparedStart start{.placement = &placement, .trial = found->second};
  // The row as it will be stored (MarkTrialsRunning), once started.
  COHORT_RETURN_IF_ERROR(
      Transition(start.trial.state, TrialState::kRunning, TrialName(start.trial.id)));
  const TrialRow& trial = start.trial;
  auto exp_it = experiments.find(trial.experiment_id);
  if (exp_it == experiments.end()) {
    COHORT_ASSIGN_OR_RETURN(ExperimentRow row, db_->GetExperiment(trial.experiment_id));
    exp_it = experiments.emplace(row.id, std::move(row)).first;
  }
  const ExperimentRow& exp = exp_it->second;
  std::string ops_note;
  COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> ops, SearcherOpsLocked(exp, trial_id, &ops_note));
  std::string warm_start;  // only for a trial without a checkpoint of its own
  if (trial.latest_checkpoint.empty()) {
    COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(exp.id));
    COHORT_ASSIGN_OR_RETURN(warm_start, WarmStartPath(facts.searcher));
    if (!warm_start.empty()) absl::StrAppend(&ops_note, ", its weights from ", warm_start);
  }
  std::string token = users::NewToken();
  std::string token_hash = users::TokenHash(token);
  const Allocation& allocation =
      allocations_.Add(trial_id, placement, std::move(token), std::move(token_hash));
  start.allocation = allocation.id;
  start.starts = StartActions(allocation, placement, exp, trial, warm_start, ops);
  std::vector<std::string> where;
  for (const auto& [agent_id, slots] : placement.agents) {
    where.push_back(absl::StrCat(agent_id, " (", slots, " slot", slots == 1 ? "" : "s", ")"));
  }
  start.line = absl::StrCat(
      "master: allocation ", allocation.id, " on ", absl::StrJoin(where, ", "),
      trial.latest_checkpoint.empty() ? ""
                                      : ", resuming from checkpoint " + trial.latest_checkpoint,
      ops_note);
  return start;
}

bool Master::StoreAllocationsLocked(const std::vector<PreparedStart>& prepared) {
  std::vector<AllocationRow> rows;
  const int64_t now_ms = absl::ToUnixMillis(NowLocked());
  for (const PreparedStart& s : prepared) {
    const Allocation* a = allocations_.Find(s.allocation);
    rows.push_back({s.allocation, s.trial.id, a->token_hash, s.placement->agents, now_ms});
  }
  absl::Status stored = db_->InsertAllocations(rows);
  if (stored.ok()) return true;
  // Not started: their trials stay queued, and the next pass places them again.
  COHORT_LOG(ERROR) << "starting " << rows.size()
                    << " trial(s): storing their allocations: " << stored;
  for (const PreparedStart& s : prepared) allocations_.Remove(s.allocation);
  return false;
}

void Master::ForgetAllocationRows(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (absl::Status s = db_->DeleteAllocation(id); !s.ok()) {
      COHORT_LOG(ERROR) << "allocation " << id << " was not started, but deleting its row: " << s;
    }
  }
}

}  // namespace cohort::master
