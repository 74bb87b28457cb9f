#include "master/db/postgres_database.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/open_database.h"

namespace cohort::master {

absl::StatusOr<std::unique_ptr<PostgresDatabase>> PostgresDatabase::Open(
    const std::string& url, const PostgresDatabaseOptions& options) {
  const sql::PostgresOptions connection = options.connection;
  auto pool = std::make_unique<sql::ConnectionPool>(
      [url, connection] { return sql::ConnectPostgres(url, connection); }, options.pool_size,
      options.pool_wait);
  sql::ConnectionPool* const view = pool.get();
  std::unique_ptr<PostgresDatabase> database(
      new PostgresDatabase(std::move(pool), view, MaskDatabaseUrl(url)));
  COHORT_ASSIGN_OR_RETURN(Lease c, database->Connect());
  COHORT_RETURN_IF_ERROR(database->Migrate(*c));
  return database;
}

absl::StatusOr<int64_t> PostgresDatabase::SizeBytes() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  sql::Query s(*c, "database size", "SELECT pg_database_size(current_database())");
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::InternalError(absl::StrCat(name(), ": the database size is missing"));
  return s.Int64(0);
}

std::vector<BackendMetric> PostgresDatabase::BackendMetrics() {
  return {
      BackendMetric{.name = "pool_connections",
                    .help = "Connections the master holds to PostgreSQL (lent and idle)",
                    .kind = BackendMetric::Kind::kGauge,
                    .labels = {},
                    .value = static_cast<double>(pool_->open())},
      BackendMetric{.name = "pool_connections_idle",
                    .help = "Connections to PostgreSQL that no call holds now",
                    .kind = BackendMetric::Kind::kGauge,
                    .labels = {},
                    .value = static_cast<double>(pool_->idle())},
  };
}

}  // namespace cohort::master
