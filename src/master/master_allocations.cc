// Master: allocations (started by the scheduling passes of master_scheduling.cc) and what agents
// report about them (logs, reports, exits), up to what becomes of a trial when its run ends.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/master.h"
#include "master/users/password.h"
#include "wire/limits.h"

namespace cohort::master {
namespace {

// A progress count as int64 batches. The wire parser bounds counts to [0, kMaxCount]; clamping
// again keeps the conversion defined for any double (NaN: 0).
int64_t BatchCount(double count) {
  if (!(count > 0)) return 0;
  return static_cast<int64_t>(std::min(count, wire::kMaxCount));
}

constexpr int kErrorLines = 20;  // of a failed trial's log, kept with it

}  // namespace

wire::StopMode StopModeFor(StopReason reason) {
  return reason == StopReason::kKill || reason == StopReason::kLost ? wire::StopMode::kKill
                                                                    : wire::StopMode::kPreempt;
}

absl::Status Master::CheckAllocationToken(const std::string& allocation, const std::string& token) {
  MutexLock lock(&mu_);
  return CheckAllocationTokenLocked(allocation, token);
}

absl::Status Master::CheckAllocationTokenLocked(const std::string& allocation,
                                                const std::string& token) const {
  return allocations_.CheckToken(allocation, users::TokenHash(token));
}

absl::StatusOr<wire::StartAction> Master::AllocationNodeStart(const std::string& allocation,
                                                              int node_rank,
                                                              const std::string& host) {
  MutexLock lock(&mu_);
  const Allocation* a = allocations_.Find(allocation);
  if (a == nullptr || node_rank < 0 || node_rank >= static_cast<int>(a->agents.size())) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " has no node ", node_rank,
                                            " running on this master"));
  }
  if (a->stop != StopReason::kNone) {
    return absl::FailedPreconditionError(
        absl::StrCat("allocation ", allocation, " is stopping: node ", node_rank,
                     " must not start"));
  }
  absl::StatusOr<wire::StartAction> start = rm_->NodeStart(allocation, node_rank, host);
  if (start.ok()) {
    AppendLogLocked(a->trial_id, absl::StrCat("master: node ", node_rank, " (",
                                              a->agents[node_rank].first, ") starts on ", host));
  }
  return start;
}

absl::StatusOr<std::string> Master::AllocationContext(const std::string& allocation) {
  int64_t experiment_id = 0;
  {
    MutexLock lock(&mu_);
    const Allocation* a = allocations_.Find(allocation);
    const auto t = a != nullptr ? queue_.trials().find(a->trial_id) : queue_.trials().end();
    if (t == queue_.trials().end()) {
      return absl::NotFoundError(
          absl::StrCat("allocation ", allocation, " does not run on this master"));
    }
    experiment_id = t->second.experiment_id;
  }
  return ContextArchive(experiment_id);  // the file is read without the lock
}

void Master::AppendLogLocked(int64_t trial_id, const std::string& line) {
  absl::StatusOr<int64_t> seq = db_->AppendLogs(trial_id, {{-1, line}});
  // The line is the master's account of a decision already taken and stored; losing it must
  // not undo the decision, but it must not vanish silently either.
  if (!seq.ok()) {
    COHORT_LOG(ERROR) << TrialName(trial_id) << ": storing the log line '" << line
                      << "': " << seq.status();
  }
}

void Master::StopAllocationLocked(Allocation& allocation, StopReason reason) {
  // The first reason decides what becomes of the trial, except that a kill overrides a pause
  // or a searcher's stop still in progress (its trial is killed: it must not resume).
  if (allocation.stop == StopReason::kNone || reason == StopReason::kKill) {
    allocation.stop = reason;
  }
  for (size_t node = 0; node < allocation.agents.size(); ++node) {
    if (allocation.exits[node]) continue;
    rm_->Stop(allocation.id, allocation.agents[node].first, StopModeFor(reason));
  }
}

absl::Status Master::AllocationLogs(const std::string& allocation, const wire::LogBatch& batch) {
  return StoreOutputs({{.allocation = allocation, .logs = &batch}})[0].status;
}

absl::Status Master::AllocationReports(const std::string& allocation,
                                       const wire::ReportBatch& batch) {
  return StoreOutputs({{.allocation = allocation, .reports = &batch}})[0].status;
}

absl::Status Master::AllocationExit(const std::string& allocation, const wire::ExitReport& exit) {
  MutexLock lock(&mu_);
  return AllocationExitLocked(allocation, exit);
}

