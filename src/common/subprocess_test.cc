#include "common/subprocess.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace cohort {
namespace {

std::string ReadAll(Subprocess& child) {
  std::string out;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline && child.ReadAvailable(&out, absl::Milliseconds(100))) {
  }
  return out;
}

TEST(SubprocessTest, MergesOutputAndSetsEnvironmentAndDirectory) {
  auto child = Subprocess::Start({.argv = {"/bin/sh", "-c", "echo out $GREETING; pwd; echo err >&2; exit 3"},
                                  .env = {{"GREETING", "hello"}},
                                  .cwd = "/tmp"});
  ASSERT_TRUE(child.ok()) << child.status();
  const std::string out = ReadAll(**child);
  EXPECT_NE(out.find("out hello\n"), std::string::npos) << out;
  EXPECT_NE(out.find("/tmp\n"), std::string::npos) << out;
  EXPECT_NE(out.find("err\n"), std::string::npos) << out;
  auto status = (*child)->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 3);
}

TEST(SubprocessTest, RemovesVariablesAndLooksUpThePath) {
  ::setenv("SUBPROCESS_TEST_VAR", "present", 1);
  auto child = Subprocess::Start(
      {.argv = {"sh", "-c", "echo [${SUBPROCESS_TEST_VAR:-absent}]"},
       .env = {{"SUBPROCESS_TEST_VAR", std::nullopt}}});
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(ReadAll(**child), "[absent]\n");
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 0);
}

TEST(SubprocessTest, MissingProgramExitsWith127AndSaysWhy) {
  auto child = Subprocess::Start({.argv = {"/nonexistent/program"}});
  ASSERT_TRUE(child.ok());
  EXPECT_NE(ReadAll(**child).find("cannot execute /nonexistent/program"), std::string::npos);
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 127);
}

TEST(SubprocessTest, SignalStopsTheChildAndWaitHasADeadline) {
  auto child = Subprocess::Start({.argv = {"/bin/sleep", "30"}});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE((*child)->Poll().has_value());
  EXPECT_EQ((*child)->Wait(absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  (*child)->Signal(SIGTERM);
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 128 + SIGTERM);
}

}  // namespace
}  // namespace cohort
