#include "master/db/sql/sqlite_driver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "master/db/internal/sqlite_statement.h"

namespace cohort::master::sql {
namespace {

class SqliteStatement : public Statement {
 public:
  SqliteStatement(internal::StatementCache& cache, const std::string& path, absl::string_view what,
                  absl::string_view sql)
      : db_(cache.db()), what_(what), s_(cache, path, what, sql) {}

  void BindInt64(int index, int64_t value) override { s_.BindInt64(index, value); }
  void BindDouble(int index, double value) override { s_.BindDouble(index, value); }
  void BindNull(int index) override { s_.BindNull(index); }
  void BindText(int index, absl::string_view value) override {
    if (absl::Status text = CheckTextParameter(what_, index, value); !text.ok()) {
      if (refused_.ok()) refused_ = text;
      return;
    }
    s_.BindText(index, value);
  }

  absl::StatusOr<bool> Step() override {
    if (!refused_.ok()) return refused_;
    absl::StatusOr<bool> row = s_.Step();
    if (!row.ok()) return Sorted(row.status());
    failure_ = Failure::kNone;
    return row;
  }
  absl::Status Run() override {
    if (!refused_.ok()) return refused_;
    absl::Status status = s_.Run();
    if (!status.ok()) return Sorted(status);
    failure_ = Failure::kNone;
    return status;
  }
  void Reset() override { s_.Reset(); }
  Failure failure() const override { return refused_.ok() ? failure_ : Failure::kOther; }
  int64_t Changes() const override { return sqlite3_changes64(db_); }

  bool IsNull(int column) const override { return s_.IsNull(column); }
  int64_t Int64(int column) const override { return s_.Int64(column); }
  double Double(int column) const override { return s_.Double(column); }
  std::string Text(int column) const override { return s_.Text(column); }

 private:
  // The status SQLite's plumbing reported, with the code driver.h gives its kind.
  absl::Status Sorted(const absl::Status& status) {
    failure_ = FailureOfSqliteCode(s_.code());
    if (failure_ == Failure::kNone) failure_ = Failure::kOther;
    return FailureStatus(failure_, std::string(status.message()));
  }

  sqlite3* const db_;
  const std::string what_;
  internal::Statement s_;
  Failure failure_ = Failure::kNone;
  absl::Status refused_;  // a binding the driver refused (a NUL byte)
};

class SqliteConnection : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string path, bool owned)
      : db_(db), path_(std::move(path)), owned_(owned), cache_(db) {}
  ~SqliteConnection() override {
    cache_.Clear();  // finalized before their connection closes
    if (owned_) sqlite3_close_v2(db_);
  }

  std::unique_ptr<Statement> Prepare(absl::string_view what, absl::string_view sql) override {
    return std::make_unique<SqliteStatement>(cache_, path_, what, sql);
  }
  absl::Status Exec(absl::string_view what, absl::string_view sql) override {
    const std::string text(sql);
    const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return absl::OkStatus();
    return FailureStatus(FailureOfSqliteCode(rc),
                         std::string(internal::SqliteError(db_, path_, what, rc).message()));
  }
  bool healthy() const override { return true; }
  bool StillConnected() override { return true; }  // a file does not hang up
  // One writer at a time: every transaction is serializable, whatever `isolation` asks.
  absl::Status Begin(Isolation) override { return Exec("begin transaction", "BEGIN IMMEDIATE"); }
  absl::Status Commit() override { return Exec("commit", "COMMIT"); }
  absl::Status Rollback() override { return Exec("rollback", "ROLLBACK"); }

 private:
  sqlite3* const db_;
  const std::string path_;
  const bool owned_;
  internal::StatementCache cache_;
};

}  // namespace

Failure FailureOfSqliteCode(int code) {
  switch (code) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return Failure::kNone;
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return Failure::kUniqueViolation;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return Failure::kForeignKeyViolation;
  }
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Failure::kSerialization;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return Failure::kConnectionLost;
  }
  return Failure::kOther;
}

std::unique_ptr<Connection> WrapSqlite(sqlite3* db, const std::string& path) {
  return std::make_unique<SqliteConnection>(db, path, /*owned=*/false);
}

std::unique_ptr<Connection> AdoptSqlite(sqlite3* db, const std::string& path) {
  return std::make_unique<SqliteConnection>(db, path, /*owned=*/true);
}

absl::StatusOr<std::unique_ptr<Connection>> OpenSqlite(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status =
        FailureStatus(FailureOfSqliteCode(rc),
                      std::string(internal::SqliteError(db, path, "open", rc).message()));
    sqlite3_close(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);  // a busy database fails (kSerialization) after 5 s, not at once
  auto connection = std::make_unique<SqliteConnection>(db, path, /*owned=*/true);
  COHORT_RETURN_IF_ERROR(connection->Exec("enable foreign keys", "PRAGMA foreign_keys=ON"));
  return std::unique_ptr<Connection>(std::move(connection));
}

}  // namespace cohort::master::sql
