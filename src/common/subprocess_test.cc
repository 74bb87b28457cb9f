#include "common/subprocess.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort {
namespace {

using ::cohort::testing_support::StatusIs;

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
  ASSERT_OK(child);
  const std::string out = ReadAll(**child);
  EXPECT_NE(out.find("out hello\n"), std::string::npos) << out;
  EXPECT_NE(out.find("/tmp\n"), std::string::npos) << out;
  EXPECT_NE(out.find("err\n"), std::string::npos) << out;
  auto status = (*child)->Wait(absl::Seconds(10));
  ASSERT_OK(status);
  EXPECT_EQ(*status, 3);
}

TEST(SubprocessTest, RemovesVariablesAndLooksUpThePath) {
  ::setenv("SUBPROCESS_TEST_VAR", "present", 1);
  auto child = Subprocess::Start(
      {.argv = {"sh", "-c", "echo [${SUBPROCESS_TEST_VAR:-absent}]"},
       .env = {{"SUBPROCESS_TEST_VAR", std::nullopt}}});
  ASSERT_OK(child);
  EXPECT_EQ(ReadAll(**child), "[absent]\n");
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 0);
}

TEST(SubprocessTest, MissingProgramExitsWith127AndSaysWhy) {
  auto child = Subprocess::Start({.argv = {"/nonexistent/program"}});
  ASSERT_OK(child);
  EXPECT_NE(ReadAll(**child).find("cannot execute /nonexistent/program"), std::string::npos);
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 127);
}

TEST(SubprocessTest, SignalStopsTheChildAndWaitHasADeadline) {
  auto child = Subprocess::Start({.argv = {"/bin/sleep", "30"}});
  ASSERT_OK(child);
  EXPECT_FALSE((*child)->Poll().has_value());
  EXPECT_THAT((*child)->Wait(absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  (*child)->Signal(SIGTERM);
  EXPECT_EQ((*child)->Wait(absl::Seconds(10)).value_or(-1), 128 + SIGTERM);
}

TEST(SubprocessTest, ReadAvailableTakesAtMostMaxBytes) {
  auto child = Subprocess::Start({.argv = {"/bin/sh", "-c", "head -c 1000000 /dev/zero"}});
  ASSERT_OK(child);
  std::string out;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool open = true;
  while (open && absl::Now() < deadline) {
    const size_t before = out.size();
    open = (*child)->ReadAvailable(&out, absl::Milliseconds(100), 4096);
    ASSERT_LE(out.size() - before, 4096u);
  }
  EXPECT_EQ(out.size(), 1000000u);  // nothing lost: the rest waited in the pipe
}

// PR_SET_PDEATHSIG: a starter process that dies without stopping its child (as a SIGKILLed
// agent does) takes the child with it. This test process is the subreaper that gets the orphan,
// so it can tell how it ended.
TEST(SubprocessTest, ParentDeathSignalKillsTheChildWhenItsStarterDies) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t starter = ::fork();
  if (starter == 0) {
    auto child = Subprocess::Start(
        {.argv = {"sh", "-c", "echo ready; exec sleep 60"}, .parent_death_signal = SIGKILL});
    std::string out;  // "ready": the child runs (its death signal set), not only forked
    while (child.ok() && out.empty() && (*child)->ReadAvailable(&out, absl::Seconds(10))) {
    }
    const pid_t pid = child.ok() ? (*child)->pid() : -1;
    ssize_t ignored = ::write(fds[1], &pid, sizeof(pid));
    (void)ignored;
    ::_exit(0);  // no destructor: the child is not stopped by the starter
  }
  ::close(fds[1]);
  pid_t pid = -1;
  ASSERT_EQ(::read(fds[0], &pid, sizeof(pid)), static_cast<ssize_t>(sizeof(pid)));
  ::close(fds[0]);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::waitpid(starter, nullptr, 0), starter);
  int status = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (absl::Now() >= deadline) {
      ::kill(pid, SIGKILL);
      FAIL() << "the child (pid " << pid << ") outlived its starter by 10 s";
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace cohort
