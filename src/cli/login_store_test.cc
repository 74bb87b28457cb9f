#include "cli/login_store.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

class LoginStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("login_store_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::setenv("XDG_CONFIG_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("XDG_CONFIG_HOME");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

mode_t ModeOf(const fs::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

TEST_F(LoginStoreTest, LoginsAreKeptPerMasterInAPrivateFile) {
  EXPECT_EQ(LoginFilePath(), (dir_ / "cohort" / "auth.json").string());
  EXPECT_FALSE(LoadLogin("http://a:1").has_value());
  ASSERT_OK(SaveLogin("http://a:1", {"admin", "t1"}));
  ASSERT_OK(SaveLogin("https://b:2", {"alice", "t2"}));
  EXPECT_EQ(LoadLogin("http://a:1")->token, "t1");
  EXPECT_EQ(LoadLogin("https://b:2")->username, "alice");
  EXPECT_EQ(ModeOf(LoginFilePath()), 0600u);
  EXPECT_EQ(ModeOf(dir_ / "cohort"), 0700u);
  ASSERT_OK(SaveLogin("http://a:1", {"bob", "t3"}));
  EXPECT_EQ(LoadLogin("http://a:1")->username, "bob") << "a new login replaces the old";
  ASSERT_OK(ForgetLogin("http://a:1"));
  EXPECT_FALSE(LoadLogin("http://a:1").has_value());
  EXPECT_EQ(LoadLogin("https://b:2")->token, "t2") << "only that master's login goes";
  EXPECT_OK(ForgetLogin("http://never:1"));
}

TEST_F(LoginStoreTest, AMalformedFileHoldsNoLoginsAndIsReplacedAtTheNextSave) {
  fs::create_directories(dir_ / "cohort");
  std::ofstream(LoginFilePath()) << "{\"masters\": [not json";
  EXPECT_FALSE(LoadLogin("http://a:1").has_value());
  std::ofstream(LoginFilePath()) << R"({"masters": {"http://a:1": {"token": 7}}})";
  EXPECT_FALSE(LoadLogin("http://a:1").has_value()) << "a token that is not a string";
  ASSERT_OK(SaveLogin("http://a:1", {"admin", "t1"}));
  EXPECT_EQ(LoadLogin("http://a:1")->token, "t1");
}

}  // namespace
}  // namespace cohort::cli
