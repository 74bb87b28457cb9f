#include "master/db/sqlite_migrations.h"

namespace cohort::master::internal {
namespace {

// Version 1: every table of database.h. Ids that the API hands out (experiments, trials, log
// seqs) are AUTOINCREMENT so a number is never reused; metrics keep their insertion order in
// the rowid. Every column but trials.searcher_metric (NULL: not reported yet) is NOT NULL, so
// a row read back always has every field.
constexpr absl::string_view kVersion1 = R"sql(
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  config_yaml TEXT NOT NULL,
  original_yaml TEXT NOT NULL,
  template_name TEXT NOT NULL,
  context_path TEXT NOT NULL,
  slots_per_trial INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  max_restarts INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);

CREATE TABLE trials (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  hparams_json TEXT NOT NULL,
  seed INTEGER NOT NULL,
  state TEXT NOT NULL,
  restarts INTEGER NOT NULL,
  batches INTEGER NOT NULL,
  total_batches INTEGER NOT NULL,
  searcher_metric REAL,
  latest_checkpoint TEXT NOT NULL,
  error_lines TEXT NOT NULL,
  sequence INTEGER NOT NULL
);
CREATE INDEX trials_by_experiment ON trials(experiment_id);

CREATE TABLE metrics (
  id INTEGER PRIMARY KEY,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  kind TEXT NOT NULL,
  steps_completed INTEGER NOT NULL,
  metrics_json TEXT NOT NULL,
  time REAL NOT NULL
);
CREATE INDEX metrics_by_trial ON metrics(trial_id);

CREATE TABLE checkpoints (
  storage_id TEXT PRIMARY KEY NOT NULL,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  steps_completed INTEGER NOT NULL,
  path TEXT NOT NULL,
  metadata_json TEXT NOT NULL
);
CREATE INDEX checkpoints_by_trial ON checkpoints(trial_id);

CREATE TABLE logs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  rank INTEGER NOT NULL,
  line TEXT NOT NULL
);
CREATE INDEX logs_by_trial ON logs(trial_id, seq);

CREATE TABLE templates (
  name TEXT PRIMARY KEY NOT NULL,
  yaml TEXT NOT NULL
);

CREATE TABLE agents (
  id TEXT PRIMARY KEY NOT NULL,
  slots INTEGER NOT NULL,
  host TEXT NOT NULL,
  enabled INTEGER NOT NULL
);
)sql";

// Version 2: the scheduler lists queued and running trials on every pass.
constexpr absl::string_view kVersion2 = R"sql(
CREATE INDEX trials_by_state ON trials(state);
)sql";

// Version 3: users and their login tokens (docs/security.md); experiments record their owner
// (empty for those created before users existed: only admins may change them).
constexpr absl::string_view kVersion3 = R"sql(
CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  admin INTEGER NOT NULL,
  active INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);

CREATE TABLE tokens (
  hash TEXT PRIMARY KEY NOT NULL,
  user_id INTEGER NOT NULL REFERENCES users(id),
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX tokens_by_user ON tokens(user_id);

ALTER TABLE experiments ADD COLUMN owner TEXT NOT NULL DEFAULT '';
)sql";

// Version 4: metric time series (docs/observability.md): a series is one (trial, name, label);
// its points are (batch, time, value). Points are read by series and batch range, so the
// index on (series_id, batch, time, value) serves every query from the index alone (it covers
// the columns read), without touching other series or the table.
constexpr absl::string_view kVersion4 = R"sql(
CREATE TABLE series (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  name TEXT NOT NULL,
  label TEXT NOT NULL,
  UNIQUE (trial_id, name, label)
);

CREATE TABLE series_points (
  id INTEGER PRIMARY KEY,
  series_id INTEGER NOT NULL REFERENCES series(id),
  batch INTEGER NOT NULL,
  time REAL NOT NULL,
  value REAL NOT NULL
);
CREATE INDEX series_points_by_batch ON series_points(series_id, batch, time, value);
)sql";

