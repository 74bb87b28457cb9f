#pragma once
// SqlDatabase: the master's Database (master/db/database.h) over the SQL driver interface
// (sql/driver.h, docs/design/0022), so that one implementation of every operation serves both
// backends. A call takes a connection from the pool it was given (sql/connection_pool.h) for its
// duration: SQLite's pool holds its one connection (calls run one at a time, as SQLite has one
// writer anyway); PostgreSQL's holds as many as the master has threads. A connection is lent to
// one call at a time, so no lock of this class guards it: the pool's lease is the exclusion.
// Operations that must be atomic run in one transaction (sql::RunTransaction: run again when a
// concurrent one won, PostgreSQL's serialization failure or SQLite's busy database).
//
// Thread-safe. A backend (SqliteDatabase) opens the database, migrates it, and adds what only it
// has (SizeBytes, BackendMetrics).

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/db/database.h"
#include "master/db/sql/connection_pool.h"
#include "master/db/sql/driver.h"
#include "master/db/sql_dialect.h"

namespace cohort::master {

class SqlDatabase : public Database {
 public:
  ~SqlDatabase() override;
  SqlDatabase(const SqlDatabase&) = delete;
  SqlDatabase& operator=(const SqlDatabase&) = delete;

  absl::StatusOr<int64_t> InsertExperiment(const ExperimentRow& row) override;
  absl::Status SetExperimentState(int64_t id, wire::ExperimentState state,
                                  const std::vector<DeliveryRow>& deliveries) override;
  absl::Status SetExperimentEnded(int64_t id, int64_t ended_ms) override;
  absl::Status SetExperimentArchived(int64_t id, bool archived) override;
  absl::Status SetExperimentMetadata(int64_t id, const std::string& name,
                                     const std::string& config_yaml) override;
  absl::Status SetExperimentScheduling(int64_t id, const ExperimentScheduling& scheduling) override;
  absl::Status ReopenExperiment(const ExperimentRow& experiment,
                                const std::vector<TrialRow>& trials,
                                const std::vector<DeliveryRow>& deliveries) override;
  absl::StatusOr<ExperimentRow> GetExperiment(int64_t id) override;
  absl::StatusOr<std::vector<ExperimentRow>> ListExperiments() override;
  absl::StatusOr<int64_t> CountExperimentsNamingContext(const std::string& context_path,
                                                        int64_t except) override;
  // sql_experiment_delete.cc
  absl::StatusOr<int64_t> DeleteExperimentRows(int64_t id, int64_t limit) override;

  // NotFound when the row's experiment does not exist.
  absl::StatusOr<int64_t> InsertTrial(const TrialRow& row) override;
  absl::Status UpdateTrial(const TrialRow& row) override;
  absl::StatusOr<TrialRow> GetTrial(int64_t id) override;
  absl::StatusOr<std::vector<TrialRow>> GetTrials(const std::vector<int64_t>& ids) override;
  absl::Status MarkTrialsRunning(
      const std::vector<std::pair<int64_t, std::string>>& trial_and_line) override;
  absl::StatusOr<std::vector<TrialRow>> ListTrials(std::optional<int64_t> experiment_id) override;
  absl::StatusOr<std::vector<TrialRow>> ListTrialsInStates(
      const std::vector<wire::TrialState>& states) override;
  absl::StatusOr<std::vector<TrialScheduleRow>> ListTrialsToSchedule() override;
  // DataLoss when a stored state is one this build does not know.
  absl::StatusOr<std::map<wire::TrialState, int64_t>> CountTrialsByState() override;

  // NotFound (and nothing written) when a row's trial does not exist.
  absl::Status InsertMetrics(const std::vector<MetricRow>& rows) override;
  // Empty for a trial without metrics, or one that does not exist.
  absl::StatusOr<std::vector<MetricRow>> ListMetrics(int64_t trial_id,
                                                     std::optional<std::string> kind) override;
  absl::StatusOr<std::vector<MetricRow>> ListMetricsPage(int64_t trial_id,
                                                         std::optional<std::string> kind,
                                                         int64_t after_id, int limit) override;

