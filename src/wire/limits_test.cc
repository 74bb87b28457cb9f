#include "wire/limits.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

TEST(LimitsTest, SafeNamesAreShortAndUseOnlyUrlAndFileSafeCharacters) {
  EXPECT_TRUE(IsSafeName("gpu-node_3.example"));
  EXPECT_TRUE(IsSafeName(std::string(kMaxSafeNameBytes, 'a')));
  EXPECT_FALSE(IsSafeName(""));
  EXPECT_FALSE(IsSafeName(std::string(kMaxSafeNameBytes + 1, 'a')));
  EXPECT_FALSE(IsSafeName("a/b"));
  EXPECT_FALSE(IsSafeName("a b"));
  EXPECT_FALSE(IsSafeName(".."));
  EXPECT_FALSE(IsSafeName("-rf"));
  EXPECT_FALSE(IsSafeName("caf\xc3\xa9"));
}

TEST(LimitsTest, AnUnsafeNameIsRefusedNamingTheFieldTheRuleAndTheValue) {
  EXPECT_OK(CheckSafeName("template name", "base"));
  absl::Status bad = CheckSafeName("template name", "a/../b");
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(bad.message(),
            "template name must be 1 to 128 characters of [A-Za-z0-9._-], not starting with '.' "
            "or '-', got \"a/../b\" (6 bytes)");
  EXPECT_THAT(CheckSafeName("agent id", std::string(1000, 'x')).message(),
              HasSubstr("...\" (1000 bytes)"));
}

}  // namespace
}  // namespace cohort::wire
