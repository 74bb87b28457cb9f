// The database's logs beyond appending and paging (sqlite_database_test.cc), on both backends:
// the counts kept for retention, dropping lines with a marker; and on SQLite, reading the tail
// of a long log from the index.

#include <sqlite3.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/internal/read_sql.h"
#include "master/db/postgres_database.h"
#include "master/db/sqlite_database.h"
#include "master/db/sqlite_migrations.h"
#include "master/db/testing/db_test_helpers.h"
#include "master/db/testing/postgres_server.h"

namespace cohort::master {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// "line 1" .. "line n".
std::vector<std::pair<int, std::string>> Numbered(int first, int last) {
  std::vector<std::pair<int, std::string>> lines;
  for (int i = first; i <= last; ++i) lines.emplace_back(0, absl::StrCat("line ", i));
  return lines;
}

// Run on SQLite (in memory) and on PostgreSQL (a fresh database on the binary's shared server).
class SqliteLogsTest : public ::testing::TestWithParam<bool /*postgres*/> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      ASSERT_OK_AND_ASSIGN(std::string url, db_testing::NewSharedDatabase());
      ASSERT_OK_AND_ASSIGN(db_, PostgresDatabase::Open(url));
    } else {
      ASSERT_OK_AND_ASSIGN(db_, OpenSqliteDatabase(":memory:"));
    }
    ASSERT_OK_AND_ASSIGN(experiment_, db_->InsertExperiment(MakeExperiment("logs")));
  }
  int64_t AddTrial() { return db_->InsertTrial(MakeTrial(experiment_)).value(); }
  std::vector<std::string> AllLines(int64_t trial) {
    return Lines(db_->ListLogs(trial, 0, std::nullopt, 1'000'000).value());
  }

  std::unique_ptr<Database> db_;
  int64_t experiment_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Backends, SqliteLogsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Postgres" : "Sqlite";
                         });

TEST_P(SqliteLogsTest, StatsCountEachTrialsLinesAndTextBytes) {
  const int64_t a = AddTrial();
  const int64_t b = AddTrial();
  EXPECT_THAT(db_->ListLogStats().value(), IsEmpty());
  ASSERT_OK(db_->AppendLogs(a, {{0, "abc"}, {1, "\xC3\xA9"}}).status());  // é: 2 bytes
  ASSERT_OK(db_->AppendLogs(b, {{0, "12345"}}).status());
  ASSERT_OK(db_->AppendLogs(a, {{-1, ""}}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db_->ListLogStats());
  ASSERT_THAT(stats, SizeIs(2));
  EXPECT_EQ(stats[0].trial_id, a);
  EXPECT_EQ(stats[0].lines, 3);
  EXPECT_EQ(stats[0].bytes, 5);
  EXPECT_EQ(stats[1].trial_id, b);
  EXPECT_EQ(stats[1].lines, 1);
  EXPECT_EQ(stats[1].bytes, 5);
  EXPECT_EQ(stats[1].dropped, 0);
}

// The master's own lines for several trials go in one transaction: in order, rank -1, each
// trial's counts kept; an unknown trial among them writes none of them.
TEST_P(SqliteLogsTest, MasterLinesForSeveralTrialsAreAppendedTogetherOrNotAtAll) {
  const int64_t a = AddTrial();
  const int64_t b = AddTrial();
  ASSERT_OK(db_->AppendMasterLines({{a, "master: one"}, {b, "master: two"}, {a, "master: 3"}}));
  EXPECT_THAT(AllLines(a), ElementsAre("master: one", "master: 3"));
  EXPECT_THAT(AllLines(b), ElementsAre("master: two"));
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> rows, db_->ListLogs(a, 0, -1, 10));
  EXPECT_THAT(rows, SizeIs(2)) << "the master's lines are rank -1";
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db_->ListLogStats());
  ASSERT_THAT(stats, SizeIs(2));
  EXPECT_EQ(stats[0].lines, 2);
  EXPECT_EQ(stats[0].bytes, 20);  // "master: one" and "master: 3"
  EXPECT_EQ(stats[1].bytes, 11);

  const absl::Status unknown = db_->AppendMasterLines({{b, "master: kept?"}, {a + 100, "x"}});
  EXPECT_THAT(unknown, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(AllLines(b), ElementsAre("master: two")) << "rolled back with the unknown trial";
  EXPECT_OK(db_->AppendMasterLines({}));

  // More than one statement's worth (64 rows), two trials interleaved: order and counts kept.
  std::vector<std::pair<int64_t, std::string>> many;
  for (int i = 0; i < 150; ++i) many.emplace_back(i % 3 == 0 ? b : a, absl::StrCat("m", i));
  ASSERT_OK(db_->AppendMasterLines(many));
  const std::vector<std::string> of_b = AllLines(b);
  ASSERT_THAT(of_b, SizeIs(51));
  EXPECT_EQ(of_b[1], "m0");
  EXPECT_EQ(of_b[50], "m147");
  EXPECT_EQ(db_->ListLogStats().value()[1].lines, 51);
  EXPECT_EQ(db_->ListLogStats().value()[0].lines, 102);
}

