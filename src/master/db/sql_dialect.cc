#include "master/db/sql_dialect.h"

#include "master/db/postgres_migrations.h"
#include "master/db/sqlite_migrations.h"

namespace cohort::master {

const SqlDialect& SqliteDialect() {
  static const SqlDialect dialect{
      .name = "SQLite",
      .migrations = &internal::SqliteMigrations(),
      .migration_lock = "",
      .migration_unlock = "",
      .insertion_order = "rowid",
      .row_locator = "rowid",
      .line_bytes = "LENGTH(CAST(line AS BLOB))",
      .transaction_attempts = 1,
      .inserts_in_with = false,
  };
  return dialect;
}

const SqlDialect& PostgresDialect() {
  static const SqlDialect dialect{
      .name = "PostgreSQL",
      .migrations = &internal::PostgresMigrations(),
      // A session lock on a constant of Cohort's own (a lost connection releases it).
      .migration_lock = "SELECT pg_advisory_lock(4242771)",
      .migration_unlock = "SELECT pg_advisory_unlock(4242771)",
      .insertion_order = "seq",
      .row_locator = "ctid",
      .line_bytes = "OCTET_LENGTH(line)",
      .transaction_attempts = 10,
      .inserts_in_with = true,
  };
  return dialect;
}

}  // namespace cohort::master