// Version 5: the profiler's step timelines (docs/observability.md): one row per rank and
// profiled batch (its wire::StepProfileRecord as JSON), read by batch range for the trace; and
// each rank's running totals per phase, so its timings are read without the timelines.
constexpr absl::string_view kVersion5 = R"sql(
CREATE TABLE step_profiles (
  id INTEGER PRIMARY KEY,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  rank INTEGER NOT NULL,
  batch INTEGER NOT NULL,
  time REAL NOT NULL,
  record_json TEXT NOT NULL
);
CREATE INDEX step_profiles_by_batch ON step_profiles(trial_id, batch, rank);

CREATE TABLE step_timings (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  rank INTEGER NOT NULL,
  phase TEXT NOT NULL,
  count INTEGER NOT NULL,
  total_us INTEGER NOT NULL,
  min_us INTEGER NOT NULL,
  max_us INTEGER NOT NULL,
  PRIMARY KEY (trial_id, rank, phase)
);
)sql";

// Version 6: checkpoints the GC deleted keep their record, marked (wire::CheckpointState).
constexpr absl::string_view kVersion6 = R"sql(
ALTER TABLE checkpoints ADD COLUMN state TEXT NOT NULL DEFAULT 'ACTIVE';
)sql";

// Version 7: when an experiment reached its final state (0: not yet, or before version 7).
constexpr absl::string_view kVersion7 = R"sql(
ALTER TABLE experiments ADD COLUMN ended_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 8: the allocations running when the master stops, so a restarted master can re-adopt
// them (docs/design/0011-master-restart-readoption.md). A row lives from the allocation's start to
// its end; `nodes_json` is [[agent, slots], ...] in node order; the token is kept as its SHA-256
// (users/password.h TokenHash), never in clear.
constexpr absl::string_view kVersion8 = R"sql(
CREATE TABLE allocations (
  id TEXT PRIMARY KEY NOT NULL,
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  token_hash TEXT NOT NULL,
  nodes_json TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
)sql";

// Version 9: log policies' matches (master/experiments/log_policies.h): the first line of each
// run that matched each policy; what `exclude_node` keeps trials off and describe shows.
constexpr absl::string_view kVersion9 = R"sql(
CREATE TABLE log_policy_matches (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  allocation TEXT NOT NULL,
  policy TEXT NOT NULL,
  action TEXT NOT NULL,
  agent TEXT NOT NULL,
  rank INTEGER NOT NULL,
  line TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  PRIMARY KEY (trial_id, allocation, policy)
);
)sql";

// Version 10: each trial's stored log lines, their text bytes, how many were dropped and the
// seq of the line that says so (0: none), for log retention (database.h: DropLogLines). Kept
// by the transactions that append and drop lines; filled here from the logs already stored.
constexpr absl::string_view kVersion10 = R"sql(
CREATE TABLE log_stats (
  trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
  lines INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  dropped INTEGER NOT NULL,
  marker_seq INTEGER NOT NULL
);
INSERT INTO log_stats (trial_id, lines, bytes, dropped, marker_seq)
  SELECT trial_id, COUNT(*), SUM(LENGTH(CAST(line AS BLOB))), 0, 0 FROM logs GROUP BY trial_id;
)sql";

// Version 11: a trial's validation metrics at a batch found by index, for the checkpoint GC
// (database.h: ListActiveCheckpoints), which runs whenever a trial ends.
constexpr absl::string_view kVersion11 = R"sql(
CREATE INDEX metrics_by_trial_kind_batch ON metrics(trial_id, kind, steps_completed);
)sql";

