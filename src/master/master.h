#pragma once
// Master: the cluster's brain (docs/design/0006-cluster.md). It owns the database, the live
// state of agents and allocations, the scheduler passes and every trial's lifecycle:
// experiment created -> trials QUEUED -> placed (allocation, "start" actions to its agents) ->
// RUNNING (logs and reports stream in) -> every node exited -> COMPLETED, or restarted from its
// latest checkpoint (up to max_restarts), or ERROR with its last log lines; pause/kill stop the
// allocation (SIGTERM: the trial checkpoints) and the trial waits or ends.
// The HTTP layer (http/) only translates requests into these calls.
//
// Thread-safe: one mutex guards the live state; long polls wait on condition variables without
// holding it. Errors are Statuses whose code the HTTP layer maps (InvalidArgument 400, NotFound
// 404, FailedPrecondition 409).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/config/experiment_config.h"
#include "common/clock.h"
#include "master/agents/agent_registry.h"
#include "master/agents/allocations.h"
#include "master/db/database.h"
#include "master/experiments/exit_policy.h"
#include "master/experiments/lifecycle.h"
#include "master/scheduler/scheduler.h"
#include "nlohmann/json.hpp"

namespace cohort::master {

using Json = nlohmann::json;

// "trial 7": how logs and errors name a trial.
std::string TrialName(int64_t id);

struct MasterOptions {
  std::string data_dir;  // contexts/ and the default checkpoint storage live here
  absl::Duration agent_timeout = absl::Seconds(30);  // silent this long: the agent is lost
  // What decides liveness and stamps rows (tests pass a FakeClock); null: RealClock().
  Clock* clock = nullptr;
};

class Master {
 public:
  static absl::StatusOr<std::unique_ptr<Master>> Create(std::unique_ptr<Database> db,
                                                        MasterOptions options);
  ~Master();

  // Experiments. Create: the config YAML (merged under the named template), the context
  // archive (tar.gz bytes). InvalidArgument carries every config error, one per line.
  absl::StatusOr<int64_t> CreateExperiment(const std::string& config_yaml,
                                           const std::string& template_name, std::string context);
  absl::StatusOr<Json> ListExperiments();
  absl::StatusOr<Json> DescribeExperiment(int64_t id);
  absl::Status PauseExperiment(int64_t id);
  absl::Status ActivateExperiment(int64_t id);
  absl::Status KillExperiment(int64_t id);
  absl::StatusOr<std::string> ContextPath(int64_t experiment_id);

  // Trials.
  absl::StatusOr<Json> DescribeTrial(int64_t id);
  absl::StatusOr<Json> TrialMetrics(int64_t id, std::optional<std::string> kind);
  absl::StatusOr<Json> TrialCheckpoints(int64_t id);
  // Lines after `after` (of one rank when given); with `follow`, waits up to `wait` for new
  // ones. "done": the trial has ended and every line was returned.
  absl::StatusOr<Json> TrialLogs(int64_t id, std::optional<int> rank, int64_t after,
                                 absl::Duration wait);

  // Templates.
  absl::StatusOr<Json> ListTemplates();
  absl::StatusOr<Json> GetTemplate(const std::string& name);
  absl::Status PutTemplate(const std::string& name, const std::string& yaml);
  absl::Status DeleteTemplate(const std::string& name);

  // Agents.
  absl::Status RegisterAgent(const Json& body);
  absl::Status Heartbeat(const std::string& agent_id);
  absl::StatusOr<Json> ListAgents();
  absl::Status SetAgentEnabled(const std::string& agent_id, bool enabled);
  absl::StatusOr<Json> WaitForActions(const std::string& agent_id, absl::Duration wait);
  absl::StatusOr<Json> ListSlots();
  absl::StatusOr<Json> ListTasks();

  // From agents, about an allocation.
  absl::Status AllocationLogs(const std::string& allocation, const Json& lines);
  absl::Status AllocationReports(const std::string& allocation, const Json& body);
  absl::Status AllocationExit(const std::string& allocation, int node, int status);

