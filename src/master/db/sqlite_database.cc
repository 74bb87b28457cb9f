// SqliteDatabase: opening a SQLite file for SqlDatabase (sqlite_database.h), and what only SQLite
// has (its size in pages, the WAL's checkpoints).

#include "master/db/sqlite_database.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/internal/sqlite_check.h"
#include "master/db/internal/sqlite_statement.h"
#include "master/db/internal/wal_checkpointer.h"
#include "master/db/sql/sqlite_driver.h"

namespace cohort::master {
namespace {

constexpr int kBusyTimeoutMs = 5000;
// How long a call waits for the one connection while others use it. Calls take milliseconds;
// only a stuck one (a disk that stopped answering) makes the others wait this long, and then
// they fail rather than hang.
constexpr absl::Duration kConnectionWait = absl::Seconds(30);

// A file database (WAL); ":memory:" and "" (SQLite's temporary one) have no WAL and no file to
// check.
bool IsFile(const std::string& path) { return path != ":memory:" && !path.empty(); }

// Refuses a file that is not an empty database or Cohort's, or that is damaged; says how the
// integrity check went.
absl::StatusOr<IntegrityCheck> Check(sqlite3* db, const std::string& path,
                                     const SqliteOptions& options) {
  if (!IsFile(path)) return IntegrityCheck::kSkipped;
  COHORT_ASSIGN_OR_RETURN(internal::DatabaseContent content, internal::CheckIdentity(db, path));
  if (content == internal::DatabaseContent::kEmpty) return IntegrityCheck::kSkipped;
  return internal::CheckIntegrity(db, path, options.check_time_limit);
}

// The connection's pragmas. WAL lets readers (the sqlite3 shell, a backup) run beside the
// master's writes; an in-memory database has no journal file to speak of.
absl::Status Configure(sqlite3* db, const std::string& path) {
  if (IsFile(path)) {
    COHORT_RETURN_IF_ERROR(internal::Exec(db, path, "set journal_mode", "PRAGMA journal_mode=WAL"));
  }
  COHORT_RETURN_IF_ERROR(internal::Exec(db, path, "set synchronous", "PRAGMA synchronous=NORMAL"));
  return internal::Exec(db, path, "enable foreign keys", "PRAGMA foreign_keys=ON");
}

// A pool that lends `connection`, its only one, to one call at a time.
std::unique_ptr<sql::ConnectionPool> PoolOfOne(std::unique_ptr<sql::Connection> connection,
                                               const std::string& path) {
  auto held = std::make_shared<std::unique_ptr<sql::Connection>>(std::move(connection));
  auto give = [held, path]() -> absl::StatusOr<std::unique_ptr<sql::Connection>> {
    // SQLite's connection never turns unhealthy, so the pool asks once; a second request means
    // the connection was lost, and a new one (a new in-memory database) would lose everything.
    if (*held == nullptr) return absl::InternalError(absl::StrCat(path, ": the connection closed"));
    return std::move(*held);
  };
  return std::make_unique<sql::ConnectionPool>(std::move(give), 1, kConnectionWait);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path,
                                                                     const SqliteOptions& options) {
  // FULLMUTEX (SQLite's own lock per call) is redundant with the pool of one and costs little;
  // it keeps the connection safe even if a future method shared it.
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = internal::SqliteError(db, path, "open", rc);
    sqlite3_close(db);
    return status;
  }
  std::unique_ptr<sql::Connection> connection = sql::AdoptSqlite(db, path);  // owns db from here
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  COHORT_ASSIGN_OR_RETURN(IntegrityCheck integrity, Check(db, path, options));
  COHORT_RETURN_IF_ERROR(Configure(db, path));
  std::unique_ptr<SqliteDatabase> database(
      new SqliteDatabase(PoolOfOne(std::move(connection), path), path, integrity));
  {
    COHORT_ASSIGN_OR_RETURN(Lease c, database->Connect());
    COHORT_RETURN_IF_ERROR(database->Migrate(*c));
  }
  if (IsFile(path)) {
    // Nothing else can see the database yet, so the hook is installed before any other call.
    COHORT_ASSIGN_OR_RETURN(database->checkpointer_, internal::WalCheckpointer::Start(db, path));
  }
  return database;
}

SqliteDatabase::SqliteDatabase(std::unique_ptr<sql::ConnectionPool> pool, const std::string& path,
                               IntegrityCheck integrity_check)
    : SqlDatabase(std::move(pool), SqliteDialect(), path), integrity_check_(integrity_check) {}

SqliteDatabase::~SqliteDatabase() {
  // The checkpointer's connection closes first: the main connection's close (with the pool,
  // after this) does the last checkpoint.
  checkpointer_.reset();
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
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  sql::Query s(*c, "database size",
               "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()");
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::InternalError(absl::StrCat(name(), ": the page count is missing"));
  return s.Int64(0);
}

absl::StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> database = SqliteDatabase::Open(path);
  if (!database.ok()) return database.status();
  return std::unique_ptr<Database>(std::move(*database));
}

}  // namespace cohort::master
