// SqliteDatabase under the writes of many threads at once (as the master's request threads
// make them): each call's result is its own, a write that fails halfway is undone alone, and
// what was acknowledged is on disk.

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master {
namespace {

constexpr int64_t kNoSuchTrial = 999'999;

TEST(SqliteConcurrencyTest, AWriteThatFailsHalfwayIsUndoneAlone) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(":memory:"));
  ASSERT_OK_AND_ASSIGN(int64_t exp, db->InsertExperiment(MakeExperiment("concurrency")));
  ASSERT_OK_AND_ASSIGN(int64_t trial, db->InsertTrial(MakeTrial(exp)));
  // The first row is valid, the second names no trial: neither is stored.
  absl::Status s = db->InsertMetrics({{trial, "training", 1, "{\"loss\": 1}", 0},
                                      {kNoSuchTrial, "training", 1, "{\"loss\": 1}", 0}});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(db->ListMetrics(trial, std::nullopt).value(), ::testing::IsEmpty());
  ASSERT_OK(db->InsertMetrics({{trial, "training", 2, "{\"loss\": 0.5}", 0}}));
  EXPECT_THAT(db->ListMetrics(trial, std::nullopt).value(), ::testing::SizeIs(1));
}

// Another program holding the file's write lock (a sqlite3 shell in a transaction): a write
// waits out SQLite's busy timeout once (no retries on top of it), then fails as Aborted (the
// master answers 503) naming the file, stores nothing, and goes through once the lock is gone.
TEST(SqliteConcurrencyTest, AWriteBlockedByAnotherProgramsLockFailsOnceNamingTheFile) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
  ASSERT_OK_AND_ASSIGN(int64_t exp, db->InsertExperiment(MakeExperiment("locked")));
  ASSERT_OK_AND_ASSIGN(int64_t trial, db->InsertTrial(MakeTrial(exp)));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const absl::Status blocked = db->AppendLogs(trial, {{0, "waits"}}).status();
  EXPECT_THAT(blocked, StatusIs(absl::StatusCode::kAborted,
                                ::testing::AllOf(::testing::HasSubstr(path),
                                                 ::testing::HasSubstr("locked"))));
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_THAT(db->ListLogs(trial, 0, std::nullopt, 10).value(), ::testing::IsEmpty());
  EXPECT_THAT(db->AppendLogs(trial, {{0, "goes through"}}), IsOkAndHolds(1));
}

// Threads append logs, metrics and trial updates at once, some to a trial that does not exist;
// each call's result is its own, and every acknowledged write is in the file when it is opened
// again.
TEST(SqliteConcurrencyTest, ConcurrentWritersGetTheirOwnResultsAndAcknowledgedWritesAreStored) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "sqlite_concurrency_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cohort.db").string();
  constexpr int kThreads = 8, kRounds = 150;
  std::vector<int64_t> trials;
  std::atomic<int> wrong{0}, logged{0}, measured{0};
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
    ASSERT_OK_AND_ASSIGN(int64_t exp, db->InsertExperiment(MakeExperiment("concurrency")));
    for (int t = 0; t < kThreads; ++t) trials.push_back(db->InsertTrial(MakeTrial(exp)).value());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const int64_t trial = trials[t];
        for (int i = 0; i < kRounds; ++i) {
          if (i % 10 == 9) {  // a write that must fail, among the others
            if (!absl::IsNotFound(db->AppendLogs(kNoSuchTrial, {{0, "lost"}}).status())) ++wrong;
            continue;
          }
          absl::StatusOr<int64_t> seq = db->AppendLogs(trial, {{0, absl::StrCat(t, ":", i)}});
          if (!seq.ok() || *seq <= 0) ++wrong;
          if (seq.ok()) ++logged;
          if (db->InsertMetrics({{trial, "training", i, "{\"loss\": 1}", 0}}).ok()) ++measured;
          TrialRow row = db->GetTrial(trial).value();
          row.restarts = i;
          if (!db->UpdateTrial(row).ok()) ++wrong;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(logged, kThreads * kRounds * 9 / 10);
  EXPECT_EQ(measured, logged.load());

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
  int64_t lines = 0, metrics = 0;
  for (int t = 0; t < kThreads; ++t) {
    std::vector<LogRow> rows = db->ListLogs(trials[t], 0, std::nullopt, 1'000'000).value();
    lines += static_cast<int64_t>(rows.size());
    for (const LogRow& row : rows) {
      EXPECT_THAT(row.line, ::testing::StartsWith(absl::StrCat(t, ":")));
    }
    metrics += static_cast<int64_t>(db->ListMetrics(trials[t], std::nullopt).value().size());
    EXPECT_EQ(db->GetTrial(trials[t]).value().restarts, kRounds - 2);  // the last round logged
  }
  EXPECT_EQ(lines, logged.load());
  EXPECT_EQ(metrics, measured.load());
  EXPECT_THAT(db->ListLogs(kNoSuchTrial, 0, std::nullopt, 10).value(), ::testing::IsEmpty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cohort::master
