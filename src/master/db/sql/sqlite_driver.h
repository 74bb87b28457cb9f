#pragma once
// The SQLite driver (driver.h), over the plumbing SqliteDatabase uses (internal/sqlite_statement.h:
// statements prepared once per connection, errors naming the file). Failures are sorted as the
// PostgreSQL driver sorts them, and reported with the same Status codes, so code written against
// driver.h behaves alike on both: a constraint's kind from SQLite's extended result code, a
// busy or locked database as kSerialization (run the transaction again), an I/O error, a full
// disk or a file that cannot be opened as kConnectionLost (Unavailable). Thread-compatible.

#include <sqlite3.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/db/sql/driver.h"

namespace cohort::master::sql {

// A connection that uses `db` (not owned; it must outlive the connection), naming `path` in
// errors.
std::unique_ptr<Connection> WrapSqlite(sqlite3* db, const std::string& path);

// A connection that owns `db` (closed with it), naming `path` in errors.
std::unique_ptr<Connection> AdoptSqlite(sqlite3* db, const std::string& path);

// Opens (or creates) the SQLite database at `path` (":memory:" for one in memory) with foreign
// keys enforced, and owns it.
absl::StatusOr<std::unique_ptr<Connection>> OpenSqlite(const std::string& path);

// The Failure kind of an extended SQLite result code. Exposed for tests.
Failure FailureOfSqliteCode(int code);

}  // namespace cohort::master::sql
