#include "agent/undelivered.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class UndeliveredTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("undelivered_test_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  UndeliveredExit Exit(int lines) {
    UndeliveredExit exit{
        .allocation = "7.beef.1", .token = "secret", .trial_id = 7, .node = 1, .status = 143};
    for (int i = 1; i <= lines; ++i) exit.lines.push_back({0, absl::StrCat("line ", i)});
    return exit;
  }

  fs::path dir_;
};

TEST_F(UndeliveredTest, AKeptExitReadsBackWholeFromAFileOnlyItsOwnerMayRead) {
  ASSERT_OK(SaveUndelivered(dir_.string(), "a1", Exit(3)));
  const fs::path file = dir_ / "undelivered" / "7.beef.1-node1.json";
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
  EXPECT_EQ(st.st_mode & 0777, 0600) << "it holds the allocation's token";
  auto kept = ListUndelivered(dir_.string());
  ASSERT_THAT(kept, SizeIs(1));
  EXPECT_EQ(kept[0].first, file.string());
  ASSERT_OK(kept[0].second);
  const UndeliveredExit& back = *kept[0].second;
  EXPECT_EQ(back.allocation, "7.beef.1");
  EXPECT_EQ(back.token, "secret");
  EXPECT_EQ(back.trial_id, 7);
  EXPECT_EQ(back.node, 1);
  EXPECT_EQ(back.status, 143);
  ASSERT_THAT(back.lines, SizeIs(3));
  EXPECT_EQ(back.lines[2].line, "line 3");
  EXPECT_EQ(back.lines[2].rank, 0);
}

TEST_F(UndeliveredTest, OnlyTheTailOfALongLogIsKeptAfterAMarker) {
  ASSERT_OK(SaveUndelivered(dir_.string(), "a1", Exit(5000)));
  auto kept = ListUndelivered(dir_.string());
  ASSERT_THAT(kept, SizeIs(1));
  ASSERT_OK(kept[0].second);
  const std::vector<wire::LogLine>& lines = kept[0].second->lines;
  ASSERT_THAT(lines, SizeIs(kMaxKeptLines));
  EXPECT_THAT(lines[0].line, HasSubstr("agent a1: 3001 earlier output line(s) were not delivered"));
  EXPECT_EQ(lines[1].line, "line 3002");
  EXPECT_EQ(lines.back().line, "line 5000");
}

TEST_F(UndeliveredTest, AFileThatDoesNotParseIsListedWithItsError) {
  fs::create_directories(dir_ / "undelivered");
  std::ofstream(dir_ / "undelivered" / "x-node0.json") << "{\"exit\": 3}";
  auto kept = ListUndelivered(dir_.string());
  ASSERT_THAT(kept, SizeIs(1));
  EXPECT_FALSE(kept[0].second.ok());
  EXPECT_THAT(kept[0].second.status().message(), HasSubstr("x-node0.json"));
  EXPECT_THAT(ListUndelivered((dir_ / "none").string()), SizeIs(0)) << "no directory: nothing";
}

TEST_F(UndeliveredTest, AnUnreachableMasterLeavesTheRecordToKeep) {
  // Port 1 on loopback: nothing listens (connection refused).
  absl::Status s = DeliverUndelivered("http://127.0.0.1:1", "", Exit(1));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
}

}  // namespace
}  // namespace cohort::agent