  // NotFound when the row's trial does not exist. ListCheckpoints: in insertion order.
  absl::Status InsertCheckpoint(const CheckpointRow& row) override;
  absl::StatusOr<std::vector<CheckpointRow>> ListCheckpoints(int64_t trial_id) override;
  absl::StatusOr<std::vector<GcCheckpointRow>> ListActiveCheckpoints(
      int64_t experiment_id) override;
  absl::StatusOr<CheckpointRow> GetCheckpoint(const std::string& storage_id) override;
  absl::Status MarkCheckpointDeleted(const std::string& storage_id) override;

  // Logs (sql_logs.cc). AppendLogs: NotFound (and nothing written) when the trial does not
  // exist.
  absl::StatusOr<int64_t> AppendLogs(
      int64_t trial_id, const std::vector<std::pair<int, std::string>>& rank_and_line) override;
  absl::Status AppendMasterLines(
      const std::vector<std::pair<int64_t, std::string>>& trial_and_line) override;
  // InvalidArgument for a negative limit; limit 0 returns nothing.
  absl::StatusOr<std::vector<LogRow>> ListLogs(int64_t trial_id, int64_t after_seq,
                                               std::optional<int> rank, int limit) override;
  absl::StatusOr<std::vector<LogRow>> ListLastLogs(int64_t trial_id, int limit,
                                                   std::optional<int> rank) override;
  absl::StatusOr<std::vector<LogStatsRow>> ListLogStats() override;
  absl::StatusOr<int64_t> DropLogLines(int64_t trial_id, int64_t keep_first, int64_t count,
                                       const std::string& reason) override;

  absl::StatusOr<int64_t> InsertWebhook(const WebhookRow& row) override;
  absl::StatusOr<std::vector<WebhookRow>> ListWebhooks() override;
  absl::Status DeleteWebhook(int64_t id) override;
  absl::Status InsertDeliveries(const std::vector<DeliveryRow>& rows) override;
  // InsertDeliveries' statements, inside a caller's transaction.
  absl::Status InsertDeliveriesIn(sql::Connection& c, const std::vector<DeliveryRow>& rows);
  absl::StatusOr<std::vector<DeliveryRow>> ListDueDeliveries(int64_t now_ms, int limit) override;
  absl::Status UpdateDelivery(const DeliveryRow& row) override;
  absl::StatusOr<std::vector<DeliveryRow>> ListDeliveries(int64_t webhook_id, int limit) override;
  absl::StatusOr<int64_t> InsertModel(const ModelRow& row) override;
  absl::StatusOr<ModelRow> GetModel(const std::string& name) override;
  absl::StatusOr<std::vector<ModelRow>> ListModels() override;
  absl::Status UpdateModel(const ModelRow& row) override;
  absl::Status DeleteModel(int64_t id) override;
  absl::StatusOr<ModelVersionRow> InsertModelVersion(const ModelVersionRow& row) override;
  absl::StatusOr<std::vector<ModelVersionRow>> ListModelVersions(int64_t model_id) override;
  absl::Status DeleteModelVersion(int64_t model_id, int64_t version) override;
  absl::StatusOr<std::vector<ModelVersionRow>> ListVersionsOfCheckpoints(
      const std::vector<std::string>& checkpoint_ids) override;

  absl::Status PutTemplate(const TemplateRow& row) override;
  absl::StatusOr<TemplateRow> GetTemplate(const std::string& name) override;
  absl::StatusOr<std::vector<TemplateRow>> ListTemplates() override;
  absl::Status DeleteTemplate(const std::string& name) override;

  // A new agent is stored as given; a known one gets the new slots and host and keeps its
  // stored `enabled` (so re-registering after a master restart does not undo a disable).
  absl::Status UpsertAgent(const AgentRow& row) override;
  absl::Status SetAgentEnabled(const std::string& id, bool enabled) override;
  absl::StatusOr<std::vector<AgentRow>> ListAgents() override;
  absl::Status InsertAllocation(const AllocationRow& row) override;
  absl::Status InsertAllocations(const std::vector<AllocationRow>& rows) override;
  absl::Status DeleteAllocation(const std::string& id) override;
  absl::StatusOr<std::vector<AllocationRow>> ListAllocations() override;

