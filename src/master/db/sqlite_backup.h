#pragma once
// BackupSqliteDatabase: a consistent copy of the master's SQLite database taken while a master
// keeps writing to it (`cohort-master --backup FILE`), with SQLite's online backup API. The
// copy is a database like the original: start a master with `--db FILE` (or put it at
// DATA_DIR/master.db) to restore it. Thread-safe (no shared state).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(BackupResult done,
//                           BackupSqliteDatabase("/var/lib/cohort/master.db", "backup.db", {}));

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/db/sqlite_database.h"

namespace cohort::master {

struct BackupOptions {
  bool overwrite = false;  // replace an existing destination (else AlreadyExists)
  // Called after every step with the pages copied so far and the database's pages.
  std::function<void(int64_t copied_pages, int64_t total_pages)> progress;
  // Pages copied per step (4 KiB each). Between steps the copy's own lock is released; the
  // snapshot it copies is held for the whole backup.
  int pages_per_step = 256;
  // How long to wait for a lock the running master holds (it checkpoints now and then).
  absl::Duration busy_timeout = absl::Seconds(30);
  // How long the check of the finished copy may take (SqliteOptions::check_time_limit).
  absl::Duration check_time_limit = absl::Minutes(10);
};

struct BackupResult {
  int64_t pages = 0;
  int64_t bytes = 0;  // the copy's size
  IntegrityCheck check = IntegrityCheck::kSkipped;
};

// Copies the database `from` into `to` as it was at one moment: every transaction committed
// before the copy began and none after, however long the copy takes (it reads one snapshot;
// with WAL a running master's writes go on meanwhile, into its -wal file). `from` is opened
// read-only and is first checked to be Cohort's (SqliteDatabase::Open's refusals apply). The
// copy is written to `to`.tmp-PID beside `to`, checked (Cohort's schema, PRAGMA quick_check),
// synced and then renamed to `to`, so `to` never names a partial or unchecked copy; on error
// the temporary file is removed.
// Errors: AlreadyExists when `to` exists and !overwrite; NotFound when `from` does not exist;
// FailedPrecondition or DataLoss for a `from` that is not Cohort's or is damaged (and for an
// empty one: nothing to back up); Unavailable for I/O errors and locks held past busy_timeout;
// each names the file.
absl::StatusOr<BackupResult> BackupSqliteDatabase(const std::string& from, const std::string& to,
                                                  const BackupOptions& options);

}  // namespace cohort::master