absl::Status Master::CheckLogsLocked(const std::string& allocation, const wire::LogBatch& batch,
                                     absl::StatusOr<LogPolicyContext>* policies) {
  // Lines of a superseded run are still the trial's: kept.
  COHORT_RETURN_IF_ERROR(allocations_.CheckBelongs(allocation, batch.trial_id, /*latest=*/false));
  const Allocation* a = allocations_.Find(allocation);
  if (a != nullptr && batch.node >= static_cast<int>(a->agents.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation ", allocation, " has no node ", batch.node));
  }
  if (a != nullptr) COHORT_RETURN_IF_ERROR(CheckNodeRunsLocked(*a, batch.node));
  // None when the run has ended: its exit is decided.
  *policies = a != nullptr ? LogPolicyContextLocked(*a, batch) : LogPolicyContext{};
  return absl::OkStatus();
}

absl::Status Master::LogsStoredLocked(const std::string& allocation, const wire::LogBatch& batch,
                                      std::vector<wire::LogPolicyMatch> found) {
  if (allocations_.Find(allocation) == nullptr) {
    // Ended meanwhile: its exit is decided, so its matches no longer count.
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " is not running"));
  }
  // The lines are stored: a failure to record a match is logged, not returned (the agent would
  // post them again).
  if (absl::Status s = RecordLogPolicyMatchesLocked(batch, std::move(found)); !s.ok()) {
    COHORT_LOG(ERROR) << TrialName(batch.trial_id) << ": log policies: " << s;
  }
  // TASK_LOG webhooks (a failure to queue is logged: the lines are stored either way).
  const auto trial = queue_.trials().find(batch.trial_id);
  if (webhooks_.WatchesLogs() && trial != queue_.trials().end()) {
    std::vector<absl::string_view> lines;
    for (const wire::LogLine& l : batch.lines) lines.push_back(l.line);
    if (absl::Status s = webhooks_.OnTrialLogs(WebhookEventLocked(trial->second.experiment_id),
                                               batch.trial_id, lines);
        !s.ok()) {
      COHORT_LOG(ERROR) << TrialName(batch.trial_id) << ": queueing TASK_LOG webhooks: " << s;
    }
  }
  return absl::OkStatus();
}

webhooks::Event Master::WebhookEventLocked(int64_t experiment_id) const {
  webhooks::Event event;
  event.experiment_id = experiment_id;
  event.time_ms = absl::ToUnixMillis(options_.clock->Now());
  if (const TrialQueue::Experiment* e = queue_.FindExperiment(experiment_id)) {
    event.experiment_name = e->name;
    event.experiment_owner = e->owner;
    event.experiment_state = wire::Name(e->state);
  }
  return event;
}

absl::Status Master::CheckNodeRunsLocked(const Allocation& allocation, int node) const {
  if (node < 0 || node >= static_cast<int>(allocation.exits.size()) || !allocation.exits[node]) {
    return absl::OkStatus();
  }
  // An agent posts a node's output before its exit, so this is a node the master has given up
  // on (its agent was lost, e.g. behind a partition that has healed): fenced, never counted.
  return absl::NotFoundError(
      absl::StrCat("node ", node, " of allocation ", allocation.id, " has ended (agent ",
                   allocation.agents[node].first,
                   *allocation.exits[node] == -1 ? " was lost" : " reported its exit",
                   "): its output is refused; stop it"));
}

absl::Status Master::CheckReportsLocked(const std::string& allocation,
                                        const wire::ReportBatch& batch) {
  COHORT_RETURN_IF_ERROR(allocations_.CheckBelongs(allocation, batch.trial_id, /*latest=*/true));
  // Reports come from node 0 only.
  if (const Allocation* a = allocations_.Find(allocation)) {
    COHORT_RETURN_IF_ERROR(CheckNodeRunsLocked(*a, 0));
  }
  return absl::OkStatus();
}

