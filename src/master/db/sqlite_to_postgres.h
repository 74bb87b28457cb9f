#pragma once
// Moving a master from SQLite to PostgreSQL (cohort-master --migrate-from sqlite:PATH --db
// postgresql://...): every row of a Cohort SQLite database copied into an empty PostgreSQL
// database, in one PostgreSQL transaction (a copy stopped halfway leaves the target empty). The
// SQLite file is opened as a master would (checked, its schema brought up to date) and read in
// one transaction that holds its write lock, so nothing changes under the copy; it is not
// modified otherwise. Stop the master first: what it writes after the copy is not copied.
//
// Rows keep their ids and order (checkpoints and log policies' matches are read in insertion
// order); each identity continues after the larger of its table's largest id and SQLite's
// AUTOINCREMENT counter, so no id is ever handed out twice. Text that PostgreSQL cannot store
// (a NUL byte, invalid UTF-8: older masters stored log lines as printed) is stored cleaned
// (common/utf8_text.h) and counted. After the commit each table's row count is compared on both
// sides. Not thread-safe (one copy at a time; it owns its connections).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(CopyReport report,
//                           CopySqliteToPostgres("/var/lib/cohort/master.db", url, options, {}));

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "master/db/postgres_database.h"

namespace cohort::master {

struct CopyReport {
  int64_t tables = 0;
  int64_t rows = 0;
  int64_t cleaned_texts = 0;  // text values stored cleaned (NUL or invalid UTF-8 replaced)
};

// Called at least once per table and every few thousand rows: the table being copied, the rows
// copied of it so far and its row count.
using CopyProgress = std::function<void(const std::string& table, int64_t done, int64_t total)>;

// Copies the SQLite database at `sqlite_path` into the PostgreSQL database `url`. A target that
// holds any row (of any of Cohort's tables) is refused (FailedPrecondition naming the table);
// the source's refusals are SqliteDatabase::Open's; the target's errors are
// PostgresDatabase::Open's. A count that differs after the copy is DataLoss naming the table.
absl::StatusOr<CopyReport> CopySqliteToPostgres(const std::string& sqlite_path,
                                                const std::string& url,
                                                const PostgresDatabaseOptions& options,
                                                const CopyProgress& progress);

}  // namespace cohort::master
