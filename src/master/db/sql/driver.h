#pragma once
// The SQL driver interface the master's database is written against (docs/design/0022): one
// connection to a SQL database, its prepared statements and transactions, with the backend's
// failures sorted into the few kinds the master acts on. Drivers: PostgreSQL through libpq
// (postgres_driver.h) and SQLite (sqlite_driver.h). SqlDatabase (sql_database.h) is written
// against it.
//
// SQL text is shared by the backends: parameters are ?1, ?2, ... (a driver whose database
// numbers them otherwise rewrites them), upserts are ON CONFLICT, ids come back by RETURNING.
// Parameters count from 1, columns from 0. A statement keeps its first failure (prepare or
// bind) and returns it from the next Step or Run, so a caller checks once.
//
// Thread-compatible: a Connection and its Statements are used by one thread at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::master::sql {

// What went wrong, as far as the master decides anything on it.
enum class Failure {
  kNone,
  kUniqueViolation,      // a primary key or unique constraint (the row exists)
  kForeignKeyViolation,  // a reference to a row that does not exist
  kSerialization,        // a concurrent transaction won: run the whole transaction again
  kConnectionLost,       // the server went away or is unreachable: Unavailable
  kOther,
};

// The Status a failure of `kind` is reported as: AlreadyExists (unique), FailedPrecondition
// (foreign key), Aborted (serialization), Unavailable (connection lost), Internal (other).
absl::Status FailureStatus(Failure kind, std::string message);

// For drivers: OK, or the error every driver gives a text parameter holding a NUL byte
// (InvalidArgument naming the operation and the parameter).
absl::Status CheckTextParameter(absl::string_view what, int index, absl::string_view value);

// "?first, ?first+1, ..., ?first+count-1": the parameters of an IN list or a VALUES row.
std::string Placeholders(int first, size_t count);
// The rows of a multi-row VALUES: "(?first, ..., ?first+per_row-1<tail>), (...)", each row's
// parameters after the previous row's; `tail` (", ?1", ", 0, 0") ends every row.
std::string ValuesRows(size_t rows, size_t per_row, int first = 1, absl::string_view tail = "");

// Rows per multi-row INSERT, and values per IN list, at most: one round trip to PostgreSQL for
// a batch where one per row cost a round trip each, well below either backend's limit on a
// statement's parameters.
constexpr size_t kRowsPerInsert = 64;
constexpr size_t kMaxInList = 256;

// How much of concurrent transactions a transaction sees (PostgreSQL; SQLite's one writer makes
// every transaction serializable whatever is asked).
enum class Isolation {
  // Each statement sees what was committed before it began; an UPDATE (or an upsert's update)
  // of a row waits for a concurrent writer of it and applies to its newest version, so relative
  // updates (n = n + 1) are never lost. PostgreSQL's default, and the master's: its writes are
  // inserts and relative updates.
  kReadCommitted,
  // The whole transaction sees one snapshot; writing a row a concurrent transaction changed
  // since fails with kSerialization (run it again). For a transaction that writes what it
  // computed from what it read.
  kRepeatableRead,
};

class Statement {
 public:
  virtual ~Statement() = default;

  virtual void BindInt64(int index, int64_t value) = 0;
  virtual void BindDouble(int index, double value) = 0;
  virtual void BindNull(int index) = 0;
  // Text must be UTF-8 without NUL bytes on every backend (PostgreSQL refuses anything else;
  // common/utf8_text.h makes untrusted bytes so); a NUL byte is refused by every driver (the
  // next Step fails naming the parameter). The text is copied: it need not outlive the call.
  virtual void BindText(int index, absl::string_view value) = 0;

  // Advances: true when a row is ready to read, false when the statement is done.
  virtual absl::StatusOr<bool> Step() = 0;
  // Runs a statement that returns no rows, then makes it ready for new bindings.
  virtual absl::Status Run() = 0;
  // Ends the current run (rows not read are dropped) and keeps the bindings: the next Step runs
  // the statement again, and new bindings may be made first.
  virtual void Reset() = 0;
  // The kind of the last failure (kNone after a success).
  virtual Failure failure() const = 0;
  // Rows changed by the last Run of an INSERT, UPDATE or DELETE.
  virtual int64_t Changes() const = 0;

  // The current row's columns (after Step returned true).
  virtual bool IsNull(int column) const = 0;
  virtual int64_t Int64(int column) const = 0;
  virtual double Double(int column) const = 0;
  virtual std::string Text(int column) const = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;

