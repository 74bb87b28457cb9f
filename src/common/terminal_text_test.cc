#include "common/terminal_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "common/logging.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

TEST(TerminalTextTest, ControlsBecomeVisibleEscapesAndTextStays) {
  EXPECT_EQ(EscapeControl("alice\nINFO forged] admin logged in"),
            "alice\\nINFO forged] admin logged in");
  EXPECT_EQ(EscapeControl("\x1b[2J\x1b]0;title\x07 red\r"), "\\x1b[2J\\x1b]0;title\\x07 red\\r");
  EXPECT_EQ(EscapeControl("a\tb \x7f"), "a\tb \\x7f");
  EXPECT_EQ(EscapeControl("csi \xc2\x9b" "31m"), "csi \\u009b31m");
  EXPECT_EQ(EscapeControl("donn\xc3\xa9es \xe2\x9c\x93 \xc2\xa0"), "donn\xc3\xa9es \xe2\x9c\x93 \xc2\xa0");
  EXPECT_EQ(EscapeControl("one\ntwo\x1b", /*keep_newlines=*/true), "one\ntwo\\x1b");
}

// Issue 34: a user name with a newline and escapes forged lines in the master's log. Every
// logged message is one line, its control characters escaped.
TEST(TerminalTextTest, ALoggedMessageIsOneLineWhateverItHolds) {
  char path[] = "/tmp/cohort_log_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  COHORT_LOG(WARNING) << "failed login for user 'eve\nINFO master.cc:1] admin logged in\x1b[2K'";
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  const std::string logged = text.str();
  ASSERT_FALSE(logged.empty());
  EXPECT_EQ(logged.find('\n'), logged.size() - 1) << "one line: " << logged;
  EXPECT_NE(logged.find("eve\\nINFO master.cc:1] admin logged in\\x1b[2K"), std::string::npos)
      << logged;
}

}  // namespace
}  // namespace cohort
