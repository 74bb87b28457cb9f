#include "master/db/sqlite_database.h"

#include <sqlite3.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cohort/status.h"
#include "master/db/internal/sqlite_check.h"
#include "master/db/internal/sqlite_statement.h"
#include "master/db/internal/wal_checkpointer.h"
#include "master/db/sqlite_migrations.h"

namespace cohort::master {
namespace {

// A row of SELECT storage_id, trial_id, steps_completed, path, metadata_json, state; a state
// this build does not know reads as ACTIVE (never deleted by mistake).
CheckpointRow ReadCheckpoint(const internal::Statement& r) {
  return CheckpointRow{
      r.Text(0),  r.Int64(1),
      r.Int64(2), r.Text(3),
      r.Text(4),  wire::ParseCheckpointState(r.Text(5)).value_or(wire::CheckpointState::kActive)};
}

constexpr int kBusyTimeoutMs = 5000;

using internal::Exec;
using internal::ReadAll;
using internal::SqliteError;
using internal::Statement;
using internal::Transaction;

bool IsForeignKeyViolation(const Statement& statement) {
  return statement.code() == SQLITE_CONSTRAINT_FOREIGNKEY;
}

absl::Status TrialNotFound(int64_t id) {
  return absl::NotFoundError(absl::StrCat("trial ", id, " not found"));
}

// Row mapping. Each kSelect* lists the columns in the order its Read* reads them.

constexpr absl::string_view kSelectExperiment =
    "SELECT id, name, state, config_yaml, original_yaml, template_name, context_path, "
    "slots_per_trial, priority, max_restarts, created_ms, owner, ended_ms, archived, weight, "
    "max_slots, resource_pool, queue_position FROM experiments";

// A state the enum does not know means the file was written by another program (or damaged):
// an error naming the row, never a default.
template <typename State>
absl::StatusOr<State> ReadState(absl::StatusOr<State> (*parse)(absl::string_view),
                                const std::string& text, absl::string_view row, int64_t id) {
  absl::StatusOr<State> state = parse(text);
  if (!state.ok()) {
    return absl::DataLossError(
        absl::StrCat(row, " ", id, " in the database: ", state.status().message()));
  }
  return state;
}

absl::StatusOr<ExperimentRow> ReadExperiment(const Statement& s) {
  ExperimentRow row;
  row.id = s.Int64(0);
  row.name = s.Text(1);
  COHORT_ASSIGN_OR_RETURN(row.state,
                          ReadState<wire::ExperimentState>(wire::ParseExperimentState, s.Text(2),
                                                           "experiment", row.id));
  row.config_yaml = s.Text(3);
  row.original_yaml = s.Text(4);
  row.template_name = s.Text(5);
  row.context_path = s.Text(6);
  row.slots_per_trial = s.Int(7);
  row.priority = s.Int(8);
  row.max_restarts = s.Int(9);
  row.created_ms = s.Int64(10);
  row.owner = s.Text(11);
  row.ended_ms = s.Int64(12);
  row.archived = s.Int64(13) != 0;
  row.weight = s.Double(14);
  row.max_slots = s.Int(15);
  row.resource_pool = s.Text(16);
  row.queue_position = s.Double(17);
  return row;
}

constexpr absl::string_view kSelectTrial =
    "SELECT id, experiment_id, hparams_json, seed, state, restarts, batches, total_batches, "
    "searcher_metric, latest_checkpoint, error_lines, sequence, kill_requested FROM trials";

absl::StatusOr<TrialRow> ReadTrial(const Statement& s) {
  TrialRow row;
  row.id = s.Int64(0);
  row.experiment_id = s.Int64(1);
  row.hparams_json = s.Text(2);
  row.seed = s.Int64(3);
  COHORT_ASSIGN_OR_RETURN(
      row.state, ReadState<wire::TrialState>(wire::ParseTrialState, s.Text(4), "trial", row.id));
  row.restarts = s.Int(5);
  row.batches = s.Int64(6);
  row.total_batches = s.Int64(7);
  if (!s.IsNull(8)) row.searcher_metric = s.Double(8);
  row.latest_checkpoint = s.Text(9);
  row.error_lines = s.Text(10);
  row.sequence = s.Int64(11);
  row.kill_requested = s.Int(12) != 0;
  return row;
}

// Binds every trial field but id and experiment_id to ?2 .. ?12; InsertTrial binds
// experiment_id and UpdateTrial binds id to ?1.
void BindTrialFields(const TrialRow& row, Statement& s) {
  s.BindText(2, row.hparams_json);
  s.BindInt64(3, row.seed);
  s.BindText(4, wire::Name(row.state));
  s.BindInt64(5, row.restarts);
  s.BindInt64(6, row.batches);
  s.BindInt64(7, row.total_batches);
  if (row.searcher_metric.has_value()) {
    s.BindDouble(8, *row.searcher_metric);
  } else {
    s.BindNull(8);
  }
  s.BindText(9, row.latest_checkpoint);
  s.BindText(10, row.error_lines);
  s.BindInt64(11, row.sequence);
  s.BindInt64(12, row.kill_requested ? 1 : 0);
}

constexpr absl::string_view kSelectTemplate = "SELECT name, yaml FROM templates";

TemplateRow ReadTemplate(const Statement& s) { return TemplateRow{s.Text(0), s.Text(1)}; }

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path,
                                                                     const SqliteOptions& options) {
  // FULLMUTEX (SQLite's own lock per call) is redundant under mu_ and costs little; it keeps
  // the connection safe even if a future method forgot mu_.
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, path, "open", rc);
    sqlite3_close(db);
    return status;
  }
  std::unique_ptr<SqliteDatabase> database(new SqliteDatabase(db, path));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  {
    // Nothing else can see the database yet: the lock is for the analysis (sqlite_database.h).
    MutexLock lock(&database->mu_);
    absl::Status status = database->Check(options);
    if (!status.ok()) return status;
    status = database->Configure();
    if (!status.ok()) return status;
    status = database->Migrate();
    if (!status.ok()) return status;
  }
  if (database->InWal()) {
    COHORT_ASSIGN_OR_RETURN(database->checkpointer_, internal::WalCheckpointer::Start(db, path));
  }
  return database;
}

