// Master: scheduling passes, allocations, and what agents report about them (logs, reports,
// exits), up to what becomes of a trial when its run ends.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {
namespace {

constexpr int kErrorLines = 20;  // of a failed trial's log, kept with it

}  // namespace

void Master::ScheduleLocked() {
  absl::StatusOr<std::vector<TrialRow>> trials = db_->ListTrialsInStates({TrialState::kQueued, TrialState::kRunning});
  if (!trials.ok()) {
    COHORT_LOG(ERROR) << "scheduling: " << trials.status();
    return;
  }
  std::map<int64_t, ExperimentRow> experiments;
  std::map<int64_t, int64_t> active;  // experiment -> trials running or offered to the scheduler
  for (const TrialRow& t : *trials) {
    if (t.state == TrialState::kRunning) ++active[t.experiment_id];
  }
  std::vector<TaskRequest> queue;
  std::map<int64_t, std::string> held;  // trial -> why the experiment holds it back
  for (const TrialRow& t : *trials) {
    if (t.state != TrialState::kQueued) continue;
    if (!experiments.count(t.experiment_id)) {
      absl::StatusOr<ExperimentRow> e = db_->GetExperiment(t.experiment_id);
      if (!e.ok()) continue;
      experiments[t.experiment_id] = *e;
    }
    const ExperimentRow& e = experiments[t.experiment_id];
    if (e.state != ExperimentState::kActive) continue;
    const int64_t limit = SearcherLocked(e).max_concurrent_trials;
    if (limit > 0 && active[t.experiment_id] >= limit) {
      held[t.id] = absl::StrCat("the experiment already runs searcher.max_concurrent_trials (",
                                limit, ") trials");
      continue;
    }
    ++active[t.experiment_id];
    queue.push_back({std::to_string(t.id), e.slots_per_trial, e.priority, t.sequence});
  }
  ScheduleResult result = Schedule(agents_.States(), queue);
  waiting_ = std::move(held);
  for (const auto& [task, reason] : result.waiting) waiting_[std::stoll(task)] = reason;
  for (const Placement& p : result.placements) {
    if (absl::Status s = StartLocked(p); !s.ok()) {
      COHORT_LOG(ERROR) << "starting trial " << p.task_id << ": " << s;
    }
  }
}

absl::Status Master::StartLocked(const Placement& placement) {
  const int64_t trial_id = std::stoll(placement.task_id);
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  std::string ops_note;
  COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> ops, SearcherOpsLocked(exp, trial_id, &ops_note));
  const Allocation& allocation = allocations_.Add(trial_id, placement);
  const std::string chief_addr =
      agents_.NextChiefAddress(*agents_.Find(placement.agents[0].first));
  std::vector<std::string> where;
  for (size_t node = 0; node < placement.agents.size(); ++node) {
    const auto& [agent_id, slots] = placement.agents[node];
    agents_.Find(agent_id)->state.used += slots;
    where.push_back(absl::StrCat(agent_id, " (", slots, " slot", slots == 1 ? "" : "s", ")"));
    PushActionLocked(agent_id,
                     {{"type", "start"},
                      {"allocation", allocation.id},
                      {"trial_id", trial_id},
                      {"experiment_id", exp.id},
                      {"node_rank", node},
                      {"nnodes", placement.agents.size()},
                      {"slots", slots},
                      {"chief_addr", chief_addr},
                      {"config", exp.config_yaml},
                      {"hparams", trial.hparams_json},
                      {"seed", trial.seed},
                      {"latest_checkpoint", trial.latest_checkpoint},
                      {"context", absl::StrCat("/api/v1/experiments/", exp.id, "/context")},
                      {"reports", node == 0},
                      {"searcher_ops", ops}});
  }
  COHORT_RETURN_IF_ERROR(MoveTrialLocked(trial, TrialState::kRunning));
  AppendLogLocked(trial_id, absl::StrCat("master: allocation ", allocation.id, " on ",
                                         absl::StrJoin(where, ", "),
                                         trial.latest_checkpoint.empty()
                                             ? ""
                                             : ", resuming from checkpoint " +
                                                   trial.latest_checkpoint,
                                         ops_note));
  return absl::OkStatus();
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

