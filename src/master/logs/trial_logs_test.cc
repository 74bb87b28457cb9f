#include "master/logs/trial_logs.h"

#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::logs {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::SizeIs;

class TrialLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, SqliteDatabase::Open(":memory:"));
    ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("e")));
    TrialRow running = MakeTrial(experiment);
    running.state = wire::TrialState::kRunning;
    ASSERT_OK_AND_ASSIGN(trial_, db_->InsertTrial(running));
    logs_ = std::make_unique<TrialLogs>(*db_, gate_);
  }
  void Append(std::vector<std::pair<int, std::string>> lines) {
    ASSERT_OK(db_->AppendLogs(trial_, lines).status());
  }
  std::unique_ptr<SqliteDatabase> db_;
  series::FollowGate gate_{4};
  std::unique_ptr<TrialLogs> logs_;
  int64_t trial_ = 0;
};

TEST_F(TrialLogsTest, ReadsPagesAfterAPointOfOneRankOrAll) {
  Append({{0, "a"}, {1, "b"}, {0, "c"}});
  ASSERT_OK_AND_ASSIGN(wire::LogsPage all, logs_->Read(trial_, std::nullopt, 0, {}));
  ASSERT_THAT(all.logs, SizeIs(3));
  EXPECT_FALSE(all.done) << "a running trial's log goes on";
  ASSERT_OK_AND_ASSIGN(wire::LogsPage rank0, logs_->Read(trial_, 0, 0, {}));
  ASSERT_THAT(rank0.logs, SizeIs(2));
  EXPECT_EQ(rank0.logs[1].line, "c");
  ASSERT_OK_AND_ASSIGN(wire::LogsPage after,
                       logs_->Read(trial_, std::nullopt, all.logs[0].seq, {}));
  ASSERT_THAT(after.logs, SizeIs(2));
  EXPECT_EQ(after.logs[0].line, "b");
}

TEST_F(TrialLogsTest, TailGivesTheLastLinesAndAPointToFollowFrom) {
  Append({{0, "1"}, {0, "2"}, {0, "3"}, {0, "4"}});
  ASSERT_OK_AND_ASSIGN(wire::LogsPage tail, logs_->Tail(trial_, std::nullopt, 2));
  ASSERT_THAT(tail.logs, SizeIs(2));
  EXPECT_EQ(tail.logs[0].line, "3");
  EXPECT_EQ(tail.next, tail.logs[1].seq);
  Append({{0, "5"}});
  ASSERT_OK_AND_ASSIGN(wire::LogsPage next, logs_->Read(trial_, std::nullopt, tail.next, {}));
  ASSERT_THAT(next.logs, SizeIs(1));
  EXPECT_EQ(next.logs[0].line, "5");
}

TEST_F(TrialLogsTest, AFollowEndsWhenALineArrives) {
  absl::StatusOr<wire::LogsPage> followed;
  std::thread follower([&] { followed = logs_->Read(trial_, std::nullopt, 0, absl::Seconds(60)); });
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (gate_.waiting() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_GT(gate_.waiting(), 0) << "the follow never started waiting";
  Append({{0, "news"}});
  gate_.Notify();
  follower.join();
  ASSERT_OK(followed);
  ASSERT_THAT(followed->logs, SizeIs(1));
  EXPECT_EQ(followed->logs[0].line, "news");
}

TEST_F(TrialLogsTest, AnEndedTrialsLastPageIsDoneAndAnUnknownTrialIsNotFound) {
  Append({{0, "last words"}});
  ASSERT_OK_AND_ASSIGN(TrialRow row, db_->GetTrial(trial_));
  row.state = wire::TrialState::kCompleted;
  ASSERT_OK(db_->UpdateTrial(row));
  ASSERT_OK_AND_ASSIGN(wire::LogsPage page,
                       logs_->Read(trial_, std::nullopt, 0, absl::Seconds(60)));
  EXPECT_TRUE(page.done);
  EXPECT_EQ(page.state, wire::TrialState::kCompleted);
  EXPECT_THAT(logs_->Read(trial_ + 9, std::nullopt, 0, {}), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(logs_->Tail(trial_ + 9, std::nullopt, 5), StatusIs(absl::StatusCode::kNotFound));
}

// --level, --grep and the time window, filtered by the master: a page keeps only those lines,
// its next moves past every line scanned, and a filtered tail keeps the last matches.
TEST_F(TrialLogsTest, FilteredReadsKeepTheLinesAskedFor) {
  Append({{0, "step 1 ok"},
          {0, "W1130 07:00:00 slow step"},
          {1, "ERROR rank 1 out of memory"},
          {0, "Traceback (most recent call last):"},
          {-1, "launcher: WARNING low disk"},
          {0, "all done"}});
  ASSERT_OK_AND_ASSIGN(wire::LogsPage errors,
                       logs_->Read(trial_, LogQuery{.level = "error"}, 0, {}));
  ASSERT_THAT(errors.logs, SizeIs(2));
  EXPECT_EQ(errors.logs[0].line, "ERROR rank 1 out of memory");
  EXPECT_EQ(errors.logs[1].line, "Traceback (most recent call last):");
  ASSERT_OK_AND_ASSIGN(wire::LogsPage all, logs_->Read(trial_, std::nullopt, 0, {}));
  EXPECT_EQ(errors.next, all.next) << "every line was scanned";
  ASSERT_OK_AND_ASSIGN(wire::LogsPage warnings,
                       logs_->Read(trial_, LogQuery{.level = "warning"}, 0, {}));
  EXPECT_THAT(warnings.logs, SizeIs(4));
  ASSERT_OK_AND_ASSIGN(wire::LogsPage grep,
                       logs_->Read(trial_, LogQuery{.grep = "OUT OF MEMORY"}, 0, {}));
  ASSERT_THAT(grep.logs, SizeIs(1));
  EXPECT_EQ(grep.logs[0].rank, 1);
  ASSERT_OK_AND_ASSIGN(wire::LogsPage rank0_warn,
                       logs_->Read(trial_, LogQuery{.rank = 0, .level = "warning"}, 0, {}));
  EXPECT_THAT(rank0_warn.logs, SizeIs(2)) << "the W1130 line and the traceback";
  const int64_t stored_ms = static_cast<int64_t>(all.logs[0].time * 1000);
  ASSERT_OK_AND_ASSIGN(wire::LogsPage none,
                       logs_->Read(trial_, LogQuery{.until_ms = stored_ms}, 0, {}));
  EXPECT_THAT(none.logs, SizeIs(0)) << "nothing was stored before the first line";
  ASSERT_OK_AND_ASSIGN(wire::LogsPage since,
                       logs_->Read(trial_, LogQuery{.since_ms = stored_ms}, 0, {}));
  EXPECT_THAT(since.logs, SizeIs(6));
  ASSERT_OK_AND_ASSIGN(wire::LogsPage tail, logs_->Tail(trial_, LogQuery{.level = "warning"}, 2));
  ASSERT_THAT(tail.logs, SizeIs(2));
  EXPECT_EQ(tail.logs[1].line, "launcher: WARNING low disk");
  EXPECT_EQ(tail.next, all.next);
  EXPECT_THAT(logs_->Read(trial_, LogQuery{.level = "info"}, 0, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("level")));
}

}  // namespace
}  // namespace cohort::master::logs