SqliteDatabase::SqliteDatabase(sqlite3* db, std::string path)
    : db_(db), path_(std::move(path)), statements_(std::make_unique<internal::StatementCache>(db)) {}

SqliteDatabase::~SqliteDatabase() {
  // The checkpointer's connection closes first: db_'s close does the last checkpoint.
  checkpointer_.reset();
  statements_->Clear();  // finalized before their connection closes
  sqlite3_close_v2(db_);
}

absl::Status SqliteDatabase::Check(const SqliteOptions& options) {
  if (path_ == ":memory:" || path_.empty()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(internal::DatabaseContent content, internal::CheckIdentity(db_, path_));
  if (content == internal::DatabaseContent::kEmpty) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(integrity_check_,
                          internal::CheckIntegrity(db_, path_, options.check_time_limit));
  return absl::OkStatus();
}

absl::Status SqliteDatabase::Configure() {
  // WAL lets readers (the sqlite3 shell, a backup) run beside the master's writes; an
  // in-memory database has no journal file to speak of.
  if (InWal()) {
    absl::Status status = Exec(db_, path_, "set journal_mode", "PRAGMA journal_mode=WAL");
    if (!status.ok()) return status;
  }
  absl::Status status = Exec(db_, path_, "set synchronous", "PRAGMA synchronous=NORMAL");
  if (!status.ok()) return status;
  return Exec(db_, path_, "enable foreign keys", "PRAGMA foreign_keys=ON");
}

absl::Status SqliteDatabase::Migrate() {
  const std::vector<absl::string_view>& migrations = internal::SqliteMigrations();
  const int64_t latest = internal::LatestSqliteSchemaVersion();
  // One transaction per migration; the version is read inside it, so two processes opening
  // the same new file at once apply each migration once.
  for (;;) {
    Transaction transaction(*statements_, path_);
    absl::Status status = transaction.Begin();
    if (!status.ok()) return status;
    status = Exec(db_, path_, "create schema_version",
                  "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    if (!status.ok()) return status;

    int64_t version = 0;
    {
      Statement query(*statements_, path_, "read schema_version",
                      "SELECT COALESCE(MAX(version), 0) FROM schema_version");
      absl::StatusOr<bool> has_row = query.Step();
      if (!has_row.ok()) return has_row.status();
      version = query.Int64(0);
    }
    if (version > latest) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: schema version %d is newer than this build of cohort-master understands (%d); "
          "upgrade cohort-master",
          path_, version, latest));
    }
    if (version == latest) return transaction.Commit();

    const int64_t next = version + 1;
    std::string script(migrations[version]);
    status = Exec(db_, path_, absl::StrCat("migrate to schema version ", next), script.c_str());
    if (!status.ok()) return status;
    Statement record(*statements_, path_, "record schema_version",
                     "INSERT INTO schema_version (version) VALUES (?1)");
    record.BindInt64(1, next);
    status = record.Run();
    if (!status.ok()) return status;
    status = transaction.Commit();
    if (!status.ok()) return status;
  }
}

