#include "common/json_lines_tail.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

class JsonLinesTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::path(::testing::TempDir()) / absl::StrCat("json_lines_tail_test_", ::getpid()))
                .string();
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }
  void Append(const std::string& text) { std::ofstream(path_, std::ios::app) << text; }
  std::string path_;
};

TEST_F(JsonLinesTailTest, ReadsNewCompleteLinesAndWaitsForAPartialOne) {
  JsonLinesTail tail(path_);
  EXPECT_TRUE(tail.NewLines().empty());  // no file yet
  Append("{\"a\":1}\nnot json\n{\"b\":");
  std::vector<nlohmann::json> lines = tail.NewLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["a"], 1);
  Append("2}\n");
  lines = tail.NewLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["b"], 2);
  EXPECT_TRUE(tail.NewLines().empty());
}

TEST_F(JsonLinesTailTest, SkipsALineLongerThanTheLimitWithoutHoldingIt) {
  JsonLinesTail tail(path_, /*max_line_bytes=*/100);
  Append("{\"s\":\"" + std::string(200000, 'x'));  // no newline yet, far past the limit
  EXPECT_TRUE(tail.NewLines().empty());
  Append(std::string(100000, 'y'));
  EXPECT_TRUE(tail.NewLines().empty());
  Append("\"}\n{\"after\":true}\n");
  std::vector<nlohmann::json> lines = tail.NewLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["after"], true);
  EXPECT_EQ(tail.long_lines(), 1u);
}

TEST_F(JsonLinesTailTest, ReturnsAtMostMaxLinesAndTheRestLater) {
  JsonLinesTail tail(path_);
  for (int i = 0; i < 25; ++i) Append(absl::StrCat("{\"i\":", i, "}\n"));
  std::vector<nlohmann::json> first = tail.NewLines(10);
  ASSERT_EQ(first.size(), 10u);
  EXPECT_EQ(first[9]["i"], 9);
  std::vector<nlohmann::json> rest = tail.NewLines();
  ASSERT_EQ(rest.size(), 15u);
  EXPECT_EQ(rest[0]["i"], 10);
  EXPECT_EQ(rest[14]["i"], 24);
}

}  // namespace
}  // namespace cohort
