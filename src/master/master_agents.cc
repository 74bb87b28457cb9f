// Master: agents (registration, liveness, long polls for actions) and what the cluster looks
// like from them (agents, slots, tasks; Stats for monitoring). The live state is in agents_
// (agents/agent_registry.h) and allocations_ (agents/allocations.h), under mu_.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

absl::Status Master::RegisterAgent(const wire::AgentRegistration& registration) {
  AgentRow row;
  row.id = registration.id;
  row.slots = registration.slots;
  row.host = registration.host;
  COHORT_RETURN_IF_ERROR(db_->UpsertAgent(row));
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  bool enabled = true;
  for (const AgentRow& k : known) {
    if (k.id == row.id) enabled = k.enabled;
  }
  // The trials' log lines saying what was re-adopted: written after the master's lock is
  // released, in one transaction (after a restart every agent registers at once, each with
  // its allocations: a transaction per line under the lock queued them all behind each other).
  std::vector<std::pair<int64_t, std::string>> notes;
  {
    MutexLock lock(&mu_);
    RegisterAgentLocked(registration, row, enabled, &notes);
  }
  if (absl::Status s = db_->AppendMasterLines(notes); !s.ok()) {
    COHORT_LOG(ERROR) << "agent " << row.id << " registered: storing " << notes.size()
                      << " log line(s) of the trials it runs: " << s;
  }
  return absl::OkStatus();
}

void Master::RegisterAgentLocked(const wire::AgentRegistration& registration, const AgentRow& row,
                                 bool enabled,
                                 std::vector<std::pair<int64_t, std::string>>* notes) {
  AgentLive& live = agents_.Register(row.id, row.slots, row.host, registration.port_lo,
                                     registration.port_hi, enabled);
  // The nodes it says it runs: re-adopted after a master restart, or told to stop
  // (master_recovery.cc). Its slots hold what runs (or waits for it) on it.
  const std::vector<std::pair<std::string, int>> keep =
      ClaimNodesLocked(live, registration.allocations, notes);
  live.state.used = allocations_.SlotsOn(row.id);
  // Nodes placed on it that it no longer runs: it restarted, and they are gone.
  FailAgentRunsLocked(row.id, absl::StrCat("agent ", row.id, " restarted"), keep);
  // An agent that sends only ids (before re-adoption): the ones this master does not know stop.
  for (const std::string& running : registration.running) {
    const bool claimed =
        std::any_of(registration.allocations.begin(), registration.allocations.end(),
                    [&](const wire::RunningAllocation& a) { return a.allocation == running; });
    if (!claimed && allocations_.Find(running) == nullptr) {
      PushActionLocked(row.id, wire::StopAction{running, wire::StopMode::kPreempt});
    }
  }
  COHORT_LOG(INFO) << "agent " << row.id << " registered: " << row.slots << " slots at "
                   << row.host;
  RequestPassLocked();
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

absl::Status Master::Heartbeat(const std::string& agent_id) {
  MutexLock lock(&mu_);
  return agents_.Touch(agent_id);
}

absl::StatusOr<bool> Master::AgentLeaving(const std::string& agent_id) {
  MutexLock lock(&mu_);
  AgentLive* live = agents_.Find(agent_id);
  if (live == nullptr) {
    return absl::NotFoundError(absl::StrCat("agent ", agent_id, " is not registered"));
  }
  if (!live->leaving) {
    live->leaving = true;
    COHORT_LOG(INFO) << "agent " << agent_id << " is stopping: nothing more is placed on it";
  }
  bool running = false;
  for (auto& [id, a] : allocations_.running()) {
    for (size_t node = 0; node < a.agents.size(); ++node) {
      if (a.agents[node].first != agent_id || a.exits[node].has_value()) continue;
      running = true;
      if (a.stop == StopReason::kNone) {
        Allocation* mutable_a = allocations_.Find(id);
        AppendLogLocked(a.trial_id, absl::StrCat("master: agent ", agent_id,
                                                 " is stopping; the trial will be queued again "
                                                 "(not counted as a restart)"));
        StopAllocationLocked(*mutable_a, StopReason::kAgentLeft);
      }
    }
  }
  if (running) return false;
  agents_.Remove(agent_id);
  COHORT_LOG(INFO) << "agent " << agent_id << " left";
  RequestPassLocked();
  return true;
}

absl::StatusOr<wire::AgentList> Master::ListAgents() {
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_->ListAgents());
  MutexLock lock(&mu_);
  wire::AgentList out;
  for (const AgentRow& k : known) {
    const AgentLive* live = agents_.Find(k.id);
    out.agents.push_back({.id = k.id,
                          .host = k.host,
                          .slots = k.slots,
                          .used = live != nullptr ? live->state.used : 0,
                          .enabled = k.enabled,
                          .connected = live != nullptr});
  }
  return out;
}