OutputRows Master::RowsOfReports(const wire::ReportBatch& batch, ReportChanges* changes) {
  OutputRows rows{.trial_id = batch.trial_id, .reports = true};
  for (const wire::ReportRecord& line : batch.lines) {
    const int64_t steps = line.steps_completed.value_or(0);
    switch (line.kind) {
      case wire::ReportKind::kTraining:
      case wire::ReportKind::kValidation:
        rows.metrics.push_back(
            {batch.trial_id, wire::Name(line.kind), steps, line.metrics.dump(), line.time});
        for (const auto& [name, value] : wire::MetricSeries(wire::Name(line.kind), line.metrics)) {
          rows.points.push_back({name, "", steps, line.time, value});  // the same, as series
        }
        break;
      case wire::ReportKind::kCheckpoint:
        rows.checkpoints.push_back(
            {line.storage_id, batch.trial_id, steps, line.path, line.metadata.dump()});
        rows.trial.latest_checkpoint = line.storage_id;
        break;
      case wire::ReportKind::kCompleted:
        // NaN: the trial had no searcher metric (null on the wire).
        if (!std::isnan(line.searcher_metric)) {
          rows.trial.searcher_metric = line.searcher_metric;
        }
        if (line.length) changes->completed.emplace_back(*line.length, line.searcher_metric);
        break;
      case wire::ReportKind::kPreempted:
        changes->preempted = true;
        break;
    }
  }
  if (batch.progress && batch.progress->has_counts() && batch.progress->unit == "batches") {
    rows.trial.batches = {BatchCount(batch.progress->completed),
                              BatchCount(batch.progress->total)};
  }
  return rows;
}

void Master::NoteStallLocked(int64_t trial_id, const std::string& note) {
  // Each node's agent judges its own ranks: the one whose note names the rank the others wait
  // for ("rank 1 has made no progress ...") is kept over a node that only waits for it.
  const auto names_culprit = [](const std::string& text) {
    return text.find(" has made no progress for ") != std::string::npos;
  };
  auto it = stalled_.find(trial_id);
  if (note.empty()) {
    if (it != stalled_.end()) stalled_.erase(it);
  } else if (it == stalled_.end() || names_culprit(note) || !names_culprit(it->second)) {
    stalled_[trial_id] = note;
  }
}

absl::Status Master::ReportsStoredLocked(const std::string& allocation,
                                         const wire::ReportBatch& batch,
                                         const ReportChanges& changes, const TrialRow& current,
                                         bool stored_points) {
  const int64_t trial_id = batch.trial_id;
  if (batch.stalled) NoteStallLocked(trial_id, *batch.stalled);
  // The trial stopped early to resume later: its exit queues it again, even where this master
  // did not ask (it restarted after asking, or the agent was told to stop by itself).
  if (Allocation* a = allocations_.Find(allocation); changes.preempted && a != nullptr &&
                                                     a->stop == StopReason::kNone) {
    a->stop = StopReason::kPreempted;
  }
  if (!batch.system_metrics.empty()) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> system,
                            SystemPointsLocked(current, batch.system_metrics));
    COHORT_RETURN_IF_ERROR(db_->InsertPoints(trial_id, system));
    stored_points |= !system.empty();
  }
  COHORT_RETURN_IF_ERROR(StoreStepProfilesLocked(current, batch.step_profiles));
  if (stored_points) follows_.Notify();  // series followers wait on it too
  for (const wire::ReportRecord& line : batch.lines) {  // METRIC_THRESHOLD_EXCEEDED webhooks
    if (!webhooks_.WatchesMetrics() || line.kind != wire::ReportKind::kValidation) continue;
    if (absl::Status s = webhooks_.OnValidation(WebhookEventLocked(current.experiment_id), trial_id,
                                                line.metrics);
        !s.ok()) {
      COHORT_LOG(ERROR) << TrialName(trial_id) << ": queueing metric webhooks: " << s;
    }
  }
  for (const auto& [length, metric] : changes.completed) {
    COHORT_RETURN_IF_ERROR(RungReportedLocked(current, length, metric, allocation));
  }
  return absl::OkStatus();
}

absl::Status Master::AllocationExitLocked(const std::string& allocation_id,
                                          const wire::ExitReport& exit) {
  const int node = exit.node;
  const int status = exit.status;
  Allocation* found = allocations_.Find(allocation_id);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation_id, " is not running"));
  }
  Allocation& a = *found;
  if (node < 0 || node >= static_cast<int>(a.exits.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation ", allocation_id, " has no node ", node));
  }
  a.exits[node] = status;
  AppendLogLocked(a.trial_id, absl::StrCat("master: node ", node, " (agent ", a.agents[node].first,
                                           ") exited with status ", status));
  follows_.Notify();
  if (status != 0 && a.stop == StopReason::kNone) StopAllocationLocked(a, StopReason::kFailure);
  if (a.AllExited()) return FinishAllocationLocked(a);
  return absl::OkStatus();
}

