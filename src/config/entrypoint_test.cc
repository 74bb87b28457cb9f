#include "config/entrypoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EntrypointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("entrypoint_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "trial") << "#!/bin/sh\n";
    ::chmod((dir_ / "trial").c_str(), 0755);
    std::ofstream(dir_ / "data.txt") << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EntrypointTest, ProgramInTheContextGetsItsAbsolutePathAndKeepsArguments) {
  auto argv = ResolveEntrypoint({"./trial --epochs 3"}, dir_.string());
  ASSERT_OK(argv);
  EXPECT_THAT(*argv, ElementsAre((dir_ / "trial").string(), "--epochs", "3"));
}

TEST_F(EntrypointTest, AbsoluteProgramsAndPathNamesPassThrough) {
  auto absolute = ResolveEntrypoint({"/bin/sh", "-c", "true"}, dir_.string());
  ASSERT_OK(absolute);
  EXPECT_THAT(*absolute, ElementsAre("/bin/sh", "-c", "true"));
  auto bare = ResolveEntrypoint({"python3"}, dir_.string());  // looked up in PATH when run
  ASSERT_OK(bare);
  EXPECT_THAT(*bare, ElementsAre("python3"));
}

TEST_F(EntrypointTest, ErrorsNameTheEntrypointAndTheProblem) {
  auto empty = ResolveEntrypoint({}, dir_.string());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("no entrypoint"));
  auto missing = ResolveEntrypoint({"./nope"}, dir_.string());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("entrypoint ./nope: not found in the context directory"));
  auto not_executable = ResolveEntrypoint({"./data.txt"}, dir_.string());
  EXPECT_THAT(std::string(not_executable.status().message()), HasSubstr("is not executable"));
  auto absolute_missing = ResolveEntrypoint({"/nonexistent/prog"}, dir_.string());
  EXPECT_THAT(std::string(absolute_missing.status().message()),
              HasSubstr("/nonexistent/prog: not an executable file"));
}

}  // namespace
}  // namespace cohort::config
