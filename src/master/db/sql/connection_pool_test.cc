// ConnectionPool against a real PostgreSQL server: it never holds more than its size, a caller
// waits at most its limit, threads share it without losing an update, and a server that went
// away costs the pool its connections, not a hang.
#include "master/db/sql/connection_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "cohort/status.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master::sql {
namespace {

using ::cohort::testing_support::StatusIs;

class ConnectionPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, db_testing::PostgresServer::Start());
    ASSERT_OK_AND_ASSIGN(url_, server_->CreateDatabase("pool"));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Connection> setup, ConnectPostgres(url_));
    ASSERT_OK(
        setup->Exec("schema", "CREATE TABLE counter (n BIGINT); INSERT INTO counter VALUES (0)"));
  }
  ConnectionPool::Connector Connector() {
    return [this] {
      ++connects_;
      PostgresOptions options;
      options.connect_timeout = absl::Seconds(2);
      return ConnectPostgres(url_, options);
    };
  }

  std::unique_ptr<db_testing::PostgresServer> server_;
  std::string url_;
  std::atomic<int> connects_{0};
};

TEST_F(ConnectionPoolTest, LendsAtMostItsSizeAndAWaiterGetsTheNextOneReturned) {
  ConnectionPool pool(Connector(), 2, absl::Milliseconds(300));
  ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease a, pool.Acquire());
  {
    ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease b, pool.Acquire());
    absl::StatusOr<ConnectionPool::Lease> c = pool.Acquire();
    EXPECT_THAT(c, StatusIs(absl::StatusCode::kDeadlineExceeded));
    EXPECT_TRUE(absl::StrContains(c.status().message(), "2 connections")) << c.status();
    EXPECT_EQ(pool.open(), 2);
  }
  EXPECT_EQ(pool.idle(), 1);
  ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease again, pool.Acquire());  // b's, not a new one
  EXPECT_EQ(connects_.load(), 2);
}

TEST_F(ConnectionPoolTest, ThreadsSharingThePoolLoseNoUpdate) {
  ConnectionPool pool(Connector(), 2, absl::Seconds(30));
  constexpr int kThreads = 4, kIncrements = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        absl::StatusOr<ConnectionPool::Lease> conn = pool.Acquire();
        absl::Status s = conn.status();
        if (s.ok()) {
          Connection& c = **conn;
          s = RunTransaction(
              c,
              [&]() -> absl::Status {
                auto read = c.Prepare("read", "SELECT n FROM counter");
                COHORT_ASSIGN_OR_RETURN(
                    std::vector<int64_t> n,
                    ReadAll<int64_t>(*read, [](Statement& r) { return r.Int64(0); }));
                auto write = c.Prepare("write", "UPDATE counter SET n = ?1");
                write->BindInt64(1, n.at(0) + 1);
                return write->Run();
              },
              Isolation::kRepeatableRead, /*attempts=*/100);
        }
        if (!s.ok()) {
          ++failures;
          ADD_FAILURE() << s;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(pool.open(), 2);
  ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease conn, pool.Acquire());
  auto read = conn->Prepare("read", "SELECT n FROM counter");
  ASSERT_OK_AND_ASSIGN(bool row, read->Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(read->Int64(0), kThreads * kIncrements);
}

TEST_F(ConnectionPoolTest, ServerDownFailsAtOnceAndTheLostConnectionsAreReplaced) {
  ConnectionPool pool(Connector(), 2, absl::Seconds(30));
  { ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease warm, pool.Acquire()); }
  ASSERT_EQ(pool.idle(), 1);
  server_->Kill();
  {
    ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease stale, pool.Acquire());
    EXPECT_THAT(stale->Exec("probe", "SELECT 1"), StatusIs(absl::StatusCode::kUnavailable));
  }
  EXPECT_EQ(pool.open(), 0);  // closed when given back
  const absl::Time start = absl::Now();
  EXPECT_THAT(pool.Acquire(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));  // the connect timeout, never the wait
  ASSERT_OK(server_->Restart());
  ASSERT_OK_AND_ASSIGN(ConnectionPool::Lease fresh, pool.Acquire());
  EXPECT_OK(fresh->Exec("probe", "SELECT 1"));
}

}  // namespace
}  // namespace cohort::master::sql