absl::Status Master::FinishAllocationLocked(Allocation& allocation) {
  stalled_.erase(allocation.trial_id);  // the agents' word was about this run
  const Allocation a = allocation;  // `allocation` is removed below
  allocations_.Remove(a.id);
  // A row left behind is forgotten by the next start (its trial is no longer RUNNING then).
  if (absl::Status s = db_->DeleteAllocation(a.id); !s.ok()) {
    COHORT_LOG(ERROR) << "allocation " << a.id << " ended, but deleting its row: " << s;
  }
  rm_->Release(a.id);
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(a.trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentSearch * search, SearchLocked(exp.id));
  const ExitDecision decision =
      DecideAfterExit({.stop = a.stop,
                       .all_exited_ok = a.AllExitedOk(),
                       .experiment = exp.state,
                       .stop_once = search->config.stop_once,
                       .restarts = trial.restarts,
                       .max_restarts = exp.max_restarts,
                       .cancel_retries =
                           policy_matches_.CancelRetriesMatch(trial.id, a.id).has_value()});
  COHORT_RETURN_IF_ERROR(Transition(trial.state, decision.next, TrialName(trial.id)));
  if (decision.restart) ++trial.restarts;
  const std::string note = ExitNoteLocked(a, exp, trial, decision);
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(trial));
  TrialStoredLocked(trial);
  if (!note.empty()) AppendLogLocked(a.trial_id, note);
  return TrialRunEndedLocked(exp, trial);
}

absl::Status Master::TrialRunEndedLocked(const ExperimentRow& exp, const TrialRow& trial) {
  // A trial stopped by the searcher may already be among the best again.
  COHORT_RETURN_IF_ERROR(TrialEndedLocked(trial));
  // A trial that ended for good (not STOPPED: the searcher may resume it from its latest
  // checkpoint) gives up at once what the checkpoint storage's save_* counts let go.
  if (wire::IsTerminal(trial.state)) {
    if (absl::Status gc = CollectCheckpointsLocked(exp, trial.id); !gc.ok()) {
      COHORT_LOG(ERROR) << TrialName(trial.id) << ": checkpoint GC: " << gc;
    }
  }
  COHORT_RETURN_IF_ERROR(UpdateExperimentStateLocked(trial.experiment_id));
  follows_.Notify();
  RequestPassLocked();
  return absl::OkStatus();
}

std::string Master::ExitNoteLocked(const Allocation& a, const ExperimentRow& exp, TrialRow& trial,
                                   const ExitDecision& decision) {
  if (a.stop == StopReason::kSearcher && decision.next != TrialState::kCanceled) {
    return absl::StrCat("master: ", searcher::StoppedEarlyLine(trial.batches, decision.next));
  }
  if (decision.restart) {
    return absl::StrCat(
        "master: the trial failed; restart ", trial.restarts, " of ", exp.max_restarts,
        trial.latest_checkpoint.empty() ? " from the beginning"
                                        : " from checkpoint " + trial.latest_checkpoint);
  }
  if (decision.next != TrialState::kError) return "";
  absl::StatusOr<std::vector<LogRow>> logs = db_->ListLastLogs(trial.id, kErrorLines, std::nullopt);
  if (logs.ok()) {
    std::vector<std::string> last;
    for (const LogRow& row : *logs) last.push_back(row.line);
    trial.error_lines = absl::StrJoin(last, "\n");
  } else {
    COHORT_LOG(ERROR) << TrialName(trial.id) << ": reading its last log lines: " << logs.status();
  }
  const std::optional<wire::LogPolicyMatch> cancel =
      policy_matches_.CancelRetriesMatch(trial.id, a.id);
  return absl::StrCat(
      "master: the trial failed",
      exp.max_restarts > 0 ? absl::StrCat(" after ", trial.restarts, " restart(s)") : "",
      cancel.has_value() && trial.restarts < exp.max_restarts
          ? absl::StrCat(" and is not restarted: its log matched log policy \"", cancel->policy,
                         "\" (cancel_retries) on agent ", cancel->agent)
          : "",
      "; it is ERROR");
}

absl::Status Master::UpdateExperimentStateLocked(int64_t experiment_id) {
  // A trial still queued or running: the experiment goes on (no need to read its trials).
  if (queue_.ActiveOf(experiment_id) > 0) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(experiment_id));
  if (exp.state != ExperimentState::kActive) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(experiment_id));
  bool all_done = true, any_error = false;
  for (const TrialRow& t : trials) {
    all_done = all_done && wire::IsTerminal(t.state);
    any_error = any_error || t.state == TrialState::kError;
  }
  if (!all_done) return absl::OkStatus();
  return MoveExperimentLocked(exp,
                              any_error ? ExperimentState::kError : ExperimentState::kCompleted);
}

}  // namespace cohort::master
