#pragma once
// Database: everything the master must not lose, behind one interface (docs/architecture.md §7:
// SQLite by default, PostgreSQL later). The rows it keeps: experiments, trials, metrics (training
// and validation reports), checkpoints, logs (with each trial's log stats), templates, agents,
// running allocations, metric time series (series and their points), step profiles and timings,
// log policies' matches, users, and login tokens (by hash).
// Implementations are thread-safe: the master's HTTP handlers call them concurrently.
// Errors: NotFound for a missing row (naming it, e.g. "experiment 7 not found"),
// AlreadyExists for a duplicate key, Unavailable/Internal for storage failures (naming the
// database and the backend's error), DataLoss for a row this build cannot read (a state it does
// not know). States are stored by their wire names (wire/states.h). Nothing here knows about
// HTTP or scheduling.
//
// Backends: this header and open_database.h (which backend a URL names, and opening it) are what
// every backend shares, and hold no SQL. All SQL is a backend's own dialect and lives in its
// files: SQLite's in sqlite_*.cc (the schema in sqlite_migrations.cc) and internal/ (sqlite_*.h,
// wal_checkpointer.cc). What only one backend has (SQLite's write-ahead log) is reported
// through BackendMetrics, never as a method here.
//
// Example (tests; the master opens the one its --db names with OpenDatabase):
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, OpenSqliteDatabase("master.db"));
//   COHORT_ASSIGN_OR_RETURN(int64_t id, db->InsertExperiment(row));

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::master {

struct ExperimentRow {
  int64_t id = 0;  // assigned by InsertExperiment (1, 2, ...)
  std::string name;
  wire::ExperimentState state = wire::ExperimentState::kActive;
  std::string config_yaml;    // the effective config (template merged, defaults filled)
  std::string original_yaml;  // as submitted
  std::string template_name;  // empty: none
  std::string context_path;   // where the master keeps the uploaded tar.gz
  int slots_per_trial = 1;
  int priority = 42;
  int max_restarts = 5;
  int64_t created_ms = 0;  // Unix milliseconds
  std::string owner;       // the user who created it; empty: created before users existed
  int64_t ended_ms = 0;    // when it reached a final state (Unix milliseconds); 0: not yet
  bool archived = false;   // hidden from lists (Determined's archive); only an ended one
  // How the scheduler shares the cluster with it (docs/design/0020-sharing-a-cluster.md):
  double weight = 1.0;                 // resources.weight (fair share)
  int max_slots = 0;                   // resources.max_slots; 0: no cap
  std::string resource_pool = "default";  // resources.resource_pool
  // Its place in the job queue within its priority (lower first); `cohort job update
  // --ahead-of` puts it between two others. 0 when inserted: InsertExperiment sets its id.
  double queue_position = 0;
};

// What `cohort experiment set` and `cohort job update` change (SetExperimentScheduling).
struct ExperimentScheduling {
  int priority = 42;
  double weight = 1.0;
  int max_slots = 0;
  double queue_position = 0;
};

// What a trial's report changes of its row (OutputRows::trial); an absent field is left as
// it is. These four fields are the reports' own: UpdateTrial leaves them alone.
struct TrialReportFields {
  std::optional<std::string> latest_checkpoint;
  std::optional<double> searcher_metric;
  std::optional<std::pair<int64_t, int64_t>> batches;  // (batches, total_batches)
};

struct TrialRow {
  int64_t id = 0;  // assigned by InsertTrial (1, 2, ... across experiments)
  int64_t experiment_id = 0;
  std::string hparams_json = "{}";
  int64_t seed = 0;
  wire::TrialState state = wire::TrialState::kQueued;
  int restarts = 0;
  int64_t batches = 0;        // progress: done
  int64_t total_batches = 0;  // progress: total (0: unknown)
  std::optional<double> searcher_metric;
  std::string latest_checkpoint;  // storage id; empty: none
  std::string error_lines;        // the failing rank's last output lines, when ERROR
  int64_t sequence = 0;           // queue order (FIFO within a priority)
  // Killed while RUNNING (Master::KillTrial): CANCELED when its run ends, also when the master
  // restarts before that (a restored allocation of this trial is a kill).
  bool kill_requested = false;
};

struct MetricRow {
  int64_t trial_id = 0;
  std::string kind;  // training, validation
  int64_t steps_completed = 0;
  std::string metrics_json;  // the metrics object as JSON text
  double time = 0;           // Unix seconds, as the trial reported it
  int64_t id = 0;            // assigned by InsertMetrics, increasing (read back, not written)
};

struct CheckpointRow {
  std::string storage_id;  // primary key
  int64_t trial_id = 0;
  int64_t steps_completed = 0;
  std::string path;
  std::string metadata_json = "{}";
  wire::CheckpointState state = wire::CheckpointState::kActive;
};

// An ACTIVE checkpoint with what the GC weighs it by: the metrics of its trial's validation
// at the checkpoint's batch (the last one there), absent when that batch had none.
struct GcCheckpointRow {
  CheckpointRow checkpoint;
  std::optional<std::string> validation_metrics_json;
};

struct LogRow {
  int64_t seq = 0;  // assigned by AppendLogs, increasing per database
  int64_t trial_id = 0;
  int rank = -1;  // -1: not a worker line (the launcher, the agent)
  std::string line;
  int64_t time_ms = 0;  // when AppendLogs stored it (unix ms); 0: stored before lines had times
};

// How much of a trial's log is stored (kept by AppendLogs and DropLogLines, so reading it never
// counts lines): what the master's log retention decides from.
struct LogStatsRow {
  int64_t trial_id = 0;
  int64_t lines = 0;    // lines stored, the drop marker not counted
  int64_t bytes = 0;    // the bytes of their text
  int64_t dropped = 0;  // lines DropLogLines has dropped from this trial so far
};

struct TemplateRow {
  std::string name;
  std::string yaml;
};

// A model of the registry (docs/design/0023): a name for what a team ships, and its versions.
struct ModelRow {
  int64_t id = 0;     // assigned by InsertModel
  std::string name;   // unique
  std::string description;
  std::string labels_json = "[]";    // a JSON array of strings
  std::string metadata_json = "{}";  // a JSON object
  std::string owner;  // the user who created it
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  int64_t last_version = 0;  // the highest version number given (numbers are never reused)
  int64_t num_versions = 0;  // read only: the versions it has now (GetModel, ListModels)
};

// One version of a model: a checkpoint, numbered 1, 2, ... per model.
struct ModelVersionRow {
  int64_t id = 0;        // assigned by InsertModelVersion
  int64_t model_id = 0;
  int64_t version = 0;   // assigned by InsertModelVersion
  std::string checkpoint_id;  // a checkpoint's storage id
  std::string name;
  std::string comment;
  std::string notes;
  std::string labels_json = "[]";
  std::string metadata_json = "{}";
  std::string registered_by;
  int64_t created_ms = 0;
};

// A webhook (docs/design/0023; master/webhooks/): where to POST which events.
struct WebhookRow {
  int64_t id = 0;  // assigned by InsertWebhook
  std::string url;
  std::string type;  // "DEFAULT" or "SLACK"
  std::string triggers_json = "[]";  // a JSON array of the webhook's triggers
  std::string template_text;         // the message's template; empty: the default wording
  std::string secret;                // signs each delivery; never shown after its creation
  bool allow_local = false;          // may target loopback and link-local addresses
  std::string created_by;
  int64_t created_ms = 0;
};

// One event's POST to one webhook, queued until DELIVERED or FAILED.
struct DeliveryRow {
  int64_t id = 0;  // assigned by InsertDeliveries; the receiver's deduplication key
  int64_t webhook_id = 0;
  std::string event;  // the trigger's type, e.g. "EXPERIMENT_STATE_CHANGE", or "TEST"
  std::string body;   // what is POSTed
  std::string state = "PENDING";  // PENDING, DELIVERED or FAILED
  int64_t attempts = 0;
  int64_t next_attempt_ms = 0;  // a PENDING one is due from then
  std::string last_error;       // the last attempt's failure; empty after a success
  int64_t created_ms = 0;
  int64_t finished_ms = 0;  // when it was DELIVERED or FAILED; 0 while PENDING
  // Empty: none. Otherwise at most one delivery per (webhook, key) is ever queued
  // (InsertDeliveries skips the others): "TASK_LOG:<trial>:<trigger>" fires once per trial.
  std::string once_key;
};

// A person who may log in. Names are unique; a user is never deleted (experiments name their
// owner), only deactivated.
struct UserRow {
  int64_t id = 0;  // assigned by InsertUser
  std::string name;
  std::string password_hash;  // Argon2id in libsodium's crypto_pwhash_str format
  bool admin = false;
  bool active = true;
  int64_t created_ms = 0;
};

// A login token, by the hash of its text: the token itself is never stored.
struct TokenRow {
  std::string hash;  // hex SHA-256 of the token
  int64_t user_id = 0;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // Unix milliseconds; the token is refused from then on
};

// One point of a metric time series (docs/observability.md): the series is (trial, name,
// label), e.g. ("validation/accuracy", "") or ("gpu_util", "agent-1/GPU-3c9a...").
struct PointRow {
  std::string name;
  std::string label;
  int64_t batch = 0;
  double time = 0;   // Unix seconds
  double value = 0;  // finite
  int64_t id = 0;    // assigned by InsertPoints, increasing (read back, not written)
};

// One allocation's output from an agent's combined post, as rows (Database::WriteOutputs):
// its log lines, then its report's checkpoints, metrics, time-series points and the fields it
// changes of its trial's row.
struct OutputRows {
  int64_t trial_id = 0;
  std::vector<std::pair<int, std::string>> lines;  // (rank, line); none: no logs part
  bool reports = false;                            // whether it has a reports part
  std::vector<CheckpointRow> checkpoints;          // one stored already is not an error
  std::vector<MetricRow> metrics;
  std::vector<PointRow> points;
  TrialReportFields trial;  // written with the reports part (nothing given: only read)
};
// What WriteOutputs did with one item: each part OK (or absent), or why not.
struct OutputRowsWritten {
  absl::Status logs;
  absl::Status reports;           // not attempted (and not OK) when the logs failed
  int64_t last_seq = 0;           // of the item's last line stored
  std::optional<TrialRow> trial;  // the trial's row after its report (when `reports` is OK)
};

// A trial's series and the extent of its points.
struct SeriesRow {
  std::string name;
  std::string label;
  int64_t points = 0;
  int64_t first_batch = 0;
  int64_t last_batch = 0;
  double last_time = 0;
  double last_value = 0;  // of the point with the last batch
  double min_value = 0, max_value = 0, mean_value = 0;
};

// Which points of one series to read. Ranges are inclusive; absent bounds are open.
struct PointQuery {
  int64_t trial_id = 0;
  std::string name;
  std::string label;
  std::optional<int64_t> min_batch, max_batch;
  std::optional<double> min_time, max_time;
  int64_t after_id = 0;  // only points stored after this one (following)
  // At most this many points (>= 4): past it the range is cut into buckets and each keeps its
  // first, last, lowest and highest points, so extremes stay visible.
  int max_points = 1000;
};

// One rank's profiled batch, kept for the trace timeline: its wire::StepProfileRecord as JSON.
struct StepProfileRow {
  int rank = 0;
  int64_t batch = 0;
  double time = 0;  // unix seconds of the batch's start
  std::string record_json;
};

// One rank's totals of one phase over its profiled batches (microseconds).
struct StepTimingRow {
  int rank = 0;
  std::string phase;
  int64_t count = 0;
  int64_t total_us = 0, min_us = 0, max_us = 0;
};

// What the scheduler needs of a trial: ScheduleLocked reads every queued and running trial on
// each pass, so it reads these four columns only.
struct TrialScheduleRow {
  int64_t id = 0;
  int64_t experiment_id = 0;
  wire::TrialState state = wire::TrialState::kQueued;
  int64_t sequence = 0;
};

struct AgentRow {
  std::string id;
  int slots = 0;
  std::string host;
  bool enabled = true;
};

// A running allocation, kept so a restarted master can re-adopt it (the live part, who exited
// and who asked it to stop, is the master's memory only).
struct AllocationRow {
  std::string id;  // "<trial>.<boot>.<n>"
  int64_t trial_id = 0;
  std::string token_hash;                          // users::TokenHash of its credential
  std::vector<std::pair<std::string, int>> nodes;  // (agent, slots) in node order
  int64_t created_ms = 0;
};

// A number a backend reports about its own storage, beyond what every backend has (SizeBytes):
// e.g. SQLite's checkpoints of its write-ahead log. The master's GET /metrics shows each as the
// Prometheus metric "cohort_database_" + name. Entries with the same name are one metric told
// apart by their labels, and have the same kind and help.
struct BackendMetric {
  enum class Kind {
    kGauge,    // a value now
    kCounter,  // a count since the database was opened (only grows)
  };
  std::string name;  // lower case and '_', e.g. "wal_checkpoints_total" (a counter's: *_total)
  std::string help;  // one sentence, for the metric's HELP line
  Kind kind = Kind::kGauge;
  std::vector<std::pair<std::string, std::string>> labels;  // (name, value), e.g. {"by", "writer"}
  double value = 0;
};

class Database {
 public:
  virtual ~Database() = default;

  virtual absl::StatusOr<int64_t> InsertExperiment(const ExperimentRow& row) = 0;
  // Sets the state and queues `deliveries` (the webhooks' POSTs of that change, as
  // InsertDeliveries does) in one transaction: both or neither. NotFound; for DELETING,
  // FailedPrecondition naming the model versions that hold any of its checkpoints (checked with
  // its row locked: a registration racing it is seen or refused).
  virtual absl::Status SetExperimentState(int64_t id, wire::ExperimentState state,
                                          const std::vector<DeliveryRow>& deliveries) = 0;
  virtual absl::Status SetExperimentEnded(int64_t id, int64_t ended_ms) = 0;  // NotFound
  virtual absl::Status SetExperimentArchived(int64_t id, bool archived) = 0;  // NotFound
  // Its name and effective config (`experiment set`: name, description, labels); NotFound.
  virtual absl::Status SetExperimentMetadata(int64_t id, const std::string& name,
                                             const std::string& config_yaml) = 0;
  virtual absl::Status SetExperimentScheduling(int64_t id,
                                               const ExperimentScheduling& scheduling) = 0;  // NotFound
  // `cohort experiment continue`, in one transaction: the experiment's name, config_yaml,
  // slots_per_trial, max_restarts and state as `experiment` has them, its ended_ms 0; each of
  // `trials` as UpdateTrial writes it, and its total_batches; `deliveries` queued as
  // SetExperimentState's. NotFound, and nothing written, when the experiment or one of the
  // trials (of that experiment) is missing.
  virtual absl::Status ReopenExperiment(const ExperimentRow& experiment,
                                        const std::vector<TrialRow>& trials,
                                        const std::vector<DeliveryRow>& deliveries) = 0;
  virtual absl::StatusOr<ExperimentRow> GetExperiment(int64_t id) = 0;
  virtual absl::StatusOr<std::vector<ExperimentRow>> ListExperiments() = 0;  // by id
  // How many experiments other than `except` name `context_path` (an index finds them: a
  // deletion asks this under the master's lock).
  virtual absl::StatusOr<int64_t> CountExperimentsNamingContext(const std::string& context_path,
                                                                int64_t except) = 0;
  // Deletes up to about `limit` rows of the experiment's data in one transaction, its trials'
  // largest tables first (logs, series points, metrics, ...), and once nothing else of it is
  // left its trials and the experiment itself. Returns the rows deleted: call it until it
  // returns 0 (then GetExperiment is NotFound); a row written meanwhile (a log marker) is
  // found by the next call. OK and 0 for an experiment that does not exist.
  // InvalidArgument for a limit below 1.
  virtual absl::StatusOr<int64_t> DeleteExperimentRows(int64_t id, int64_t limit) = 0;

  virtual absl::StatusOr<int64_t> InsertTrial(const TrialRow& row) = 0;
  // Writes the master's fields: every one but id, experiment_id and the four a report owns
  // (TrialReportFields: batches, total_batches, searcher_metric, latest_checkpoint), which
  // only WriteOutputs changes after InsertTrial. A report is stored without the master's lock,
  // so a row the master read before it must not write its old progress back.
  virtual absl::Status UpdateTrial(const TrialRow& row) = 0;
  virtual absl::StatusOr<TrialRow> GetTrial(int64_t id) = 0;
  // The trials of `ids` that exist, by id (a scheduling pass's starts: one query, not one each).
  virtual absl::StatusOr<std::vector<TrialRow>> GetTrials(const std::vector<int64_t>& ids) = 0;
  // The trials a scheduling pass started, each (trial, the master's line): every one RUNNING
  // and its line appended (as AppendMasterLines), in one transaction; nothing written, and
  // NotFound naming them, when some do not exist.
  virtual absl::Status MarkTrialsRunning(
      const std::vector<std::pair<int64_t, std::string>>& trial_and_line) = 0;
  // All trials (by id), or those of one experiment.
  virtual absl::StatusOr<std::vector<TrialRow>> ListTrials(
      std::optional<int64_t> experiment_id) = 0;
  // The trials in any of `states` (by id), across experiments: what the scheduler needs
  // without reading the whole history.
  virtual absl::StatusOr<std::vector<TrialRow>> ListTrialsInStates(
      const std::vector<wire::TrialState>& states) = 0;
  // The QUEUED and RUNNING trials (by id), as the scheduler needs them.
  virtual absl::StatusOr<std::vector<TrialScheduleRow>> ListTrialsToSchedule() = 0;
  // How many trials are in each state, across experiments (a state no trial is in is absent).
  virtual absl::StatusOr<std::map<wire::TrialState, int64_t>> CountTrialsByState() = 0;

  virtual absl::Status InsertMetrics(const std::vector<MetricRow>& rows) = 0;  // one transaction
  virtual absl::StatusOr<std::vector<MetricRow>> ListMetrics(
      int64_t trial_id, std::optional<std::string> kind) = 0;  // by insertion order
  // At most `limit` rows of ListMetrics with id > after_id (InvalidArgument for limit < 0).
  virtual absl::StatusOr<std::vector<MetricRow>> ListMetricsPage(int64_t trial_id,
                                                                 std::optional<std::string> kind,
                                                                 int64_t after_id, int limit) = 0;

  // AlreadyExists for a storage id seen before.
  virtual absl::Status InsertCheckpoint(const CheckpointRow& row) = 0;
  virtual absl::StatusOr<std::vector<CheckpointRow>> ListCheckpoints(int64_t trial_id) = 0;
  // The ACTIVE checkpoints of an experiment's trials (by trial, then batch), each with its
  // validation metrics: one indexed query, so its cost follows the checkpoints kept, not the
  // trials or their metrics (the GC runs it whenever a trial ends).
  virtual absl::StatusOr<std::vector<GcCheckpointRow>> ListActiveCheckpoints(
      int64_t experiment_id) = 0;
  // NotFound naming `storage_id` when no checkpoint has it.
  virtual absl::StatusOr<CheckpointRow> GetCheckpoint(const std::string& storage_id) = 0;
  // Marks it DELETED (the GC removes its files next); NotFound when no checkpoint has it;
  // FailedPrecondition naming the model versions that hold it ("checkpoint C is version 3 of
  // model 'resnet'"), checked with its experiment's row locked, as a registration checks.
  virtual absl::Status MarkCheckpointDeleted(const std::string& storage_id) = 0;

  // Appends lines in one transaction, each with the time now (LogRow::time_ms); returns the seq
  // of the last one (0 when `lines` is empty).
  virtual absl::StatusOr<int64_t> AppendLogs(
      int64_t trial_id, const std::vector<std::pair<int, std::string>>& rank_and_line) = 0;
  // The master's own lines (rank -1) for several trials, each (trial, line), in one
  // transaction, in order; nothing written when one trial does not exist (NotFound).
  virtual absl::Status AppendMasterLines(
      const std::vector<std::pair<int64_t, std::string>>& trial_and_line) = 0;
  // Lines of a trial with seq > after_seq (of one rank when given), oldest first, at most limit.
  virtual absl::StatusOr<std::vector<LogRow>> ListLogs(int64_t trial_id, int64_t after_seq,
                                                       std::optional<int> rank, int limit) = 0;
  // The newest `limit` lines of a trial (of one rank when given), oldest first, read from the
  // end (however many the trial has).
  virtual absl::StatusOr<std::vector<LogRow>> ListLastLogs(int64_t trial_id, int limit,
                                                           std::optional<int> rank) = 0;
  // Every trial that has had log lines, by id (one row per trial: cheap however long the logs).
  virtual absl::StatusOr<std::vector<LogStatsRow>> ListLogStats() = 0;
  // Drops up to `count` of the trial's lines, oldest first, after its first `keep_first`
  // lines, in one transaction (a range of seqs, not line by line); returns how many it dropped
  // (0 when there is nothing past keep_first, or the trial has no lines).
  // The first drop puts one marker line (rank -1) in the place of the first line dropped, and
  // each drop rewrites it: "[cohort-master: N lines dropped here; <reason>]", N the trial's
  // total. Later drops with keep_first > 0 continue right after the marker (the kept beginning
  // is fixed by the first drop); keep_first 0 drops the oldest lines wherever they are. The
  // marker itself is never dropped, nor counted in LogStatsRow::lines.
  // InvalidArgument for a negative keep_first or count.
  virtual absl::StatusOr<int64_t> DropLogLines(int64_t trial_id, int64_t keep_first, int64_t count,
                                               const std::string& reason) = 0;

  // The model registry (models::Registry). InsertModel: AlreadyExists when the name is taken
  // (its id, created_ms, updated_ms and last_version as given: 0 for a new one).
  virtual absl::StatusOr<int64_t> InsertModel(const ModelRow& row) = 0;
  virtual absl::StatusOr<ModelRow> GetModel(const std::string& name) = 0;  // NotFound
  virtual absl::StatusOr<std::vector<ModelRow>> ListModels() = 0;          // by name
  // Writes name, description, labels, metadata and updated_ms; NotFound, AlreadyExists.
  virtual absl::Status UpdateModel(const ModelRow& row) = 0;
  // The model and its versions, in one transaction; NotFound.
  virtual absl::Status DeleteModel(int64_t id) = 0;
  // Stores a version numbered after the model's last one (1 for its first; a deleted
  // version's number is not given again) and returns the row stored. NotFound naming the model
  // or the checkpoint; FailedPrecondition when the checkpoint is not ACTIVE or its experiment is
  // DELETING (checked with the experiment's row locked, in the insert's transaction).
  virtual absl::StatusOr<ModelVersionRow> InsertModelVersion(const ModelVersionRow& row) = 0;
  virtual absl::StatusOr<std::vector<ModelVersionRow>> ListModelVersions(
      int64_t model_id) = 0;  // by version
  virtual absl::Status DeleteModelVersion(int64_t model_id, int64_t version) = 0;  // NotFound
  // The versions that name any of these checkpoints (the GC and deletion keep those), by id.
  virtual absl::StatusOr<std::vector<ModelVersionRow>> ListVersionsOfCheckpoints(
      const std::vector<std::string>& checkpoint_ids) = 0;

  // Webhooks and their deliveries (webhooks::Webhooks, webhooks::Deliverer).
  virtual absl::StatusOr<int64_t> InsertWebhook(const WebhookRow& row) = 0;
  virtual absl::StatusOr<std::vector<WebhookRow>> ListWebhooks() = 0;  // by id
  // The webhook and its deliveries, in one transaction; NotFound.
  virtual absl::Status DeleteWebhook(int64_t id) = 0;
  // Queues `rows` (their ids ignored) in one transaction, but not a row whose once_key its
  // webhook already has; NotFound when a webhook is gone.
  virtual absl::Status InsertDeliveries(const std::vector<DeliveryRow>& rows) = 0;
  // At most `limit` PENDING deliveries due at `now_ms`, each its webhook's oldest PENDING one
  // (a webhook's deliveries go in order), by id.
  virtual absl::StatusOr<std::vector<DeliveryRow>> ListDueDeliveries(int64_t now_ms,
                                                                     int limit) = 0;
  // Writes an attempt's outcome: state, attempts, next_attempt_ms, last_error, finished_ms.
  virtual absl::Status UpdateDelivery(const DeliveryRow& row) = 0;  // NotFound
  // A webhook's latest `limit` deliveries, newest first.
  virtual absl::StatusOr<std::vector<DeliveryRow>> ListDeliveries(int64_t webhook_id,
                                                                  int limit) = 0;

  virtual absl::Status PutTemplate(const TemplateRow& row) = 0;  // insert or replace
  virtual absl::StatusOr<TemplateRow> GetTemplate(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<TemplateRow>> ListTemplates() = 0;  // by name
  virtual absl::Status DeleteTemplate(const std::string& name) = 0;      // NotFound if absent

  virtual absl::Status UpsertAgent(const AgentRow& row) = 0;  // keeps `enabled` of a known id
  virtual absl::Status SetAgentEnabled(const std::string& id, bool enabled) = 0;  // NotFound
  virtual absl::StatusOr<std::vector<AgentRow>> ListAgents() = 0;                 // by id

  // Allocations that run: inserted when one starts, deleted when it ends (OK when already gone).
  virtual absl::Status InsertAllocation(const AllocationRow& row) = 0;  // AlreadyExists
  // Several at once (a scheduling pass's starts), all or nothing; AlreadyExists when one is.
  virtual absl::Status InsertAllocations(const std::vector<AllocationRow>& rows) = 0;
  virtual absl::Status DeleteAllocation(const std::string& id) = 0;
  virtual absl::StatusOr<std::vector<AllocationRow>> ListAllocations() = 0;  // by id

  // Time series. InsertPoints: one transaction, series created as needed; NotFound (and
  // nothing written) when the trial does not exist. QueryPoints: by batch, then id.
  virtual absl::Status InsertPoints(int64_t trial_id, const std::vector<PointRow>& points) = 0;
  // A report's metrics and their points in one transaction (one commit instead of two): all or
  // nothing; NotFound when the trial does not exist.
  virtual absl::Status InsertMetricsAndPoints(int64_t trial_id,
                                              const std::vector<MetricRow>& metrics,
                                              const std::vector<PointRow>& points) = 0;
  // Several allocations' output in one transaction (one commit for an agent's whole post; a
  // post of more than a few thousand rows is cut between items into a few, so that no
  // transaction holds the database long): each item's logs, then its reports, all-or-nothing
  // on their own, so one part's failure (its trial gone: NotFound) leaves every other part
  // stored. A failure of a transaction itself (the disk) is the error of its items' parts.
  // A reports part writes its trial's report fields (OutputRows::trial, only those given) in
  // the same transaction and returns the row as it is after.
  virtual std::vector<OutputRowsWritten> WriteOutputs(const std::vector<OutputRows>& items) = 0;
  virtual absl::StatusOr<std::vector<SeriesRow>> ListSeries(int64_t trial_id) = 0;  // by name
  virtual absl::StatusOr<std::vector<PointRow>> QueryPoints(const PointQuery& query) = 0;

  // The profiler's step timelines. InsertStepProfiles: in one transaction, `rows` are stored
  // and `timings` added to the trial's totals (count and total summed, min and max kept);
  // NotFound (and nothing written) when the trial does not exist. ListStepProfiles: batches in
  // [min_batch, max_batch], by batch then rank, at most `limit` rows. ListRankStepProfiles: one
  // rank's batches that are multiples of `stride` (>= 1; an even sample), by batch, at most
  // `limit`; InvalidArgument for a stride < 1 or a limit < 0.
  virtual absl::Status InsertStepProfiles(int64_t trial_id, const std::vector<StepProfileRow>& rows,
                                          const std::vector<StepTimingRow>& timings) = 0;
  virtual absl::StatusOr<int64_t> CountStepProfiles(int64_t trial_id) = 0;
  virtual absl::StatusOr<std::vector<StepProfileRow>> ListStepProfiles(int64_t trial_id,
                                                                       int64_t min_batch,
                                                                       int64_t max_batch,
                                                                       int limit) = 0;
  virtual absl::StatusOr<std::vector<StepProfileRow>> ListRankStepProfiles(int64_t trial_id,
                                                                           int rank, int64_t stride,
                                                                           int limit) = 0;
  virtual absl::StatusOr<std::vector<StepTimingRow>> ListStepTimings(
      int64_t trial_id) = 0;  // by rank, then phase

  // Users. InsertUser: AlreadyExists for a name taken. GetUser*: NotFound naming the user.
  virtual absl::StatusOr<int64_t> InsertUser(const UserRow& row) = 0;
  virtual absl::StatusOr<UserRow> GetUser(int64_t id) = 0;
  virtual absl::StatusOr<UserRow> GetUserByName(const std::string& name) = 0;
  virtual absl::StatusOr<std::vector<UserRow>> ListUsers() = 0;  // by id
  // Writes password_hash, admin and active of the user `row.id`; NotFound when it is missing.
  virtual absl::Status UpdateUser(const UserRow& row) = 0;

  // Tokens. GetToken: NotFound when no token has that hash (never issued, revoked or purged).
  virtual absl::Status InsertToken(const TokenRow& row) = 0;
  virtual absl::StatusOr<TokenRow> GetToken(const std::string& hash) = 0;
  virtual absl::Status DeleteToken(const std::string& hash) = 0;  // OK when already gone
  virtual absl::Status DeleteUserTokens(int64_t user_id) = 0;
  // Drops the tokens that expired before `now_ms`; returns how many.
  virtual absl::StatusOr<int64_t> DeleteExpiredTokens(int64_t now_ms) = 0;

  // Log policies' matches: one per (trial, allocation, policy); a second is ignored (OK).
  // NotFound when the trial does not exist.
  virtual absl::Status InsertLogPolicyMatch(int64_t trial_id, const wire::LogPolicyMatch& m) = 0;
  // Every trial's matches, by trial, each trial's in the order they were inserted.
  virtual absl::StatusOr<std::vector<std::pair<int64_t, wire::LogPolicyMatch>>>
  ListLogPolicyMatches() = 0;

  // The bytes the stored data takes (for monitoring; see the implementation for what counts).
  virtual absl::StatusOr<int64_t> SizeBytes() = 0;
  // What this backend reports about its own storage for monitoring (BackendMetric). Cheap (no
  // query) and the same entries on every call, zeros included, so that no metric comes and goes.
  virtual std::vector<BackendMetric> BackendMetrics() = 0;
};

// Opens (creating if needed) the SQLite database at `path` and applies the forward-only
// migrations it has not seen (a `schema_version` table records them). ":memory:" for tests.
// A file written by a newer Cohort (a schema version this build does not know) is
// FailedPrecondition saying so; so is a file that is not SQLite or another program's
// database; a damaged file is DataLoss (SqliteDatabase::Open says more, and takes options).
absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path);

}  // namespace cohort::master
