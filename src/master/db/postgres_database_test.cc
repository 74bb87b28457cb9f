// PostgresDatabase against a server that goes away: a server killed and restarted under a writer
// loses nothing the database acknowledged, calls while it is down fail at once with Unavailable
// naming the database, and writing resumes on new connections once it is back.

#include "master/db/postgres_database.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using ::testing::HasSubstr;

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
