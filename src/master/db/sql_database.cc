#include "master/db/sql_database.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cohort/status.h"

namespace cohort::master {
namespace {

// A row of SELECT storage_id, trial_id, steps_completed, path, metadata_json, state; a state
// this build does not know reads as ACTIVE (never deleted by mistake).
CheckpointRow ReadCheckpoint(const sql::Query& r) {
  return CheckpointRow{
      r.Text(0),  r.Int64(1),
      r.Int64(2), r.Text(3),
      r.Text(4),  wire::ParseCheckpointState(r.Text(5)).value_or(wire::CheckpointState::kActive)};
}

using sql::Query;
using sql::ReadAll;

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

absl::StatusOr<ExperimentRow> ReadExperiment(const Query& s) {
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

// The columns ReadTrial reads, in its order (a SELECT's, or an UPDATE's RETURNING).
constexpr absl::string_view kTrialColumns =
    "id, experiment_id, hparams_json, seed, state, restarts, batches, total_batches, "
    "searcher_metric, latest_checkpoint, error_lines, sequence, kill_requested";
const std::string& SelectTrial() {
  static const std::string* const sql =
      new std::string(absl::StrCat("SELECT ", kTrialColumns, " FROM trials"));
  return *sql;
}

absl::StatusOr<TrialRow> ReadTrial(const Query& s) {
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

// Binds every trial field but id and experiment_id to ?2 .. ?12 (InsertTrial binds
// experiment_id to ?1).
void BindTrialFields(const TrialRow& row, Query& s) {
  s.BindText(2, row.hparams_json);
  s.BindInt64(3, row.seed);
  s.BindText(4, wire::Name(row.state));
  s.BindInt64(5, row.restarts);
  s.BindInt64(6, row.batches);
  s.BindInt64(7, row.total_batches);
  s.BindDoubleOrNull(8, row.searcher_metric);
  s.BindText(9, row.latest_checkpoint);
  s.BindText(10, row.error_lines);
  s.BindInt64(11, row.sequence);
  s.BindInt64(12, row.kill_requested ? 1 : 0);
}

// UpdateTrial's columns (not the report's: a report stored meanwhile keeps its progress), bound
// by BindTrialUpdate as ?1 (the id) to ?8; a statement may add columns and conditions from ?9.
constexpr absl::string_view kUpdateTrial =
    "UPDATE trials SET hparams_json = ?2, seed = ?3, state = ?4, restarts = ?5, "
    "error_lines = ?6, sequence = ?7, kill_requested = ?8";

void BindTrialUpdate(Query& s, const TrialRow& row) {
  s.BindInt64(1, row.id);
  s.BindText(2, row.hparams_json);
  s.BindInt64(3, row.seed);
  s.BindText(4, wire::Name(row.state));
  s.BindInt64(5, row.restarts);
  s.BindText(6, row.error_lines);
  s.BindInt64(7, row.sequence);
  s.BindInt64(8, row.kill_requested ? 1 : 0);
}

constexpr absl::string_view kSelectTemplate = "SELECT name, yaml FROM templates";

TemplateRow ReadTemplate(const Query& s) { return TemplateRow{s.Text(0), s.Text(1)}; }

}  // namespace

SqlDatabase::SqlDatabase(std::unique_ptr<sql::ConnectionPool> pool, const SqlDialect& dialect,
                         std::string name)
    : pool_(std::move(pool)), dialect_(dialect), name_(std::move(name)) {}

SqlDatabase::~SqlDatabase() = default;

absl::Status SqlDatabase::Migrate(sql::Connection& c) {
  if (dialect_.migration_lock.empty()) return MigrateLocked(c);
  {
    Query lock(c, "lock the schema for migrating", dialect_.migration_lock);
    COHORT_RETURN_IF_ERROR(lock.Step().status());
  }
  const absl::Status status = MigrateLocked(c);
  Query unlock(c, "unlock the schema", dialect_.migration_unlock);
  const absl::Status unlocked = unlock.Step().status();
  return status.ok() ? unlocked : status;
}

absl::Status SqlDatabase::MigrateLocked(sql::Connection& c) {
  const std::vector<absl::string_view>& migrations = *dialect_.migrations;
  const int64_t latest = static_cast<int64_t>(migrations.size());
  // One transaction per migration; the version is read inside it, so two processes opening
  // the same new database at once apply each migration once.
  for (;;) {
    sql::Transaction transaction(c);
    COHORT_RETURN_IF_ERROR(transaction.status());
    COHORT_RETURN_IF_ERROR(
        c.Exec("create schema_version",
               "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
    int64_t version = 0;
    {
      Query query(c, "read schema_version", "SELECT COALESCE(MAX(version), 0) FROM schema_version");
      COHORT_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (has_row) version = query.Int64(0);
    }
    if (version > latest) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: schema version %d is newer than this build of cohort-master understands (%d); "
          "upgrade cohort-master",
          name_, version, latest));
    }
    if (version == latest) return transaction.Commit();

    const int64_t next = version + 1;
    COHORT_RETURN_IF_ERROR(c.Exec(absl::StrCat("migrate to schema version ", next),
                                  migrations[static_cast<size_t>(version)]));
    Query record(c, "record schema_version", "INSERT INTO schema_version (version) VALUES (?1)");
    record.BindInt64(1, next);
    COHORT_RETURN_IF_ERROR(record.Run());
    COHORT_RETURN_IF_ERROR(transaction.Commit());
  }
}

absl::StatusOr<int64_t> SqlDatabase::InsertExperiment(const ExperimentRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert experiment",
          "INSERT INTO experiments (name, state, config_yaml, original_yaml, template_name, "
          "context_path, slots_per_trial, priority, max_restarts, created_ms, owner, weight, "
          "max_slots, resource_pool) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id");
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
  COHORT_ASSIGN_OR_RETURN(const int64_t id, s.RunReturningInt64());
  // Its place in the queue: after every experiment before it (ids grow).
  Query position(*c, "set experiment queue position",
                 "UPDATE experiments SET queue_position = ?2 WHERE id = ?1");
  position.BindInt64(1, id);
  position.BindDouble(2, row.queue_position > 0 ? row.queue_position : static_cast<double>(id));
  COHORT_RETURN_IF_ERROR(position.Run());
  return id;
}

absl::Status SqlDatabase::SetExperimentScheduling(int64_t id,
                                                  const ExperimentScheduling& scheduling) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "set experiment scheduling",
          "UPDATE experiments SET priority = ?2, weight = ?3, max_slots = ?4, "
          "queue_position = ?5 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, scheduling.priority);
  s.BindDouble(3, scheduling.weight);
  s.BindInt64(4, scheduling.max_slots);
  s.BindDouble(5, scheduling.queue_position);
  return s.RunOnRow(absl::StrCat("experiment ", id));
}