absl::StatusOr<int64_t> SqliteDatabase::InsertExperiment(const ExperimentRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "insert experiment",
              "INSERT INTO experiments (name, state, config_yaml, original_yaml, template_name, "
              "context_path, slots_per_trial, priority, max_restarts, created_ms, owner, weight, "
              "max_slots, resource_pool) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  s.BindText(1, row.name);
  s.BindText(2, wire::Name(row.state));
  s.BindText(3, row.config_yaml);
  s.BindText(4, row.original_yaml);
  s.BindText(5, row.template_name);
  s.BindText(6, row.context_path);
  s.BindInt64(7, row.slots_per_trial);
  s.BindInt64(8, row.priority);
  s.BindInt64(9, row.max_restarts);
  s.BindInt64(10, row.created_ms);
  s.BindText(11, row.owner);
  s.BindDouble(12, row.weight);
  s.BindInt64(13, row.max_slots);
  s.BindText(14, row.resource_pool);
  absl::Status status = s.Run();
  if (!status.ok()) return status;
  const int64_t id = sqlite3_last_insert_rowid(db_);
  // Its place in the queue: after every experiment before it (ids grow).
  Statement position(*statements_, path_, "set experiment queue position",
                     "UPDATE experiments SET queue_position = ?2 WHERE id = ?1");
  position.BindInt64(1, id);
  position.BindDouble(2, row.queue_position > 0 ? row.queue_position : static_cast<double>(id));
  COHORT_RETURN_IF_ERROR(position.Run());
  return id;
}

absl::Status SqliteDatabase::SetExperimentScheduling(int64_t id,
                                                     const ExperimentScheduling& scheduling) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "set experiment scheduling",
              "UPDATE experiments SET priority = ?2, weight = ?3, max_slots = ?4, "
              "queue_position = ?5 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, scheduling.priority);
  s.BindDouble(3, scheduling.weight);
  s.BindInt64(4, scheduling.max_slots);
  s.BindDouble(5, scheduling.queue_position);
  COHORT_RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::SetExperimentEnded(int64_t id, int64_t ended_ms) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "set experiment end",
              "UPDATE experiments SET ended_ms = ?2 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, ended_ms);
  COHORT_RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::SetExperimentState(int64_t id, wire::ExperimentState state) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "set experiment state",
              "UPDATE experiments SET state = ?2 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindText(2, wire::Name(state));
  absl::Status status = s.Run();
  if (!status.ok()) return status;
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::SetExperimentArchived(int64_t id, bool archived) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "set experiment archived",
              "UPDATE experiments SET archived = ?2 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, archived ? 1 : 0);
  COHORT_RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ExperimentRow> SqliteDatabase::GetExperiment(int64_t id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get experiment", absl::StrCat(kSelectExperiment, " WHERE id = ?1"));
  s.BindInt64(1, id);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  return ReadExperiment(s);
}

absl::StatusOr<std::vector<ExperimentRow>> SqliteDatabase::ListExperiments() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list experiments", absl::StrCat(kSelectExperiment, " ORDER BY id"));
  return ReadAll<ExperimentRow>(s, ReadExperiment);
}

absl::StatusOr<int64_t> SqliteDatabase::InsertTrial(const TrialRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "insert trial",
              "INSERT INTO trials (experiment_id, hparams_json, seed, state, restarts, batches, "
              "total_batches, searcher_metric, latest_checkpoint, error_lines, sequence, "
              "kill_requested) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  s.BindInt64(1, row.experiment_id);
  BindTrialFields(row, s);
  absl::Status status = s.Run();
  if (IsForeignKeyViolation(s)) {
    return absl::NotFoundError(absl::StrCat("experiment ", row.experiment_id, " not found"));
  }
  if (!status.ok()) return status;
  return sqlite3_last_insert_rowid(db_);
}

