#pragma once
// Master: the cluster's brain (docs/design/0006-cluster.md). It owns the database, the live
// state of agents and allocations, the scheduler passes and every trial's lifecycle:
// experiment created -> trials QUEUED -> placed (allocation, "start" actions to its agents) ->
// RUNNING (logs and reports stream in) -> every node exited -> COMPLETED, or restarted from its
// latest checkpoint (up to max_restarts), or ERROR with its last log lines; pause/kill stop the
// allocation (SIGTERM: the trial checkpoints) and the trial waits or ends.
// The HTTP layer (http/) only translates requests into these calls.
//
// Thread-safe: one mutex guards the live state (agents, allocations, the in-memory queue of
// trials); long polls wait on condition variables without holding it. Scheduling passes run on
// the master's scheduler thread (SchedulingMode), which holds the mutex only to read the agents
// and the queue and to start what it placed, not while it computes the placements. Errors are
// Statuses whose code the HTTP layer maps (InvalidArgument 400, NotFound 404, FailedPrecondition
// 409).

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/config/experiment_config.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/agents/agent_manager.h"
#include "master/agents/allocations.h"
#include "master/checkpoints/checkpoints.h"
#include "master/db/database.h"
#include "master/experiments/checkpoint_gc.h"
#include "master/experiments/exit_policy.h"
#include "master/experiments/lifecycle.h"
#include "master/experiments/log_policies.h"
#include "master/log_retention.h"
#include "master/resource_pools.h"
#include "master/logs/policy_matches.h"
#include "master/logs/trial_logs.h"
#include "master/rm/resource_manager.h"
#include "master/scheduler/pass_times.h"
#include "master/scheduler/scheduler.h"
#include "master/scheduler/trial_queue.h"
#include "master/searcher/searcher.h"
#include "master/series/follow_gate.h"
#include "master/series/series.h"
#include "master/views/trial_table.h"
#include "master/storage/directory_storage.h"
#include "master/storage/storage_roots.h"
#include "master/models/registry.h"
#include "master/templates/templates.h"
#include "master/webhooks/webhooks.h"
#include "master/users/users.h"
#include "nlohmann/json.hpp"
#include "wire/agent_protocol.h"
#include "wire/cluster_bodies.h"
#include "wire/experiment_bodies.h"
#include "wire/job_bodies.h"
#include "wire/profile_bodies.h"
#include "wire/series_bodies.h"
#include "wire/trial_bodies.h"

namespace cohort::master {

using Json = nlohmann::json;

// "trial 7": how logs and errors name a trial.
std::string TrialName(int64_t id);
// What the scheduler's queue keeps of an experiment's row.
TrialQueue::Experiment QueueFacts(const ExperimentRow& row);
// searcher.max_length in batches of the trial with hyperparameters `hparams` (its global batch
// size may be searched); 0: none, or not convertible.
int64_t TotalBatches(const config::ExperimentConfig& cfg, const config::Json& hparams);
// TotalBatches of `cfg` (a copy) for any trial's hyperparameters.
std::function<int64_t(const config::Json&)> TotalBatchesOf(const config::ExperimentConfig& cfg);

// How an allocation stopped for `reason` is told to stop: kill (SIGTERM, SIGKILL after the
// agent's grace) for a kill and for a lost node, whose trial cannot go on without it (node 0's
// launcher would otherwise keep its rendezvous store up for 60 s waiting for the lost node's
// exit); preempt (SIGTERM: the trial checkpoints) otherwise.
wire::StopMode StopModeFor(StopReason reason);

// Who asks the master for a change (the HTTP layer makes it from the caller's login token).
// Experiments are changed only by their owner or an admin.
struct Actor {
  std::string user;
  bool admin = false;
};
// Whether `actor` may change experiment `e` (its owner or an admin); CheckMayChange:
// PermissionDenied naming the owner and the `verb` otherwise.
bool MayChange(const ExperimentRow& e, const Actor& actor);
absl::Status CheckMayChange(const ExperimentRow& e, const Actor& actor, absl::string_view verb);

// Where the master's scheduling passes run (docs/design/0012-scheduling-off-the-request-path.md).
enum class SchedulingMode {
  // cohort-master: a request that may let a trial start only marks that a pass is needed (at
  // most one pending: requests meanwhile share it) and the master's scheduler thread runs it,
  // holding the state lock only to read the agents and the queue and to start the placements.
  kBackground,
  // Tests of the lifecycles: the pass runs inside the request, under the lock, before it
  // returns (so a trial is placed when AgentManager::Register or AllocationExit returns).
  kInline,
  // Tests of the scheduler thread's pass: requests mark a pass pending and nothing runs it
  // until the test calls Master::RunPendingPass().
  kManual,
};

struct MasterOptions {
  std::string data_dir;  // contexts/ and the default checkpoint storage live here
  // Where else experiments may store checkpoints (storage/storage_roots.h): absolute
  // directories that neither hold data_dir nor lie in it. DATA_DIR/checkpoints is always one.
  std::vector<std::string> checkpoint_storage_roots;
  absl::Duration agent_timeout = absl::Seconds(30);  // silent this long: the agent is lost
  // A preempted trial that has not checkpointed and stopped this long after its preemption is
  // killed (it resumes from its latest checkpoint); Determined's preemption_timeout.
  absl::Duration preemption_timeout = absl::Minutes(10);
  // After a restart, how long the allocations that ran wait for their agents to claim them
  // before their trials are queued again (docs/design/0011-master-restart-readoption.md).
  absl::Duration readopt_grace = absl::Seconds(30);
  // What decides liveness and stamps rows (tests pass a FakeClock); null: RealClock().
  Clock* clock = nullptr;
  // At most this many log follows wait at once; more are answered at once (the client asks
  // again), so followers cannot take the request threads agents need.
  int max_log_followers = 16;
  // How much of the trials' logs is kept (log_retention.h), checked every
  // log_retention_period.
  LogRetentionPolicy log_retention;
  absl::Duration log_retention_period = absl::Seconds(1);
  SchedulingMode scheduling = SchedulingMode::kBackground;
  // Tests: called on the pass's thread while it computes the placements, without the lock
  // (kBackground and kManual passes only).
  std::function<void()> during_schedule;
  // The resource manager allocations run through (rm/resource_manager.h), made by Create with
  // the master's events before anything is recovered or scheduled; it must outlive nothing of
  // the master's (the master owns it). Null: the master's agents (AgentManager).
  std::function<absl::StatusOr<std::unique_ptr<rm::ResourceManager>>(rm::Events&)>
      resource_manager;
  // The resource pools agents join and experiments name, each with its scheduling policy
  // (resource_pools.h; --resource-pools FILE). Always holds `default`.
  ResourcePools resource_pools = DefaultResourcePools();
};

// What the cluster looks like at one moment, for monitoring (the master's GET /metrics). Agents
// and slots are what ListSlots shows; trials in the non-terminal states are what ListTasks shows.
struct ClusterStats {
  struct AgentSlots {
    std::string id;
    int slots = 0;  // what the agent registered
    int used = 0;   // held by running allocations
    bool enabled = true;
  };
  std::vector<AgentSlots> agents;  // the connected agents, by id
  // Every trial in the database by state; every state is present (0 when none).
  std::map<TrialState, int64_t> trials;
  int64_t queued = 0;  // trials QUEUED (waiting for slots, or held back by their experiment)
  // How long the longest-waiting QUEUED trial has waited, by the master's clock: since it was
  // last queued, or since this master started for one queued before a restart. Zero when none.
  absl::Duration longest_queued_wait;
  int64_t database_bytes = 0;  // Database::SizeBytes
  // What the database's backend reports about itself (Database::BackendMetrics; SQLite: its
  // write-ahead log's checkpoints).
  std::vector<BackendMetric> database_metrics;
  // Since this master started: log lines agents sent that were stored, and metric reports
  // (training or validation rows, one step each) stored.
  int64_t log_lines_stored = 0;
  int64_t metric_reports_stored = 0;
  // Since this master started: log lines its log retention dropped (LogRetention).
  int64_t log_lines_dropped = 0;
  PassTimes::Summary scheduling;  // the scheduler's passes since the master started
  // Per pass, the longest time it held the master's state lock at once (what a request may
  // have waited for it).
  PassTimes::Summary scheduling_lock;
};

class Master {
 public:
  static absl::StatusOr<std::unique_ptr<Master>> Create(std::unique_ptr<Database> db,
                                                        MasterOptions options);
  ~Master();