  // Drops the agents silent for longer than agent_timeout (by the clock) and fails what they
  // ran; the monitor thread calls it every second, tests call it after moving a FakeClock.
  void ExpireLostAgents();

 private:
  Master(std::unique_ptr<Database> db, MasterOptions options);
  // Moves a trial or experiment through its lifecycle (Transition) and stores the new state;
  // an illegal move changes nothing and is FailedPrecondition naming both states.
  absl::Status MoveTrialLocked(TrialRow& trial, TrialState to);
  absl::Status MoveExperimentLocked(ExperimentRow& experiment, ExperimentState to);
  // Places queued trials; call with mu_ held.
  void ScheduleLocked();
  absl::Status StartLocked(const Placement& placement);
  void StopAllocationLocked(Allocation& allocation, StopReason reason);
  absl::Status FinishAllocationLocked(Allocation& allocation);
  absl::Status UpdateExperimentStateLocked(int64_t experiment_id);
  void PushActionLocked(const std::string& agent_id, Json action);
  // Appends one of the master's own lines (rank -1) to a trial's log; a failure is logged.
  void AppendLogLocked(int64_t trial_id, const std::string& line);
  // The line the master logs about how a run ended (empty: nothing to say); for an ERROR it
  // also keeps the trial's last log lines in `trial.error_lines`.
  std::string ExitNoteLocked(StopReason stop, const ExperimentRow& exp, TrialRow& trial,
                             const ExitDecision& decision);
  // The searcher operations (lengths) a trial of `exp` trains in: adaptive_asha's rungs for
  // its bracket (and `note` says so for the log), none for the other searchers.
  absl::StatusOr<std::vector<int64_t>> SearcherOpsLocked(const ExperimentRow& exp,
                                                         int64_t trial_id, std::string* note);
  // The experiment's searcher config, parsed once from its stored config.
  const config::SearcherConfig& SearcherLocked(const ExperimentRow& exp);
  // adaptive_asha: trial `trial_id` completed the searcher operation of `length` units with
  // `metric`; decides at that rung whether it goes on, and stops its allocation if not.
  // Idempotent: a resumed trial that reports a rung again keeps its first decision.
  absl::Status AshaRungLocked(const TrialRow& trial, double length, double metric,
                              const std::string& allocation);
  // adaptive_asha without stop_once: re-queues the STOPPED trials that are now among the best
  // 1/divisor at the rung where they stopped. True when it re-queued one (schedule then).
  absl::StatusOr<bool> AshaPromoteLocked(const ExperimentRow& exp);
  // Per trial (same order), its first searcher metric per rung length (NaN: none reported).
  using RungMetrics = std::vector<std::map<int64_t, double>>;
  absl::StatusOr<RungMetrics> RungMetricsLocked(const std::vector<TrialRow>& trials);
  // AshaPromoteLocked on trials and rung metrics already read (`siblings` states are updated).
  absl::StatusOr<bool> PromoteStoppedLocked(const config::SearcherConfig& searcher,
                                            std::vector<TrialRow>& siblings,
                                            const RungMetrics& rungs);
  // Every run with a node on `agent_id` lost that node (the agent restarted or went silent):
  // logs `why` to its trial, stops the rest of it and, once all its nodes are gone, ends it.
  void FailAgentRunsLocked(const std::string& agent_id, const std::string& why);
  void MonitorAgents();
  void ExpireLostAgentsLocked();
  absl::Time NowLocked() const { return options_.clock->Now(); }
  Json TrialJson(const TrialRow& trial) const;

  std::unique_ptr<Database> db_;
  MasterOptions options_;
  std::mutex mu_;
  std::condition_variable actions_cv_;
  std::condition_variable logs_cv_;
  AgentRegistry agents_;
  Allocations allocations_;
  std::map<int64_t, std::string> waiting_;           // queued trial -> reason
  std::map<int64_t, config::SearcherConfig> searchers_;  // experiment -> its searcher config
  int64_t next_sequence_ = 1;
  bool stopping_ = false;
  std::thread monitor_;
};

}  // namespace cohort::master
