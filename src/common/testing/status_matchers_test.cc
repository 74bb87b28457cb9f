#include "common/testing/status_matchers.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace cohort::testing_support {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<int> Seven() { return 7; }
absl::StatusOr<int> Missing() { return absl::NotFoundError("trial 7 not found"); }

TEST(StatusMatchersTest, ExpectOkPassesOnOkAndFailsPrintingTheStatus) {
  EXPECT_OK(absl::OkStatus());
  EXPECT_OK(Seven());
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::NotFoundError("gone")), "NOT_FOUND: gone");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Missing()), "Missing() is not OK: NOT_FOUND: trial 7");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::InternalError("x")) << "extra words", "extra words");
}

TEST(StatusMatchersTest, AssertOkPassesOnOkAndFailsFatally) {
  ASSERT_OK(absl::OkStatus());
  ASSERT_OK(Seven());
  EXPECT_FATAL_FAILURE(ASSERT_OK(absl::AbortedError("stop")), "ABORTED: stop");
  EXPECT_FATAL_FAILURE(ASSERT_OK(Missing()), "NOT_FOUND");
}

TEST(StatusMatchersTest, AssertOkAndAssignMovesTheValueOrReturns) {
  ASSERT_OK_AND_ASSIGN(int value, Seven());
  EXPECT_EQ(value, 7);
  ASSERT_OK_AND_ASSIGN(value, absl::StatusOr<int>(8));  // an existing variable
  EXPECT_EQ(value, 8);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<int> moved,
                       absl::StatusOr<std::unique_ptr<int>>(std::make_unique<int>(9)));
  EXPECT_EQ(*moved, 9);
  EXPECT_FATAL_FAILURE(
      {
        ASSERT_OK_AND_ASSIGN(int never, Missing());
        (void)never;
      },
      "Missing() is not OK: NOT_FOUND: trial 7 not found");
}

TEST(StatusMatchersTest, StatusIsMatchesTheCodeOfAStatusOrAStatusOr) {
  const absl::Status gone = absl::NotFoundError("trial 7 not found");
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(Missing(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(absl::OkStatus(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(Seven(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(gone, Not(StatusIs(absl::StatusCode::kInternal)));
  EXPECT_THAT(Seven(), Not(StatusIs(absl::StatusCode::kNotFound)));
  EXPECT_THAT(gone, StatusIs(Not(absl::StatusCode::kOk)));  // a matcher of the code
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(gone, StatusIs(absl::StatusCode::kInternal)),
                          "whose code is wrong");
}

TEST(StatusMatchersTest, StatusIsWithAStringMeansAnEqualMessage) {
  const absl::Status gone = absl::NotFoundError("trial 7 not found");
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound, "trial 7 not found"));
  EXPECT_THAT(Missing(), StatusIs(absl::StatusCode::kNotFound, std::string("trial 7 not found")));
  EXPECT_THAT(gone, Not(StatusIs(absl::StatusCode::kNotFound, "trial 7")));
  EXPECT_THAT(gone, Not(StatusIs(absl::StatusCode::kInternal, "trial 7 not found")));
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound, "trial 8")),
                          "whose message is wrong");
}

TEST(StatusMatchersTest, StatusIsWithAMatcherMatchesTheMessage) {
  EXPECT_THAT(Missing(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 7")));
  EXPECT_THAT(Missing(), Not(StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 8"))));
  EXPECT_NONFATAL_FAILURE(
      EXPECT_THAT(Missing(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("trial 8"))),
      "has a message that has substring \"trial 8\"");
}

TEST(StatusMatchersTest, IsOkMatchesOkStatusesOnly) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(Seven(), IsOk());
  EXPECT_THAT(Missing(), Not(IsOk()));
  const std::vector<absl::Status> all_ok = {absl::OkStatus(), absl::OkStatus()};
  EXPECT_THAT(all_ok, ::testing::Each(IsOk()));
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(absl::UnknownError("why"), IsOk()), "UNKNOWN: why");
}

TEST(StatusMatchersTest, IsOkAndHoldsMatchesTheValueOfAnOkStatusOr) {
  EXPECT_THAT(Seven(), IsOkAndHolds(7));
  EXPECT_THAT(Seven(), IsOkAndHolds(::testing::Gt(6)));
  EXPECT_THAT(absl::StatusOr<std::vector<int>>(std::vector<int>{1, 2}),
              IsOkAndHolds(ElementsAre(1, 2)));
  EXPECT_THAT(Seven(), Not(IsOkAndHolds(8)));
  EXPECT_THAT(Missing(), Not(IsOkAndHolds(7)));
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Missing(), IsOkAndHolds(7)),
                          "which has status NOT_FOUND: trial 7 not found");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(Seven(), IsOkAndHolds(8)), "which holds 7");
}

TEST(TempDirTest, MakesAFreshDirectoryAndRemovesItsTree) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    ASSERT_TRUE(fs::is_directory(path));
    EXPECT_EQ(path.rfind(::testing::TempDir(), 0), 0u) << path;
    EXPECT_THAT(path, HasSubstr("cohort_test_"));
    EXPECT_EQ(dir.Join("a/b"), path + "/a/b");
    fs::create_directories(dir.Join("a/b"));
    std::ofstream(dir.Join("a/b/file")) << "text";
    fs::create_symlink("/", dir.Join("root"));  // removed, not followed
    TempDir other("named");
    EXPECT_NE(other.path(), path);
    EXPECT_THAT(other.path(), HasSubstr("/named_"));
  }
  EXPECT_FALSE(fs::exists(path)) << path;
  EXPECT_TRUE(fs::exists("/"));
}

TEST(TempDirTest, RemovesDirectoriesATestMadeReadOnly) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    fs::create_directories(dir.Join("locked/inner"));
    std::ofstream(dir.Join("locked/inner/file")) << "text";
    ASSERT_EQ(::chmod(dir.Join("locked/inner").c_str(), 0500), 0);
    ASSERT_EQ(::chmod(dir.Join("locked").c_str(), 0500), 0);
  }
  EXPECT_FALSE(fs::exists(path)) << path;
}

TEST(TempDirTest, AMovedDirectoryIsRemovedOnceByItsNewOwner) {
  TempDir first("first");
  const std::string path = first.path();
  {
    TempDir moved(std::move(first));
    EXPECT_EQ(moved.path(), path);
    EXPECT_TRUE(first.path().empty());  // NOLINT(bugprone-use-after-move): owns nothing now
    TempDir other("other");
    const std::string other_path = other.path();
    other = std::move(moved);  // other's own directory goes now
    EXPECT_FALSE(fs::exists(other_path)) << other_path;
    EXPECT_EQ(other.path(), path);
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path)) << path;
}

}  // namespace
}  // namespace cohort::testing_support
