#pragma once
// SqliteDatabase: the master's Database (master/db/database.h) in one SQLite file: SqlDatabase's
// operations (sql_database.h) on one connection, lent to one call at a time (a pool of one), so
// calls run one at a time. That is simple and correct, and enough for the master: SQLite admits
// one writer at a time anyway, and a call costs well under a millisecond (a batch of log lines:
// a few). Thread-safe.
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/db/sql_database.h"

struct sqlite3;

namespace cohort::master {
namespace internal {
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

class SqliteDatabase final : public SqlDatabase {
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

  // The database's pages (page_count x page_size): the main file's size, or the memory an
  // in-memory database holds. Pages still only in the write-ahead log (the -wal file, until
  // SQLite's next checkpoint) and free pages inside the file are not told apart from the rest.
  absl::StatusOr<int64_t> SizeBytes() override;
  // The WAL's checkpoints (wal_checkpoints()) as the counter "wal_checkpoints_total", labelled
  // by="checkpointer" (background) and by="writer" (by_writer).
  std::vector<BackendMetric> BackendMetrics() override;
  WalCheckpoints wal_checkpoints() const;

  // How Open's integrity check went (for the master to report).
  IntegrityCheck integrity_check() const { return integrity_check_; }

 private:
  SqliteDatabase(std::unique_ptr<sql::ConnectionPool> pool, const std::string& path,
                 IntegrityCheck integrity_check);

  // A file database's checkpoints, off the callers' path (internal/wal_checkpointer.h). Set by
  // Open before it returns the database, only read after (the checkpointer has a lock of its
  // own), and reset by the destructor before the connection closes.
  std::unique_ptr<internal::WalCheckpointer> checkpointer_;
  const IntegrityCheck integrity_check_;
};

}  // namespace cohort::master