  // Experiments. Create: the config YAML (merged under the named template), the context
  // archive (tar.gz bytes); `owner` becomes the experiment's owner. InvalidArgument carries
  // every config error, one per line.
  absl::StatusOr<int64_t> CreateExperiment(const std::string& config_yaml,
                                           const std::string& template_name, std::string context,
                                           const Actor& owner) ABSL_LOCKS_EXCLUDED(mu_);
  // The experiment's config warnings (fields Cohort accepts but ignores), as `experiment
  // create` shows them after the master merged the config with its template.
  absl::StatusOr<std::vector<std::string>> ExperimentWarnings(int64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<wire::ExperimentList> ListExperiments();
  // The experiment with its effective config; for a `viewer` who is neither its owner nor an
  // admin, its secrets are masked (config/secrets.h: environment values, registry and storage
  // credentials).
  absl::StatusOr<wire::ExperimentDescription> DescribeExperiment(int64_t id, const Actor& viewer)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Pause, activate and kill: PermissionDenied unless `actor` owns the experiment or is an
  // admin.
  absl::Status PauseExperiment(int64_t id, const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ActivateExperiment(int64_t id, const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status KillExperiment(int64_t id, const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes an ended experiment (Determined's `det experiment delete`; master_deletion.cc). It
  // moves to DELETING at once; the monitor thread then removes its checkpoints (those in a
  // storage the master reaches) and its context archive, and deletes its rows in bounded
  // transactions, after which it is gone (NotFound). A master restarted meanwhile starts the
  // deletion again. OK (nothing more to do) for one already DELETING; FailedPrecondition for
  // one ACTIVE or PAUSED (kill it first) and for one whose checkpoints a model version holds
  // (naming the versions); PermissionDenied unless `actor` owns it or is an admin.
  absl::Status DeleteExperiment(int64_t id, const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);

  // Deletes one checkpoint of an ended experiment (`cohort checkpoint delete`): marked DELETED,
  // its files removed by the monitor thread, as the GC does. OK for one already DELETED;
  // NotFound; PermissionDenied unless `actor` owns its experiment or is an admin;
  // FailedPrecondition for an experiment not ended (a search may resume from it) and for one a
  // model version holds (naming it) or whose files are out of the master's reach.
  absl::Status DeleteCheckpoint(const std::string& storage_id, const Actor& actor)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Archives (hides from lists unless asked for) or unarchives an experiment (Determined's
  // `det experiment archive`). OK (nothing done) when it already is; FailedPrecondition for
  // archiving one that has not ended, or is being deleted; PermissionDenied as for the others.
  absl::Status ArchiveExperiment(int64_t id, bool archived, const Actor& actor)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Renames an experiment or sets its description or labels (Determined's `det experiment set`,
  // PatchExperiment): written into its name and stored config, which the list and the web
  // interface read. NotFound; PermissionDenied as for the others; DataLoss when its stored
  // config no longer parses.
  absl::Status PatchExperiment(int64_t id, const wire::ExperimentPatch& patch,
                               const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);
  // Trains an ended experiment further (Determined's `det experiment continue`;
  // master_continue.cc): `override_config` (a mapping, wire::ExperimentContinue) merged over its
  // effective config, then the experiment ACTIVE again under the same id and its trials QUEUED,
  // each resuming from its latest checkpoint with its restarts reset. A single-trial
  // experiment's one trial always trains again (to a longer searcher.max_length, with changed
  // hyperparameters, environment, max_restarts...); a grid or random search's CANCELED and
  // ERROR trials train again, and the trials it never created are created, its config
  // unchanged. Returns the new config's warnings. FailedPrecondition for one ACTIVE, PAUSED or
  // DELETING, for an adaptive_asha search, for a search with nothing left to train, and for a
  // change of searcher.name, checkpoint_storage or resources.resource_pool (each naming the
  // fork to use instead); InvalidArgument with every config error; PermissionDenied unless
  // `actor` owns it or is an admin.
  absl::StatusOr<std::vector<std::string>> ContinueExperiment(int64_t id,
                                                              const config::Json& override_config,
                                                              const Actor& actor)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> ContextPath(int64_t experiment_id);
  // The context archive's bytes (tar.gz); Unavailable naming the file when it cannot be read.
  absl::StatusOr<std::string> ContextArchive(int64_t experiment_id);
  // What a fork of experiment `parent` starts from (Determined's `det experiment fork`): its
  // effective config (the template merged, its experiment_seed recorded) and its context
  // archive's bytes. PermissionDenied unless `actor` owns it or is an admin (a fork copies its
  // code and its environment's values); NotFound for an unknown id.
  struct ForkSource {
    std::string config_yaml;
    std::string context;
  };
  absl::StatusOr<ForkSource> ForkSourceOf(int64_t parent, const Actor& actor);

  // Trials.
  absl::StatusOr<wire::TrialDescription> DescribeTrial(int64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends one trial for good (Determined's `det trial kill`), its experiment going on with the
  // others: a running trial is stopped as a kill (SIGTERM, SIGKILL after the agent's grace)
  // and is CANCELED once its nodes have exited; a QUEUED, PAUSED or STOPPED one is CANCELED at
  // once. Either way the searcher is told it ended, as for any trial that exits, and the
  // experiment ends when its last trial does. OK (nothing done) for a trial that already ended;
  // NotFound for an unknown id; PermissionDenied unless `actor` owns its experiment or is an
  // admin.
  absl::Status KillTrial(int64_t id, const Actor& actor) ABSL_LOCKS_EXCLUDED(mu_);

  // The components the routes take directly: templates (template_routes.cc), time series and
  // step timelines (series_routes.cc), users and tokens (user_routes.cc), agents
  // (agent_routes.cc). Each is thread-safe on its own and never needs the master's lock.
  templates::Templates& templates() { return templates_; }
  models::Registry& models() { return models_; }  // model_routes.cc
  webhooks::Webhooks& webhooks() { return webhooks_; }  // webhook_routes.cc
  series::Series& series() { return series_; }
  // An experiment's trials table (views/trial_table.h): read from the rows, no lock of the
  // master's; NotFound for an unknown experiment.
  absl::StatusOr<wire::TrialTable> TrialTable(int64_t experiment_id) {
    return views::BuildTrialTable(*db_, experiment_id);
  }
  logs::TrialLogs& trial_logs() { return trial_logs_; }
  checkpoints::Checkpoints& checkpoints() { return checkpoints_; }
  users::Users& users() { return users_; }
  // The agents' resource manager (agents/agent_manager.h): their registration, long polls,
  // enabling, and the slots they offer (agent_routes.cc).
  AgentManager& agents() { return agents_; }
  // Whether allocations run on the agents (else on MasterOptions::resource_manager's).
  bool runs_on_agents() const { return rm_ == &agents_; }
  // The nodes trials may run on: the agents (AgentManager::List), or the resource manager's
  // offers (a Slurm partition's nodes: connected and enabled while Slurm takes jobs there).
  absl::StatusOr<wire::AgentList> ListNodes();
  // Every slot with what holds it (rm::ResourceManager::Slots).
  wire::SlotList ListSlots() { return rm_->Slots(); }

  // Trials waiting or running, with why they wait and where they run.
  absl::StatusOr<wire::TaskList> ListTasks() ABSL_LOCKS_EXCLUDED(mu_);

  // The shared cluster's queue (master_jobs.cc, docs/scheduling.md): each resource pool with
  // its policy, agents, slots and trials; the experiments with queued or running trials in the
  // order the scheduler serves them, pool by pool (`pool` empty: every pool; an unknown one is
  // InvalidArgument naming the pools); and a job's priority, weight, max_slots or place in the
  // queue changed by its owner or an admin (PermissionDenied otherwise, InvalidArgument for a
  // value out of range or an ahead_of/behind_of in another pool).
  wire::ResourcePoolList ListResourcePools() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<wire::JobList> ListJobs(const std::string& pool) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status UpdateJob(int64_t experiment_id, const wire::JobUpdate& update, const Actor& actor)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A snapshot of the cluster for monitoring; an error only when the database cannot be read.
  absl::StatusOr<ClusterStats> Stats() ABSL_LOCKS_EXCLUDED(mu_);

  // OK when `token` is the credential of the running allocation `allocation`; NotFound when it
  // does not run (it ended, or this master restarted); Unauthenticated otherwise.
  absl::Status CheckAllocationToken(const std::string& allocation, const std::string& token)
      ABSL_LOCKS_EXCLUDED(mu_);

  // From agents, about an allocation. The output (logs, reports) of a node whose end the master
  // has recorded, one it declared lost above all, is refused with NotFound: a run fenced off
  // (its agent, back from a partition, stops it) is never counted.
  absl::Status AllocationLogs(const std::string& allocation, const wire::LogBatch& batch);
  absl::Status AllocationReports(const std::string& allocation, const wire::ReportBatch& batch);
  absl::Status AllocationExit(const std::string& allocation, const wire::ExitReport& exit)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A node the resource manager launched itself (a Slurm job's process) asks, from `host`, for
  // its part of the running `allocation` (rm::ResourceManager::NodeStart); NotFound when the
  // allocation does not run or has no such node.
  absl::StatusOr<wire::StartAction> AllocationNodeStart(const std::string& allocation,
                                                        int node_rank, const std::string& host)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The context archive of the running `allocation`'s experiment (as ContextArchive), for
  // nodes that hold only the allocation's token.
  absl::StatusOr<std::string> AllocationContext(const std::string& allocation)
      ABSL_LOCKS_EXCLUDED(mu_);

  // One allocation's output in an agent's combined post (wire::AllocationOutput), by pointer:
  // the parts present, and the token to check (none: the caller checked the credential).
  struct OutputParts {
    std::string allocation;
    const std::string* token = nullptr;
    const wire::LogBatch* logs = nullptr;
    const wire::ReportBatch* reports = nullptr;
    const wire::ExitReport* exit = nullptr;
  };
  // What became of one: OK, or the first failure and the part it ended ("" for the token).
  struct OutputStored {
    absl::Status status;
    std::string part;
  };
  // Stores each item as its own posts would be (its token, then its logs, reports and exit,
  // as AllocationLogs, AllocationReports and AllocationExit; an item's first failure ends it)
  // in three steps whatever the number of items (master_outputs.cc): every check under one
  // hold of the lock, every item's rows in one database transaction, then the trials' updates
  // and the exits under a second hold. The three calls above are this with one item.
  std::vector<OutputStored> StoreOutputs(const std::vector<OutputParts>& items)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Long polls waiting right now: log follows and agents' action polls (for tests and
  // monitoring).
  int WaitingPolls() ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the agents silent for longer than agent_timeout (by the clock) and fails what they
  // ran, and ends the allocations restored after a restart that no agent claimed within
  // readopt_grace; the monitor thread calls it every second, tests call it after moving a
  // FakeClock.
  void ExpireLostAgents() ABSL_LOCKS_EXCLUDED(mu_);
  // Kills the preempted trials that have not stopped within preemption_timeout of their
  // preemption (they resume from their latest checkpoint); the monitor thread calls it every
  // second, tests after moving a FakeClock.
  void EscalatePreemptions() ABSL_LOCKS_EXCLUDED(mu_);

  // kManual: runs the pending scheduling pass on the caller's thread, as the scheduler thread
  // would (the lock is free while it computes); false when none was pending (or one runs).
  bool RunPendingPass() ABSL_LOCKS_EXCLUDED(mu_);
  // kBackground: waits until no scheduling pass is pending or running; false when `timeout`
  // passed first (or, in kManual, a pass is pending that nobody runs).
  bool WaitForScheduling(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Shutting down: every long poll waiting now or later (log and series follows, agents'
  // action polls) answers at once, so the HTTP server can stop within a request's time;
  // follows answer Unavailable ("the master is shutting down"). Idempotent; the destructor
  // calls it.
  void BeginShutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Master(std::unique_ptr<Database> db, MasterOptions options, storage::StorageRoots roots);
  // A submitted config merged under its template and validated; `effective` is what is stored.
  struct SubmittedConfig {
    config::ExperimentConfig config;
    config::Json effective;
    std::string template_name;  // from the request, else the config's `template:`
  };
  // Checkpoint GC (master_checkpoints.cc), when an experiment ends: deletes what its storage's
  // save_* counts let go (only <storage>/<id> directories the master can see) and marks them.
  // With `ended_trial`, only that trial's checkpoints (it has ended for good): those the save_*
  // counts let go now can never be kept later (a later checkpoint only pushes one further from
  // the experiment's best), so they go at once; the rest waits for the experiment's end
  // (nullopt: every trial's).
  absl::Status CollectCheckpointsLocked(const ExperimentRow& exp,
                                        std::optional<int64_t> ended_trial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<GcCheckpoint>> GcCandidatesLocked(const ExperimentRow& exp,
                                                               const std::string& metric)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `row` DELETED and queues its files for the monitor thread, saying so in its trial's
  // log as `by` ("checkpoint GC", "checkpoint delete") with `why`; FailedPrecondition saying why
  // it is kept (a path outside its storage, files the master cannot see, a model version
  // holding it), also said in the log.
  absl::Status DeleteCheckpointLocked(const std::shared_ptr<storage::CheckpointStorage>& storage,
                                      const CheckpointRow& row, absl::string_view by,
                                      absl::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At creation: InvalidArgument, naming the field and the allowed roots, for a shared_fs
  // storage outside storage_roots_ (a directory storage is checked at each use only).
  absl::Status CheckStorageAllowed(const config::CheckpointStorage& storage) const;
  // The experiment's checkpoint storage (checkpoints::Checkpoints::StorageFor); null for none.
  absl::StatusOr<std::shared_ptr<storage::CheckpointStorage>> CheckpointStorageLocked(
      int64_t experiment_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the experiment's ACTIVE checkpoints from `storage` (only its own locations of their
  // ids), without mu_; one the master cannot see is logged and left.
  absl::Status RemoveCheckpointDirs(int64_t experiment_id,
                                    const std::shared_ptr<storage::CheckpointStorage>& storage);

  // Experiment deletion (master_deletion.cc): the DELETING experiments, oldest request first;
  // the monitor thread works on the front one.
  struct PendingDeletion {
    int64_t experiment = 0;
    // CheckpointStorageLocked: its checkpoints and its trials' TensorBoard files.
    std::shared_ptr<storage::CheckpointStorage> checkpoint_storage;
    std::string context_path;
    std::vector<int64_t> trials;
    bool files_removed = false;  // checkpoints and context gone: only rows are left
  };
  // Removes the context archive `path` of experiment `deleted` (being deleted) unless another
  // experiment names it too; logged when it cannot.
  void RemoveContextIfUnusedLocked(const std::string& path, int64_t deleted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<PendingDeletion> DeletionOfLocked(const ExperimentRow& experiment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FailedPrecondition naming the first experiment that has not ended and warm-starts its
  // trials from one of the deletion's trials (searcher.source_trial_id or
  // source_checkpoint_uuid): its next trial would find no checkpoint.
  absl::Status CheckNoWarmStartFromLocked(const PendingDeletion& deletion)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At start: queues the experiments a previous run left DELETING.
  absl::Status QueueDeletionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At start (master_sweep.cc): removes the context uploads no experiment names (cut short by
  // a killed master: .tmp-PID files, or archives whose row was never written) and the
  // checkpoint directories the last run's GC renamed aside but did not remove (.deleted-ID).
  absl::Status SweepLeftoversLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SweepLeftoversLocked's part for one checkpoint storage.
  void SweepStorageLocked(const std::shared_ptr<storage::CheckpointStorage>& storage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The monitor thread's turn: with mu_ held, releases it while it removes the front
  // deletion's files and deletes its rows for about kDeletionSlice. True when more is left to
  // do at once (the monitor does not wait before its next turn).
  bool AdvanceDeletion() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> DeleteSlice(const PendingDeletion& deletion);
  std::deque<PendingDeletion> deletions_ ABSL_GUARDED_BY(mu_);
  // The checkpoint directory every trial of a warm-started experiment starts from
  // (searcher.source_checkpoint_uuid, else source_trial_id's latest checkpoint); empty when
  // the config asks for none. InvalidArgument naming the field when the source is unknown.
  absl::StatusOr<std::string> WarmStartPath(const config::SearcherConfig& searcher);
  absl::StatusOr<SubmittedConfig> ResolveConfig(const std::string& config_yaml,
                                                const std::string& template_name);
  // Writes an uploaded context archive under data_dir/contexts; returns its path.
  // Stores a context archive as data_dir/contexts/sha256-<its SHA-256>.tar.gz, or finds it there
  // already (identical uploads are one file); returns its path. Unavailable when it cannot be
  // written (a full disk says so).
  absl::StatusOr<std::string> SaveContext(const std::string& context)
      ABSL_LOCKS_EXCLUDED(contexts_mu_);
  // ContinueExperiment's parts (master_continue.cc): the continued config, checked against the
  // experiment's, and its trials as they go back to the queue.
  absl::StatusOr<SubmittedConfig> ContinuedConfig(const ExperimentRow& e,
                                                  const config::Json& override_config,
                                                  size_t trial_count);
  // The experiment, read under the lock and checked, ACTIVE again with `next` and its trials
  // queued (one transaction), then the master's copies (queue, searcher, facts) follow.
  absl::Status ReopenLocked(ExperimentRow& e, const SubmittedConfig& next, const Actor& actor)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `fresh`: a new searcher of `cfg` (a single trial takes its sample).
  absl::StatusOr<std::vector<TrialRow>> ReopenedTrialsLocked(const config::ExperimentConfig& cfg,
                                                             searcher::Searcher& fresh,
                                                             std::vector<TrialRow> trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK when `context` is empty or a tar.gz context archive that CheckContext accepts (every
  // entry safe to unpack, within kMaxContextEntries and kMaxContextUnpackedBytes), and holds
  // the program of `entrypoint` when that is a relative path ("./trial", "bin/train");
  // otherwise InvalidArgument naming the context, the entry and the rule, or the program.
  static absl::Status CheckContextArchive(const std::string& context,
                                          const std::vector<std::string>& entrypoint);
  // Moves a trial or experiment through its lifecycle (Transition) and stores the new state;
  // an illegal move changes nothing and is FailedPrecondition naming both states.
  absl::Status MoveTrialLocked(TrialRow& trial, TrialState to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The experiment's fields of a webhook event (from the queue's copy: no database read).
  webhooks::Event WebhookEventLocked(int64_t experiment_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The webhooks' deliveries of the experiment's move to `to`, and StoreStateLocked: `store`
  // writes the state with them in one transaction; when a webhook was deleted meanwhile
  // (NotFound with deliveries), the state is stored without them. Wakes the deliverer.
  std::vector<DeliveryRow> StateDeliveriesLocked(const ExperimentRow& experiment,
                                                 ExperimentState to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StoreStateLocked(
      const ExperimentRow& experiment, ExperimentState to,
      const std::function<absl::Status(const std::vector<DeliveryRow>&)>& store)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status MoveExperimentLocked(ExperimentRow& experiment, ExperimentState to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scheduling passes (master_scheduling.cc). A change that may let a trial start (a trial
  // queued, slots freed, an agent registered or enabled) calls RequestPassLocked: in kInline
  // the pass runs now, otherwise it is marked pending (one pending pass covers every request
  // made before it starts) for the scheduler thread or RunPendingPass.
  void RequestPassLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a pass reads under the lock: the agents and the queue as Schedule() takes them, and the
  // queued trials their experiment holds back (trial -> why).
  struct PassInput {
    ScheduleInput schedule;  // agents, queued and running tasks, experiments' shares, pools
    std::map<int64_t, std::string> held;
  };
  PassInput SnapshotLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The trials that hold slots, for the scheduler to choose what to preempt.
  std::vector<RunningTask> RunningTasksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops each preempted trial (StopReason::kPreempted: it checkpoints and queues again, not
  // counted against max_restarts), saying why in its log and, while it waits, in its reason.
  void PreemptLocked(const std::vector<Preemption>& preemptions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EscalatePreemptionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where `update` puts experiment `e` in its pool's queue: its priority and position.
  absl::StatusOr<std::pair<int, double>> QueuePlaceLocked(int64_t e, const wire::JobUpdate& update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why `trial` waits, as the last pass found (its own reason, or behind the pass's blocker);
  // nullopt when it is not queued or the last pass did not consider it.
  std::optional<std::string> WaitingReasonLocked(const TrialRow& trial) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What an experiment offers a pass: the trials it runs and its max_concurrent_trials (0: no
  // limit), or why it holds every queued trial back (its searcher cannot run).
  struct Offer {
    int64_t active = 0;  // running, then also offered to this pass
    int64_t limit = 0;
    std::string held;
  };
  Offer OfferLocked(int64_t experiment_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Start-up: the searchers of the experiments with trials queued or running are rebuilt from the
  // database now, before the master serves, rather than inside the first pass that needs them
  // (at 10,000 trials that held the lock for a third of a second after a restart).
  void RestoreSearchersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One pass with the lock released while Schedule() computes and between batches of starts;
  // mu_ is held on entry and on return. The time it worked (not waiting for the lock).
  absl::Duration RunPass() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One pass wholly under the lock (kInline).
  void RunPassLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the pass's waiting reasons, for trials still queued.
  void SetWaitingLocked(PassInput& input, const ScheduleResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts placements [*next, *next + count); a placement whose trial is no longer queued is
  // skipped, and one whose agents changed meanwhile (gone, disabled, slots taken, excluded)
  // ends the batch and the pass. Either marks another pass pending. False when none are left.
  bool StartPlacementsLocked(const std::vector<Placement>& placements, size_t* next, size_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool PlacementFitsLocked(const Placement& placement, int64_t trial_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunScheduler() ABSL_LOCKS_EXCLUDED(mu_);  // the scheduler thread (kBackground)
  // The trial's state was stored: the queue and queued_since_ follow it.
  void TrialStoredLocked(const TrialRow& trial) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts a batch of checked placements (master_starts.cc): their trials read in one query,
  // their allocations stored before any agent hears of them, then their trials RUNNING with
  // their log lines in one transaction. A placement that cannot start is logged and skipped.
  struct PreparedStart;
  void StartBatchLocked(const std::vector<const Placement*>& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A placement's allocation (added to allocations_) and start actions, from its trial's row
  // (`trials`) and its experiment's (read into `experiments` once per batch).
  absl::StatusOr<PreparedStart> PrepareStartLocked(const Placement& placement,
                                                   const std::map<int64_t, TrialRow>& trials,
                                                   std::map<int64_t, ExperimentRow>& experiments)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the prepared allocations' rows in one statement; when that fails, removes them from
  // allocations_ (their trials stay queued) and returns false.
  bool StoreAllocationsLocked(const std::vector<PreparedStart>& prepared)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the rows of allocations that did not start, logging a failure.
  void ForgetAllocationRows(const std::vector<std::string>& ids);
  void StopAllocationLocked(Allocation& allocation, StopReason reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FinishAllocationLocked(Allocation& allocation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UpdateExperimentStateLocked(int64_t experiment_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckAllocationTokenLocked(const std::string& allocation,
                                          const std::string& token) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // StoreOutputs' steps (master_outputs.cc); OutputWork is one item's progress through them.
  struct OutputWork;
  void CheckOutputLocked(const OutputParts& parts, OutputWork& work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StoredOutput(const OutputRows& rows, const OutputRowsWritten& written, OutputWork& work);
  void FinishOutputLocked(OutputWork& work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The checks of AllocationReports (and of AllocationLogs, CheckLogsLocked below), under mu_.
  absl::Status CheckReportsLocked(const std::string& allocation, const wire::ReportBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a report batch asks of the master beside the rows it adds (its trial's report fields
  // are among the rows: OutputRows::trial).
  struct ReportChanges {
    std::vector<std::pair<double, double>> completed;  // searcher ops: (length, metric)
    bool preempted = false;  // the workers said they stopped early, to resume from a checkpoint
  };
  // A report batch's rows (checkpoints, metrics and their series points) and changes.
  static OutputRows RowsOfReports(const wire::ReportBatch& batch, ReportChanges* changes);
  // After the lines or the reports are stored, under mu_: policy matches; system metrics,
  // step profiles and rungs (`trial`: its row as the report left it).
  absl::Status LogsStoredLocked(const std::string& allocation, const wire::LogBatch& batch,
                                std::vector<wire::LogPolicyMatch> found)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReportsStoredLocked(const std::string& allocation, const wire::ReportBatch& batch,
                                   const ReportChanges& changes, const TrialRow& trial,
                                   bool stored_points)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AllocationExitLocked(const std::string& allocation, const wire::ExitReport& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK while `node` of `allocation` has not ended; NotFound (naming it and its agent) once it
  // has: it exited, or the master declared its agent lost.
  absl::Status CheckNodeRunsLocked(const Allocation& allocation, int node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The points of `records` (a node's system metrics) that fall inside the profiling window of
  // the trial's experiment, at the trial's current batch, labelled by agent ("<agent>/<uuid>"
  // for a GPU's); none when profiling is off.
  absl::StatusOr<std::vector<PointRow>> SystemPointsLocked(
      const TrialRow& trial, const std::vector<wire::SystemMetricsRecord>& records)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the master needs of an experiment's config after creation (parsed once, cached): its
  // profiling window and slots (to take profiles), its searcher (warm starts, the GC's metric)
  // and its checkpoint storage (the GC).
  struct ConfigFacts {
    config::Profiling window;
    int slots = 1;
    config::SearcherConfig searcher;
    std::optional<config::CheckpointStorage> storage;
    std::shared_ptr<const LogPolicyMatcher> log_policies;  // never null
    std::vector<std::string> warnings;                     // config::ExperimentConfig::warnings
  };
  absl::StatusOr<ConfigFacts> ConfigFactsLocked(int64_t experiment_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the node's step timelines (those of ranks the trial has, inside its experiment's
  // profiling window) and adds them to the trial's timings; nothing when profiling is off.
  absl::Status StoreStepProfilesLocked(const TrialRow& trial,
                                       const std::vector<wire::StepProfileRecord>& records)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends one of the master's own lines (rank -1) to a trial's log; a failure is logged.
  // What follows a trial's move at the end of its run (or a kill without one): its searcher is
  // told, a trial that ended for good gives up what the save_* counts let go, its experiment
  // ends with its last trial, and followers and the scheduler are woken.
  absl::Status TrialRunEndedLocked(const ExperimentRow& exp, const TrialRow& trial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A killed trial without a run (QUEUED, PAUSED, STOPPED, or RUNNING with nothing to re-adopt
  // after a restart): CANCELED now, its searcher told, its checkpoints collected and its
  // experiment ended if it was the last.
  absl::Status CancelTrialLocked(const ExperimentRow& experiment, TrialRow& trial)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AppendLogLocked(int64_t trial_id, const std::string& line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The line the master logs about how a run ended (empty: nothing to say); for an ERROR it
  // also keeps the trial's last log lines in `trial.error_lines`.
  std::string ExitNoteLocked(const Allocation& allocation, const ExperimentRow& exp,
                             TrialRow& trial, const ExitDecision& decision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An experiment's searcher, with what the master needs to carry out its operations.
  struct ExperimentSearch {
    config::SearcherConfig config;
    std::unique_ptr<searcher::Searcher> searcher;
    std::vector<int64_t> trial_ids;  // searcher index -> trial id (creation order)
    // searcher.max_length in batches of a trial with these hyperparameters (0: unknown).
    std::function<int64_t(const config::Json& hparams)> total_batches;
  };
  // The experiment's searcher: created with the experiment, or rebuilt from the database
  // (Searcher::Restore) the first time it is needed after a restart of the master.
  absl::StatusOr<ExperimentSearch*> SearchLocked(int64_t experiment_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int64_t> SearchIndexLocked(const ExperimentSearch& search, int64_t trial_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The searcher operations (lengths) a trial trains in: adaptive_asha's rungs for its bracket
  // (and `note` says so for the log), none for the other searchers.
  absl::StatusOr<std::vector<int64_t>> SearcherOpsLocked(const ExperimentRow& exp, int64_t trial_id,
                                                         std::string* note)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The trial completed the searcher operation of `length` with `metric` (reported through
  // `allocation`): the searcher decides, and a Stop stops that allocation.
  absl::Status RungReportedLocked(const TrialRow& trial, double length, double metric,
                                  const std::string& allocation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The trial's run ended and the trial is now in `trial.state`: the searcher may promote or
  // complete stopped trials.
  absl::Status TrialEndedLocked(const TrialRow& trial) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Carries out the searcher's operations in order (rows, log lines, stops of the `reporting`
  // allocation, promotions), then schedules if a trial was queued.
  absl::Status ApplySearchLocked(int64_t experiment_id, ExperimentSearch& search,
                                 const std::vector<searcher::Operation>& ops,
                                 const std::string& reporting) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One operation on an existing trial; true when it queued the trial.
  absl::StatusOr<bool> ApplyOneLocked(int64_t trial_id, const searcher::Operation& op,
                                      const std::string& reporting)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertTrialLocked(int64_t experiment_id, ExperimentSearch& search,
                                 const searcher::Create& create) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every run with a node on `agent_id` lost that node (the agent restarted or went silent):
  // logs `why` to its trial, stops the rest of it and, once all its nodes are gone, ends it.
  void FailAgentRunsLocked(const std::string& agent_id, const std::string& why,
                           const std::vector<std::pair<std::string, int>>& keep = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Start-up: the queue (queue_) and the next submission sequence, from the database.
  absl::Status LoadQueue() ABSL_LOCKS_EXCLUDED(mu_);
  // Start-up after a restart (master_recovery.cc): the allocations that ran are restored from the
  // database to wait readopt_grace for their agents; RUNNING trials without one are queued again.
  absl::Status RecoverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The nodes agent `agent_id` says it runs: re-adopted, kept, or told to stop. Returns the
  // (allocation, node) pairs it keeps running; the trials' log lines saying so are added to
  // `notes` (trial, line), for the caller to store once the lock is released.
  std::vector<std::pair<std::string, int>> ClaimNodesLocked(
      const std::string& agent_id, const std::vector<wire::RunningAllocation>& nodes,
      std::vector<std::pair<int64_t, std::string>>* notes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // What the resource manager tells the master (rm::Events; master_agents.cc). Each takes mu_;
  // the resource manager calls them without its own lock.
  // A node joined: its claimed nodes re-adopted (their log lines stored after mu_ is released),
  // the runs it no longer has ended, what this master does not know stopped, and a pass.
  void NodeJoined(const std::string& where, const std::vector<wire::RunningAllocation>& claims,
                  const std::vector<std::string>& running) ABSL_LOCKS_EXCLUDED(mu_);
  // A node is leaving: every allocation with a node there is stopped as kAgentLeft (its trial
  // checkpoints and is queued again, not counted as a restart); true while one still runs.
  bool NodeLeaving(const std::string& where) ABSL_LOCKS_EXCLUDED(mu_);
  void OffersChanged() ABSL_LOCKS_EXCLUDED(mu_);
  class ResourceEvents : public rm::Events {
   public:
    explicit ResourceEvents(Master& master) : master_(master) {}
    void NodeJoined(const std::string& where, const std::vector<wire::RunningAllocation>& claims,
                    const std::vector<std::string>& running) override {
      master_.NodeJoined(where, claims, running);
    }
    bool NodeLeaving(const std::string& where) override { return master_.NodeLeaving(where); }
    void OffersChanged() override { master_.OffersChanged(); }

   private:
    Master& master_;
  };
  // Ends the restored allocations whose grace has passed: a node never claimed is lost; an
  // allocation none of whose nodes was heard from is queued again without counting a restart.
  void ExpireRecoveriesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MonitorAgents() ABSL_LOCKS_EXCLUDED(mu_);
  void ExpireLostAgentsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time NowLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return options_.clock->Now(); }
  wire::TrialDescription TrialBodyLocked(const TrialRow& trial) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Log policies (master_log_policies.cc; what they found is policy_matches_).
  // Matching a batch of an allocation's log lines against its experiment's policies, in three
  // steps so that the lines are matched without mu_ and a post takes mu_ no more often than
  // its checks need: what the matching needs (under mu_, with the post's checks); the first
  // line matching each policy not yet matched in the run (without mu_); and recording those
  // matches (under mu_, after the lines are stored).
  struct LogPolicyContext {
    std::shared_ptr<const LogPolicyMatcher> matcher;
    std::set<std::string> seen;  // policies that matched in this run already
    wire::LogPolicyMatch base;   // allocation and agent
  };
  // `batch.node` must be a node of `a`.
  absl::StatusOr<LogPolicyContext> LogPolicyContextLocked(const Allocation& a,
                                                          const wire::LogBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::vector<wire::LogPolicyMatch> MatchLogPolicies(LogPolicyContext context,
                                                            const wire::LogBatch& batch);
  absl::Status RecordLogPolicyMatchesLocked(const wire::LogBatch& batch,
                                            std::vector<wire::LogPolicyMatch> found)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AllocationLogs' checks, under mu_; `policies` gets what the policies' matching needs.
  absl::Status CheckLogsLocked(const std::string& allocation, const wire::LogBatch& batch,
                               absl::StatusOr<LogPolicyContext>* policies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::unique_ptr<Database> db_;
  MasterOptions options_;
  Mutex mu_;
  // Held while SaveContext checks for and writes a context file: two identical uploads at once
  // would otherwise share its temporary file. Taken after mu_ when both are (never before).
  Mutex contexts_mu_;
  // Wakes the monitor thread (shutdown, directories to remove); it also checks every second.
  // Not the follows' gate: that one is notified on every log post, and each wake of the monitor
  // walks every agent and running allocation under mu_.
  CondVar monitor_cv_;
  ResourceEvents rm_events_{*this};
  // The agents' resource manager (its own lock, taken after mu_) and the seam the master uses
  // (rm/resource_manager.h): offers, starts, stops, releases, restores, lost nodes.
  AgentManager agents_;
  // MasterOptions::resource_manager's, when one was given.
  std::unique_ptr<rm::ResourceManager> own_rm_;
  // Set once by Create, before any thread of the master starts; read-only after.
  rm::ResourceManager* rm_ = &agents_;
  Allocations allocations_ ABSL_GUARDED_BY(mu_);
  // Components (their own state and locks, none taken under them; taken under mu_ only where
  // a request needs both: docs/design/0016-components-and-locks.md).
  users::Users users_;
  templates::Templates templates_;
  models::Registry models_;
  // Told each experiment state stored (MoveExperimentLocked); its deliverer thread sends.
  webhooks::Webhooks webhooks_;
  // The follows of logs and series (new lines or points: Notify, also under mu_).
  series::FollowGate follows_;
  series::Series series_;
  logs::TrialLogs trial_logs_;
  // Why queued trials wait, as the last pass found: each trial with a reason of its own, and
  // the pass's blocker, behind which every later queued trial waits (WaitingReasonLocked).
  std::map<int64_t, std::string> waiting_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Blocker> blockers_ ABSL_GUARDED_BY(mu_);  // per pool
  // Trials preempted and not yet running again -> why (shown with their waiting reason).
  std::map<int64_t, std::string> preempted_ ABSL_GUARDED_BY(mu_);
  // Allocations preempted and not yet exited -> when they are killed (preemption_timeout).
  std::map<std::string, absl::Time> preempt_deadlines_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, absl::Time> queued_since_
      ABSL_GUARDED_BY(mu_);                        // QUEUED trial -> when it was queued
  absl::Time started_;                             // when this master was made (its clock)
  std::atomic<int64_t> log_lines_stored_{0};       // ClusterStats::log_lines_stored
  std::atomic<int64_t> metric_reports_stored_{0};  // ClusterStats::metric_reports_stored
  PassTimes scheduling_;                           // the passes' durations
  PassTimes scheduling_lock_;                      // their longest holds of mu_
  TrialQueue queue_ ABSL_GUARDED_BY(mu_);  // QUEUED and RUNNING trials, mirrored from the database
  bool pass_pending_ ABSL_GUARDED_BY(mu_) =
      false;  // a scheduling pass was requested and has not started
  bool pass_running_ ABSL_GUARDED_BY(mu_) =
      false;  // a pass runs (on the scheduler thread or RunPendingPass)
  bool inline_pass_ ABSL_GUARDED_BY(mu_) =
      false;               // kInline: a pass runs on this stack (requests join its loop)
  CondVar pass_cv_;        // a pass is requested, or the master stops
  CondVar idle_cv_;        // a pass ended
  std::thread scheduler_;  // RunScheduler (kBackground)
  std::map<int64_t, ExperimentSearch> searchers_
      ABSL_GUARDED_BY(mu_);  // experiment -> its searcher (this run)
  std::map<int64_t, ConfigFacts> config_facts_
      ABSL_GUARDED_BY(mu_);  // experiment -> ConfigFactsLocked (cache)
  // Checkpoints the GC marked DELETED (DeleteCheckpointLocked), which the monitor thread deletes
  // from their storage without mu_ (a checkpoint may be gigabytes); what is left at the
  // destructor is deleted there, and what a crash left by the next start's sweep. Each is (the
  // storage, the storage id).
  using Doomed = std::vector<std::pair<std::shared_ptr<storage::CheckpointStorage>, std::string>>;
  Doomed doomed_checkpoints_ ABSL_GUARDED_BY(mu_);
  // Deletes `doomed` through their storage, without mu_; a failure is logged.
  void DeleteCheckpoints(const Doomed& doomed);
  // The only way to checkpoint files (storage/storage_roots.h); immutable.
  const storage::StorageRoots storage_roots_;
  // What the trials' log policies found (logs/policy_matches.h; its own lock, under mu_).
  logs::PolicyMatches policy_matches_;
  // A trial's checkpoints and their files (checkpoints/checkpoints.h), through storage_roots_.
  checkpoints::Checkpoints checkpoints_;
  // Running trial -> its agent's word on a rank that makes no progress (ReportBatch::stalled),
  // shown as why it waits (task list, describe); dropped when its allocation ends.
  std::map<int64_t, std::string> stalled_ ABSL_GUARDED_BY(mu_);
  // Records an agent's stall note for the trial ("" clears it), keeping a note that names the
  // stalled rank over one from a node that only waits for it.
  void NoteStallLocked(int64_t trial_id, const std::string& note)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread monitor_;
  std::unique_ptr<LogRetention> log_retention_;  // its thread runs from Create to the destructor
};

}  // namespace cohort::master
