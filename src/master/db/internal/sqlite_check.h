#pragma once
// Whether an SQLite file is one cohort-master may use: an empty database (a new cluster) or
// Cohort's own schema, undamaged. SqliteDatabase::Open runs these checks before it writes
// anything, so a foreign or damaged file is refused as it was found; BackupSqliteDatabase runs
// them on the copy it made. Not thread-safe: the caller owns the connection.
//
// Every refusal names the file, says what is wrong with it and what to do:
//   * not an SQLite file (text, a truncated header): FailedPrecondition;
//   * an SQLite database with tables but no `schema_version` (another program's):
//   FailedPrecondition;
//   * damaged (a page SQLite cannot read, quick_check's findings, Cohort's tables missing or
//     schema_version not 1..N): DataLoss.

#include <sqlite3.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/db/sqlite_database.h"

namespace cohort::master::internal {

// What the file holds: nothing yet, or Cohort's schema (at some version >= 1; a version newer
// than this build is left for the migrations to refuse).
enum class DatabaseContent { kEmpty, kCohort };

// Reads the schema (sqlite_master and schema_version): cheap whatever the database's size.
absl::StatusOr<DatabaseContent> CheckIdentity(sqlite3* db, const std::string& path);

// PRAGMA quick_check over the whole file (every page and b-tree, not index contents), stopped
// after `time_limit` (the file was read that far without a finding: kCutShort); a zero limit
// skips it (kSkipped). DataLoss naming the first findings when it finds damage.
absl::StatusOr<IntegrityCheck> CheckIntegrity(sqlite3* db, const std::string& path,
                                              absl::Duration time_limit);

}  // namespace cohort::master::internal