absl::Status SqliteDatabase::UpdateTrial(const TrialRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "update trial",
              "UPDATE trials SET hparams_json = ?2, seed = ?3, state = ?4, restarts = ?5, "
              "batches = ?6, total_batches = ?7, searcher_metric = ?8, latest_checkpoint = ?9, "
              "error_lines = ?10, sequence = ?11, kill_requested = ?12 WHERE id = ?1");
  s.BindInt64(1, row.id);
  BindTrialFields(row, s);
  absl::Status status = s.Run();
  if (!status.ok()) return status;
  if (sqlite3_changes(db_) == 0) return TrialNotFound(row.id);
  return absl::OkStatus();
}

absl::StatusOr<TrialRow> SqliteDatabase::GetTrial(int64_t id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get trial", absl::StrCat(kSelectTrial, " WHERE id = ?1"));
  s.BindInt64(1, id);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return TrialNotFound(id);
  return ReadTrial(s);
}

absl::StatusOr<std::vector<TrialRow>> SqliteDatabase::ListTrials(
    std::optional<int64_t> experiment_id) {
  MutexLock lock(&mu_);
  if (!experiment_id.has_value()) {
    Statement s(*statements_, path_, "list trials", absl::StrCat(kSelectTrial, " ORDER BY id"));
    return ReadAll<TrialRow>(s, ReadTrial);
  }
  Statement s(*statements_, path_, "list trials of an experiment",
              absl::StrCat(kSelectTrial, " WHERE experiment_id = ?1 ORDER BY id"));
  s.BindInt64(1, *experiment_id);
  return ReadAll<TrialRow>(s, ReadTrial);
}

absl::StatusOr<std::vector<TrialRow>> SqliteDatabase::ListTrialsInStates(
    const std::vector<wire::TrialState>& states) {
  if (states.empty()) return std::vector<TrialRow>{};
  std::vector<std::string> params;
  for (size_t i = 0; i < states.size(); ++i) params.push_back(absl::StrCat("?", i + 1));
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list trials by state",
              absl::StrCat(kSelectTrial, " WHERE state IN (", absl::StrJoin(params, ", "),
                           ") ORDER BY id"));
  for (size_t i = 0; i < states.size(); ++i)
    s.BindText(static_cast<int>(i + 1), wire::Name(states[i]));
  return ReadAll<TrialRow>(s, ReadTrial);
}

absl::StatusOr<std::vector<TrialScheduleRow>> SqliteDatabase::ListTrialsToSchedule() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list trials to schedule",
              "SELECT id, experiment_id, state, sequence FROM trials WHERE state IN (?1, ?2) "
              "ORDER BY id");
  s.BindText(1, wire::Name(wire::TrialState::kQueued));
  s.BindText(2, wire::Name(wire::TrialState::kRunning));
  std::vector<TrialScheduleRow> rows;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
    if (!has_row) return rows;
    TrialScheduleRow row{s.Int64(0), s.Int64(1), wire::TrialState::kQueued, s.Int64(3)};
    COHORT_ASSIGN_OR_RETURN(
        row.state, ReadState<wire::TrialState>(wire::ParseTrialState, s.Text(2), "trial", row.id));
    rows.push_back(row);
  }
}

absl::StatusOr<std::map<wire::TrialState, int64_t>> SqliteDatabase::CountTrialsByState() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "count trials by state",
              "SELECT state, COUNT(*) FROM trials GROUP BY state");
  std::map<wire::TrialState, int64_t> counts;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
    if (!has_row) return counts;
    absl::StatusOr<wire::TrialState> state = wire::ParseTrialState(s.Text(0));
    if (!state.ok()) {
      return absl::DataLossError(
          absl::StrCat("trials in the database: ", state.status().message()));
    }
    counts[*state] = s.Int64(1);
  }
}

absl::Status SqliteDatabase::WriteTransaction(absl::FunctionRef<absl::Status()> body) {
  MutexLock lock(&mu_);
  Transaction transaction(*statements_, path_);
  COHORT_RETURN_IF_ERROR(transaction.Begin());
  COHORT_RETURN_IF_ERROR(body());
  return transaction.Commit();
}

absl::Status SqliteDatabase::InsertMetrics(const std::vector<MetricRow>& rows) {
  if (rows.empty()) return absl::OkStatus();
  return WriteTransaction(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return InsertMetricsLocked(rows); });
}

