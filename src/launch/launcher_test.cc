#include "launch/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::launch {
namespace {

LaunchOptions Options(int slots, std::vector<std::string> command) {
  LaunchOptions options;
  options.slots = slots;
  options.command = std::move(command);
  options.handle_signals = false;
  return options;
}

TEST(LauncherCreateTest, RejectsBadOptionsNamingTheFlag) {
  auto no_slots = Launcher::Create(Options(0, {"true"}));
  EXPECT_TRUE(absl::IsInvalidArgument(no_slots.status()));
  EXPECT_TRUE(absl::StrContains(no_slots.status().message(), "--slots"));

  LaunchOptions bad_rank = Options(1, {"true"});
  bad_rank.nnodes = 2;
  bad_rank.node_rank = 2;
  bad_rank.chief_host = "127.0.0.1";
  EXPECT_TRUE(absl::StrContains(Launcher::Create(bad_rank).status().message(), "--node-rank"));

  auto no_command = Launcher::Create(Options(1, {}));
  EXPECT_TRUE(absl::IsInvalidArgument(no_command.status()));

  auto missing = Launcher::Create(Options(1, {"no-such-program-cohort"}));
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();

  auto directory = Launcher::Create(Options(1, {"/tmp"}));
  EXPECT_TRUE(absl::IsPermissionDenied(directory.status())) << directory.status();
}

TEST(LauncherCreateTest, SplitsCoresAmongSlots) {
  LaunchOptions options = Options(3, {"true"});
  options.cores = 8;
  auto launcher = Launcher::Create(options);
  ASSERT_OK(launcher);
  EXPECT_EQ((*launcher)->threads_per_worker(), 2);
  options.cores = 2;
  EXPECT_EQ((*Launcher::Create(options))->threads_per_worker(), 1);
}

TEST(LauncherCreateTest, SingleNodeHostsTheStoreOnAFreePort) {
  auto launcher = Launcher::Create(Options(1, {"true"}));
  ASSERT_OK(launcher);
  EXPECT_GT((*launcher)->rendezvous_port(), 0);
  EXPECT_EQ((*launcher)->executable().back(), 'e');  // resolved through PATH: .../true
}

// Reads everything from `fd` until EOF.
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(LauncherRunTest, RelaysPrefixedOutputAndReturnsTheFailedStatus) {
  int out[2], err[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(err), 0);
  LaunchOptions options =
      Options(2, {"sh", "-c", "echo hi; echo oops >&2; exit $((COHORT_RANK * 6))"});
  options.stdout_fd = out[1];
  options.stderr_fd = err[1];
  auto launcher = Launcher::Create(options);
  ASSERT_OK(launcher);
  EXPECT_EQ((*launcher)->Run(), 6);
  ::close(out[1]);
  ::close(err[1]);
  std::string stdout_text = ReadAll(out[0]);
  std::string stderr_text = ReadAll(err[0]);
  // Rank 0 may be stopped before it prints: only rank 1's lines are certain.
  EXPECT_TRUE(absl::StrContains(stdout_text, "[rank=1] hi\n")) << stdout_text;
  EXPECT_TRUE(absl::StrContains(stderr_text, "[rank=1] oops\n")) << stderr_text;
  EXPECT_TRUE(absl::StrContains(stderr_text, "rank 1 (pid ")) << stderr_text;
  ::close(out[0]);
  ::close(err[0]);
}

TEST(LauncherRunTest, RequestStopForwardsTheSignal) {
  int err[2];
  ASSERT_EQ(::pipe2(err, O_CLOEXEC), 0);
  LaunchOptions options = Options(2, {"sh", "-c", "echo started >&2; exec sleep 60"});
  options.stderr_fd = err[1];
  auto launcher = Launcher::Create(options);
  ASSERT_OK(launcher);
  std::thread stopper([&] {
    // Stop once both workers have started (their lines arrive on the pipe).
    std::string seen;
    char buf[256];
    while (seen.find("[rank=0] started") == std::string::npos ||
           seen.find("[rank=1] started") == std::string::npos) {
      ssize_t n = ::read(err[0], buf, sizeof(buf));
      if (n <= 0) break;
      seen.append(buf, static_cast<size_t>(n));
    }
    (*launcher)->RequestStop(SIGTERM);
  });
  EXPECT_EQ((*launcher)->Run(), 128 + SIGTERM);
  ::close(err[1]);  // the stopper's read ends even if the workers never started
  stopper.join();
  ::close(err[0]);
}

}  // namespace
}  // namespace cohort::launch