void Master::PushActionLocked(const std::string& agent_id, Json action) {
  if (agents_.Push(agent_id, std::move(action))) actions_cv_.notify_all();
}

void Master::StopAllocationLocked(Allocation& allocation, StopReason reason) {
  if (allocation.stop == StopReason::kNone) allocation.stop = reason;
  for (size_t node = 0; node < allocation.agents.size(); ++node) {
    if (allocation.exits[node]) continue;
    PushActionLocked(allocation.agents[node].first,
                     {{"type", "stop"},
                      {"allocation", allocation.id},
                      {"mode", reason == StopReason::kKill ? "kill" : "preempt"}});
  }
}

absl::Status Master::AllocationLogs(const std::string& allocation, const Json& body) {
  if (!body.is_object() || !body.contains("trial_id") || !body.contains("lines") ||
      !body["lines"].is_array()) {
    return absl::InvalidArgumentError("log batch needs {\"trial_id\": N, \"lines\": [...]}");
  }
  if (!body["trial_id"].is_number_integer()) {
    return absl::InvalidArgumentError("log batch: \"trial_id\" must be an integer");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Lines of a superseded run are still the trial's: kept.
    COHORT_RETURN_IF_ERROR(
        allocations_.CheckBelongs(allocation, body["trial_id"].get<int64_t>(), /*latest=*/false));
  }
  std::vector<std::pair<int, std::string>> lines;
  for (const Json& l : body["lines"]) {
    lines.emplace_back(l.value("rank", -1), l.value("line", ""));
  }
  COHORT_RETURN_IF_ERROR(db_->AppendLogs(body["trial_id"].get<int64_t>(), lines).status());
  logs_cv_.notify_all();
  std::lock_guard<std::mutex> lock(mu_);
  if (allocations_.Find(allocation) == nullptr) {
    return absl::NotFoundError(absl::StrCat("allocation ", allocation, " is not running"));
  }
  return absl::OkStatus();
}

absl::Status Master::AllocationReports(const std::string& allocation, const Json& body) {
  if (!body.is_object() || !body.contains("trial_id") || !body["trial_id"].is_number_integer()) {
    return absl::InvalidArgumentError("reports need {\"trial_id\": N, \"lines\": [...]}");
  }
  const int64_t trial_id = body["trial_id"].get<int64_t>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(allocations_.CheckBelongs(allocation, trial_id, /*latest=*/true));
  }
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(trial_id));
  std::vector<MetricRow> metrics;
  std::vector<std::pair<double, double>> completed;  // (length, searcher metric)
  for (const Json& line : body.value("lines", Json::array())) {
    const std::string kind = line.value("kind", "");
    if (kind == "training" || kind == "validation") {
      metrics.push_back({trial_id, kind, line.value("steps_completed", int64_t{0}),
                         line.value("metrics", Json::object()).dump(), line.value("time", 0.0)});
    } else if (kind == "checkpoint") {
      absl::Status s = db_->InsertCheckpoint(
          {line.value("storage_id", ""), trial_id, line.value("steps_completed", int64_t{0}),
           line.value("path", ""), line.value("metadata", Json::object()).dump()});
      if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
      trial.latest_checkpoint = line.value("storage_id", "");
    } else if (kind == "completed") {
      // A NaN metric arrives as null.
      const bool has_metric =
          line.contains("searcher_metric") && line["searcher_metric"].is_number();
      if (has_metric) trial.searcher_metric = line["searcher_metric"].get<double>();
      if (line.contains("length") && line["length"].is_number()) {
        completed.emplace_back(line["length"].get<double>(),
                               has_metric ? *trial.searcher_metric : std::nan(""));
      }
    }
  }
  COHORT_RETURN_IF_ERROR(db_->InsertMetrics(metrics));
  if (body.contains("progress") && body["progress"].is_object()) {
    const Json& p = body["progress"];
    if (p.contains("completed") && p.value("unit", std::string("batches")) == "batches") {
      trial.batches = static_cast<int64_t>(p["completed"].get<double>());
      trial.total_batches = static_cast<int64_t>(p.value("total", 0.0));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Keep the state the master decided; only the report fields change here.
  COHORT_ASSIGN_OR_RETURN(TrialRow current, db_->GetTrial(trial_id));
  current.latest_checkpoint = trial.latest_checkpoint;
  current.searcher_metric = trial.searcher_metric;
  current.batches = trial.batches;
  current.total_batches = trial.total_batches;
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(current));
  for (const auto& [length, metric] : completed) {
    COHORT_RETURN_IF_ERROR(AshaRungLocked(current, length, metric, allocation));
  }
  return absl::OkStatus();
}

