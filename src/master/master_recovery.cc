// Master: what survives a restart of the master (docs/design/0011-master-restart-readoption.md).
// The allocations that ran are restored from the database and wait readopt_grace for their
// agents to claim their nodes in their registrations; a node claimed is re-adopted (its
// processes run on under the same allocation id and token), one never claimed is lost.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {
namespace {

std::string AgentsOf(const std::vector<std::pair<std::string, int>>& nodes) {
  std::vector<std::string> agents;
  for (const auto& [agent, slots] : nodes) {
    if (std::find(agents.begin(), agents.end(), agent) == agents.end()) agents.push_back(agent);
  }
  return absl::StrJoin(agents, ", ");
}

}  // namespace

absl::Status Master::RecoverLocked() {
  COHORT_ASSIGN_OR_RETURN(std::vector<AllocationRow> rows, db_->ListAllocations());
  // The newest first: a trial's older row (whose delete failed) never wins over its latest.
  std::stable_sort(rows.begin(), rows.end(), [](const AllocationRow& a, const AllocationRow& b) {
    return a.created_ms > b.created_ms;
  });
  const absl::Time deadline = NowLocked() + options_.readopt_grace;
  // Their trials in one read and their lines in one write: at 200 agents a restart re-adopts
  // ~1,500 allocations, and a round trip each kept a master on PostgreSQL down for seconds.
  std::vector<int64_t> trial_ids;
  for (const AllocationRow& row : rows) trial_ids.push_back(row.trial_id);
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trial_rows, db_->GetTrials(trial_ids));
  std::map<int64_t, TrialRow> trials;
  for (TrialRow& t : trial_rows) trials.emplace(t.id, std::move(t));
  std::vector<std::pair<int64_t, std::string>> lines;
  for (const AllocationRow& row : rows) {
    const auto trial = trials.find(row.trial_id);
    if (trial == trials.end() || trial->second.state != TrialState::kRunning ||
        allocations_.OfTrial(row.trial_id) != nullptr) {
      // Its end was decided but the row outlived it (or a later one is the trial's): forget it.
      COHORT_RETURN_IF_ERROR(db_->DeleteAllocation(row.id));
      continue;
    }
    Allocation& a = allocations_.Restore(row.trial_id, row.id, row.token_hash, row.nodes, deadline);
    rm_->Restore(row.id, row.trial_id, row.nodes);  // its slots stay held until it ends
    // Killed before the restart: the stop reaches its agents as they reclaim it.
    if (trial->second.kill_requested) a.stop = StopReason::kKill;
    lines.emplace_back(row.trial_id,
                       absl::StrCat("master: restarted; allocation ", row.id, " waits up to ",
                                    absl::FormatDuration(options_.readopt_grace), " for agent(s) ",
                                    AgentsOf(row.nodes), " to reclaim it"));
  }
  // The master's account, not a decision: losing it must not stop the restart (as
  // AppendLogLocked), but it is said.
  if (absl::Status s = db_->AppendMasterLines(lines); !s.ok()) {
    COHORT_LOG(ERROR) << "restarted: storing " << lines.size() << " re-adoption line(s): " << s;
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> running,
                          db_->ListTrialsInStates({TrialState::kRunning}));
  for (TrialRow& t : running) {
    if (allocations_.OfTrial(t.id) != nullptr) continue;
    if (t.kill_requested) {
      COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(t.experiment_id));
      COHORT_RETURN_IF_ERROR(CancelTrialLocked(e, t));
      AppendLogLocked(t.id, "master: restarted; the trial, killed before, is CANCELED");
      continue;
    }
    COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kQueued));
    AppendLogLocked(t.id,
                    "master: restarted; the trial had no allocation to re-adopt: it is queued "
                    "again and resumes from its latest checkpoint");
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, int>> Master::ClaimNodesLocked(
    const std::string& agent_id, const std::vector<wire::RunningAllocation>& nodes,
    std::vector<std::pair<int64_t, std::string>>* notes) {
  std::vector<std::pair<std::string, int>> keep;
  for (const wire::RunningAllocation& node : nodes) {
    const ClaimOutcome outcome = allocations_.Claim(agent_id, node);
    if (outcome == ClaimOutcome::kUnknown || outcome == ClaimOutcome::kMismatch) {
      // Not a run of this master's (or not this node of it): it checkpoints and frees the slots.
      if (outcome == ClaimOutcome::kMismatch) {
        COHORT_LOG(WARNING) << "agent " << agent_id << " runs node " << node.node_rank
                            << " of allocation " << node.allocation << " (trial " << node.trial_id
                            << "), which does not match what the master "
                            << "placed: telling it to stop";
      }
      rm_->Stop(node.allocation, agent_id, wire::StopMode::kPreempt);
      continue;
    }
    keep.emplace_back(node.allocation, node.node_rank);
    Allocation& a = *allocations_.Find(node.allocation);
    // A stop decided while its agent was away (a kill, a failed node) reaches it now.
    if (a.stop != StopReason::kNone) {
      rm_->Stop(a.id, agent_id, StopModeFor(a.stop));
    }
    if (outcome != ClaimOutcome::kAdopted) continue;
    notes->emplace_back(a.trial_id,
                        absl::StrCat("master: agent ", agent_id, " reclaimed node ", node.node_rank,
                                     " of allocation ", a.id, " (holding ", node.held_log_lines,
                                     " log line(s) and ", node.held_report_batches,
                                     " report batch(es) for the master)",
                                     a.state == AllocationState::kRunning
                                         ? "; the trial runs on, re-adopted"
                                         : "; waiting for the allocation's other agents"));
  }
  return keep;
}

void Master::ExpireRecoveriesLocked() {
  for (const std::string& id : allocations_.RecoveryExpired(NowLocked())) {
    Allocation& a = *allocations_.Find(id);
    const bool heard = a.HeardFrom();
    allocations_.EndRecovery(id);
    const std::string grace = absl::FormatDuration(options_.readopt_grace);
    AppendLogLocked(
        a.trial_id,
        heard ? absl::StrCat("master: allocation ", id, " was not wholly reclaimed within ", grace,
                             " of the master's restart: its unclaimed nodes are lost")
              : absl::StrCat("master: no agent reclaimed allocation ", id, " within ", grace,
                             " of the master's restart; the trial is queued again and resumes "
                             "from its latest checkpoint (not counted as a restart)"));
    if (a.stop == StopReason::kNone) {
      StopAllocationLocked(a, heard ? StopReason::kLost : StopReason::kUnclaimed);
    }
    if (!a.AllExited()) continue;
    if (absl::Status s = FinishAllocationLocked(a); !s.ok()) {
      COHORT_LOG(ERROR) << "ending allocation " << id << " after its recovery: " << s;
    }
  }
}

}  // namespace cohort::master
