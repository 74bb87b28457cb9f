// The SQL drivers (driver.h), the same cases on both: SQLite in memory and a real PostgreSQL
// server (db_testing::PostgresServer, one per test binary, a fresh database per test). Bindings
// of every kind come back as bound, constraint failures are told apart with the same kinds and
// codes, bad bindings and SQL fail at the next step naming them. Then PostgreSQL's own: ?N
// placeholders rewritten only where they are parameters, a lost server, and no password in any
// message.
#include "master/db/sql/driver.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/sql/sqlite_driver.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master::sql {
namespace {

using ::cohort::testing_support::StatusIs;

// The parameter lists SqlDatabase's batched statements are built from.
TEST(PlaceholdersTest, InListsAndValuesRowsNumberEveryParameterOnce) {
  EXPECT_EQ(Placeholders(2, 3), "?2, ?3, ?4");
  EXPECT_EQ(Placeholders(1, 0), "");
  EXPECT_EQ(ValuesRows(2, 3), "(?1, ?2, ?3), (?4, ?5, ?6)");
  EXPECT_EQ(ValuesRows(2, 2, 2, ", ?1"), "(?2, ?3, ?1), (?4, ?5, ?1)");
  EXPECT_EQ(ValuesRows(1, 1, 1, ", 0, 0"), "(?1, 0, 0)");
  EXPECT_EQ(ValuesRows(0, 4), "");
}

TEST(PostgresPlaceholdersTest, RewritesParametersButNotLiteralsOrComments) {
  int n = 0;
  EXPECT_EQ(
      PostgresPlaceholders("SELECT ?2, ?1 WHERE x = '?3' -- ?4\n AND \"a?5\" = ?10 /* ?6 */", &n),
      "SELECT $2, $1 WHERE x = '?3' -- ?4\n AND \"a?5\" = $10 /* ?6 */");
  EXPECT_EQ(n, 10);
  EXPECT_EQ(PostgresPlaceholders("SELECT 'it''s ?1', ?1", &n), "SELECT 'it''s ?1', $1");
  EXPECT_EQ(n, 1);
  EXPECT_EQ(PostgresPlaceholders("SELECT 1", &n), "SELECT 1");
  EXPECT_EQ(n, 0);
}

TEST(PostgresPlaceholdersTest, SqlStatesSortIntoTheFailuresTheMasterActsOn) {
  EXPECT_EQ(FailureOfSqlState("23505"), Failure::kUniqueViolation);
  EXPECT_EQ(FailureOfSqlState("23503"), Failure::kForeignKeyViolation);
  EXPECT_EQ(FailureOfSqlState("40001"), Failure::kSerialization);
  EXPECT_EQ(FailureOfSqlState("08006"), Failure::kConnectionLost);
  EXPECT_EQ(FailureOfSqlState("57P01"), Failure::kConnectionLost);
  EXPECT_EQ(FailureOfSqlState("42601"), Failure::kOther);
}

// The test binary's PostgreSQL server, started on first use and kept until the binary exits.
db_testing::PostgresServer& Server() {
  static db_testing::PostgresServer* server = [] {
    absl::StatusOr<std::unique_ptr<db_testing::PostgresServer>> started =
        db_testing::PostgresServer::Start();
    if (!started.ok()) {
      ADD_FAILURE() << started.status();
      std::abort();
    }
    return started->release();  // lives until exit; the server dies with the process
  }();
  return *server;
}

std::string TestName() {
  return absl::AsciiStrToLower(::testing::UnitTest::GetInstance()->current_test_info()->name());
}

constexpr char kSchema[] =
    "CREATE TABLE parents (id BIGINT PRIMARY KEY, name TEXT);"
    "CREATE TABLE kids (id BIGINT PRIMARY KEY, parent BIGINT REFERENCES parents (id), "
    "weight DOUBLE PRECISION)";

class DriverTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      ASSERT_OK_AND_ASSIGN(conn_, OpenSqlite(":memory:"));
    } else {
      std::string name = TestName();
      for (char& c : name) c = absl::ascii_isalnum(static_cast<unsigned char>(c)) ? c : '_';
      ASSERT_OK_AND_ASSIGN(url_, Server().CreateDatabase(name));
      ASSERT_OK_AND_ASSIGN(conn_, ConnectPostgres(url_));
    }
    ASSERT_OK(conn_->Exec("schema", kSchema));
  }

  std::string url_;
  std::unique_ptr<Connection> conn_;
};

