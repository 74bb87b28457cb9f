#include "common/utf8_text.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using namespace std::string_literals;

TEST(Utf8TextTest, ReplacesNulsAndInvalidUtf8AndKeepsTheRest) {
  EXPECT_TRUE(IsCleanUtf8("plain ascii, ünïcödé, 名前, 🙂"));
  EXPECT_EQ(CleanUtf8("plain 名前 🙂"), "plain 名前 🙂");
  const std::string bad[] = {"a\0b"s,
                             "\xC3\x28",
                             "\xC0\xAF" /* overlong */,
                             "\xED\xA0\x80" /* surrogate */,
                             "\xF4\x90\x80\x80" /* > U+10FFFF */,
                             "\xE2\x82" /* cut short */,
                             "\xFF"};
  for (const std::string& text : bad) {
    EXPECT_FALSE(IsCleanUtf8(text)) << absl::CEscape(text);
    const std::string clean = CleanUtf8(text);
    EXPECT_TRUE(IsCleanUtf8(clean)) << absl::CEscape(clean);
    EXPECT_TRUE(absl::StrContains(clean, "\xEF\xBF\xBD")) << absl::CEscape(clean);
  }
  EXPECT_EQ(CleanUtf8("a\0b"s), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(CleanUtf8("x\xC3\x28y"), "x\xEF\xBF\xBD(y");  // the next byte is kept
}

// A character that began and never came is one U+FFFD (its maximal subpart), not one per byte.
TEST(Utf8TextTest, ACutShortCharacterIsOneReplacement) {
  EXPECT_EQ(CleanUtf8("\xE2\x82" "a"), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(CleanUtf8("\xF0\x9F\x99"), "\xEF\xBF\xBD");
  EXPECT_EQ(CleanUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // C0 never begins one
}

}  // namespace
}  // namespace cohort