TEST_P(SqliteLogsTest, DropKeepsTheBeginningAndOneMarkerCountsTheGap) {
  const int64_t trial = AddTrial();
  const int64_t other = AddTrial();
  ASSERT_OK(db_->AppendLogs(trial, Numbered(1, 50)).status());
  ASSERT_OK(db_->AppendLogs(other, Numbered(1, 5)).status());  // seqs interleaved
  ASSERT_OK(db_->AppendLogs(trial, Numbered(51, 100)).status());

  EXPECT_EQ(db_->DropLogLines(trial, 10, 30, "why").value(), 30);
  std::vector<std::string> lines = AllLines(trial);
  ASSERT_THAT(lines, SizeIs(71));
  EXPECT_EQ(lines[9], "line 10");
  EXPECT_EQ(lines[10], "[cohort-master: 30 lines dropped here; why]");
  EXPECT_EQ(lines[11], "line 41");
  EXPECT_EQ(lines.back(), "line 100");

  // The next drop continues after the marker, which now counts both.
  EXPECT_EQ(db_->DropLogLines(trial, 10, 20, "why").value(), 20);
  lines = AllLines(trial);
  ASSERT_THAT(lines, SizeIs(51));
  EXPECT_EQ(lines[10], "[cohort-master: 50 lines dropped here; why]");
  EXPECT_EQ(lines[11], "line 61");
  const std::vector<LogRow> rows = db_->ListLogs(trial, 0, std::nullopt, 100).value();
  EXPECT_EQ(rows[10].rank, -1);
  EXPECT_LT(rows[9].seq, rows[10].seq);
  EXPECT_LT(rows[10].seq, rows[11].seq);

  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db_->ListLogStats());
  EXPECT_EQ(stats[0].lines, 50);
  EXPECT_EQ(stats[0].dropped, 50);
  int64_t bytes = 0;
  for (const LogRow& row : rows) {
    if (row.rank >= 0) bytes += static_cast<int64_t>(row.line.size());
  }
  EXPECT_EQ(stats[0].bytes, bytes);
  EXPECT_THAT(AllLines(other), SizeIs(5)) << "another trial's lines in the seq range";
}

TEST_P(SqliteLogsTest, DropFromTheStartTakesTheOldestLinesAndKeepsTheMarker) {
  const int64_t trial = AddTrial();
  ASSERT_OK(db_->AppendLogs(trial, Numbered(1, 20)).status());
  EXPECT_EQ(db_->DropLogLines(trial, 5, 5, "limit").value(), 5);  // marker after line 5
  EXPECT_EQ(db_->DropLogLines(trial, 0, 7, "total").value(), 7);
  EXPECT_THAT(AllLines(trial),
              ElementsAre("[cohort-master: 12 lines dropped here; total]", "line 13", "line 14",
                          "line 15", "line 16", "line 17", "line 18", "line 19", "line 20"));
  EXPECT_EQ(db_->DropLogLines(trial, 0, 100, "total").value(), 8);
  EXPECT_THAT(AllLines(trial), ElementsAre("[cohort-master: 20 lines dropped here; total]"));
  EXPECT_EQ(db_->DropLogLines(trial, 0, 100, "total").value(), 0) << "the marker stays";
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db_->ListLogStats());
  EXPECT_EQ(stats[0].lines, 0);
  EXPECT_EQ(stats[0].bytes, 0);
  // New lines come after the marker and are counted again.
  ASSERT_OK(db_->AppendLogs(trial, Numbered(21, 21)).status());
  EXPECT_THAT(AllLines(trial), ElementsAre(HasSubstr("20 lines dropped"), "line 21"));
}

TEST_P(SqliteLogsTest, DropsNothingWithinTheKeptBeginningOrOfAnUnknownTrial) {
  const int64_t trial = AddTrial();
  ASSERT_OK(db_->AppendLogs(trial, Numbered(1, 10)).status());
  EXPECT_EQ(db_->DropLogLines(trial, 10, 5, "why").value(), 0);
  EXPECT_EQ(db_->DropLogLines(trial, 50, 5, "why").value(), 0);
  EXPECT_EQ(db_->DropLogLines(999, 0, 5, "why").value(), 0);
  EXPECT_THAT(AllLines(trial), SizeIs(10));
  EXPECT_THAT(db_->DropLogLines(trial, -1, 5, "why").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("keep_first >= 0")));
}