absl::Status SqliteDatabase::InsertMetricsLocked(const std::vector<MetricRow>& rows) {
  Statement s(*statements_, path_, "insert metrics",
              "INSERT INTO metrics (trial_id, kind, steps_completed, metrics_json, time) "
              "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const MetricRow& row : rows) {
    s.BindInt64(1, row.trial_id);
    s.BindText(2, row.kind);
    s.BindInt64(3, row.steps_completed);
    s.BindText(4, row.metrics_json);
    s.BindDouble(5, row.time);
    absl::Status status = s.Run();
    if (IsForeignKeyViolation(s)) return TrialNotFound(row.trial_id);
    COHORT_RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MetricRow>> SqliteDatabase::ListMetrics(
    int64_t trial_id, std::optional<std::string> kind) {
  return ListMetricsPage(trial_id, std::move(kind), 0, std::numeric_limits<int>::max());
}

absl::StatusOr<std::vector<MetricRow>> SqliteDatabase::ListMetricsPage(
    int64_t trial_id, std::optional<std::string> kind, int64_t after_id, int limit) {
  if (limit < 0) return absl::InvalidArgumentError("a page of metrics needs a limit >= 0");
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list metrics",
              "SELECT id, trial_id, kind, steps_completed, metrics_json, time FROM metrics "
              "WHERE trial_id = ?1 AND (?2 IS NULL OR kind = ?2) AND id > ?3 ORDER BY id "
              "LIMIT ?4");
  s.BindInt64(1, trial_id);
  if (kind.has_value()) {
    s.BindText(2, *kind);
  } else {
    s.BindNull(2);
  }
  s.BindInt64(3, after_id);
  s.BindInt64(4, limit);
  return ReadAll<MetricRow>(s, [](const Statement& r) {
    return MetricRow{r.Int64(1), r.Text(2), r.Int64(3), r.Text(4), r.Double(5), r.Int64(0)};
  });
}

absl::Status SqliteDatabase::InsertCheckpoint(const CheckpointRow& row) {
  MutexLock lock(&mu_);
  return InsertCheckpointLocked(row);
}

absl::Status SqliteDatabase::InsertCheckpointLocked(const CheckpointRow& row) {
  Statement s(*statements_, path_, "insert checkpoint",
              "INSERT INTO checkpoints (storage_id, trial_id, steps_completed, path, "
              "metadata_json) VALUES (?1, ?2, ?3, ?4, ?5)");
  s.BindText(1, row.storage_id);
  s.BindInt64(2, row.trial_id);
  s.BindInt64(3, row.steps_completed);
  s.BindText(4, row.path);
  s.BindText(5, row.metadata_json);
  absl::Status status = s.Run();
  if (s.code() == SQLITE_CONSTRAINT_PRIMARYKEY || s.code() == SQLITE_CONSTRAINT_UNIQUE) {
    return absl::AlreadyExistsError(
        absl::StrCat("checkpoint '", row.storage_id, "' already exists"));
  }
  if (IsForeignKeyViolation(s)) return TrialNotFound(row.trial_id);
  return status;
}

absl::StatusOr<std::vector<CheckpointRow>> SqliteDatabase::ListCheckpoints(int64_t trial_id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list checkpoints",
              "SELECT storage_id, trial_id, steps_completed, path, metadata_json, state "
              "FROM checkpoints WHERE trial_id = ?1 ORDER BY rowid");
  s.BindInt64(1, trial_id);
  return ReadAll<CheckpointRow>(s, ReadCheckpoint);
}

absl::StatusOr<std::vector<GcCheckpointRow>> SqliteDatabase::ListActiveCheckpoints(
    int64_t experiment_id) {
  MutexLock lock(&mu_);
  // trials_by_experiment, checkpoints_by_trial and metrics_by_trial_kind_batch (version 11)
  // make each step an index lookup.
  Statement s(*statements_, path_, "list active checkpoints",
              "SELECT c.storage_id, c.trial_id, c.steps_completed, c.path, c.metadata_json, "
              "c.state, (SELECT m.metrics_json FROM metrics m WHERE m.trial_id = c.trial_id AND "
              "m.kind = 'validation' AND m.steps_completed = c.steps_completed ORDER BY m.id DESC "
              "LIMIT 1) FROM trials t JOIN checkpoints c ON c.trial_id = t.id "
              "WHERE t.experiment_id = ?1 AND c.state = ?2 ORDER BY c.trial_id, c.steps_completed");
  s.BindInt64(1, experiment_id);
  s.BindText(2, wire::Name(wire::CheckpointState::kActive));
  return ReadAll<GcCheckpointRow>(s, [](const Statement& r) {
    return GcCheckpointRow{ReadCheckpoint(r),
                           r.IsNull(6) ? std::nullopt : std::optional<std::string>(r.Text(6))};
  });
}