  // Time series (sql_series.cc).
  absl::Status InsertPoints(int64_t trial_id, const std::vector<PointRow>& points) override;
  absl::Status InsertMetricsAndPoints(int64_t trial_id, const std::vector<MetricRow>& metrics,
                                      const std::vector<PointRow>& points) override;
  std::vector<OutputRowsWritten> WriteOutputs(const std::vector<OutputRows>& items) override;
  absl::StatusOr<std::vector<SeriesRow>> ListSeries(int64_t trial_id) override;
  absl::StatusOr<std::vector<PointRow>> QueryPoints(const PointQuery& query) override;

  // Step timelines and timings (sql_profiles.cc).
  absl::Status InsertStepProfiles(int64_t trial_id, const std::vector<StepProfileRow>& rows,
                                  const std::vector<StepTimingRow>& timings) override;
  absl::StatusOr<int64_t> CountStepProfiles(int64_t trial_id) override;
  absl::StatusOr<std::vector<StepProfileRow>> ListStepProfiles(int64_t trial_id, int64_t min_batch,
                                                               int64_t max_batch,
                                                               int limit) override;
  absl::StatusOr<std::vector<StepProfileRow>> ListRankStepProfiles(int64_t trial_id, int rank,
                                                                   int64_t stride,
                                                                   int limit) override;
  absl::StatusOr<std::vector<StepTimingRow>> ListStepTimings(int64_t trial_id) override;

  // Users and tokens (sql_users.cc).
  absl::StatusOr<int64_t> InsertUser(const UserRow& row) override;
  absl::StatusOr<UserRow> GetUser(int64_t id) override;
  absl::StatusOr<UserRow> GetUserByName(const std::string& name) override;
  absl::StatusOr<std::vector<UserRow>> ListUsers() override;
  absl::Status UpdateUser(const UserRow& row) override;
  // NotFound when the row's user does not exist.
  absl::Status InsertToken(const TokenRow& row) override;
  absl::StatusOr<TokenRow> GetToken(const std::string& hash) override;
  absl::Status DeleteToken(const std::string& hash) override;
  absl::Status DeleteUserTokens(int64_t user_id) override;
  absl::StatusOr<int64_t> DeleteExpiredTokens(int64_t now_ms) override;

  // Log policies' matches (sql_log_policies.cc).
  absl::Status InsertLogPolicyMatch(int64_t trial_id, const wire::LogPolicyMatch& m) override;
  absl::StatusOr<std::vector<std::pair<int64_t, wire::LogPolicyMatch>>> ListLogPolicyMatches()
      override;

 protected:
  // `pool` lends the database's connections, whose SQL is `dialect`'s; `name` names the
  // database in errors (a path, a masked URL).
  SqlDatabase(std::unique_ptr<sql::ConnectionPool> pool, const SqlDialect& dialect,
              std::string name);

  using Lease = sql::ConnectionPool::Lease;
  // A connection for one call: the pool's error (Unavailable while the server is down,
  // DeadlineExceeded when every connection stayed busy) otherwise.
  absl::StatusOr<Lease> Connect() { return pool_->Acquire(); }
  const std::string& name() const { return name_; }
  const SqlDialect& dialect() const { return dialect_; }

  // Brings the schema up to date with the dialect's migrations, one transaction per version,
  // recorded in schema_version. A schema newer than this build knows is FailedPrecondition
  // naming the database.
  absl::Status Migrate(sql::Connection& c);

 private:
  // Runs `body` on one connection inside one transaction: committed when it returns OK, rolled
  // back otherwise (its error returned), run again when a concurrent transaction won. `body`
  // may run more than once: it must start from scratch each time.
  absl::Status Transact(absl::FunctionRef<absl::Status(sql::Connection&)> body);

  // Log drops (sql_logs.cc), inside DropLogLines' transaction: DropLinesIn is its body. DropStart:
  // the seq after which lines are dropped (none: nothing lies past keep_first). DropRange: the
  // `count` oldest lines after `after` but the marker.
  struct DropRange {
    int64_t first = 0, last = 0;  // seqs
    int64_t lines = 0, bytes = 0;
  };
  absl::StatusOr<int64_t> DropLinesIn(sql::Connection& c, int64_t trial_id, int64_t keep_first,
                                      int64_t count, const std::string& reason);
  static absl::StatusOr<std::optional<int64_t>> DropStart(sql::Connection& c, int64_t trial_id,
                                                          int64_t keep_first, int64_t marker_seq);
  absl::StatusOr<DropRange> FindDropRange(sql::Connection& c, int64_t trial_id, int64_t after,
                                          int64_t marker_seq, int64_t count);

