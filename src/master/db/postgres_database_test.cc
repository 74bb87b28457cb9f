// PostgresDatabase against a server that goes away: a server killed and restarted under a writer
// loses nothing the database acknowledged, calls while it is down fail at once with Unavailable
// naming the database, and writing resumes on new connections once it is back.

#include "master/db/postgres_database.h"

#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/internal/read_sql.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Join(const std::vector<std::string>& lines) { return absl::StrJoin(lines, "\n"); }

struct Batch {
  int index = 0;
  absl::Status status;
};

TEST(PostgresDatabaseTest, ARestartUnderLoadLosesNothingAcknowledged) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<db_testing::PostgresServer> server,
                       db_testing::PostgresServer::Start());
  ASSERT_OK_AND_ASSIGN(std::string url, server->CreateDatabase("restart"));
  PostgresDatabaseOptions options;
  options.pool_size = 4;
  options.connection.connect_timeout = absl::Seconds(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> db, PostgresDatabase::Open(url, options));
  ASSERT_OK_AND_ASSIGN(int64_t experiment, db->InsertExperiment(MakeExperiment("load")));
  ASSERT_OK_AND_ASSIGN(int64_t trial, db->InsertTrial(MakeTrial(experiment)));

  // Two writers append batches of 20 lines, each line naming its batch, until told to stop.
  constexpr int kLines = 20;
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<Batch> done;  // guarded by mu
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      while (!stop.load()) {
        const int index = next.fetch_add(1);
        std::vector<std::pair<int, std::string>> lines;
        for (int i = 0; i < kLines; ++i) lines.emplace_back(w, absl::StrCat(index, ":", i));
        const absl::Status status = db->AppendLogs(trial, lines).status();
        {
          std::lock_guard<std::mutex> lock(mu);
          done.push_back({index, status});
        }
        if (!status.ok()) absl::SleepFor(absl::Milliseconds(20));
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(500));
  server->Kill();
  absl::SleepFor(absl::Milliseconds(700));
  const int before_restart = next.load();
  ASSERT_OK(server->Restart());
  // Writing resumes: wait (bounded) for batches acknowledged after the restart.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  auto acknowledged_after = [&] {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const Batch& b : done) n += b.index > before_restart && b.status.ok();
    return n;
  };
  while (acknowledged_after() < 20 && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(50));
  stop = true;
  for (std::thread& t : writers) t.join();
  EXPECT_GE(acknowledged_after(), 20) << "writing did not resume after the restart";

  // Every acknowledged batch is there in full; a failed one is there whole or not at all (a
  // transaction); failures were Unavailable naming the database, never a hang or a crash.
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> rows, db->ListLogs(trial, 0, std::nullopt, 10'000'000));
  std::map<int, int> stored;  // batch -> lines
  for (const LogRow& row : rows) ++stored[std::stoi(row.line.substr(0, row.line.find(':')))];
  int acknowledged = 0, failed = 0;
  for (const Batch& b : done) {  // the writers have joined
    if (b.status.ok()) {
      ++acknowledged;
      EXPECT_EQ(stored[b.index], kLines) << "acknowledged batch " << b.index << " lost lines";
      continue;
    }
    ++failed;
    EXPECT_THAT(stored[b.index], ::testing::AnyOf(0, kLines)) << "batch " << b.index;
    EXPECT_THAT(b.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("127.0.0.1")))
        << "batch " << b.index;
  }
  EXPECT_GT(failed, 0) << "no call saw the server down";
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db->ListLogStats());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].lines, static_cast<int64_t>(rows.size()));  // counts kept in step
  std::printf("restart under load: %d batches acknowledged, %d failed while the server was down\n",
              acknowledged, failed);
}

TEST(PostgresDatabaseTest, ADownServerFailsOpeningAtOnceNamingTheDatabase) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<db_testing::PostgresServer> server,
                       db_testing::PostgresServer::Start());
  ASSERT_OK_AND_ASSIGN(std::string url, server->CreateDatabase("down"));
  server->Kill();
  PostgresDatabaseOptions options;
  options.connection.connect_timeout = absl::Seconds(2);
  options.connection.password = "s3cret-never-printed";
  absl::Status status = PostgresDatabase::Open(url, options).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable,
                               ::testing::AllOf(HasSubstr("127.0.0.1"),
                                                ::testing::Not(HasSubstr("s3cret")))));
}