absl::StatusOr<CheckpointRow> SqliteDatabase::GetCheckpoint(const std::string& storage_id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get checkpoint",
              "SELECT storage_id, trial_id, steps_completed, path, metadata_json, state "
              "FROM checkpoints WHERE storage_id = ?1");
  s.BindText(1, storage_id);
  COHORT_ASSIGN_OR_RETURN(bool found, s.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("checkpoint ", storage_id, " not found"));
  return ReadCheckpoint(s);
}

absl::Status SqliteDatabase::MarkCheckpointDeleted(const std::string& storage_id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "mark checkpoint deleted",
              "UPDATE checkpoints SET state = ?2 WHERE storage_id = ?1");
  s.BindText(1, storage_id);
  s.BindText(2, wire::Name(wire::CheckpointState::kDeleted));
  COHORT_RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", storage_id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::PutTemplate(const TemplateRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "put template",
              "INSERT INTO templates (name, yaml) VALUES (?1, ?2) "
              "ON CONFLICT (name) DO UPDATE SET yaml = excluded.yaml");
  s.BindText(1, row.name);
  s.BindText(2, row.yaml);
  return s.Run();
}

absl::StatusOr<TemplateRow> SqliteDatabase::GetTemplate(const std::string& name) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get template", absl::StrCat(kSelectTemplate, " WHERE name = ?1"));
  s.BindText(1, name);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return absl::NotFoundError(absl::StrCat("template '", name, "' not found"));
  return ReadTemplate(s);
}

absl::StatusOr<std::vector<TemplateRow>> SqliteDatabase::ListTemplates() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list templates", absl::StrCat(kSelectTemplate, " ORDER BY name"));
  return ReadAll<TemplateRow>(s, ReadTemplate);
}

absl::Status SqliteDatabase::DeleteTemplate(const std::string& name) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "delete template", "DELETE FROM templates WHERE name = ?1");
  s.BindText(1, name);
  absl::Status status = s.Run();
  if (!status.ok()) return status;
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("template '", name, "' not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::UpsertAgent(const AgentRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "upsert agent",
              "INSERT INTO agents (id, slots, host, enabled) VALUES (?1, ?2, ?3, ?4) "
              "ON CONFLICT (id) DO UPDATE SET slots = excluded.slots, host = excluded.host");
  s.BindText(1, row.id);
  s.BindInt64(2, row.slots);
  s.BindText(3, row.host);
  s.BindInt64(4, row.enabled ? 1 : 0);
  return s.Run();
}

absl::Status SqliteDatabase::SetAgentEnabled(const std::string& id, bool enabled) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "set agent enabled", "UPDATE agents SET enabled = ?2 WHERE id = ?1");
  s.BindText(1, id);
  s.BindInt64(2, enabled ? 1 : 0);
  absl::Status status = s.Run();
  if (!status.ok()) return status;
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("agent '", id, "' not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AgentRow>> SqliteDatabase::ListAgents() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list agents", "SELECT id, slots, host, enabled FROM agents ORDER BY id");
  return ReadAll<AgentRow>(s, [](const Statement& r) {
    return AgentRow{r.Text(0), r.Int(1), r.Text(2), r.Int64(3) != 0};
  });
}

WalCheckpoints SqliteDatabase::wal_checkpoints() const {
  return checkpointer_ != nullptr ? checkpointer_->counts() : WalCheckpoints{};
}

std::vector<BackendMetric> SqliteDatabase::BackendMetrics() {
  const WalCheckpoints counts = wal_checkpoints();
  const std::string help =
      "Checkpoints of the database's write-ahead log since the master started: by the "
      "checkpointer's thread, or by a writer once the log passed its bound (a disk too slow for "
      "the checkpointer)";
  auto checkpoints_by = [&help](const char* by, int64_t count) {
    return BackendMetric{.name = "wal_checkpoints_total",
                         .help = help,
                         .kind = BackendMetric::Kind::kCounter,
                         .labels = {{"by", by}},
                         .value = static_cast<double>(count)};
  };
  return {checkpoints_by("checkpointer", counts.background),
          checkpoints_by("writer", counts.by_writer)};
}

absl::StatusOr<int64_t> SqliteDatabase::SizeBytes() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "database size",
              "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::InternalError(absl::StrCat(path_, ": the page count is missing"));
  return s.Int64(0);
}

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> database = SqliteDatabase::Open(path);
  if (!database.ok()) return database.status();
  return std::unique_ptr<Database>(std::move(*database));
}

}  // namespace cohort::master
