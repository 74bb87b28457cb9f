#include "master/db/sqlite_backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/internal/sqlite_check.h"
#include "master/db/internal/sqlite_statement.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using internal::Exec;
using internal::SqliteError;

struct CloseConnection {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, CloseConnection>;

absl::StatusOr<Connection> OpenConnection(const std::string& path, int flags,
                                          absl::Duration busy_timeout) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) return SqliteError(db.get(), path, "open", rc);
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), static_cast<int>(absl::ToInt64Milliseconds(busy_timeout)));
  return db;
}

// Flushes a file (or a directory's entries) to the disk.
absl::Status Sync(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::UnavailableError(absl::StrCat(path, ": open to sync: ", strerror(errno)));
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return absl::UnavailableError(absl::StrCat(path, ": fsync: ", strerror(error)));
  return absl::OkStatus();
}

// Opens `from` read-only, refuses a file that is not Cohort's database, and begins the read
// transaction whose snapshot the backup copies.
absl::StatusOr<Connection> OpenSource(const std::string& from, const BackupOptions& options) {
  std::error_code ec;
  if (!fs::exists(from, ec)) {
    return absl::NotFoundError(absl::StrCat(
        from, ": no database there; name the running master's --data-dir (or its --db)"));
  }
  COHORT_ASSIGN_OR_RETURN(Connection source,
                          OpenConnection(from, SQLITE_OPEN_READONLY, options.busy_timeout));
  COHORT_RETURN_IF_ERROR(Exec(source.get(), from, "begin the snapshot", "BEGIN"));
  COHORT_ASSIGN_OR_RETURN(internal::DatabaseContent content,
                          internal::CheckIdentity(source.get(), from));
  if (content == internal::DatabaseContent::kEmpty) {
    return absl::FailedPreconditionError(
        absl::StrCat(from, " holds no Cohort data yet: there is nothing to back up"));
  }
  return source;
}

// Copies every page of `source` into the new file `temp`, a step at a time.
absl::StatusOr<int64_t> CopyPages(sqlite3* source, const std::string& from, const std::string& temp,
                                  const BackupOptions& options) {
  COHORT_ASSIGN_OR_RETURN(
      Connection copy,
      OpenConnection(temp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, options.busy_timeout));
  sqlite3_backup* backup = sqlite3_backup_init(copy.get(), "main", source, "main");
  if (backup == nullptr) return SqliteError(copy.get(), temp, "begin the backup", SQLITE_ERROR);
  const absl::Time deadline = absl::Now() + options.busy_timeout;
  int rc = SQLITE_OK;
  while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    rc = sqlite3_backup_step(backup, options.pages_per_step);
    const int64_t total = sqlite3_backup_pagecount(backup);
    if (options.progress) options.progress(total - sqlite3_backup_remaining(backup), total);
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && absl::Now() >= deadline) break;
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) absl::SleepFor(absl::Milliseconds(50));
  }
  const int64_t pages = sqlite3_backup_pagecount(backup);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    return SqliteError(source, from, absl::StrCat("copy into ", temp), rc);
  }
  // The copy says WAL like its source; a rollback journal makes it one self-contained file
  // (no -wal or -shm beside it). A master opening it turns WAL on again.
  COHORT_RETURN_IF_ERROR(Exec(copy.get(), temp, "leave WAL mode", "PRAGMA journal_mode=DELETE"));
  return pages;
}

// The finished copy must be what SqliteDatabase::Open accepts.
absl::StatusOr<IntegrityCheck> CheckCopy(const std::string& temp, const BackupOptions& options) {
  COHORT_ASSIGN_OR_RETURN(Connection copy,
                          OpenConnection(temp, SQLITE_OPEN_READONLY, options.busy_timeout));
  COHORT_ASSIGN_OR_RETURN(internal::DatabaseContent content,
                          internal::CheckIdentity(copy.get(), temp));
  if (content != internal::DatabaseContent::kCohort) {
    return absl::InternalError(absl::StrCat(temp, ": the copy holds no Cohort schema"));
  }
  return internal::CheckIntegrity(copy.get(), temp, options.check_time_limit);
}

}  // namespace

absl::StatusOr<BackupResult> BackupSqliteDatabase(const std::string& from, const std::string& to,
                                                  const BackupOptions& options) {
  std::error_code ec;
  if (!options.overwrite && fs::exists(to, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        to, " exists; the backup will not replace it: name a new file, or add --overwrite"));
  }
  COHORT_ASSIGN_OR_RETURN(Connection source, OpenSource(from, options));
  const std::string temp = absl::StrCat(to, ".tmp-", ::getpid());
  fs::remove(temp, ec);
  absl::Cleanup remove_temp = [&] { fs::remove(temp, ec); };
  BackupResult result;
  COHORT_ASSIGN_OR_RETURN(result.pages, CopyPages(source.get(), from, temp, options));
  source.reset();  // ends the snapshot: the master may checkpoint its WAL again
  COHORT_ASSIGN_OR_RETURN(result.check, CheckCopy(temp, options));
  COHORT_RETURN_IF_ERROR(Sync(temp));
  fs::rename(temp, to, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("rename ", temp, " to ", to, ": ", ec.message()));
  }
  std::move(remove_temp).Cancel();
  const fs::path parent = fs::absolute(to, ec).parent_path();
  COHORT_RETURN_IF_ERROR(Sync(parent.string()));
  result.bytes = static_cast<int64_t>(fs::file_size(to, ec));
  return result;
}

}  // namespace cohort::master
