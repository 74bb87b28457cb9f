#include "common/private_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PrivateFileTest, WritesAndReplacesAFileOnlyItsOwnerMayRead) {
  const std::string dir = ::testing::TempDir() + "/private_file_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/secret";
  std::ofstream(path) << "old";
  ::chmod(path.c_str(), 0644);
  ASSERT_OK(WritePrivateFile(path, "new secret\n"));
  EXPECT_EQ(Read(path), "new secret\n");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1)
      << "no temporary file is left behind";
  absl::Status missing = WritePrivateFile(dir + "/no/such/dir/file", "x");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no/such/dir"), absl::string_view::npos) << missing;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cohort