// The plan PostgreSQL makes for `sql` with `params` bound (-1: NULL), one line per node.
std::vector<std::string> Plan(sql::Connection& c, const std::string& sql,
                              const std::vector<int64_t>& params) {
  sql::Query explain(c, "explain", "EXPLAIN " + sql);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] < 0) {
      explain.BindNull(static_cast<int>(i + 1));
    } else {
      explain.BindInt64(static_cast<int>(i + 1), params[i]);
    }
  }
  std::vector<std::string> plan;
  for (;;) {
    absl::StatusOr<bool> row = explain.Step();
    EXPECT_TRUE(row.ok()) << row.status();
    if (!row.ok() || !*row) return plan;
    plan.push_back(explain.Text(0));
  }
}

// The reads that must not walk a whole table use the indexes on PostgreSQL as on SQLite
// (sqlite_logs_test.cc): the tail of a small trial's log among a large one's and a follower's
// page are ranges of logs_by_trial (not a walk of the whole log), and a chart's points come
// from series_points_by_batch alone, already in order (no sort).
TEST(PostgresDatabaseTest, LogTailsAndSeriesRangesAreReadFromTheIndexes) {
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> db, PostgresDatabase::Open(url));
  const int64_t experiment = db->InsertExperiment(MakeExperiment("plans")).value();
  const int64_t small = db->InsertTrial(MakeTrial(experiment)).value();
  const int64_t large = db->InsertTrial(MakeTrial(experiment)).value();
  ASSERT_OK(db->AppendLogs(small, {{0, "early"}, {1, "lines"}}).status());
  for (int first = 0; first < 40'000; first += 2000) {
    std::vector<std::pair<int, std::string>> lines;
    std::vector<PointRow> points;
    for (int i = first; i < first + 2000; ++i) {
      lines.emplace_back(i % 2, absl::StrCat("line ", i));
      points.push_back({"training/loss", "", i, 1.0 * i, 1.0 / (i + 1)});
    }
    ASSERT_OK(db->AppendLogs(large, lines).status());
    ASSERT_OK(db->InsertPoints(large, points));
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<sql::Connection> c, sql::ConnectPostgres(url));
  // As autovacuum leaves a table that has been written a while: statistics taken, and the pages
  // marked all-visible (what lets an index-only scan skip the table).
  ASSERT_OK(c->Exec("vacuum", "VACUUM ANALYZE"));

  const std::vector<std::string> tail = Plan(*c, internal::kListLastLogsSql, {small, 100, -1});
  EXPECT_THAT(tail, Contains(HasSubstr("using logs_by_trial"))) << Join(tail);
  EXPECT_THAT(tail, Not(Contains(HasSubstr("Seq Scan")))) << Join(tail);
  const std::vector<std::string> page = Plan(*c, internal::kListLogsSql, {small, 1, -1, 1000});
  EXPECT_THAT(page, Contains(HasSubstr("using logs_by_trial"))) << Join(page);
  EXPECT_THAT(page, Not(Contains(HasSubstr("Seq Scan")))) << Join(page);

  // The large trial's series is the first: a range of its batches, every time.
  const std::vector<std::string> points =
      Plan(*c, internal::ReadPointsSql(), {1, 5000, 6000, 0, 1'000'000'000, 0});
  EXPECT_THAT(points, Contains(HasSubstr("Index Only Scan using series_points_by_batch")))
      << Join(points);
  EXPECT_THAT(points, Not(Contains(HasSubstr("Sort")))) << Join(points);
}

TEST(PostgresDatabaseTest, ReportsItsSizeAndPool) {
  ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresDatabase> db, PostgresDatabase::Open(url));
  ASSERT_OK_AND_ASSIGN(int64_t size, db->SizeBytes());
  EXPECT_GT(size, 1'000'000);  // a new database's catalogs alone are several MB
  std::vector<BackendMetric> metrics = db->BackendMetrics();
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].name, "pool_connections");
  EXPECT_EQ(metrics[0].value, 1);  // the connection opening used, idle now
  EXPECT_EQ(metrics[1].value, 1);
}

}  // namespace
}  // namespace cohort::master
