// The schema's migrations on both backends: the two lists describe the same tables and columns,
// and a database stopped at any version is brought to the newest with its rows kept.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/postgres_database.h"
#include "master/db/postgres_migrations.h"
#include "master/db/sql/driver.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/sql/sqlite_driver.h"
#include "master/db/sqlite_database.h"
#include "master/db/sqlite_migrations.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using Schema = std::map<std::string, std::set<std::string>>;  // table -> columns

absl::StatusOr<Schema> ReadSchema(sql::Connection& c, absl::string_view query) {
  sql::Query s(c, "read the schema", query);
  Schema schema;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return schema;
    schema[s.Text(0)].insert(s.Text(1));
  }
}

constexpr char kSqliteColumns[] =
    "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p "
    "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'";
constexpr char kPostgresColumns[] =
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema()";

TEST(MigrationsTest, BothBackendsHaveTheSameTablesAndColumns) {
  ASSERT_EQ(internal::PostgresMigrations().size(), internal::SqliteMigrations().size());
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  ASSERT_OK(OpenSqliteDatabase(path).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> sqlite, sql::OpenSqlite(path));
  ASSERT_OK_AND_ASSIGN(Schema sqlite_schema, ReadSchema(*sqlite, kSqliteColumns));

  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  ASSERT_OK(PostgresDatabase::Open(url).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> postgres, sql::ConnectPostgres(url));
  ASSERT_OK_AND_ASSIGN(Schema postgres_schema, ReadSchema(*postgres, kPostgresColumns));
  // PostgreSQL's insertion order, where SQLite's code reads rowid (sql_dialect.h).
  EXPECT_EQ(postgres_schema["checkpoints"].erase("seq"), 1u);
  EXPECT_EQ(postgres_schema["log_policy_matches"].erase("seq"), 1u);

  EXPECT_EQ(postgres_schema, sqlite_schema);
  EXPECT_GE(sqlite_schema.size(), 16u);  // every table of database.h and schema_version
}

// Stops a new database at `version` (its migrations applied by hand, as an older master left
// it) with one experiment when the table exists.
absl::Status StopAtVersion(sql::Connection& c, const std::vector<absl::string_view>& migrations,
                           int version) {
  COHORT_RETURN_IF_ERROR(
      c.Exec("schema_version", "CREATE TABLE schema_version (version INTEGER NOT NULL)"));
  for (int v = 1; v <= version; ++v) {
    COHORT_RETURN_IF_ERROR(c.Exec(absl::StrCat("version ", v), migrations[v - 1]));
    sql::Query record(c, "record", "INSERT INTO schema_version (version) VALUES (?1)");
    record.BindInt64(1, v);
    COHORT_RETURN_IF_ERROR(record.Run());
  }
  if (version == 0) return absl::OkStatus();
  return c.Exec("an experiment",
                "INSERT INTO experiments (name, state, config_yaml, original_yaml, template_name, "
                "context_path, slots_per_trial, priority, max_restarts, created_ms) VALUES "
                "('old', 'COMPLETED', 'name: old', 'name: old', '', '', 1, 0, 0, 1700000000000)");
}

// Opening migrates the rest; the experiment an older master stored reads back.
void ExpectMigratesToTheNewest(Database& db, int from) {
  ASSERT_OK_AND_ASSIGN(std::vector<ExperimentRow> experiments, db.ListExperiments());
  if (from == 0) {
    EXPECT_THAT(experiments, ::testing::IsEmpty());
    return;
  }
  ASSERT_THAT(experiments, ::testing::SizeIs(1)) << "from version " << from;
  EXPECT_EQ(experiments[0].name, "old");
  // Version 15: older ones queue by id (one stored after it, from version 15 on, kept 0).
  EXPECT_EQ(experiments[0].queue_position, from < 15 ? 1.0 : 0.0);
  EXPECT_EQ(experiments[0].resource_pool, "default");
  // And the newest schema works: a trial with logs.
  ASSERT_OK_AND_ASSIGN(int64_t trial, db.InsertTrial(MakeTrial(experiments[0].id)));
  EXPECT_THAT(db.AppendLogs(trial, {{0, "after the migration"}}), IsOkAndHolds(1));
}

TEST(MigrationsTest, EverySqliteVersionMigratesToTheNewestKeepingItsRows) {
  const std::vector<absl::string_view>& migrations = internal::SqliteMigrations();
  // From 1: a SQLite file with schema_version and none of Cohort's tables is refused as damaged
  // (internal/sqlite_check.h), and Migrate never leaves one (version 1 comes with the table).
  for (int version = 1; version < static_cast<int>(migrations.size()); ++version) {
    TempDir dir;
    const std::string path = dir.path() + "/master.db";
    {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> c, sql::OpenSqlite(path));
      ASSERT_OK(StopAtVersion(*c, migrations, version)) << "version " << version;
    }
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
    ExpectMigratesToTheNewest(*db, version);
  }
}

TEST(MigrationsTest, EveryPostgresVersionMigratesToTheNewestKeepingItsRows) {
  const std::vector<absl::string_view>& migrations = internal::PostgresMigrations();
  for (int version = 0; version < static_cast<int>(migrations.size()); ++version) {
    ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
    {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> c, sql::ConnectPostgres(url));
      ASSERT_OK(StopAtVersion(*c, migrations, version)) << "version " << version;
    }
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> db, PostgresDatabase::Open(url));
    ExpectMigratesToTheNewest(*db, version);
  }
}

// Two masters opening one new database at once apply each version once (the schema lock).
TEST(MigrationsTest, TwoMastersOpeningANewPostgresDatabaseAtOnceBothSucceed) {
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  absl::StatusOr<std::unique_ptr<PostgresDatabase>> first, second;
  std::thread other([&] { second = PostgresDatabase::Open(url); });
  first = PostgresDatabase::Open(url);
  other.join();
  ASSERT_OK(first.status());
  ASSERT_OK(second.status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> c, sql::ConnectPostgres(url));
  sql::Query versions(*c, "count versions", "SELECT COUNT(*), MAX(version) FROM schema_version");
  ASSERT_OK_AND_ASSIGN(bool row, versions.Step());
  ASSERT_TRUE(row);
  const int64_t latest = static_cast<int64_t>(internal::PostgresMigrations().size());
  EXPECT_EQ(versions.Int64(0), latest);  // each version recorded once
  EXPECT_EQ(versions.Int64(1), latest);
}

}  // namespace
}  // namespace cohort::master