absl::Status Master::AllocationExit(const std::string& allocation_id, int node, int status) {
  std::lock_guard<std::mutex> lock(mu_);
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
  logs_cv_.notify_all();
  if (status != 0 && a.stop == StopReason::kNone) StopAllocationLocked(a, StopReason::kFailure);
  if (a.AllExited()) return FinishAllocationLocked(a);
  return absl::OkStatus();
}

absl::Status Master::FinishAllocationLocked(Allocation& allocation) {
  const Allocation a = allocation;  // `allocation` is removed below
  allocations_.Remove(a.id);
  for (const auto& [agent_id, slots] : a.agents) agents_.Release(agent_id, slots);
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(a.trial_id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(trial.experiment_id));
  const ExitDecision decision =
      DecideAfterExit({.stop = a.stop,
                       .all_exited_ok = a.AllExitedOk(),
                       .experiment = exp.state,
                       .stop_once = SearcherLocked(exp).stop_once,
                       .restarts = trial.restarts,
                       .max_restarts = exp.max_restarts});
  COHORT_RETURN_IF_ERROR(Transition(trial.state, decision.next, TrialName(trial.id)));
  if (decision.restart) ++trial.restarts;
  const std::string note = ExitNoteLocked(a.stop, exp, trial, decision);
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(trial));
  if (!note.empty()) AppendLogLocked(a.trial_id, note);
  // A trial stopped by the searcher may already be among the best again.
  COHORT_RETURN_IF_ERROR(AshaPromoteLocked(exp).status());
  COHORT_RETURN_IF_ERROR(UpdateExperimentStateLocked(trial.experiment_id));
  logs_cv_.notify_all();
  ScheduleLocked();
  return absl::OkStatus();
}

std::string Master::ExitNoteLocked(StopReason stop, const ExperimentRow& exp, TrialRow& trial,
                                   const ExitDecision& decision) {
  if (stop == StopReason::kSearcher && decision.next != TrialState::kCanceled) {
    return absl::StrCat("master: stopped early by adaptive_asha after ", trial.batches,
                        " batches; it is ", wire::Name(decision.next));
  }
  if (decision.restart) {
    return absl::StrCat(
        "master: the trial failed; restart ", trial.restarts, " of ", exp.max_restarts,
        trial.latest_checkpoint.empty() ? " from the beginning"
                                        : " from checkpoint " + trial.latest_checkpoint);
  }
  if (decision.next != TrialState::kError) return "";
  absl::StatusOr<std::vector<LogRow>> logs = db_->ListLogs(trial.id, 0, std::nullopt, 1 << 30);
  if (logs.ok()) {
    std::vector<std::string> last;
    for (size_t i = logs->size() > kErrorLines ? logs->size() - kErrorLines : 0; i < logs->size();
         ++i) {
      last.push_back((*logs)[i].line);
    }
    trial.error_lines = absl::StrJoin(last, "\n");
  } else {
    COHORT_LOG(ERROR) << TrialName(trial.id) << ": reading its last log lines: " << logs.status();
  }
  return absl::StrCat(
      "master: the trial failed",
      exp.max_restarts > 0 ? absl::StrCat(" after ", trial.restarts, " restart(s)") : "",
      "; it is ERROR");
}

absl::Status Master::UpdateExperimentStateLocked(int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(experiment_id));
  if (exp.state != ExperimentState::kActive) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(experiment_id));
  // Trials the searcher stopped wait for a promotion only while others still run.
  const bool settled = std::none_of(trials.begin(), trials.end(), [](const TrialRow& t) {
    return t.state == TrialState::kQueued || t.state == TrialState::kRunning;
  });
  for (TrialRow& t : trials) {
    if (!settled || t.state != TrialState::kStopped) continue;
    COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kCompleted));
    AppendLogLocked(t.id, "master: adaptive_asha promoted no further trial; the trial is COMPLETED");
  }
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