  // A statement for `sql`, prepared once per connection and text (`what` names the operation
  // in errors: "insert allocation").
  virtual std::unique_ptr<Statement> Prepare(absl::string_view what, absl::string_view sql) = 0;
  // Runs SQL without parameters, possibly several statements (migrations).
  virtual absl::Status Exec(absl::string_view what, absl::string_view sql) = 0;
  // False once the connection is known lost; a pool drops such a connection.
  virtual bool healthy() const = 0;
  // Whether an idle connection is still open, found without waiting (a server that restarted
  // closed it); false also makes it unhealthy. A pool asks before lending an idle connection,
  // so a call after a server restart gets a new one rather than failing on the old.
  virtual bool StillConnected() = 0;

  // A transaction that writes: SQLite takes the write lock at once (BEGIN IMMEDIATE: a busy
  // database fails here rather than halfway); PostgreSQL runs it at `isolation`.
  virtual absl::Status Begin(Isolation isolation) = 0;
  virtual absl::Status Commit() = 0;
  virtual absl::Status Rollback() = 0;
};

// A prepared statement held by value: what the database's code declares (`Query s(conn, "what",
// "SELECT ...")`), forwarding to the driver's statement, with the conveniences every caller
// would otherwise repeat.
class Query {
 public:
  Query(Connection& connection, absl::string_view what, absl::string_view sql)
      : s_(connection.Prepare(what, sql)) {}

  void BindInt64(int index, int64_t value) { s_->BindInt64(index, value); }
  void BindDouble(int index, double value) { s_->BindDouble(index, value); }
  void BindNull(int index) { s_->BindNull(index); }
  void BindText(int index, absl::string_view value) { s_->BindText(index, value); }
  // The value, or NULL when it is absent.
  void BindInt64OrNull(int index, std::optional<int64_t> value);
  void BindDoubleOrNull(int index, std::optional<double> value);
  void BindTextOrNull(int index, const std::optional<std::string>& value);
  absl::StatusOr<bool> Step() { return s_->Step(); }
  absl::Status Run() { return s_->Run(); }
  // Runs an UPDATE or DELETE of one row: NotFound "<row> not found" when it changed none
  // (`row` names it: "experiment 7").
  absl::Status RunOnRow(absl::string_view row);
  void Reset() { s_->Reset(); }
  // Runs an INSERT ... RETURNING of one integer column (a new row's id) and returns it, ready
  // for new bindings. Internal when the statement returned no row.
  absl::StatusOr<int64_t> RunReturningInt64();

  Failure failure() const { return s_->failure(); }
  int64_t Changes() const { return s_->Changes(); }
  bool IsNull(int column) const { return s_->IsNull(column); }
  int64_t Int64(int column) const { return s_->Int64(column); }
  int Int(int column) const { return static_cast<int>(s_->Int64(column)); }
  double Double(int column) const { return s_->Double(column); }
  std::string Text(int column) const { return s_->Text(column); }

 private:
  std::unique_ptr<Statement> s_;
};

// Begins on construction (Begin's result in status()); rolls back on destruction unless
// Commit succeeded.
class Transaction {
 public:
  explicit Transaction(Connection& connection, Isolation isolation = Isolation::kReadCommitted)
      : connection_(connection), status_(connection.Begin(isolation)), open_(status_.ok()) {}
  ~Transaction() {
    if (open_) (void)connection_.Rollback();  // the transaction's own error is what matters
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  const absl::Status& status() const { return status_; }
  absl::Status Commit() {
    absl::Status status = connection_.Commit();
    if (status.ok()) open_ = false;
    return status;
  }

 private:
  Connection& connection_;
  const absl::Status status_;
  bool open_;
};

// Runs `body` in a transaction at `isolation` and commits it; when the body or the commit fails
// with Aborted (kSerialization: a concurrent transaction won, or a deadlock), runs it again after a
// short random pause that doubles each time, at most `attempts` times in all (about a quarter of a
// second of pauses). Any other failure is returned at once (the transaction rolled back).
absl::Status RunTransaction(Connection& connection, absl::FunctionRef<absl::Status()> body,
                            Isolation isolation = Isolation::kReadCommitted, int attempts = 10);

// Steps `statement` (a Query, a driver's Statement, or internal::Statement) to its end, reading
// every row with `read` (a Row, or a StatusOr<Row> when a column may not parse).
template <typename Row, typename StatementType, typename ReadFn>
absl::StatusOr<std::vector<Row>> ReadAll(StatementType& statement, ReadFn read) {
  std::vector<Row> rows;
  for (;;) {
    absl::StatusOr<bool> has_row = statement.Step();
    if (!has_row.ok()) return has_row.status();
    if (!*has_row) return rows;
    absl::StatusOr<Row> row = read(statement);
    if (!row.ok()) return row.status();
    rows.push_back(*std::move(row));
  }
}

}  // namespace cohort::master::sql
