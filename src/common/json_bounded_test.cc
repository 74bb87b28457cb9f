#include "common/json_bounded.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

TEST(ParseJsonBoundedTest, ParsesOrdinaryJson) {
  absl::StatusOr<nlohmann::json> json = ParseJsonBounded(R"({"a": [1, {"b": "[[[["}]})");
  ASSERT_OK(json);
  EXPECT_EQ((*json)["a"][1]["b"], "[[[[");
}

// Found by fuzz/json_bounded_fuzzer: nlohmann read "1\0[[[" as 1.
TEST(ParseJsonBoundedTest, RefusesANulByteNamingWhere) {
  auto json = ParseJsonBounded(std::string("{\"ok\": true}\0junk", 17));
  EXPECT_THAT(json, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("not JSON: a NUL byte at byte 12")));
}

TEST(ParseJsonBoundedTest, AcceptsNestingAtTheLimit) {
  const std::string text = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_OK(ParseJsonBounded(text));
}

TEST(ParseJsonBoundedTest, RefusesOneLevelPastTheLimitNamingIt) {
  const std::string text =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  absl::StatusOr<nlohmann::json> json = ParseJsonBounded(text);
  EXPECT_THAT(json, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("nests deeper than 128 levels (byte 129)")));
}

TEST(ParseJsonBoundedTest, RefusesAHundredThousandOpenBracketsWithoutCrashing) {
  for (const char open : {'[', '{'}) {
    absl::StatusOr<nlohmann::json> json = ParseJsonBounded(std::string(100000, open));
    EXPECT_THAT(json.status().message(), HasSubstr("nests deeper than 128 levels")) << open;
  }
}

TEST(ParseJsonBoundedTest, IgnoresBracketsAndEscapedQuotesInsideStrings) {
  const std::string text = "[\"\\\"" + std::string(1000, '[') + "\"]";
  absl::StatusOr<nlohmann::json> json = ParseJsonBounded(text);
  ASSERT_OK(json);
  EXPECT_EQ((*json)[0].get<std::string>().size(), 1001u);
}

TEST(ParseJsonBoundedTest, ReportsMalformedJsonAsInvalidArgument) {
  absl::StatusOr<nlohmann::ordered_json> json = ParseJsonBounded<nlohmann::ordered_json>("{oops");
  EXPECT_THAT(json, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not JSON")));
}

}  // namespace
}  // namespace cohort