absl::Status Master::SetAgentEnabled(const std::string& agent_id, bool enabled) {
  COHORT_RETURN_IF_ERROR(db_->SetAgentEnabled(agent_id, enabled));
  MutexLock lock(&mu_);
  if (AgentLive* live = agents_.Find(agent_id)) live->state.enabled = enabled;
  RequestPassLocked();
  return absl::OkStatus();
}

absl::StatusOr<wire::ActionBatch> Master::WaitForActions(const std::string& agent_id,
                                                         absl::Duration wait) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + wait;
  COHORT_RETURN_IF_ERROR(agents_.Touch(agent_id));
  AgentLive& polled = *agents_.Find(agent_id);
  const int64_t generation = ++polled.poll_generation;
  polled.wakeup->SignalAll();  // an older poll of this agent ends
  while (true) {
    COHORT_RETURN_IF_ERROR(agents_.Touch(agent_id));
    AgentLive& agent = *agents_.Find(agent_id);
    if (agent.poll_generation != generation) return wire::ActionBatch{};  // superseded
    if (!agent.actions.empty() || stopping_ || absl::Now() >= deadline) {
      return agents_.TakeActions(agent);
    }
    ++agent.polling;
    // Its own reference: the agent may re-register or be removed while this waits.
    const std::shared_ptr<CondVar> wakeup = agent.wakeup;
    wakeup->WaitWithDeadline(&mu_, deadline);
    // The agent may have re-registered (or been dropped) while this poll waited.
    if (AgentLive* again = agents_.Find(agent_id); again != nullptr && again->polling > 0) {
      --again->polling;
    }
  }
}

int Master::WaitingPolls() {
  MutexLock lock(&mu_);
  int polls = follows_.waiting();
  for (const auto& [id, agent] : agents_.agents()) polls += agent.polling;
  return polls;
}

absl::StatusOr<wire::SlotList> Master::ListSlots() {
  MutexLock lock(&mu_);
  wire::SlotList out;
  for (const auto& [id, agent] : agents_.agents()) {
    const std::vector<std::pair<std::string, int64_t>> owners = allocations_.SlotOwners(id);
    for (int s = 0; s < agent.state.slots; ++s) {
      wire::SlotEntry slot{.agent = id, .slot = s, .enabled = agent.state.enabled};
      if (s < static_cast<int>(owners.size())) {
        slot.allocation = owners[s].first;
        slot.trial_id = owners[s].second;
      }
      out.slots.push_back(std::move(slot));
    }
  }
  return out;
}

absl::StatusOr<wire::TaskList> Master::ListTasks() {
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(std::nullopt));
  MutexLock lock(&mu_);
  wire::TaskList out;
  std::map<int64_t, ExperimentRow> experiments;
  for (const TrialRow& t : trials) {
    if (wire::IsTerminal(t.state)) continue;
    if (!experiments.count(t.experiment_id)) {
      COHORT_ASSIGN_OR_RETURN(experiments[t.experiment_id], db_->GetExperiment(t.experiment_id));
    }
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
  MutexLock lock(&mu_);
  for (const auto& [id, agent] : agents_.agents()) {
    stats.agents.push_back({.id = id,
                            .slots = agent.state.slots,
                            .used = agent.state.used,
                            .enabled = agent.state.enabled});
  }
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
  const std::vector<std::string> lost = agents_.Expired();
  for (const std::string& id : lost) {
    const std::string why = absl::StrCat("agent ", id, " lost (no contact for ",
                                         absl::FormatDuration(agents_.timeout()), ")");
    COHORT_LOG(WARNING) << why;
    agents_.Remove(id);
    FailAgentRunsLocked(id, why);
  }
  ExpireRecoveriesLocked();
  if (!lost.empty()) RequestPassLocked();
}

}  // namespace cohort::master
