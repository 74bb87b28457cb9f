// Master: what the resource manager tells it (rm::Events: a node joined, is leaving, the offers
// changed), the nodes it finds lost, and what the cluster looks like (tasks; Stats for
// monitoring). The agents themselves (registration, liveness, long polls) are AgentManager's
// (agents/agent_manager.h); the allocations are allocations_, under mu_.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

void Master::NodeJoined(const std::string& where,
                        const std::vector<wire::RunningAllocation>& claims,
                        const std::vector<std::string>& running) {
  // The trials' log lines saying what was re-adopted: written after the master's lock is
  // released, in one transaction (after a restart every agent registers at once, each with
  // its allocations: a transaction per line under the lock queued them all behind each other).
  std::vector<std::pair<int64_t, std::string>> notes;
  {
    MutexLock lock(&mu_);
    // The nodes it says it runs: re-adopted after a master restart, or told to stop
    // (master_recovery.cc).
    const std::vector<std::pair<std::string, int>> keep = ClaimNodesLocked(where, claims, &notes);
    // Nodes placed on it that it no longer runs: it restarted, and they are gone.
    FailAgentRunsLocked(where, absl::StrCat("agent ", where, " restarted"), keep);
    // An agent that sends only ids (before re-adoption): the ones this master does not know stop.
    for (const std::string& id : running) {
      const bool claimed = std::any_of(claims.begin(), claims.end(),
                                       [&](const wire::RunningAllocation& a) {
                                         return a.allocation == id;
                                       });
      if (!claimed && allocations_.Find(id) == nullptr) {
        rm_->Stop(id, where, wire::StopMode::kPreempt);
      }
    }
    RequestPassLocked();
  }
  if (absl::Status s = db_->AppendMasterLines(notes); !s.ok()) {
    COHORT_LOG(ERROR) << "agent " << where << " registered: storing " << notes.size()
                      << " log line(s) of the trials it runs: " << s;
  }
}

void Master::FailAgentRunsLocked(const std::string& agent_id, const std::string& why,
                                 const std::vector<std::pair<std::string, int>>& keep) {
  for (const std::string& id : allocations_.MarkAgentLost(agent_id, keep)) {
    Allocation* a = allocations_.Find(id);
    AppendLogLocked(a->trial_id, absl::StrCat("master: ", why));
    // Restored after a restart and never heard from on this master run: the agents came back
    // without it (the start may never have reached them), which is not counted as a restart.
    const bool unclaimed = a->state == AllocationState::kRecovering && !a->HeardFrom();
    if (a->stop == StopReason::kNone) {
      StopAllocationLocked(*a, unclaimed ? StopReason::kUnclaimed : StopReason::kLost);
    }
    if (!a->AllExited()) continue;
    if (absl::Status s = FinishAllocationLocked(*a); !s.ok()) {
      COHORT_LOG(ERROR) << why << ": finishing allocation " << id << ": " << s;
    }
  }
}

bool Master::NodeLeaving(const std::string& where) {
  MutexLock lock(&mu_);
  bool running = false;
  for (auto& [id, a] : allocations_.running()) {
    for (size_t node = 0; node < a.agents.size(); ++node) {
      if (a.agents[node].first != where || a.exits[node].has_value()) continue;
      running = true;
      if (a.stop == StopReason::kNone) {
        Allocation* mutable_a = allocations_.Find(id);
        AppendLogLocked(a.trial_id, absl::StrCat("master: agent ", where,
                                                 " is stopping; the trial will be queued again "
                                                 "(not counted as a restart)"));
        StopAllocationLocked(*mutable_a, StopReason::kAgentLeft);
      }
    }
  }
  return running;
}

void Master::OffersChanged() {
  MutexLock lock(&mu_);
  RequestPassLocked();
}

absl::StatusOr<wire::AgentList> Master::ListNodes() {
  if (runs_on_agents()) return agents_.List();
  wire::AgentList out;
  for (const AgentState& node : rm_->Offers()) {
    out.agents.push_back({.id = node.id,
                          .host = node.id,
                          .slots = node.slots,
                          .used = node.used,
                          .enabled = node.enabled,
                          .connected = node.enabled});
  }
  return out;
}

int Master::WaitingPolls() { return follows_.waiting() + agents_.WaitingPolls(); }