INSTANTIATE_TEST_SUITE_P(Backends, DriverTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_P(DriverTest, EveryBindingComesBackAsBound) {
  auto insert = conn_->Prepare("insert parent", "INSERT INTO parents (id, name) VALUES (?1, ?2)");
  const std::string unicode = "caf\xc3\xa9 \xe2\x9c\x93 'quoted' ?1";
  for (auto [id, name] : {std::pair<int64_t, std::string>{int64_t{1} << 62, unicode}, {-7, ""}}) {
    insert->BindInt64(1, id);
    insert->BindText(2, name);
    ASSERT_OK(insert->Run());
    EXPECT_EQ(insert->Changes(), 1);
  }
  insert->BindInt64(1, 3);
  insert->BindNull(2);
  ASSERT_OK(insert->Run());

  auto kid =
      conn_->Prepare("insert kid", "INSERT INTO kids (id, parent, weight) VALUES (?1, ?2, ?3)");
  kid->BindInt64(1, 10);
  kid->BindInt64(2, 3);
  kid->BindDouble(3, 0.1 + 0.2);
  ASSERT_OK(kid->Run());

  auto read = conn_->Prepare("read",
                             "SELECT p.id, p.name, k.weight FROM parents p "
                             "LEFT JOIN kids k ON k.parent = p.id ORDER BY p.id");
  std::vector<std::string> rows;
  for (;;) {
    ASSERT_OK_AND_ASSIGN(bool row, read->Step());
    if (!row) break;
    rows.push_back(absl::StrCat(read->Int64(0), "|", read->IsNull(1) ? "NULL" : read->Text(1), "|",
                                read->IsNull(2) ? -1.0 : read->Double(2)));
  }
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], "-7||-1");
  EXPECT_EQ(rows[1], absl::StrCat(3, "|NULL|", 0.1 + 0.2));
  EXPECT_EQ(rows[2], absl::StrCat(int64_t{1} << 62, "|", unicode, "|-1"));
  // Read again: the statement runs anew.
  ASSERT_OK_AND_ASSIGN(bool again, read->Step());
  EXPECT_TRUE(again);
  EXPECT_EQ(read->Int64(0), -7);
}

