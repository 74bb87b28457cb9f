#pragma once
// SQLite plumbing under the SQLite driver (sql/sqlite_driver.h) and SQLite's own tools (the
// file checks, the backup): errors as Statuses naming the file and the operation, prepared
// statements that keep their first error (and are prepared once per connection:
// StatementCache). Not thread-safe: a connection is used by one thread at a time.

#include <sqlite3.h>

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "cohort/status.h"
#include "master/db/sql/driver.h"

namespace cohort::master::internal {

// A failed SQLite call on `db` as a Status naming the file, the operation and SQLite's reason.
// Unavailable when the cause lies outside the master and may pass (locked, I/O, disk full, a
// file that cannot be opened); Internal otherwise.
inline absl::Status SqliteError(sqlite3* db, const std::string& path, absl::string_view what,
                                int rc) {
  const char* reason = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = absl::StrCat(path, ": ", what, ": ", reason);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

// Runs SQL that binds no values (pragmas, transaction control, migration scripts).
inline absl::Status Exec(sqlite3* db, const std::string& path, absl::string_view what,
                         const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, path, what, rc);
  return absl::OkStatus();
}

// A connection's prepared statements, kept for reuse by their SQL text: compiling SQL costs
// more than running most of the master's statements (a log post, a report, a token check), and
// the master runs the same few dozen texts thousands of times a second under load. A statement
// is taken out while in use (so the same text may run nested) and given back reset, with its
// bindings cleared; at most kMaxFree wait, any beyond are finalized. Owned by SqliteDatabase;
// Clear() before the connection closes.
class StatementCache {
 public:
  static constexpr size_t kMaxFree = 256;

  explicit StatementCache(sqlite3* db) : db_(db) {}
  ~StatementCache() { Clear(); }
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  sqlite3* db() const { return db_; }
  // A statement for `sql`: a cached one, else newly prepared (SQLite's result code in *rc,
  // nullptr on failure).
  sqlite3_stmt* Take(absl::string_view sql, int* rc) {
    *rc = SQLITE_OK;
    auto it = free_.find(std::string(sql));
    if (it != free_.end()) {
      sqlite3_stmt* stmt = it->second;
      free_.erase(it);
      return stmt;
    }
    sqlite3_stmt* stmt = nullptr;
    *rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                             SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    return *rc == SQLITE_OK ? stmt : nullptr;
  }
  // Takes `stmt` (of `sql`) back for reuse.
  void Give(absl::string_view sql, sqlite3_stmt* stmt) {
    if (stmt == nullptr) return;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (free_.size() >= kMaxFree) {
      sqlite3_finalize(stmt);
      return;
    }
    free_.emplace(std::string(sql), stmt);
  }
  void Clear() {
    for (auto& [sql, stmt] : free_) sqlite3_finalize(stmt);
    free_.clear();
  }

 private:
  sqlite3* const db_;
  std::unordered_multimap<std::string, sqlite3_stmt*> free_;
};

// One prepared statement. A failure to prepare or to bind is kept and returned by the next
// Step, so a caller checks once per statement. Column and parameter indexes follow SQLite:
// parameters from 1 (?1, ?2, ...), columns from 0.
class Statement {
 public:
  // Prepared for this use only (the integrity check, tests).
  Statement(sqlite3* db, const std::string& path, absl::string_view what, absl::string_view sql)
      : db_(db), path_(path), what_(what) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc_ != SQLITE_OK) error_ = SqliteError(db_, path_, what_, rc_);
  }
  // Taken from `cache` and given back to it when done.
  Statement(StatementCache& cache, const std::string& path, absl::string_view what,
            absl::string_view sql)
      : db_(cache.db()), path_(path), what_(what), cache_(&cache), sql_(sql) {
    stmt_ = cache.Take(sql, &rc_);
    if (rc_ != SQLITE_OK) error_ = SqliteError(db_, path_, what_, rc_);
  }
  ~Statement() {
    if (cache_ != nullptr) {
      cache_->Give(sql_, stmt_);
    } else {
      sqlite3_finalize(stmt_);
    }
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void BindInt64(int index, int64_t value) {
    if (error_.ok()) Check(sqlite3_bind_int64(stmt_, index, value));
  }
  void BindDouble(int index, double value) {
    if (error_.ok()) Check(sqlite3_bind_double(stmt_, index, value));
  }
  void BindNull(int index) {
    if (error_.ok()) Check(sqlite3_bind_null(stmt_, index));
  }
  void BindText(int index, absl::string_view value) {
    if (!error_.ok()) return;
    if (value.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      Check(SQLITE_TOOBIG);
      return;
    }
    // SQLITE_TRANSIENT: SQLite copies the text, so a binding never outlives its string.
    Check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                            SQLITE_TRANSIENT));
  }

  // Advances: true when a row is ready to read, false when the statement is done.
  absl::StatusOr<bool> Step() {
    if (!error_.ok()) return error_;
    rc_ = sqlite3_step(stmt_);
    if (rc_ == SQLITE_ROW) return true;
    if (rc_ == SQLITE_DONE) return false;
    return SqliteError(db_, path_, what_, rc_);
  }
  // Runs a statement that returns no rows, then resets it for new bindings.
  absl::Status Run() {
    absl::StatusOr<bool> row = Step();
    sqlite3_reset(stmt_);
    return row.status();
  }
  // Ends the current run; the bindings stay.
  void Reset() { sqlite3_reset(stmt_); }
  // The (extended) result code of the last prepare, bind or step: tells which constraint
  // failed (SQLITE_CONSTRAINT_FOREIGNKEY, SQLITE_CONSTRAINT_PRIMARYKEY).
  int code() const { return rc_; }

  int64_t Int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  int Int(int column) const { return sqlite3_column_int(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return "";
    return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
  }

 private:
  void Check(int rc) {
    if (rc == SQLITE_OK) return;
    rc_ = rc;
    error_ = SqliteError(db_, path_, what_, rc);
  }

  sqlite3* const db_;
  const std::string& path_;
  const std::string what_;
  StatementCache* const cache_ = nullptr;  // null: finalized when done
  const std::string sql_;                  // the cache's key (copied: some texts are built)
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  absl::Status error_;
};

// Runs a query and reads every row it returns (one definition for both statement kinds).
using sql::ReadAll;

}  // namespace cohort::master::internal
