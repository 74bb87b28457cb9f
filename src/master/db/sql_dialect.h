#pragma once
// What SqlDatabase's SQL says differently on each backend (docs/design/0022): everything else is
// one text for both (?N parameters, ON CONFLICT, RETURNING, CASE). Kept to the few expressions
// below and the migrations' DDL, so a reader sees every difference in one place. Thread-safe
// (constants).

#include <vector>

#include "absl/strings/string_view.h"

namespace cohort::master {

struct SqlDialect {
  absl::string_view name;  // "SQLite", "PostgreSQL": for messages
  // The schema's migrations: the DDL of version i + 1 at index i. Both lists have the same
  // versions, with the same tables and columns.
  const std::vector<absl::string_view>* migrations;
  // Queries run before and after migrating, outside its transactions: a lock that makes two
  // masters opening a new database at once apply each version once (SQLite's BEGIN IMMEDIATE
  // already does: empty). Before the transactions, because PostgreSQL's REPEATABLE READ takes
  // its snapshot at a transaction's first statement, which would predate a lock taken inside.
  absl::string_view migration_lock;
  absl::string_view migration_unlock;
  // A column that orders the rows of checkpoints and log_policy_matches as inserted (SQLite's
  // rowid; PostgreSQL's tables have an identity column `seq` for it).
  absl::string_view insertion_order;
  // A column that locates one row of any table, for deleting in bounded batches (rowid, ctid).
  absl::string_view row_locator;
  // The bytes of the text column `line` (SQLite's LENGTH counts characters).
  absl::string_view line_bytes;
  // How many times a transaction is run when a concurrent one keeps winning (sql::
  // RunTransaction). SQLite: once, as before the driver interface; its busy timeout (5 s)
  // already waited for the other writer, and ten of them would hold a call for 50 s.
  int transaction_attempts;
  // Whether a WITH clause may hold an INSERT whose rows a second INSERT reads (PostgreSQL): a
  // few log lines and their count in log_stats are then one statement, one round trip where a
  // transaction takes four. SQLite cannot, and its transaction costs no round trip.
  bool inserts_in_with;
};

const SqlDialect& SqliteDialect();
const SqlDialect& PostgresDialect();

}  // namespace cohort::master
