#pragma once
// PostgresDatabase: the master's Database (master/db/database.h) in a PostgreSQL database:
// SqlDatabase's operations (sql_database.h) over a pool of libpq connections
// (sql/postgres_driver.h), so the master's threads run their statements at once. Opening
// connects, takes the schema lock and applies the migrations the database has not seen
// (postgres_migrations.h). While the server is down every call fails at once with Unavailable
// naming the database (the master answers 503), and the pool replaces lost connections as the
// server comes back; a transaction is acknowledged only once PostgreSQL committed it.
// Thread-safe.
//
// Example:
//   PostgresDatabaseOptions options;
//   options.connection.password = ReadPasswordFile(...);  // or PGPASSWORD, ~/.pgpass
//   COHORT_ASSIGN_OR_RETURN(auto db,
//                           PostgresDatabase::Open("postgresql://cohort@db:5432/cohort", options));

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/sql_database.h"

namespace cohort::master {

struct PostgresDatabaseOptions {
  sql::PostgresOptions connection;
  // Connections at most: the master's HTTP threads and its background loops, each holding one
  // for a call at a time.
  int pool_size = 16;
  // How long a call waits for a connection when all are lent (DeadlineExceeded after it).
  absl::Duration pool_wait = absl::Seconds(10);
};

class PostgresDatabase final : public SqlDatabase {
 public:
  // Connects to `url` (postgresql:// or postgres://, libpq's syntax) and migrates the schema.
  // Unavailable naming the masked URL when the server cannot be reached or refuses the login; a
  // schema newer than this build knows is FailedPrecondition.
  static absl::StatusOr<std::unique_ptr<PostgresDatabase>> Open(
      const std::string& url, const PostgresDatabaseOptions& options = {});

  // pg_database_size: the database's files on the server (tables, indexes, TOAST).
  absl::StatusOr<int64_t> SizeBytes() override;
  // The pool's connections, as gauges "pool_connections" (open) and "pool_connections_idle".
  std::vector<BackendMetric> BackendMetrics() override;

 private:
  PostgresDatabase(std::unique_ptr<sql::ConnectionPool> pool, sql::ConnectionPool* pool_view,
                   std::string name)
      : SqlDatabase(std::move(pool), PostgresDialect(), std::move(name)), pool_(pool_view) {}

  sql::ConnectionPool* const pool_;  // owned by SqlDatabase; read for the metrics
};

}  // namespace cohort::master
