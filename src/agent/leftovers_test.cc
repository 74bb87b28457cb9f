// StopMarked against real processes: a marked process whose agent is gone is a leftover and is
// stopped; one whose agent still runs (kOwnerMarker) is left alone, whatever its work directory
// says (issue 44: a second agent on a recreated work directory killed a live trial).

#include "agent/leftovers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::agent {
namespace {

// A `sleep 60` marked as an allocation's process of `work_dir` started by agent `owner`; its pid.
pid_t SleepWith(const std::string& work_dir, const std::string& owner) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv(kWorkDirMarker, work_dir.c_str(), 1);
    ::setenv(kOwnerMarker, owner.c_str(), 1);
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

bool Running(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

TEST(LeftoversTest, AProcessWhoseAgentStillRunsIsNeverALeftover) {
  const std::string dir = absl::StrCat("/tmp/leftovers_test_", ::getpid());
  const pid_t other_agent = SleepWith("/nowhere", "");  // another agent, alive
  ASSERT_GT(other_agent, 0);
  ::usleep(100000);  // exec'd: its start time is the sleep's own
  const pid_t theirs = SleepWith(dir, OwnerTagOf(other_agent));  // that agent's trial
  // Leftovers: a pid reused since (its start time differs), an agent long gone, and a process
  // from before owners were marked.
  const pid_t reused = SleepWith(dir, absl::StrCat(other_agent, ":1"));
  const pid_t gone = SleepWith(dir, "1999999999:1");
  const pid_t unowned = SleepWith(dir, "");
  ::usleep(100000);
  absl::StatusOr<int> stopped = StopMarked(kWorkDirMarker, dir, absl::Seconds(5));
  ASSERT_OK(stopped);
  EXPECT_EQ(*stopped, 3);
  for (pid_t pid : {reused, gone, unowned}) EXPECT_EQ(::waitpid(pid, nullptr, 0), pid);
  EXPECT_TRUE(Running(theirs)) << "the trial of an agent that still runs was stopped";
  EXPECT_TRUE(OwnerAlive(OwnerTagOf(other_agent)));
  EXPECT_FALSE(OwnerAlive(absl::StrCat(other_agent, ":1")));
  for (pid_t pid : {theirs, other_agent}) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

}  // namespace
}  // namespace cohort::agent
