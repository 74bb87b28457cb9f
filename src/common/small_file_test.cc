// ReadSmallFile on real files: whole, missing, too large (a sparse file of 4 GiB refused before
// anything is read), a directory, and a /proc file whose size stat() does not tell.
#include "common/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using ::cohort::testing_support::StatusIs;

namespace fs = std::filesystem;

class SmallFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("small-file-test-", ::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SmallFileTest, ReadsAWholeFileWithItsNulBytes) {
  const std::string bytes("a\0b\nc", 5);
  std::ofstream(dir_ / "f", std::ios::binary) << bytes;
  absl::StatusOr<std::string> text = ReadSmallFile((dir_ / "f").string(), 5);
  ASSERT_OK(text);
  EXPECT_EQ(*text, bytes);
}

TEST_F(SmallFileTest, AMissingFileIsNotFoundAndADirectoryCannotBeRead) {
  const absl::Status missing = ReadSmallFile((dir_ / "none").string(), 10).status();
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound));
  const absl::Status directory = ReadSmallFile(dir_.string(), 10).status();
  EXPECT_THAT(directory, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_NE(directory.message().find("Is a directory"), std::string::npos) << directory;
}

TEST_F(SmallFileTest, AFileOverTheBoundIsRefusedWithoutBeingRead) {
  std::ofstream(dir_ / "six", std::ios::binary) << "123456";
  const absl::Status six = ReadSmallFile((dir_ / "six").string(), 5).status();
  EXPECT_THAT(six, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_NE(six.message().find("more than 5 bytes"), std::string::npos) << six;
  // 4 GiB, sparse: reading it would take seconds and the memory; refused at once.
  const std::string huge = (dir_ / "huge").string();
  const int fd = ::open(huge.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, int64_t{4} << 30), 0);
  ::close(fd);
  EXPECT_THAT(ReadSmallFile(huge, 1 << 20), StatusIs(absl::StatusCode::kResourceExhausted));
}

TEST_F(SmallFileTest, AProcFileIsReadToItsEndWithinTheBound) {
  absl::StatusOr<std::string> status = ReadSmallFile("/proc/self/status", 1 << 20);
  ASSERT_OK(status);
  EXPECT_NE(status->find("Pid:"), std::string::npos);
  EXPECT_THAT(ReadSmallFile("/proc/self/status", 16),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

}  // namespace
}  // namespace cohort
