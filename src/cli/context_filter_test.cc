#include "cli/context_filter.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ContextFilterTest, WithoutPatternsExcludesNothing) {
  ContextFilter filter = ContextFilter::Parse("");
  EXPECT_EQ(filter.size(), 0u);
  EXPECT_FALSE(filter.Excludes("a/b/c.bin", false));
  EXPECT_FALSE(filter.Excludes("a", true));
}

TEST(ContextFilterTest, SkipsCommentsAndBlankLines) {
  ContextFilter filter = ContextFilter::Parse("# data\n\n   \n*.bin  \r\n# *.txt\n");
  EXPECT_EQ(filter.size(), 1u);
  EXPECT_TRUE(filter.Excludes("weights.bin", false));
  EXPECT_FALSE(filter.Excludes("notes.txt", false));
  EXPECT_FALSE(filter.Excludes("# data", false));
}

TEST(ContextFilterTest, PatternWithoutSlashMatchesBaseNamesAtAnyDepth) {
  ContextFilter filter = ContextFilter::Parse("*.ckpt\ncache\nrun-?.log\n");
  EXPECT_TRUE(filter.Excludes("a.ckpt", false));
  EXPECT_TRUE(filter.Excludes("runs/1/b.ckpt", false));
  EXPECT_TRUE(filter.Excludes("deep/cache", true));
  EXPECT_TRUE(filter.Excludes("run-1.log", false));
  EXPECT_FALSE(filter.Excludes("run-10.log", false));
  EXPECT_FALSE(filter.Excludes("a.ckpt.txt", false));
  EXPECT_FALSE(filter.Excludes("cached", false));
}

TEST(ContextFilterTest, StarMatchesDotFilesButNotAcrossSlashes) {
  ContextFilter filter = ContextFilter::Parse("*\n");
  EXPECT_TRUE(filter.Excludes(".hidden", false));
  ContextFilter anchored = ContextFilter::Parse("data/*.bin\n");
  EXPECT_TRUE(anchored.Excludes("data/x.bin", false));
  EXPECT_FALSE(anchored.Excludes("data/sub/x.bin", false));
}

TEST(ContextFilterTest, PatternWithSlashMatchesFromTheContextDirectory) {
  ContextFilter filter = ContextFilter::Parse("data/raw\n/notes.txt\n");
  EXPECT_TRUE(filter.Excludes("data/raw", true));
  EXPECT_TRUE(filter.Excludes("data/raw/part-0", false));
  EXPECT_FALSE(filter.Excludes("other/data/raw", true));
  EXPECT_TRUE(filter.Excludes("notes.txt", false));
  EXPECT_FALSE(filter.Excludes("docs/notes.txt", false));
}

TEST(ContextFilterTest, TrailingSlashMatchesDirectoriesOnlyWithEverythingInside) {
  ContextFilter filter = ContextFilter::Parse("build/\n");
  EXPECT_TRUE(filter.Excludes("build", true));
  EXPECT_TRUE(filter.Excludes("src/build", true));
  EXPECT_TRUE(filter.Excludes("build/obj/x.o", false));
  EXPECT_FALSE(filter.Excludes("build", false));
  EXPECT_FALSE(filter.Excludes("src/build.cc", false));
}

TEST(ContextFilterTest, DoubleStarMatchesAnyNumberOfDirectories) {
  ContextFilter filter = ContextFilter::Parse("**/tmp\nlogs/**\na/**/z.txt\n");
  EXPECT_TRUE(filter.Excludes("tmp", true));
  EXPECT_TRUE(filter.Excludes("x/y/tmp", true));
  EXPECT_TRUE(filter.Excludes("logs/1/out.log", false));
  EXPECT_FALSE(filter.Excludes("logs", true));
  EXPECT_TRUE(filter.Excludes("a/z.txt", false));
  EXPECT_TRUE(filter.Excludes("a/b/c/z.txt", false));
  EXPECT_FALSE(filter.Excludes("b/a/z.txt", false));
}

TEST(ContextFilterTest, NegationIncludesAgainAndTheLastMatchDecides) {
  ContextFilter filter = ContextFilter::Parse("*.ckpt\n!best.ckpt\nold/\n!old/keep\n");
  EXPECT_TRUE(filter.Excludes("a.ckpt", false));
  EXPECT_FALSE(filter.Excludes("best.ckpt", false));
  EXPECT_FALSE(filter.Excludes("runs/best.ckpt", false));
  EXPECT_TRUE(filter.Excludes("old/keep", false)) << "inside a left-out directory";
}

TEST(ContextFilterTest, EscapedHashAndBangAreLiteral) {
  ContextFilter filter = ContextFilter::Parse("\\#notes\n\\!important\n");
  EXPECT_EQ(filter.size(), 2u);
  EXPECT_TRUE(filter.Excludes("#notes", false));
  EXPECT_TRUE(filter.Excludes("!important", false));
  EXPECT_FALSE(filter.Excludes("important", false));
}

TEST(ContextFilterTest, NeverExcludesTheTopLevelDetignore) {
  ContextFilter filter = ContextFilter::Parse(".*\n");
  EXPECT_FALSE(filter.Excludes(".detignore", false));
  EXPECT_TRUE(filter.Excludes(".git", true));
  EXPECT_TRUE(filter.Excludes("sub/.detignore", false));
}

class ContextEntriesTest : public ::testing::Test {
 protected:
  void Write(const std::string& path, const std::string& text = "x") {
    fs::create_directories((dir_ / path).parent_path());
    std::ofstream(dir_ / path) << text;
  }

  TempDir temp_{"context"};
  const fs::path dir_ = temp_.path();
};

TEST_F(ContextEntriesTest, ListsEveryEntryDirectoriesFirstInByteOrder) {
  Write("trial");
  Write("b/2.txt");
  Write("b/1.txt");
  fs::create_directories(dir_ / "empty");
  absl::StatusOr<std::vector<std::string>> entries = ContextEntries(dir_.string());
  ASSERT_OK(entries);
  EXPECT_THAT(*entries, ElementsAre("b", "b/1.txt", "b/2.txt", "empty", "trial"));
}

TEST_F(ContextEntriesTest, LeavesOutWhatTheDetignoreNamesAndKeepsTheDetignore) {
  Write(".detignore", "# big files\ndata/\n*.ckpt\n!keep.ckpt\n");
  Write("trial");
  Write("data/train.bin");
  Write("runs/a.ckpt");
  Write("runs/keep.ckpt");
  absl::StatusOr<std::vector<std::string>> entries = ContextEntries(dir_.string());
  ASSERT_OK(entries);
  EXPECT_THAT(*entries, ElementsAre(".detignore", "runs", "runs/keep.ckpt", "trial"));
}

TEST_F(ContextEntriesTest, ListsSymbolicLinksWithoutFollowingThem) {
  Write("real/file");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  absl::StatusOr<std::vector<std::string>> entries = ContextEntries(dir_.string());
  ASSERT_OK(entries);
  EXPECT_THAT(*entries, ElementsAre("link", "real", "real/file"));
}

TEST_F(ContextEntriesTest, AMissingDirectoryIsAnErrorNamingIt) {
  absl::StatusOr<std::vector<std::string>> entries = ContextEntries((dir_ / "nope").string());
  ASSERT_FALSE(entries.ok());
  EXPECT_THAT(std::string(entries.status().message()), HasSubstr("nope does not exist"));
}

}  // namespace
}  // namespace cohort::cli
