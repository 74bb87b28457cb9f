// WalCheckpointer on a real WAL database file: checkpoints run on its thread, not in the
// writer's commits; past writer_pages the writer checkpoints and the WAL starts over; a file
// not in WAL mode is refused by name.

#include "master/db/internal/wal_checkpointer.h"

#include <sqlite3.h>

#include <climits>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::internal {
namespace {

namespace fs = std::filesystem;

class WalCheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "wal.db").string();
    ASSERT_EQ(sqlite3_open(path_.c_str(), &writer_), SQLITE_OK);
    // As SqliteDatabase's own connection (5 s): the checkpointer's connection, opening or
    // checkpointing, may hold a WAL lock for a moment, and without a busy timeout a commit
    // then fails at once with "database is locked" (seen once in a full run on 2026-11-28).
    sqlite3_busy_timeout(writer_, 5000);
  }
  void TearDown() override { sqlite3_close(writer_); }

  void Exec(const std::string& sql) {
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(writer_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << sql << ": " << (error != nullptr ? error : "");
    sqlite3_free(error);
  }
  void MakeWalTable() {
    Exec("PRAGMA journal_mode=WAL");
    Exec("PRAGMA synchronous=NORMAL");
    Exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, payload BLOB)");
  }
  // `commits` transactions of one 4 KiB row each: at least one new page of WAL per commit.
  void Commit(int commits) {
    for (int i = 0; i < commits; ++i) Exec("INSERT INTO rows (payload) VALUES (zeroblob(4096))");
  }
  int64_t Size(const std::string& file) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    return ec ? 0 : static_cast<int64_t>(size);
  }

  fs::path dir_;
  std::string path_;
  sqlite3* writer_ = nullptr;
};

TEST_F(WalCheckpointerTest, CommitsPastWakePagesAreCheckpointedOnItsThreadNotInTheWriters) {
  MakeWalTable();
  const int64_t file_before = Size(path_);
  ASSERT_OK_AND_ASSIGN(auto checkpointer,
                       WalCheckpointer::Start(writer_, path_, {.wake_pages = 50,
                                                               .writer_pages = INT_MAX}));
  Commit(400);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (checkpointer->counts().background == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const WalCheckpointer::Counts counts = checkpointer->counts();
  EXPECT_GE(counts.background, 1) << "no checkpoint on the checkpointer's thread within 20 s";
  EXPECT_EQ(counts.by_writer, 0);
  // In WAL mode only a checkpoint writes the database file: the rows reached it.
  EXPECT_GT(Size(path_), file_before + 50 * 4096);
  sqlite3_stmt* count = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(writer_, "SELECT COUNT(*) FROM rows", -1, &count, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(count), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(count, 0), 400);
  sqlite3_finalize(count);
}

TEST_F(WalCheckpointerTest, PastWriterPagesTheWriterCheckpointsAndTheWalStartsOver) {
  MakeWalTable();
  // The thread is never woken: only the writer's own checkpoints can bound the WAL.
  ASSERT_OK_AND_ASSIGN(auto checkpointer,
                       WalCheckpointer::Start(writer_, path_, {.wake_pages = INT_MAX,
                                                               .writer_pages = 40}));
  Commit(600);  // ~600 pages of WAL without a checkpoint: ~2.5 MB
  const WalCheckpointer::Counts counts = checkpointer->counts();
  EXPECT_GE(counts.by_writer, 600 / 45);
  EXPECT_EQ(counts.background, 0);
  // The WAL file keeps its high-water mark: about writer_pages frames (4 KiB + 24 B each).
  EXPECT_LT(Size(path_ + "-wal"), 60 * (4096 + 24)) << "the WAL did not start over";
}

TEST_F(WalCheckpointerTest, StoppingIsPromptAndGivesTheWriterSqlitesOwnCheckpointsBack) {
  MakeWalTable();
  {
    ASSERT_OK_AND_ASSIGN(auto checkpointer, WalCheckpointer::Start(writer_, path_));
    const absl::Time start = absl::Now();
    checkpointer.reset();
    EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << "the thread's wait has a 1 s deadline";
  }
  Commit(1500);  // past SQLite's 1000 pages: its automatic checkpoint starts the WAL over
  EXPECT_LT(Size(path_ + "-wal"), 1100 * (4096 + 24));
}

TEST_F(WalCheckpointerTest, AFileNotInWalModeIsRefusedByName) {
  Exec("CREATE TABLE rows (id INTEGER PRIMARY KEY)");  // rollback journal (SQLite's default)
  absl::StatusOr<std::unique_ptr<WalCheckpointer>> checkpointer =
      WalCheckpointer::Start(writer_, path_);
  ASSERT_FALSE(checkpointer.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(checkpointer.status())) << checkpointer.status();
  EXPECT_THAT(checkpointer.status().message(), ::testing::HasSubstr(path_));
  EXPECT_THAT(checkpointer.status().message(), ::testing::HasSubstr("not 'wal'"));
}

}  // namespace
}  // namespace cohort::master::internal