absl::Status SqlDatabase::ReopenExperiment(const ExperimentRow& experiment,
                                           const std::vector<TrialRow>& trials,
                                           const std::vector<DeliveryRow>& deliveries) {
  return Transact([&](sql::Connection& c) -> absl::Status {
    Query e(c, "reopen experiment",
            "UPDATE experiments SET name = ?2, config_yaml = ?3, slots_per_trial = ?4, "
            "max_restarts = ?5, state = ?6, ended_ms = 0 WHERE id = ?1");
    e.BindInt64(1, experiment.id);
    e.BindText(2, experiment.name);
    e.BindText(3, experiment.config_yaml);
    e.BindInt64(4, experiment.slots_per_trial);
    e.BindInt64(5, experiment.max_restarts);
    e.BindText(6, wire::Name(experiment.state));
    COHORT_RETURN_IF_ERROR(e.RunOnRow(absl::StrCat("experiment ", experiment.id)));
    Query t(c, "reopen trial",
            absl::StrCat(kUpdateTrial,
                         ", total_batches = ?9 WHERE id = ?1 AND experiment_id = ?10"));
    for (const TrialRow& row : trials) {
      BindTrialUpdate(t, row);
      t.BindInt64(9, row.total_batches);
      t.BindInt64(10, experiment.id);
      COHORT_RETURN_IF_ERROR(
          t.RunOnRow(absl::StrCat("trial ", row.id, " of experiment ", experiment.id)));
    }
    return InsertDeliveriesIn(c, deliveries);
  });
}