// A file from before log retention (schema version 7): the migration to version 10 counts what it
// holds.
TEST(SqliteLogsMigrationTest, MigrationCountsTheLogsAlreadyStored) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::string sql = "CREATE TABLE schema_version (version INTEGER NOT NULL);";
  for (int v = 1; v <= 7; ++v) {
    absl::StrAppend(&sql, internal::SqliteMigrations()[v - 1],
                    "INSERT INTO schema_version VALUES (", v, ");");
  }
  absl::StrAppend(&sql,
                  "INSERT INTO experiments (name, state, config_yaml, original_yaml, "
                  "template_name, context_path, slots_per_trial, priority, max_restarts, "
                  "created_ms) VALUES ('old', 'ACTIVE', '', '', '', '', 1, 42, 0, 0);"
                  "INSERT INTO trials (experiment_id, hparams_json, seed, state, restarts, "
                  "batches, total_batches, latest_checkpoint, error_lines, sequence) VALUES "
                  "(1, '{}', 0, 'COMPLETED', 0, 0, 0, '', '', 1);"
                  "INSERT INTO logs (trial_id, rank, line) VALUES (1, 0, 'ab'), (1, 0, 'cde');");
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, db->ListLogStats());
  ASSERT_THAT(stats, SizeIs(1));
  EXPECT_EQ(stats[0].trial_id, 1);
  EXPECT_EQ(stats[0].lines, 2);
  EXPECT_EQ(stats[0].bytes, 5);
}

// What SQLite did to run `sql` on trial `trial` with the second parameter `second` (and the
// third `limit` when there is one): the rows it returned, the virtual-machine steps it took,
// full-scan steps, sorts, and its query plan.
struct QueryRun {
  int rows = 0;
  int64_t vm_steps = 0, fullscan_steps = 0, sorts = 0;
  std::vector<std::string> plan;
};

QueryRun RunOnFile(const std::string& path, const char* sql, std::vector<int64_t> params) {
  QueryRun run;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  const std::string explain = absl::StrCat("EXPLAIN QUERY PLAN ", sql);
  EXPECT_EQ(sqlite3_prepare_v2(db, explain.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    run.plan.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)));
  }
  sqlite3_finalize(stmt);
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  for (size_t i = 0; i < params.size(); ++i) {
    // Parameter 3 of kListLogsSql (rank) is NULL: all ranks.
    if (params[i] < 0) {
      sqlite3_bind_null(stmt, static_cast<int>(i + 1));
    } else {
      sqlite3_bind_int64(stmt, static_cast<int>(i + 1), params[i]);
    }
  }
  while (sqlite3_step(stmt) == SQLITE_ROW) ++run.rows;
  run.vm_steps = sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0);
  run.fullscan_steps = sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0);
  run.sorts = sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_SORT, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return run;
}

// The tail of a trial with a million lines (another trial's lines between them) is read in
// about as many steps as lines returned: the plan walks logs_by_trial backwards from the end,
// without a scan or a sort, and ListLastLogs returns the newest lines.
TEST(SqliteLogsTailTest, TheTailOfAMillionLineLogIsReadFromTheIndex) {
  TempDir dir;
  const std::string path = dir.path() + "/master.db";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path));
  const int64_t experiment = db->InsertExperiment(MakeExperiment("flood")).value();
  const int64_t trial = db->InsertTrial(MakeTrial(experiment)).value();
  const int64_t other = db->InsertTrial(MakeTrial(experiment)).value();
  constexpr int kLines = 1'000'000;
  for (int first = 1; first <= kLines; first += 10000) {
    ASSERT_OK(db->AppendLogs(trial, Numbered(first, first + 9999)).status());
    ASSERT_OK(db->AppendLogs(other, Numbered(first, first + 9)).status());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> tail, db->ListLastLogs(trial, 100, std::nullopt));
  ASSERT_THAT(tail, SizeIs(100));
  EXPECT_EQ(tail.front().line, "line 999901");
  EXPECT_EQ(tail.back().line, "line 1000000");
  const int64_t after = tail.front().seq - 1;
  db.reset();

  const QueryRun last = RunOnFile(path, internal::kListLastLogsSql, {trial, 100});
  EXPECT_EQ(last.rows, 100);
  EXPECT_THAT(last.plan, Contains(HasSubstr("USING INDEX logs_by_trial (trial_id=?)")));
  EXPECT_THAT(last.plan, Not(Contains(HasSubstr("TEMP B-TREE"))));
  EXPECT_EQ(last.fullscan_steps, 0);
  EXPECT_EQ(last.sorts, 0);
  EXPECT_LT(last.vm_steps, 100 * 50) << "steps for 100 lines of " << kLines;

  // A follower's page (lines after a seq) is a range of the same index.
  const QueryRun page = RunOnFile(path, internal::kListLogsSql, {trial, after, -1, 1000});
  EXPECT_EQ(page.rows, 100);
  EXPECT_THAT(page.plan, Contains(HasSubstr("USING INDEX logs_by_trial (trial_id=? AND seq>?)")));
  EXPECT_EQ(page.fullscan_steps, 0);
  EXPECT_LT(page.vm_steps, 100 * 50);
}

}  // namespace
}  // namespace cohort::master
