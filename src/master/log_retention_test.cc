// LogRetention against a real (in-memory) SQLite database.

#include "master/log_retention.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"

namespace cohort::master {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class LogRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenSqliteDatabase(":memory:").value();
    ExperimentRow experiment;
    experiment.name = "logs";
    experiment_ = db_->InsertExperiment(experiment).value();
  }
  int64_t AddTrial() {
    TrialRow trial;
    trial.experiment_id = experiment_;
    return db_->InsertTrial(trial).value();
  }
  // Appends "<prefix> <first>" .. "<prefix> <last>", each padded with dots to `width` bytes.
  void Append(int64_t trial, int first, int last, size_t width = 0) {
    std::vector<std::pair<int, std::string>> lines;
    for (int i = first; i <= last; ++i) {
      std::string line = absl::StrCat("line ", i);
      if (line.size() < width) line.resize(width, '.');
      lines.emplace_back(0, std::move(line));
      if (lines.size() == 1000 || i == last) {
        ASSERT_OK(db_->AppendLogs(trial, lines));
        lines.clear();
      }
    }
  }
  std::vector<std::string> Lines(int64_t trial) {
    const std::vector<LogRow> rows = db_->ListLogs(trial, 0, std::nullopt, 10'000'000).value();
    std::vector<std::string> lines;
    for (const LogRow& row : rows) lines.push_back(row.line);
    return lines;
  }
  LogStatsRow Stats(int64_t trial) {
    const std::vector<LogStatsRow> rows = db_->ListLogStats().value();
    for (const LogStatsRow& row : rows) {
      if (row.trial_id == trial) return row;
    }
    return LogStatsRow{};
  }

  std::unique_ptr<Database> db_;
  int64_t experiment_ = 0;
};

TEST_F(LogRetentionTest, ATrialOverItsLimitKeepsItsFirstTenthAndItsNewestLines) {
  const int64_t trial = AddTrial();
  Append(trial, 1, 2500);
  LogRetention retention(*db_, {.lines_per_trial = 1000, .total_bytes = 0});
  ASSERT_EQ(retention.Trim().value(), 1500);
  std::vector<std::string> lines = Lines(trial);
  ASSERT_THAT(lines, SizeIs(1001));
  EXPECT_EQ(lines[99], "line 100");
  EXPECT_EQ(lines[100],
            "[cohort-master: 1500 lines dropped here; a trial's log keeps its first 100 and its "
            "newest 900 lines (cohort-master --log-retention-lines-per-trial 1000)]");
  EXPECT_EQ(lines[101], "line 1601");
  EXPECT_EQ(lines.back(), "line 2500");

  // More lines: the gap grows behind the same marker; the beginning stays.
  Append(trial, 2501, 2700);
  ASSERT_EQ(retention.Trim().value(), 200);
  lines = Lines(trial);
  ASSERT_THAT(lines, SizeIs(1001));
  EXPECT_EQ(lines[0], "line 1");
  EXPECT_THAT(lines[100], HasSubstr("1700 lines dropped here"));
  EXPECT_EQ(lines[101], "line 1801");
  EXPECT_EQ(retention.lines_dropped(), 1700);
}

TEST_F(LogRetentionTest, DropsInBatchesAndLeavesTrialsWithinTheLimitAlone) {
  const int64_t big = AddTrial();
  const int64_t small = AddTrial();
  Append(big, 1, 20000);
  Append(small, 1, 1000);
  LogRetention retention(*db_, {.lines_per_trial = 1000, .total_bytes = 0});
  EXPECT_EQ(retention.TrimOnce().value(), LogRetention::kBatchLines);
  EXPECT_EQ(retention.TrimOnce().value(), LogRetention::kBatchLines);
  EXPECT_EQ(retention.Trim().value(), 19000 - 2 * LogRetention::kBatchLines);
  EXPECT_EQ(retention.TrimOnce().value(), 0);
  EXPECT_EQ(Stats(big).lines, 1000);
  EXPECT_EQ(Stats(small).lines, 1000);
  EXPECT_EQ(Stats(small).dropped, 0);
}

// Three trials of 100 lines of 100 bytes (10,000 bytes each) under a total of 15,000 bytes:
// the oldest trial goes entirely, the second loses its oldest half, the newest keeps all.
TEST_F(LogRetentionTest, TheTotalLimitDropsTheOldestTrialsLogsFirst) {
  const int64_t oldest = AddTrial();
  const int64_t middle = AddTrial();
  const int64_t newest = AddTrial();
  for (int64_t trial : {oldest, middle, newest}) Append(trial, 1, 100, 100);
  LogRetention retention(*db_, {.lines_per_trial = 0, .total_bytes = 15000});
  ASSERT_EQ(retention.Trim().value(), 150);
  EXPECT_THAT(Lines(oldest),
              ElementsAre("[cohort-master: 100 lines dropped here; the master keeps at most 15000 "
                          "bytes of log text, dropping the oldest trials' logs first "
                          "(cohort-master --log-retention-total-bytes 15000)]"));
  std::vector<std::string> lines = Lines(middle);
  ASSERT_THAT(lines, SizeIs(51));
  EXPECT_THAT(lines[0], HasSubstr("50 lines dropped here"));
  EXPECT_THAT(lines[1], HasSubstr("line 51."));
  EXPECT_THAT(Lines(newest), SizeIs(100));
  EXPECT_EQ(Stats(oldest).bytes + Stats(middle).bytes + Stats(newest).bytes, 15000);
}

TEST_F(LogRetentionTest, TheTotalLimitNeverDropsTheNewestTrial) {
  const int64_t only = AddTrial();
  Append(only, 1, 100, 100);
  LogRetention retention(*db_, {.lines_per_trial = 0, .total_bytes = 1000});
  EXPECT_EQ(retention.Trim().value(), 0);
  EXPECT_THAT(Lines(only), SizeIs(100));
}

TEST_F(LogRetentionTest, ItsThreadTrimsInTheBackgroundUntilStopped) {
  const int64_t trial = AddTrial();
  LogRetention retention(*db_, {.lines_per_trial = 1000, .total_bytes = 0});
  retention.Start(absl::Milliseconds(10));
  Append(trial, 1, 3000);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (Stats(trial).lines > 1000 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Stats(trial).lines, 1000);
  retention.Stop();
  Append(trial, 3001, 3500);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Stats(trial).lines, 1500) << "a stopped retention dropped lines";
}

}  // namespace
}  // namespace cohort::master
