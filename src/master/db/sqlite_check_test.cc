// SqliteDatabase::Open's refusals (a file that is not SQLite, another program's database, a
// damaged file) and BackupSqliteDatabase, on real files.

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_backup.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class SqliteCheckTest : public ::testing::Test {
 protected:
  // A database with one experiment, one trial and `lines` log lines (80 bytes each), closed.
  void Fill(int lines) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> db, OpenSqliteDatabase(path_));
    ASSERT_OK_AND_ASSIGN(int64_t experiment, db->InsertExperiment(MakeExperiment("kept")));
    ASSERT_OK_AND_ASSIGN(trial_, db->InsertTrial(MakeTrial(experiment)));
    std::vector<std::pair<int, std::string>> batch;
    for (int i = 0; i < lines; ++i) {
      batch.emplace_back(0, absl::StrCat("line ", i, " ", std::string(70, 'x')));
      if (batch.size() == 1000 || i + 1 == lines) {
        ASSERT_OK(db->AppendLogs(trial_, batch).status());
        batch.clear();
      }
    }
  }

  TempDir dir_;
  const std::string path_ = dir_.path() + "/master.db";
  int64_t trial_ = 0;
};

TEST_F(SqliteCheckTest, RefusesATextFileAndLeavesItAsItWas) {
  const std::string text = "this is not an SQLite database, just some text that is long enough\n";
  WriteBytes(path_, text);
  absl::Status status = OpenSqliteDatabase(path_).status();
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path_ + " is not an SQLite database"),
                             HasSubstr("will not touch it"), HasSubstr("restore it from a backup"),
                             HasSubstr("--data-dir"))));
  EXPECT_EQ(ReadBytes(path_), text);
}

TEST_F(SqliteCheckTest, RefusesAnotherProgramsDatabaseWithoutChangingIt) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER); CREATE TABLE albums (name TEXT)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string before = ReadBytes(path_);
  EXPECT_THAT(OpenSqliteDatabase(path_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path_ + " is an SQLite database but not Cohort's"),
                             HasSubstr("albums, photos"), HasSubstr("no schema_version"),
                             HasSubstr("will not change it"))));
  EXPECT_EQ(ReadBytes(path_), before);
  EXPECT_THAT(QueryFile(path_, "SELECT name FROM sqlite_master ORDER BY name"),
              ::testing::ElementsAre("albums", "photos"));
}

TEST_F(SqliteCheckTest, RefusesADamagedFileNamingItAndTheWayOut) {
  Fill(20000);
  std::string bytes = ReadBytes(path_);
  ASSERT_GT(bytes.size(), 400000u);
  // Four pages in the middle of the log table overwritten, as a bad disk or a stray write would.
  const size_t at = bytes.size() / 2 / 4096 * 4096;
  for (size_t i = 0; i < 4 * 4096; ++i) bytes[at + i] = static_cast<char>((i * 37) % 251);
  WriteBytes(path_, bytes);
  absl::Status status = OpenSqliteDatabase(path_).status();
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path_ + " is damaged"), HasSubstr("will not start on it"),
                             HasSubstr("Restore the file from a backup"))));
  EXPECT_EQ(ReadBytes(path_), bytes) << "the damaged file was changed";
}

TEST_F(SqliteCheckTest, RefusesATruncatedFile) {
  Fill(20000);
  fs::resize_file(path_, fs::file_size(path_) / 2);
  EXPECT_THAT(OpenSqliteDatabase(path_).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path_ + " is damaged")));
}

TEST_F(SqliteCheckTest, RefusesASchemaVersionTableWithAGap) {
  Fill(1);
  ExecOnFile(path_, "DELETE FROM schema_version WHERE version = ?1", 2);
  EXPECT_THAT(OpenSqliteDatabase(path_).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path_ + " is damaged"), HasSubstr("schema_version"))));
}

TEST_F(SqliteCheckTest, StartsOnAnEmptyFileAndChecksAnExistingOne) {
  WriteBytes(path_, "");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> fresh, SqliteDatabase::Open(path_));
  EXPECT_EQ(fresh->integrity_check(), IntegrityCheck::kSkipped);
  fresh.reset();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> again, SqliteDatabase::Open(path_));
  EXPECT_EQ(again->integrity_check(), IntegrityCheck::kPassed);
}

