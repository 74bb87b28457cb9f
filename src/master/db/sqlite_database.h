#pragma once
// SqliteDatabase: the master's Database (master/db/database.h) in one SQLite file. Thread-safe:
// every method takes one mutex (mu_, an Mutex whose annotations clang's thread-safety
// analysis checks) around the single connection, so calls run one at a time.
// That is simple and correct, and enough for the master: SQLite admits one writer at a time
// anyway, and a call costs well under a millisecond (a batch of log lines: a few).
//
// Storage notes:
//  * File databases use WAL with synchronous=NORMAL: a commit survives a crash of the master;
//    a power loss may drop the last commits but never corrupts the file. FULL would sync the
//    disk on every log batch. Their checkpoints run on a thread of their own
//    (internal/wal_checkpointer.h), not inside a caller's commit under the mutex.
//  * SQLite stores a NaN as NULL, so a NaN searcher_metric reads back as absent.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> db, SqliteDatabase::Open(path));
//   COHORT_ASSIGN_OR_RETURN(int64_t seq, db->AppendLogs(trial_id, {{0, "epoch 1"}}));

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "master/db/database.h"

struct sqlite3;

namespace cohort::master {
namespace internal {
class StatementCache;
class WalCheckpointer;
}  // namespace internal

// How the integrity check of an existing file went when it was opened.
enum class IntegrityCheck {
  kPassed,    // PRAGMA quick_check read the whole file and found nothing wrong
  kCutShort,  // stopped at SqliteOptions::check_time_limit with nothing found so far
  kSkipped,   // a new (empty) or in-memory database, or a zero time limit
};

// Write-ahead-log checkpoints since the database was opened (internal/wal_checkpointer.h): run
// on the checkpointer's thread (background), and by a writer because the log had passed its
// bound (by_writer). Zeros for an in-memory database, which has no log.
struct WalCheckpoints {
  int64_t background = 0;
  int64_t by_writer = 0;
};

struct SqliteOptions {
  // How long opening an existing file may spend checking its pages (PRAGMA quick_check reads
  // all of them: about a second per GB on a local SSD). Past it the check stops and the file is
  // used (IntegrityCheck::kCutShort); zero skips it.
  absl::Duration check_time_limit = absl::Seconds(60);
};

class SqliteDatabase final : public Database {
 public:
  // Opens (creating if needed) the database at `path` (":memory:": a private in-memory one)
  // and applies the migrations it has not seen. Before it writes anything it checks that the
  // file is an empty database or Cohort's, and undamaged (internal/sqlite_check.h): a file
  // that is not SQLite, or another program's database, is FailedPrecondition; a damaged one
  // is DataLoss; each names the file and the way out, and the file is left as it was. A path
  // that cannot be opened is Unavailable naming it and SQLite's reason; a schema newer than
  // this build knows is FailedPrecondition.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path,
                                                              const SqliteOptions& options = {});
  ~SqliteDatabase() override;

  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  absl::StatusOr<int64_t> InsertExperiment(const ExperimentRow& row) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetExperimentState(int64_t id, wire::ExperimentState state) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetExperimentEnded(int64_t id, int64_t ended_ms) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetExperimentArchived(int64_t id, bool archived) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetExperimentScheduling(int64_t id, const ExperimentScheduling& scheduling) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<ExperimentRow> GetExperiment(int64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<ExperimentRow>> ListExperiments() override ABSL_LOCKS_EXCLUDED(mu_);
  // sqlite_experiment_delete.cc
  absl::StatusOr<int64_t> DeleteExperimentRows(int64_t id, int64_t limit) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // NotFound when the row's experiment does not exist.
  absl::StatusOr<int64_t> InsertTrial(const TrialRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status UpdateTrial(const TrialRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<TrialRow> GetTrial(int64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<TrialRow>> ListTrials(std::optional<int64_t> experiment_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<TrialRow>> ListTrialsInStates(
      const std::vector<wire::TrialState>& states) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<TrialScheduleRow>> ListTrialsToSchedule() override
      ABSL_LOCKS_EXCLUDED(mu_);
  // DataLoss when a stored state is one this build does not know.
  absl::StatusOr<std::map<wire::TrialState, int64_t>> CountTrialsByState() override
      ABSL_LOCKS_EXCLUDED(mu_);

  // NotFound (and nothing written) when a row's trial does not exist.
  absl::Status InsertMetrics(const std::vector<MetricRow>& rows) override ABSL_LOCKS_EXCLUDED(mu_);
  // Empty for a trial without metrics, or one that does not exist.
  absl::StatusOr<std::vector<MetricRow>> ListMetrics(int64_t trial_id,
                                                     std::optional<std::string> kind) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<MetricRow>> ListMetricsPage(int64_t trial_id,
                                                         std::optional<std::string> kind,
                                                         int64_t after_id, int limit) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // NotFound when the row's trial does not exist. ListCheckpoints: in insertion order.
  absl::Status InsertCheckpoint(const CheckpointRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<CheckpointRow>> ListCheckpoints(int64_t trial_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<GcCheckpointRow>> ListActiveCheckpoints(int64_t experiment_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<CheckpointRow> GetCheckpoint(const std::string& storage_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status MarkCheckpointDeleted(const std::string& storage_id) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Logs (sqlite_logs.cc). AppendLogs: NotFound (and nothing written) when the trial does not
  // exist.
  absl::StatusOr<int64_t> AppendLogs(
      int64_t trial_id, const std::vector<std::pair<int, std::string>>& rank_and_line) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status AppendMasterLines(const std::vector<std::pair<int64_t, std::string>>& trial_and_line)
      override ABSL_LOCKS_EXCLUDED(mu_);
  // InvalidArgument for a negative limit; limit 0 returns nothing.
  absl::StatusOr<std::vector<LogRow>> ListLogs(int64_t trial_id, int64_t after_seq,
                                               std::optional<int> rank, int limit) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<LogRow>> ListLastLogs(int64_t trial_id, int limit,
                                                   std::optional<int> rank) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<LogStatsRow>> ListLogStats() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> DropLogLines(int64_t trial_id, int64_t keep_first, int64_t count,
                                       const std::string& reason) override ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status PutTemplate(const TemplateRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<TemplateRow> GetTemplate(const std::string& name) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<TemplateRow>> ListTemplates() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteTemplate(const std::string& name) override ABSL_LOCKS_EXCLUDED(mu_);

  // A new agent is stored as given; a known one gets the new slots and host and keeps its
  // stored `enabled` (so re-registering after a master restart does not undo a disable).
  absl::Status UpsertAgent(const AgentRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status SetAgentEnabled(const std::string& id, bool enabled) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<AgentRow>> ListAgents() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status InsertAllocation(const AllocationRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteAllocation(const std::string& id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<AllocationRow>> ListAllocations() override ABSL_LOCKS_EXCLUDED(mu_);

  // Time series (sqlite_series.cc).
  absl::Status InsertPoints(int64_t trial_id, const std::vector<PointRow>& points) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status InsertMetricsAndPoints(int64_t trial_id, const std::vector<MetricRow>& metrics,
                                      const std::vector<PointRow>& points) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<OutputRowsWritten> WriteOutputs(const std::vector<OutputRows>& items) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<SeriesRow>> ListSeries(int64_t trial_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<PointRow>> QueryPoints(const PointQuery& query) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Step timelines and timings (sqlite_profiles.cc).
  absl::Status InsertStepProfiles(int64_t trial_id, const std::vector<StepProfileRow>& rows,
                                  const std::vector<StepTimingRow>& timings) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> CountStepProfiles(int64_t trial_id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<StepProfileRow>> ListStepProfiles(int64_t trial_id, int64_t min_batch,
                                                               int64_t max_batch,
                                                               int limit) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<StepProfileRow>> ListRankStepProfiles(int64_t trial_id, int rank,
                                                                   int64_t stride,
                                                                   int limit) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<StepTimingRow>> ListStepTimings(int64_t trial_id) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Users and tokens (sqlite_users.cc).
  absl::StatusOr<int64_t> InsertUser(const UserRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<UserRow> GetUser(int64_t id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<UserRow> GetUserByName(const std::string& name) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<UserRow>> ListUsers() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status UpdateUser(const UserRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  // NotFound when the row's user does not exist.
  absl::Status InsertToken(const TokenRow& row) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<TokenRow> GetToken(const std::string& hash) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteToken(const std::string& hash) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteUserTokens(int64_t user_id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> DeleteExpiredTokens(int64_t now_ms) override ABSL_LOCKS_EXCLUDED(mu_);

  // Log policies' matches (sqlite_log_policies.cc).
  absl::Status InsertLogPolicyMatch(int64_t trial_id, const wire::LogPolicyMatch& m) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<std::pair<int64_t, wire::LogPolicyMatch>>> ListLogPolicyMatches()
      override ABSL_LOCKS_EXCLUDED(mu_);

  // The database's pages (page_count x page_size): the main file's size, or the memory an
  // in-memory database holds. Pages still only in the write-ahead log (the -wal file, until
  // SQLite's next checkpoint) and free pages inside the file are not told apart from the rest.
  absl::StatusOr<int64_t> SizeBytes() override ABSL_LOCKS_EXCLUDED(mu_);
  // The WAL's checkpoints (wal_checkpoints()) as the counter "wal_checkpoints_total", labelled
  // by="checkpointer" (background) and by="writer" (by_writer).
  std::vector<BackendMetric> BackendMetrics() override;
  WalCheckpoints wal_checkpoints() const;

  // How Open's integrity check went (for the master to report).
  IntegrityCheck integrity_check() const { return integrity_check_; }

 private:
  SqliteDatabase(sqlite3* db, std::string path);

  // Check, Configure and Migrate are called once each by Open, in that order, with mu_ held
  // (no other thread can see the database yet, so the lock is never contended; it is taken so
  // that the analysis checks their use of db_ and statements_ like everyone else's).
  //
  // Refuses a file that is not an empty database or Cohort's, or that is damaged; sets
  // integrity_check_.
  absl::Status Check(const SqliteOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Sets the connection's pragmas. Migrate brings the schema up to date.
  absl::Status Configure() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A file database (WAL); ":memory:" and "" (SQLite's temporary one) have no WAL.
  bool InWal() const { return path_ != ":memory:" && !path_.empty(); }
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Log drops (sqlite_logs.cc), under mu_ inside DropLogLines' transaction. DropStartLocked:
  // the seq after which lines are dropped (none: nothing lies past keep_first).
  // DropRangeLocked: the `count` oldest lines after `after` but the marker.
  struct DropRange {
    int64_t first = 0, last = 0;  // seqs
    int64_t lines = 0, bytes = 0;
  };
  absl::StatusOr<std::optional<int64_t>> DropStartLocked(int64_t trial_id, int64_t keep_first,
                                                         int64_t marker_seq)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<DropRange> DropRangeLocked(int64_t trial_id, int64_t after, int64_t marker_seq,
                                            int64_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Runs `body` with mu_ held inside one transaction: committed when it returns OK, rolled
  // back otherwise (its error returned). The analysis cannot see through the FunctionRef: a
  // body that needs mu_ says so itself, as a lambda
  // `[&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {...}`.
  absl::Status WriteTransaction(absl::FunctionRef<absl::Status()> body) ABSL_LOCKS_EXCLUDED(mu_);
  // The bodies of InsertMetrics and InsertPoints: mu_ held, inside the caller's transaction.
  // AppendLogs' body: mu_ held, inside the caller's transaction.
  absl::StatusOr<int64_t> AppendLogsLocked(
      int64_t trial_id, const std::vector<std::pair<int, std::string>>& rank_and_line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertMetricsLocked(const std::vector<MetricRow>& rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertCheckpointLocked(const CheckpointRow& row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WriteOutputs' parts (sqlite_outputs.cc), mu_ held inside its transaction. An error
  // returned means the transaction itself failed; the part's own result is *part. Like
  // WriteTransaction's, InSavepointLocked's body runs with mu_ held and is annotated so.
  absl::Status WriteOutputLocked(const OutputRows& item, OutputRowsWritten& written)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InSavepointLocked(absl::FunctionRef<absl::Status()> body, absl::Status* part)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertPointsLocked(int64_t trial_id, const std::vector<PointRow>& points)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The id of the series (trial, name, label), created when missing; call under mu_ inside a
  // transaction.
  absl::StatusOr<int64_t> SeriesIdLocked(int64_t trial_id, const std::string& name,
                                         const std::string& label)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One connection behind one mutex: simple and correct (see the file comment). mu_ guards
  // the connection and its statement cache; the destructor uses both without it (nothing else
  // can call in by then).
  Mutex mu_;
  // Owned. The pointer never changes, but every use of it is a use of the connection (SQLite
  // takes it by value, so ABSL_PT_GUARDED_BY would check nothing): guarding the member makes
  // each use need mu_. Open sets the connection up (result codes, busy timeout, the
  // checkpointer's WAL hook) through its local copy, before any other thread can see it.
  sqlite3* const db_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  // db_'s prepared statements (internal/sqlite_statement.h).
  const std::unique_ptr<internal::StatementCache> statements_ ABSL_PT_GUARDED_BY(mu_);
  // A file database's checkpoints, off db_'s callers' path (internal/wal_checkpointer.h). Not
  // guarded: set by Open before it returns the database, only read after (the checkpointer
  // has a lock of its own), and reset by the destructor.
  std::unique_ptr<internal::WalCheckpointer> checkpointer_;
  // Not guarded: written by Check during Open (with mu_ held), only read once Open has
  // returned.
  IntegrityCheck integrity_check_ = IntegrityCheck::kSkipped;
};

}  // namespace cohort::master