absl::Status SqlDatabase::SetExperimentEnded(int64_t id, int64_t ended_ms) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "set experiment end", "UPDATE experiments SET ended_ms = ?2 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, ended_ms);
  return s.RunOnRow(absl::StrCat("experiment ", id));
}

absl::Status SqlDatabase::SetExperimentArchived(int64_t id, bool archived) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "set experiment archived", "UPDATE experiments SET archived = ?2 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindInt64(2, archived ? 1 : 0);
  return s.RunOnRow(absl::StrCat("experiment ", id));
}

absl::Status SqlDatabase::SetExperimentMetadata(int64_t id, const std::string& name,
                                               const std::string& config_yaml) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "set experiment metadata",
          "UPDATE experiments SET name = ?2, config_yaml = ?3 WHERE id = ?1");
  s.BindInt64(1, id);
  s.BindText(2, name);
  s.BindText(3, config_yaml);
  return s.RunOnRow(absl::StrCat("experiment ", id));
}

absl::StatusOr<ExperimentRow> SqlDatabase::GetExperiment(int64_t id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get experiment", absl::StrCat(kSelectExperiment, " WHERE id = ?1"));
  s.BindInt64(1, id);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  return ReadExperiment(s);
}

absl::StatusOr<std::vector<ExperimentRow>> SqlDatabase::ListExperiments() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list experiments", absl::StrCat(kSelectExperiment, " ORDER BY id"));
  return ReadAll<ExperimentRow>(s, ReadExperiment);
}

absl::StatusOr<int64_t> SqlDatabase::CountExperimentsNamingContext(const std::string& context_path,
                                                                   int64_t except) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "count experiments naming a context",
          "SELECT COUNT(*) FROM experiments WHERE context_path = ?1 AND id <> ?2");
  s.BindText(1, context_path);
  s.BindInt64(2, except);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::InternalError("count experiments naming a context: no row");
  return s.Int64(0);
}

absl::StatusOr<int64_t> SqlDatabase::InsertTrial(const TrialRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(
      *c, "insert trial",
      "INSERT INTO trials (experiment_id, hparams_json, seed, state, restarts, batches, "
      "total_batches, searcher_metric, latest_checkpoint, error_lines, sequence, "
      "kill_requested) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id");
  s.BindInt64(1, row.experiment_id);
  BindTrialFields(row, s);
  absl::StatusOr<int64_t> id = s.RunReturningInt64();
  if (s.failure() == sql::Failure::kForeignKeyViolation) {
    return absl::NotFoundError(absl::StrCat("experiment ", row.experiment_id, " not found"));
  }
  return id;
}

absl::Status SqlDatabase::UpdateTrial(const TrialRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "update trial", absl::StrCat(kUpdateTrial, " WHERE id = ?1"));
  BindTrialUpdate(s, row);
  return s.RunOnRow(absl::StrCat("trial ", row.id));
}

absl::StatusOr<TrialRow> SqlDatabase::UpdateTrialReportIn(sql::Connection& c, int64_t id,
                                                          const TrialReportFields& fields) {
  // ?2..?6 NULL where the report left the field alone (?3 says whether ?4 is given: a NULL
  // metric is not a value to store).
  static const std::string* const sql = new std::string(absl::StrCat(
      "UPDATE trials SET latest_checkpoint = COALESCE(CAST(?2 AS TEXT), latest_checkpoint), "
      "searcher_metric = CASE WHEN CAST(?3 AS INTEGER) = 1 THEN ?4 ELSE searcher_metric END, "
      "batches = COALESCE(CAST(?5 AS BIGINT), batches), "
      "total_batches = COALESCE(CAST(?6 AS BIGINT), total_batches) WHERE id = ?1 RETURNING ",
      kTrialColumns));
  Query s(c, "update a trial's report fields", *sql);
  s.BindInt64(1, id);
  s.BindTextOrNull(2, fields.latest_checkpoint);
  s.BindInt64(3, fields.searcher_metric.has_value() ? 1 : 0);
  s.BindDoubleOrNull(4, fields.searcher_metric);
  std::optional<int64_t> batches, total_batches;
  if (fields.batches) std::tie(batches, total_batches) = *fields.batches;
  s.BindInt64OrNull(5, batches);
  s.BindInt64OrNull(6, total_batches);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return TrialNotFound(id);
  absl::StatusOr<TrialRow> row = ReadTrial(s);
  s.Reset();  // done with the statement before the transaction goes on
  return row;
}