  // A log line to append (`line` outlives the call).
  struct LineToAppend {
    int64_t trial_id = 0;
    int rank = 0;
    const std::string* line = nullptr;
  };
  // AppendLogs and AppendMasterLines: AppendLinesIn in a transaction, or on PostgreSQL for
  // up to 64 lines in the one statement that also counts them (no transaction: one round trip).
  absl::StatusOr<int64_t> AppendLines(const std::vector<LineToAppend>& rows);

  // The bodies of the writes that run inside a caller's transaction on `c`.
  // Appends the lines, up to 64 per statement, and adds them to their trials' log_stats;
  // returns the last seq. NotFound naming the statement's trials when one does not exist.
  absl::StatusOr<int64_t> AppendLinesIn(sql::Connection& c, const std::vector<LineToAppend>& rows);
  // The largest seq among the rows `s` returns (its first column); NotFound naming `trials`
  // when it failed on a foreign key.
  static absl::StatusOr<int64_t> LastSeqOf(sql::Query& s, const std::set<int64_t>& trials);
  // Adds (lines, bytes) to each trial's log_stats row.
  static absl::Status CountLinesIn(sql::Connection& c,
                                   const std::map<int64_t, std::pair<int64_t, int64_t>>& added);
  absl::StatusOr<int64_t> AppendLogsIn(
      sql::Connection& c, int64_t trial_id,
      const std::vector<std::pair<int, std::string>>& rank_and_line);
  static absl::Status InsertMetricsIn(sql::Connection& c, const std::vector<MetricRow>& rows);
  static absl::Status InsertCheckpointIn(sql::Connection& c, const CheckpointRow& row);
  static absl::Status InsertPointsIn(sql::Connection& c, int64_t trial_id,
                                     const std::vector<PointRow>& points);
  // `values` sorted, each once (the values of IN lists read in chunks).
  template <typename T>
  static std::vector<T> SortedDistinct(std::vector<T> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }
  // (name, label) -> id of a trial's series.
  using SeriesIds = std::map<std::pair<std::string, std::string>, int64_t>;
  // Those of the trial's series that `points` name (by name), in one read per 256 names.
  static absl::StatusOr<SeriesIds> KnownSeriesIn(sql::Connection& c, int64_t trial_id,
                                                 const std::vector<PointRow>& points);
  // The id of the series (trial, name, label), created when missing.
  static absl::StatusOr<int64_t> SeriesIdIn(sql::Connection& c, int64_t trial_id,
                                            const std::string& name, const std::string& label);
  // WriteOutputs' parts (sql_outputs.cc) inside its transaction. An error returned means the
  // transaction itself failed; the part's own result is *part.
  absl::Status WriteOutputIn(sql::Connection& c, const OutputRows& item,
                             OutputRowsWritten& written);
  static absl::Status InSavepoint(sql::Connection& c, absl::FunctionRef<absl::Status()> body,
                                  absl::Status* part);
  // WriteOutputs' first try: every part of `item` without savepoints (any failure fails the
  // transaction, which WriteOutputs then runs again with WriteOutputIn's savepoints).
  absl::Status WriteOutputAtOnce(sql::Connection& c, const OutputRows& item,
                                 OutputRowsWritten& written);
  // An item's report rows: checkpoints (one already stored is a report sent again, not an
  // error), metrics, points, then its trial's report fields (written.trial: the row after).
  absl::Status WriteReportsIn(sql::Connection& c, const OutputRows& item,
                              OutputRowsWritten& written);
  // Writes the fields a report changed, and only those, in one statement; returns the row as
  // it is after. NotFound when the trial does not exist.
  static absl::StatusOr<TrialRow> UpdateTrialReportIn(sql::Connection& c, int64_t id,
                                                      const TrialReportFields& fields);

  // Migrate's loop, under the dialect's migration lock.
  absl::Status MigrateLocked(sql::Connection& c);

  const std::unique_ptr<sql::ConnectionPool> pool_;
  const SqlDialect& dialect_;
  const std::string name_;
};

}  // namespace cohort::master