TEST_P(DriverTest, ConstraintFailuresAreToldApart) {
  auto insert = conn_->Prepare("insert parent", "INSERT INTO parents (id) VALUES (?1)");
  insert->BindInt64(1, 1);
  ASSERT_OK(insert->Run());
  EXPECT_THAT(insert->Run(), StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_EQ(insert->failure(), Failure::kUniqueViolation);

  auto kid = conn_->Prepare("insert kid", "INSERT INTO kids (id, parent) VALUES (?1, ?2)");
  kid->BindInt64(1, 1);
  kid->BindInt64(2, 99);
  absl::Status orphan = kid->Run();
  EXPECT_THAT(orphan, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(kid->failure(), Failure::kForeignKeyViolation);
  EXPECT_TRUE(absl::StrContains(orphan.message(), "insert kid")) << orphan;
  EXPECT_TRUE(conn_->healthy());  // a constraint is not the connection's fault
}

TEST_P(DriverTest, BadBindingsAndSqlFailAtTheNextStepNamingThem) {
  auto bad_index = conn_->Prepare("insert parent", "INSERT INTO parents (id) VALUES (?1)");
  bad_index->BindInt64(2, 1);
  EXPECT_THAT(bad_index->Run(), StatusIs(absl::StatusCode::kInternal));
  auto nul = conn_->Prepare("insert name", "INSERT INTO parents (id, name) VALUES (1, ?1)");
  nul->BindText(1, std::string("a\0b", 3));
  absl::Status refused = nul->Run();
  EXPECT_TRUE(absl::StrContains(refused.message(), "NUL")) << refused;
  auto syntax = conn_->Prepare("broken", "SELEKT 1");
  absl::StatusOr<bool> step = syntax->Step();
  EXPECT_FALSE(step.ok());
  EXPECT_TRUE(absl::StrContains(step.status().message(), "broken")) << step.status();
  EXPECT_TRUE(conn_->healthy());
}

TEST_P(DriverTest, TransactionRollsBackUnlessCommitted) {
  auto insert = conn_->Prepare("insert parent", "INSERT INTO parents (id) VALUES (?1)");
  {
    Transaction dropped(*conn_);
    ASSERT_OK(dropped.status());
    insert->BindInt64(1, 1);
    ASSERT_OK(insert->Run());
  }
  {
    Transaction kept(*conn_);
    ASSERT_OK(kept.status());
    insert->BindInt64(1, 2);
    ASSERT_OK(insert->Run());
    ASSERT_OK(kept.Commit());
  }
  auto ids = conn_->Prepare("ids", "SELECT id FROM parents ORDER BY id");
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> rows,
                       ReadAll<int64_t>(*ids, [](Statement& s) { return s.Int64(0); }));
  EXPECT_EQ(rows, std::vector<int64_t>{2});
}

// Two masters' worth of connections update one row: the transaction that loses the race is
// run again on the winner's value, so neither increment is lost.
TEST(PostgresDriverTest, RunTransactionRetriesWhenAConcurrentTransactionWins) {
  ASSERT_OK_AND_ASSIGN(std::string url, Server().CreateDatabase("retries"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> a, ConnectPostgres(url));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> b, ConnectPostgres(url));
  ASSERT_OK(a->Exec("schema", "CREATE TABLE counter (n BIGINT); INSERT INTO counter VALUES (0)"));
  int attempts = 0;
  ASSERT_OK(RunTransaction(
      *a,
      [&]() -> absl::Status {
        ++attempts;
        auto read = a->Prepare("read", "SELECT n FROM counter");
        COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> n,
                                ReadAll<int64_t>(*read, [](Statement& s) { return s.Int64(0); }));
        if (attempts == 1) {  // another connection commits an increment in between
          COHORT_RETURN_IF_ERROR(b->Exec("concurrent", "UPDATE counter SET n = n + 10"));
        }
        auto write = a->Prepare("write", "UPDATE counter SET n = ?1");
        write->BindInt64(1, n.at(0) + 1);
        return write->Run();
      },
      Isolation::kRepeatableRead));
  EXPECT_EQ(attempts, 2);
  auto read = b->Prepare("read", "SELECT n FROM counter");
  ASSERT_OK_AND_ASSIGN(bool row, read->Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(read->Int64(0), 11);
}

TEST(PostgresDriverTest, LostServerIsUnavailableNamingTheDatabaseAndANewConnectionWorks) {
  db_testing::PostgresServer& server = Server();
  ASSERT_OK_AND_ASSIGN(std::string url, server.CreateDatabase("lost_server"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> conn, ConnectPostgres(url));
  ASSERT_OK(conn->Exec("schema", kSchema));
  auto insert = conn->Prepare("insert parent", "INSERT INTO parents (id) VALUES (?1)");
  insert->BindInt64(1, 1);
  ASSERT_OK(insert->Run());
  server.Kill();
  insert->BindInt64(1, 2);
  absl::Status lost = insert->Run();
  EXPECT_THAT(lost, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(insert->failure(), Failure::kConnectionLost);
  EXPECT_TRUE(absl::StrContains(lost.message(), "127.0.0.1")) << lost;
  EXPECT_FALSE(conn->healthy());

  ASSERT_OK(server.Restart());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> fresh, ConnectPostgres(url));
  auto count = fresh->Prepare("count", "SELECT count(*) FROM parents");
  ASSERT_OK_AND_ASSIGN(bool row, count->Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(count->Int64(0), 1);  // what was acknowledged before the kill
}

TEST(PostgresConnectTest, UnreachableServerFailsWithinTheTimeoutWithoutThePassword) {
  PostgresOptions options;
  options.password = "s3cret-from-file";
  options.connect_timeout = absl::Seconds(2);
  // A port nobody listens on (connection refused at once).
  absl::StatusOr<std::unique_ptr<Connection>> conn =
      ConnectPostgres("postgresql://alice:hunter2@127.0.0.1:1/cohort", options);
  ASSERT_THAT(conn, StatusIs(absl::StatusCode::kUnavailable));
  const std::string message(conn.status().message());
  EXPECT_TRUE(absl::StrContains(message, "postgresql://alice:***@127.0.0.1:1/cohort")) << message;
  EXPECT_FALSE(absl::StrContains(message, "hunter2")) << message;
  EXPECT_FALSE(absl::StrContains(message, "s3cret")) << message;
}

}  // namespace
}  // namespace cohort::master::sql