absl::StatusOr<TrialRow> SqlDatabase::GetTrial(int64_t id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get trial", absl::StrCat(SelectTrial(), " WHERE id = ?1"));
  s.BindInt64(1, id);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return TrialNotFound(id);
  return ReadTrial(s);
}

absl::StatusOr<std::vector<TrialRow>> SqlDatabase::GetTrials(const std::vector<int64_t>& ids) {
  const std::vector<int64_t> wanted = SortedDistinct(ids);
  std::vector<TrialRow> rows;
  if (wanted.empty()) return rows;
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  for (size_t first = 0; first < wanted.size(); first += sql::kMaxInList) {
    const size_t n = std::min(sql::kMaxInList, wanted.size() - first);
    Query s(
        *c, "get trials",
        absl::StrCat(SelectTrial(), " WHERE id IN (", sql::Placeholders(1, n), ") ORDER BY id"));
    for (size_t i = 0; i < n; ++i) s.BindInt64(static_cast<int>(i + 1), wanted[first + i]);
    COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> some, ReadAll<TrialRow>(s, ReadTrial));
    rows.insert(rows.end(), some.begin(), some.end());  // chunks in order: rows stay by id
  }
  return rows;
}

absl::Status SqlDatabase::MarkTrialsRunning(
    const std::vector<std::pair<int64_t, std::string>>& trial_and_line) {
  std::vector<int64_t> trial_ids;
  for (const auto& [trial_id, line] : trial_and_line) trial_ids.push_back(trial_id);
  const std::vector<int64_t> ids = SortedDistinct(std::move(trial_ids));
  if (ids.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) -> absl::Status {
    std::vector<int64_t> updated;
    for (size_t first = 0; first < ids.size(); first += sql::kMaxInList) {
      const size_t n = std::min(sql::kMaxInList, ids.size() - first);
      Query s(c, "mark trials running",
              absl::StrCat("UPDATE trials SET state = ?1 WHERE id IN (", sql::Placeholders(2, n),
                           ") RETURNING id"));
      s.BindText(1, wire::Name(wire::TrialState::kRunning));
      for (size_t i = 0; i < n; ++i) s.BindInt64(static_cast<int>(i + 2), ids[first + i]);
      COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> some,
                              ReadAll<int64_t>(s, [](const Query& r) { return r.Int64(0); }));
      updated.insert(updated.end(), some.begin(), some.end());
    }
    if (updated.size() != ids.size()) {
      std::sort(updated.begin(), updated.end());
      std::vector<int64_t> missing;
      std::set_difference(ids.begin(), ids.end(), updated.begin(), updated.end(),
                          std::back_inserter(missing));
      return absl::NotFoundError(absl::StrCat("trial", missing.size() == 1 ? " " : "s ",
                                              absl::StrJoin(missing, ", "), " not found"));
    }
    std::vector<LineToAppend> rows;
    for (const auto& [trial_id, line] : trial_and_line) rows.push_back({trial_id, -1, &line});
    return AppendLinesIn(c, rows).status();
  });
}

absl::StatusOr<std::vector<TrialRow>> SqlDatabase::ListTrials(
    std::optional<int64_t> experiment_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  if (!experiment_id.has_value()) {
    Query s(*c, "list trials", absl::StrCat(SelectTrial(), " ORDER BY id"));
    return ReadAll<TrialRow>(s, ReadTrial);
  }
  Query s(*c, "list trials of an experiment",
          absl::StrCat(SelectTrial(), " WHERE experiment_id = ?1 ORDER BY id"));
  s.BindInt64(1, *experiment_id);
  return ReadAll<TrialRow>(s, ReadTrial);
}

absl::StatusOr<std::vector<TrialRow>> SqlDatabase::ListTrialsInStates(
    const std::vector<wire::TrialState>& states) {
  if (states.empty()) return std::vector<TrialRow>{};
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list trials by state",
          absl::StrCat(SelectTrial(), " WHERE state IN (", sql::Placeholders(1, states.size()),
                       ") ORDER BY id"));
  for (size_t i = 0; i < states.size(); ++i)
    s.BindText(static_cast<int>(i + 1), wire::Name(states[i]));
  return ReadAll<TrialRow>(s, ReadTrial);
}