TEST_F(SqliteCheckTest, TheCheckStopsAtItsTimeLimitAndTheFileIsUsed) {
  Fill(20000);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> cut,
                       SqliteDatabase::Open(path_, {.check_time_limit = absl::Nanoseconds(1)}));
  EXPECT_EQ(cut->integrity_check(), IntegrityCheck::kCutShort);
  EXPECT_THAT(cut->ListLastLogs(trial_, 1, std::nullopt).value(), SizeIs(1));
  cut.reset();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> skipped,
                       SqliteDatabase::Open(path_, {.check_time_limit = absl::ZeroDuration()}));
  EXPECT_EQ(skipped->integrity_check(), IntegrityCheck::kSkipped);
}

// The backup copies one snapshot while another connection keeps committing batches of 100
// lines: the copy holds whole batches only, and its log_stats agree with its logs.
TEST_F(SqliteCheckTest, BackupIsConsistentWhileAnotherConnectionWrites) {
  Fill(20000);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> live, OpenSqliteDatabase(path_));
  std::atomic<bool> stop{false};
  std::atomic<int> batches{0};
  std::thread writer([&] {
    std::vector<std::pair<int, std::string>> batch(100, {1, std::string(80, 'w')});
    while (!stop) {
      EXPECT_OK(live->AppendLogs(trial_, batch));
      ++batches;
    }
  });
  std::vector<std::pair<int64_t, int64_t>> progress;
  const std::string copy = dir_.path() + "/backup.db";
  absl::StatusOr<BackupResult> done =
      BackupSqliteDatabase(path_, copy,
                           {.progress =
                                [&](int64_t copied, int64_t total) {
                                  progress.emplace_back(copied, total);
                                  if (batches < 5) absl::SleepFor(absl::Milliseconds(1));
                                },
                            .pages_per_step = 8});
  stop = true;
  writer.join();
  ASSERT_OK(done);
  EXPECT_GT(batches.load(), 0);
  ASSERT_GT(progress.size(), 10u) << "copied in steps";
  EXPECT_EQ(progress.back().first, progress.back().second);
  EXPECT_EQ(done->pages, progress.back().second);
  EXPECT_EQ(done->check, IntegrityCheck::kPassed);
  EXPECT_FALSE(fs::exists(copy + ".tmp-" + std::to_string(::getpid())));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SqliteDatabase> restored, SqliteDatabase::Open(copy));
  EXPECT_EQ(restored->integrity_check(), IntegrityCheck::kPassed);
  ASSERT_OK_AND_ASSIGN(std::vector<ExperimentRow> experiments, restored->ListExperiments());
  ASSERT_THAT(experiments, SizeIs(1));
  EXPECT_EQ(experiments[0].name, "kept");
  ASSERT_OK_AND_ASSIGN(std::vector<LogStatsRow> stats, restored->ListLogStats());
  ASSERT_THAT(stats, SizeIs(1));
  EXPECT_GE(stats[0].lines, 20000);
  EXPECT_EQ((stats[0].lines - 20000) % 100, 0) << "a batch copied in part";
  ASSERT_OK_AND_ASSIGN(std::vector<LogRow> all,
                       restored->ListLogs(trial_, 0, std::nullopt, 10'000'000));
  EXPECT_EQ(static_cast<int64_t>(all.size()), stats[0].lines);
}

TEST_F(SqliteCheckTest, BackupRefusesToReplaceAFileUnlessTold) {
  Fill(10);
  const std::string copy = dir_.path() + "/backup.db";
  WriteBytes(copy, "precious");
  EXPECT_THAT(BackupSqliteDatabase(path_, copy, {}).status(),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       AllOf(HasSubstr(copy + " exists"), HasSubstr("--overwrite"))));
  EXPECT_EQ(ReadBytes(copy), "precious");
  ASSERT_OK(BackupSqliteDatabase(path_, copy, {.overwrite = true}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Database> restored, OpenSqliteDatabase(copy));
  EXPECT_THAT(restored->ListLogs(trial_, 0, std::nullopt, 100).value(), SizeIs(10));
}

TEST_F(SqliteCheckTest, BackupRefusesWhatIsNotCohortsDatabaseAndLeavesNoFile) {
  const std::string copy = dir_.path() + "/backup.db";
  EXPECT_THAT(BackupSqliteDatabase(path_, copy, {}).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(path_ + ": no database there")));
  WriteBytes(path_, "some text, no database");
  EXPECT_THAT(BackupSqliteDatabase(path_, copy, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not an SQLite database")));
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_.path())) {
    files.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(files, ::testing::ElementsAre("master.db")) << "no copy, no temporary file";
}

}  // namespace
}  // namespace cohort::master