// Version 12: a trial killed while it ran (database.h: TrialRow::kill_requested).
constexpr absl::string_view kVersion12 = R"sql(
ALTER TABLE trials ADD COLUMN kill_requested INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 13: archived experiments (database.h: ExperimentRow::archived), hidden from lists.
constexpr absl::string_view kVersion13 = R"sql(
ALTER TABLE experiments ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 14: when each log line was stored (database.h: LogRow::time_ms); 0 for older lines.
constexpr absl::string_view kVersion14 = R"sql(
ALTER TABLE logs ADD COLUMN time_ms INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 15: how the scheduler shares the cluster with an experiment (database.h:
// ExperimentRow::weight, max_slots, resource_pool, queue_position); older ones keep their id as
// their place in the queue.
constexpr absl::string_view kVersion15 = R"sql(
ALTER TABLE experiments ADD COLUMN weight REAL NOT NULL DEFAULT 1;
ALTER TABLE experiments ADD COLUMN max_slots INTEGER NOT NULL DEFAULT 0;
ALTER TABLE experiments ADD COLUMN resource_pool TEXT NOT NULL DEFAULT 'default';
ALTER TABLE experiments ADD COLUMN queue_position REAL NOT NULL DEFAULT 0;
UPDATE experiments SET queue_position = id;
)sql";

// Version 16: the model registry (database.h: ModelRow, ModelVersionRow; docs/design/0023).
// A version's number is per model; a version names a checkpoint, which the foreign key keeps
// from being deleted with its experiment.
constexpr absl::string_view kVersion16 = R"sql(
CREATE TABLE models (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  description TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  metadata_json TEXT NOT NULL,
  owner TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  last_version INTEGER NOT NULL
);
CREATE TABLE model_versions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  model_id INTEGER NOT NULL REFERENCES models(id),
  version INTEGER NOT NULL,
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints(storage_id),
  name TEXT NOT NULL,
  comment TEXT NOT NULL,
  notes TEXT NOT NULL,
  labels_json TEXT NOT NULL,
  metadata_json TEXT NOT NULL,
  registered_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  UNIQUE (model_id, version)
);
CREATE INDEX model_versions_by_checkpoint ON model_versions(checkpoint_id);
)sql";

// Version 17: webhooks and their durable delivery queue (database.h: WebhookRow, DeliveryRow;
// docs/design/0023). A delivery is a row from the event until it is DELIVERED or FAILED.
constexpr absl::string_view kVersion17 = R"sql(
CREATE TABLE webhooks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  url TEXT NOT NULL,
  type TEXT NOT NULL,
  triggers_json TEXT NOT NULL,
  template TEXT NOT NULL,
  secret TEXT NOT NULL,
  allow_local INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id INTEGER NOT NULL REFERENCES webhooks(id),
  event TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_ms INTEGER NOT NULL,
  last_error TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(state, webhook_id, id);
)sql";

// Version 18: a webhook's delivery may carry a key that makes it once only (a log-pattern or a
// metric-threshold trigger fires once per trial and webhook, across restarts of the master);
// NULL (every state change, every test) repeats freely.
constexpr absl::string_view kVersion18 = R"sql(
ALTER TABLE webhook_deliveries ADD COLUMN once_key TEXT;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries(webhook_id, once_key);
)sql";

// Version 19: experiments by context file (contexts are stored once per content and shared; a
// deletion counts who else names its file).
constexpr absl::string_view kVersion19 = R"sql(
CREATE INDEX experiments_context ON experiments(context_path);
)sql";

}  // namespace

const std::vector<absl::string_view>& SqliteMigrations() {
  static const std::vector<absl::string_view>* const migrations =
      new std::vector<absl::string_view>{kVersion1,  kVersion2,  kVersion3,  kVersion4,  kVersion5,
                                         kVersion6,  kVersion7,  kVersion8,  kVersion9,  kVersion10,
                                         kVersion11, kVersion12, kVersion13, kVersion14, kVersion15,
                                         kVersion16, kVersion17, kVersion18, kVersion19};
  return *migrations;
}

int LatestSqliteSchemaVersion() { return static_cast<int>(SqliteMigrations().size()); }

}  // namespace cohort::master::internal