absl::StatusOr<wire::TaskList> Master::ListTasks() {
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(std::nullopt));
  // The rows are read before the lock: only the live state (allocations, why trials wait) is
  // the master's.
  std::map<int64_t, ExperimentRow> experiments;
  for (const TrialRow& t : trials) {
    if (wire::IsTerminal(t.state) || experiments.count(t.experiment_id) > 0) continue;
    COHORT_ASSIGN_OR_RETURN(experiments[t.experiment_id], db_->GetExperiment(t.experiment_id));
  }
  MutexLock lock(&mu_);
  wire::TaskList out;
  for (const TrialRow& t : trials) {
    if (wire::IsTerminal(t.state)) continue;
    const ExperimentRow& e = experiments[t.experiment_id];
    wire::TaskEntry task{.trial_id = t.id,
                         .experiment_id = t.experiment_id,
                         .slots = e.slots_per_trial,
                         .priority = e.priority,
                         .state = t.state};
    if (std::optional<std::string> waiting = WaitingReasonLocked(t)) {
      task.reason = *waiting;
    } else if (t.state == TrialState::kPaused) {
      task.reason = "the experiment is paused";
    }
    if (const Allocation* a = allocations_.OfTrial(t.id)) {
      if (a->state == AllocationState::kRecovering) {
        task.reason =
            absl::StrCat("the master restarted: waiting until ",
                         absl::FormatTime("%H:%M:%S", a->recover_by, absl::LocalTimeZone()),
                         " for its agents to reclaim allocation ", a->id);
      }
      task.agents.emplace();
      for (const auto& [agent, slots] : a->agents) task.agents->push_back(agent);
    }
    if (auto stall = stalled_.find(t.id); stall != stalled_.end()) task.reason = stall->second;
    out.tasks.push_back(std::move(task));
  }
  return out;
}

absl::StatusOr<ClusterStats> Master::Stats() {
  ClusterStats stats;
  std::map<TrialState, int64_t> counts;
  COHORT_ASSIGN_OR_RETURN(counts, db_->CountTrialsByState());
  for (TrialState state : wire::AllTrialStates()) stats.trials[state] = counts[state];
  COHORT_ASSIGN_OR_RETURN(stats.database_bytes, db_->SizeBytes());
  stats.database_metrics = db_->BackendMetrics();
  stats.log_lines_stored = log_lines_stored_.load();
  stats.log_lines_dropped = log_retention_ != nullptr ? log_retention_->lines_dropped() : 0;
  stats.scheduling = scheduling_.Get();
  stats.scheduling_lock = scheduling_lock_.Get();
  stats.metric_reports_stored = metric_reports_stored_.load();
  for (const AgentState& agent : rm_->Offers()) {
    stats.agents.push_back(
        {.id = agent.id, .slots = agent.slots, .used = agent.used, .enabled = agent.enabled});
  }
  MutexLock lock(&mu_);
  // From the in-memory queue, which mirrors the database's QUEUED trials.
  stats.queued = queue_.queued();
  const absl::Time now = NowLocked();
  for (const auto& [id, t] : queue_.trials()) {
    if (t.state != TrialState::kQueued) continue;
    const auto since = queued_since_.find(id);
    const absl::Time from = since != queued_since_.end() ? since->second : started_;
    stats.longest_queued_wait = std::max(stats.longest_queued_wait, now - from);
  }
  return stats;
}

void Master::MonitorAgents() {
  MutexLock lock(&mu_);
  bool more = false;  // a deletion has more to do at once
  while (!stopping_) {
    if (!more) monitor_cv_.WaitWithTimeout(&mu_, absl::Seconds(1));
    if (stopping_) break;
    ExpireLostAgentsLocked();
    EscalatePreemptionsLocked();
    if (!doomed_checkpoints_.empty()) {
      decltype(doomed_checkpoints_) dirs;
      dirs.swap(doomed_checkpoints_);
      mu_.Unlock();
      DeleteCheckpoints(dirs);
      mu_.Lock();
    }
    if (stopping_) break;
    more = AdvanceDeletion();
  }
}

void Master::ExpireLostAgents() {
  MutexLock lock(&mu_);
  ExpireLostAgentsLocked();
}

void Master::ExpireLostAgentsLocked() {
  const std::vector<rm::LostNode> lost = rm_->ExpireLost();
  for (const rm::LostNode& node : lost) {
    COHORT_LOG(WARNING) << node.why;
    FailAgentRunsLocked(node.where, node.why);
  }
  ExpireRecoveriesLocked();
  if (!lost.empty()) RequestPassLocked();
}

}  // namespace cohort::master