absl::StatusOr<std::vector<TrialScheduleRow>> SqlDatabase::ListTrialsToSchedule() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list trials to schedule",
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

absl::StatusOr<std::map<wire::TrialState, int64_t>> SqlDatabase::CountTrialsByState() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "count trials by state", "SELECT state, COUNT(*) FROM trials GROUP BY state");
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

absl::Status SqlDatabase::Transact(absl::FunctionRef<absl::Status(sql::Connection&)> body) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  return sql::RunTransaction(
      *c, [&] { return body(*c); }, sql::Isolation::kReadCommitted, dialect_.transaction_attempts);
}

absl::Status SqlDatabase::InsertMetrics(const std::vector<MetricRow>& rows) {
  if (rows.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) { return InsertMetricsIn(c, rows); });
}

absl::Status SqlDatabase::InsertMetricsIn(sql::Connection& c, const std::vector<MetricRow>& rows) {
  Query s(c, "insert metrics",
          "INSERT INTO metrics (trial_id, kind, steps_completed, metrics_json, time) "
          "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const MetricRow& row : rows) {
    s.BindInt64(1, row.trial_id);
    s.BindText(2, row.kind);
    s.BindInt64(3, row.steps_completed);
    s.BindText(4, row.metrics_json);
    s.BindDouble(5, row.time);
    absl::Status status = s.Run();
    if (s.failure() == sql::Failure::kForeignKeyViolation) return TrialNotFound(row.trial_id);
    COHORT_RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MetricRow>> SqlDatabase::ListMetrics(int64_t trial_id,
                                                                std::optional<std::string> kind) {
  return ListMetricsPage(trial_id, std::move(kind), 0, std::numeric_limits<int>::max());
}

absl::StatusOr<std::vector<MetricRow>> SqlDatabase::ListMetricsPage(int64_t trial_id,
                                                                    std::optional<std::string> kind,
                                                                    int64_t after_id, int limit) {
  if (limit < 0) return absl::InvalidArgumentError("a page of metrics needs a limit >= 0");
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list metrics",
          "SELECT id, trial_id, kind, steps_completed, metrics_json, time FROM metrics "
          "WHERE trial_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR kind = ?2) AND id > ?3 ORDER BY id "
          "LIMIT ?4");
  s.BindInt64(1, trial_id);
  s.BindTextOrNull(2, kind);
  s.BindInt64(3, after_id);
  s.BindInt64(4, limit);
  return ReadAll<MetricRow>(s, [](const Query& r) {
    return MetricRow{r.Int64(1), r.Text(2), r.Int64(3), r.Text(4), r.Double(5), r.Int64(0)};
  });
}

absl::Status SqlDatabase::InsertCheckpoint(const CheckpointRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  return InsertCheckpointIn(*c, row);
}

absl::Status SqlDatabase::InsertCheckpointIn(sql::Connection& c, const CheckpointRow& row) {
  Query s(c, "insert checkpoint",
          "INSERT INTO checkpoints (storage_id, trial_id, steps_completed, path, "
          "metadata_json) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (storage_id) DO NOTHING");
  s.BindText(1, row.storage_id);
  s.BindInt64(2, row.trial_id);
  s.BindInt64(3, row.steps_completed);
  s.BindText(4, row.path);
  s.BindText(5, row.metadata_json);
  // ON CONFLICT rather than the unique violation: a report sent again is expected inside a
  // combined post's transaction, and on PostgreSQL a failed statement fails its transaction.
  absl::Status status = s.Run();
  if (s.failure() == sql::Failure::kForeignKeyViolation) return TrialNotFound(row.trial_id);
  COHORT_RETURN_IF_ERROR(status);
  if (s.Changes() == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("checkpoint '", row.storage_id, "' already exists"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CheckpointRow>> SqlDatabase::ListCheckpoints(int64_t trial_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list checkpoints",
          absl::StrCat("SELECT storage_id, trial_id, steps_completed, path, metadata_json, state "
                       "FROM checkpoints WHERE trial_id = ?1 ORDER BY ",
                       dialect_.insertion_order));
  s.BindInt64(1, trial_id);
  return ReadAll<CheckpointRow>(s, ReadCheckpoint);
}

absl::StatusOr<std::vector<GcCheckpointRow>> SqlDatabase::ListActiveCheckpoints(
    int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  // trials_by_experiment, checkpoints_by_trial and metrics_by_trial_kind_batch (version 11)
  // make each step an index lookup.
  Query s(*c, "list active checkpoints",
          "SELECT c.storage_id, c.trial_id, c.steps_completed, c.path, c.metadata_json, "
          "c.state, (SELECT m.metrics_json FROM metrics m WHERE m.trial_id = c.trial_id AND "
          "m.kind = 'validation' AND m.steps_completed = c.steps_completed ORDER BY m.id DESC "
          "LIMIT 1) FROM trials t JOIN checkpoints c ON c.trial_id = t.id "
          "WHERE t.experiment_id = ?1 AND c.state = ?2 ORDER BY c.trial_id, c.steps_completed");
  s.BindInt64(1, experiment_id);
  s.BindText(2, wire::Name(wire::CheckpointState::kActive));
  return ReadAll<GcCheckpointRow>(s, [](const Query& r) {
    return GcCheckpointRow{ReadCheckpoint(r),
                           r.IsNull(6) ? std::nullopt : std::optional<std::string>(r.Text(6))};
  });
}

absl::StatusOr<CheckpointRow> SqlDatabase::GetCheckpoint(const std::string& storage_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get checkpoint",
          "SELECT storage_id, trial_id, steps_completed, path, metadata_json, state "
          "FROM checkpoints WHERE storage_id = ?1");
  s.BindText(1, storage_id);
  COHORT_ASSIGN_OR_RETURN(bool found, s.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("checkpoint ", storage_id, " not found"));
  return ReadCheckpoint(s);
}

absl::Status SqlDatabase::PutTemplate(const TemplateRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "put template",
          "INSERT INTO templates (name, yaml) VALUES (?1, ?2) "
          "ON CONFLICT (name) DO UPDATE SET yaml = excluded.yaml");
  s.BindText(1, row.name);
  s.BindText(2, row.yaml);
  return s.Run();
}

absl::StatusOr<TemplateRow> SqlDatabase::GetTemplate(const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get template", absl::StrCat(kSelectTemplate, " WHERE name = ?1"));
  s.BindText(1, name);
  absl::StatusOr<bool> has_row = s.Step();
  if (!has_row.ok()) return has_row.status();
  if (!*has_row) return absl::NotFoundError(absl::StrCat("template '", name, "' not found"));
  return ReadTemplate(s);
}

absl::StatusOr<std::vector<TemplateRow>> SqlDatabase::ListTemplates() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list templates", absl::StrCat(kSelectTemplate, " ORDER BY name"));
  return ReadAll<TemplateRow>(s, ReadTemplate);
}

