#include "common/directory_lock.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using ::cohort::testing_support::IsOk;
using ::testing::Not;

namespace fs = std::filesystem;

class DirectoryLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / absl::StrCat("directory_lock_test_", ::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DirectoryLockTest, SecondHolderIsRefusedNamingTheFirstAndTheHint) {
  absl::StatusOr<DirectoryLock> first = DirectoryLock::Acquire(dir_.string(), "tester", "hint");
  ASSERT_OK(first);
  absl::StatusOr<DirectoryLock> second = DirectoryLock::Acquire(dir_.string(), "tester", "hint");
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status()));
  EXPECT_EQ(
      second.status().message(),
      absl::StrCat(dir_.string(), " is in use by another tester (pid ", ::getpid(), "); hint"));
}

TEST_F(DirectoryLockTest, ReleasedWhenDestroyed) {
  { ASSERT_OK(DirectoryLock::Acquire(dir_.string(), "tester", "hint")); }
  EXPECT_OK(DirectoryLock::Acquire(dir_.string(), "tester", "hint"));
}

// Issue 44: `rm -rf` of the held directory (its .lock file with it) and the directory made
// again: the claim holds, and whoever comes second is still told the holder's pid.
TEST_F(DirectoryLockTest, DeletingTheDirectoryDoesNotDropTheLock) {
  absl::StatusOr<DirectoryLock> first = DirectoryLock::Acquire(dir_.string(), "tester", "hint");
  ASSERT_OK(first);
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  absl::StatusOr<DirectoryLock> second = DirectoryLock::Acquire(dir_.string(), "tester", "hint");
  ASSERT_THAT(second, Not(IsOk())) << "a second holder on a directory deleted from under the first";
  EXPECT_EQ(
      second.status().message(),
      absl::StrCat(dir_.string(), " is in use by another tester (pid ", ::getpid(), "); hint"));
}

TEST_F(DirectoryLockTest, MissingDirectoryIsAnErrorNamingTheFile) {
  absl::StatusOr<DirectoryLock> lock =
      DirectoryLock::Acquire((dir_ / "missing").string(), "tester", "hint");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find((dir_ / "missing" / ".lock").string()), std::string::npos)
      << lock.status();
}

}  // namespace
}  // namespace cohort