absl::Status SqlDatabase::DeleteTemplate(const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete template", "DELETE FROM templates WHERE name = ?1");
  s.BindText(1, name);
  return s.RunOnRow(absl::StrCat("template '", name, "'"));
}

absl::Status SqlDatabase::UpsertAgent(const AgentRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "upsert agent",
          "INSERT INTO agents (id, slots, host, enabled) VALUES (?1, ?2, ?3, ?4) "
          "ON CONFLICT (id) DO UPDATE SET slots = excluded.slots, host = excluded.host");
  s.BindText(1, row.id);
  s.BindInt64(2, row.slots);
  s.BindText(3, row.host);
  s.BindInt64(4, row.enabled ? 1 : 0);
  return s.Run();
}

absl::Status SqlDatabase::SetAgentEnabled(const std::string& id, bool enabled) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "set agent enabled", "UPDATE agents SET enabled = ?2 WHERE id = ?1");
  s.BindText(1, id);
  s.BindInt64(2, enabled ? 1 : 0);
  return s.RunOnRow(absl::StrCat("agent '", id, "'"));
}

absl::StatusOr<std::vector<AgentRow>> SqlDatabase::ListAgents() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list agents", "SELECT id, slots, host, enabled FROM agents ORDER BY id");
  return ReadAll<AgentRow>(s, [](const Query& r) {
    return AgentRow{r.Text(0), r.Int(1), r.Text(2), r.Int64(3) != 0};
  });
}

}  // namespace cohort::master
