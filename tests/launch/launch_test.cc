// Process tests of cohort-launch: the real binary starting real workers (launch_test_worker).

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "tests/launch/launcher_process.h"
#include "tests/testing/network_namespaces.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {
namespace {

std::string Launcher() { return BinaryPath("cohort-launch"); }
std::string Worker() { return BinaryPath("launch_test_worker"); }

std::vector<std::string> Launch(std::vector<std::string> flags, std::vector<std::string> command) {
  std::vector<std::string> argv = {Launcher()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// Lines of `text` that start with "[rank=K] ", with the prefix removed.
std::vector<std::string> LinesOf(const std::string& text, int rank) {
  std::vector<std::string> lines;
  const std::string prefix = absl::StrCat("[rank=", rank, "] ");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, prefix)) lines.emplace_back(line.substr(prefix.size()));
  }
  return lines;
}

// The worker's "NAME=value" lines of rank K as a map ("NAME unset" lines are absent).
std::map<std::string, std::string> EnvOf(const std::string& text, int rank) {
  std::map<std::string, std::string> env;
  for (const std::string& line : LinesOf(text, rank)) {
    std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.size() == 2) env[kv[0]] = kv[1];
  }
  return env;
}

int CoresAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

auto AllReady(int n) {
  return [n](const std::string& out, const std::string&) { return CountOf(out, "] READY\n") == n; };
}

TEST(LaunchTest, GivesEveryWorkerItsEnvironment) {
  LaunchResult r = RunToCompletion(Launch({"--slots", "3"}, {Worker(), "env"}),
                                   {{"COHORT_NETWORK_INTERFACE", "lo"}});
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> ports;
  for (int rank = 0; rank < 3; ++rank) {
    auto env = EnvOf(r.out, rank);
    EXPECT_EQ(env["COHORT_RANK"], absl::StrCat(rank));
    EXPECT_EQ(env["COHORT_SIZE"], "3");
    EXPECT_EQ(env["COHORT_LOCAL_RANK"], absl::StrCat(rank));
    EXPECT_EQ(env["COHORT_LOCAL_SIZE"], "3");
    EXPECT_EQ(env["COHORT_CROSS_RANK"], "0");
    EXPECT_EQ(env["COHORT_CROSS_SIZE"], "1");
    EXPECT_EQ(env["COHORT_CHIEF_ADDR"], "127.0.0.1");
    EXPECT_EQ(env["COHORT_NETWORK_INTERFACE"], "lo");
    EXPECT_EQ(env["COHORT_LAUNCHER"], "1");
    int port = 0;
    EXPECT_TRUE(absl::SimpleAtoi(env["COHORT_RENDEZVOUS_PORT"], &port) && port > 0)
        << env["COHORT_RENDEZVOUS_PORT"];
    ports.insert(env["COHORT_RENDEZVOUS_PORT"]);
  }
  EXPECT_EQ(ports.size(), 1u) << "every rank must see the same store";
}

TEST(LaunchTest, PrefixesWholeLinesWhenWorkersWriteLargeOutputAtOnce) {
  constexpr int kSlots = 4, kLines = 2000, kLength = 1000;
  LaunchResult r =
      RunToCompletion(Launch({"--slots", absl::StrCat(kSlots)},
                             {Worker(), "spam", absl::StrCat(kLines), absl::StrCat(kLength)}));
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<int> next(kSlots, 0);
  std::vector<bool> tail_seen(kSlots, false);
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    ++line_number;
    int rank = -1;
    ASSERT_TRUE(absl::StartsWith(line, "[rank=")) << "line " << line_number << " unprefixed";
    size_t close = line.find("] ");
    ASSERT_NE(close, absl::string_view::npos);
    ASSERT_TRUE(absl::SimpleAtoi(line.substr(6, close - 6), &rank) && rank >= 0 && rank < kSlots)
        << line.substr(0, 40);
    absl::string_view body = line.substr(close + 2);
    if (body == absl::StrCat("tail-r", rank)) {
      tail_seen[rank] = true;
      continue;
    }
    ASSERT_FALSE(tail_seen[rank]) << "rank " << rank << " printed after its last line";
    std::string expected = absl::StrCat("r", rank, "-l", next[rank], "-");
    expected.resize(kLength, static_cast<char>('a' + (rank * 7 + next[rank]) % 26));
    ASSERT_EQ(body, expected) << "line " << line_number << " (rank " << rank << ") is torn";
    ++next[rank];
  }
  for (int rank = 0; rank < kSlots; ++rank) {
    EXPECT_EQ(next[rank], kLines) << "rank " << rank;
    EXPECT_TRUE(tail_seen[rank]) << "rank " << rank << ": partial last line not flushed";
  }
}

TEST(LaunchTest, FailingWorkerStopsTheOthersAndGivesItsExitCode) {
  LauncherProcess launcher(Launch({"--slots", "3"}, {Worker(), "stop", "1", "exit:3", "sleep"}));
  ASSERT_TRUE(launcher.WaitFor(AllReady(3), absl::Seconds(30))) << launcher.err();
  const absl::Time ready = absl::Now();
  LaunchResult r = launcher.Wait(absl::Seconds(30));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_LT(r.end_time - ready, absl::Seconds(5)) << "the job must stop within 5 s";
  EXPECT_TRUE(absl::StrContains(r.err, "rank 1 (pid "));
  EXPECT_TRUE(absl::StrContains(r.err, "exited with status 3; stopping the other 2 workers"))
      << r.err;
  EXPECT_EQ(CountOf(r.out, "STILL-ALIVE"), 0);
}

TEST(LaunchTest, WorkerKilledBySignalGives128PlusSignal) {
  LaunchResult r =
      RunToCompletion(Launch({"--slots", "2"}, {Worker(), "stop", "0", "kill", "sleep"}));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 137) << r.err;
  EXPECT_TRUE(
      absl::StrContains(r.err, "was killed by signal 9 (SIGKILL); stopping the other 1 worker\n"))
      << r.err;
}

TEST(LaunchTest, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  LauncherProcess launcher(Launch({"--slots", "2", "--grace-period", "1"},
                                  {Worker(), "stop", "0", "exit:5", "ignore-term"}));
  ASSERT_TRUE(launcher.WaitFor(AllReady(2), absl::Seconds(30))) << launcher.err();
  const absl::Time ready = absl::Now();
  LaunchResult r = launcher.Wait(absl::Seconds(30));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_GE(r.end_time - ready, absl::Milliseconds(900)) << "SIGKILL came before the grace";
  EXPECT_LT(r.end_time - ready, absl::Seconds(5));
  EXPECT_TRUE(absl::StrContains(r.err, "rank 1 still running 1s after SIGTERM; sending SIGKILL"))
      << r.err;
}

TEST(LaunchTest, SigtermToTheLauncherReachesEveryWorker) {
  LauncherProcess launcher(
      Launch({"--slots", "3"}, {Worker(), "stop", "-1", "none", "report-term"}));
  ASSERT_TRUE(launcher.WaitFor(AllReady(3), absl::Seconds(30))) << launcher.err();
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  LaunchResult r = launcher.Wait(absl::Seconds(30));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    auto lines = LinesOf(r.out, rank);
    EXPECT_NE(std::find(lines.begin(), lines.end(), "GOT-SIGTERM"), lines.end())
        << "rank " << rank << "\n"
        << r.out;
  }
  EXPECT_TRUE(absl::StrContains(r.err, "received SIGTERM; forwarding it to 3 workers")) << r.err;
}

// GPU slots (--gpus): each worker sees its own GPU only; without --gpus the launcher's
// CUDA_VISIBLE_DEVICES reaches every worker unchanged.
TEST(LaunchTest, GivesEachWorkerItsGpuWithGpusAndPassesCudaVisibleDevicesOtherwise) {
  LaunchResult r = RunToCompletion(Launch({"--slots", "3", "--gpus", "4,0,2"}, {Worker(), "env"}),
                                   {{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4"}});
  ASSERT_TRUE(r.exited);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> expected = {"4", "0", "2"};
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(EnvOf(r.out, rank)["CUDA_VISIBLE_DEVICES"], expected[rank]) << r.out;
    EXPECT_EQ(EnvOf(r.out, rank)["COHORT_GPU_SLOT"], "1") << r.out;
  }
  LaunchResult cpu = RunToCompletion(Launch({"--slots", "2"}, {Worker(), "env"}),
                                     {{"CUDA_VISIBLE_DEVICES", "1,3"}});
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(EnvOf(cpu.out, rank)["CUDA_VISIBLE_DEVICES"], "1,3") << cpu.out;
    EXPECT_EQ(EnvOf(cpu.out, rank).count("COHORT_GPU_SLOT"), 0u) << "a CPU slot: " << cpu.out;
  }
  LaunchResult none = RunToCompletion(Launch({"--slots", "1"}, {Worker(), "env"}),
                                      {{"CUDA_VISIBLE_DEVICES", std::nullopt}});
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(EnvOf(none.out, 0).count("CUDA_VISIBLE_DEVICES"), 0u) << none.out;
}

TEST(LaunchTest, SplitsCoresAmongWorkersUnlessTheUserChose) {
  const std::string expected = absl::StrCat(std::max(1, CoresAvailable() / 2));
  LaunchResult r = RunToCompletion(Launch({"--slots", "2"}, {Worker(), "env"}),
                                   {{"OMP_NUM_THREADS", std::nullopt},
                                    {"OPENBLAS_NUM_THREADS", std::nullopt},
                                    {"MKL_NUM_THREADS", std::nullopt},
                                    {"COHORT_NUM_THREADS", std::nullopt}});
  ASSERT_EQ(r.status, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    auto env = EnvOf(r.out, rank);
    for (const char* name :
         {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "COHORT_NUM_THREADS"}) {
      EXPECT_EQ(env[name], expected) << name << " of rank " << rank;
    }
  }
  LaunchResult user = RunToCompletion(Launch({"--slots", "2"}, {Worker(), "env"}),
                                      {{"OMP_NUM_THREADS", "7"},
                                       {"OPENBLAS_NUM_THREADS", std::nullopt},
                                       {"MKL_NUM_THREADS", std::nullopt},
                                       {"COHORT_NUM_THREADS", std::nullopt}});
  ASSERT_EQ(user.status, 0) << user.err;
  auto env = EnvOf(user.out, 1);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "7");
  EXPECT_EQ(env["OPENBLAS_NUM_THREADS"], expected);
}

struct BadArguments {
  std::vector<std::string> args;
  std::string message;
};

TEST(LaunchTest, BadArgumentsExitWithStatus2AndSayWhatIsWrong) {
  const ::cohort::testing_support::TempDir dir("cohort-launch-test");  // removed at the end
  const std::string not_executable = dir.Join("script.sh");
  FILE* f = std::fopen(not_executable.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("#!/bin/sh\n", f);
  std::fclose(f);
  ::chmod(not_executable.c_str(), 0644);
  const std::vector<BadArguments> cases = {
      {{"--slots", "2", Worker()}, "put it after '--'"},
      {{"--slots", "2"}, "missing '--'"},
      {{"--slots", "2", "--"}, "no worker command after '--'"},
      {{"--slots", "0", "--", "true"}, "--slots must be at least 1"},
      {{"--slots", "1", "--nnodes", "2", "--node-rank", "2", "--chief-addr", "127.0.0.1", "--",
        "true"},
       "--node-rank 2 is out of range"},
      {{"--slots", "1", "--nnodes", "2", "--", "true"}, "needs --chief-addr"},
      {{"--slots", "1", "--", "no-such-command-cohort"}, "not found in PATH"},
      {{"--slots", "1", "--", not_executable}, "chmod +x"},
      {{"--slots", "1", "--chief-addr", "h:99999", "--", "true"}, "bad port"},
      {{"--slots", "2", "--gpus", "0", "--", "true"}, "--gpus names 1 GPU(s) for --slots 2"},
      {{"--slots", "2", "--gpus", "1,1", "--", "true"}, "--gpus must be distinct GPU ids"},
      {{"--slots", "1", "--gpus", "x", "--", "true"}, "--gpus must be distinct GPU ids"},
  };
  for (const BadArguments& c : cases) {
    std::vector<std::string> argv = {Launcher()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    LaunchResult r = RunToCompletion(argv);
    EXPECT_EQ(r.status, 2) << absl::StrJoin(c.args, " ") << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.message)) << absl::StrJoin(c.args, " ") << "\n" << r.err;
  }
}

TEST(LaunchTest, HelpDescribesTheToolWithExamples) {
  LaunchResult r = RunToCompletion({Launcher(), "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(absl::StrContains(r.out, "--slots"));
  EXPECT_TRUE(absl::StrContains(r.out, "Examples:"));
}

// Runs a 4-rank job as two launchers of 2 slots; `prefix` wraps each launcher's command (for
// network namespaces). Node 0 picks its port and announces it; node 1 is started with it.
// `env0`/`env1`: environment changes for each launcher.
void RunTwoNodeRendezvous(const std::vector<std::string>& prefix0,
                          const std::vector<std::string>& prefix1, const std::string& chief_host,
                          const std::map<std::string, std::optional<std::string>>& env0 = {},
                          const std::map<std::string, std::optional<std::string>>& env1 = {}) {
  std::vector<std::string> worker = {Worker(), "rendezvous"};
  if (std::getenv("COHORT_TEST_ALLREDUCE") != nullptr) worker.push_back("--allreduce");
  auto node_argv = [&](const std::vector<std::string>& prefix, int node, const std::string& addr) {
    std::vector<std::string> argv = prefix;
    auto launch = Launch(
        {"--slots", "2", "--nnodes", "2", "--node-rank", absl::StrCat(node), "--chief-addr", addr},
        worker);
    argv.insert(argv.end(), launch.begin(), launch.end());
    return argv;
  };
  LauncherProcess node0(node_argv(prefix0, 0, absl::StrCat(chief_host, ":0")), env0);
  std::string port;
  ASSERT_TRUE(node0.WaitFor(
      [&](const std::string&, const std::string& err) {
        const std::string marker = "rendezvous store listening on port ";
        size_t at = err.find(marker);
        if (at == std::string::npos) return false;
        size_t end = err.find(';', at);
        if (end == std::string::npos) return false;
        port = err.substr(at + marker.size(), end - at - marker.size());
        return true;
      },
      absl::Seconds(30)))
      << node0.err();
  LauncherProcess node1(node_argv(prefix1, 1, absl::StrCat(chief_host, ":", port)), env1);
  LaunchResult r1 = node1.Wait(absl::Seconds(90));
  LaunchResult r0 = node0.Wait(absl::Seconds(90));
  ASSERT_TRUE(r0.exited && r1.exited);
  EXPECT_EQ(r0.status, 0) << r0.out << r0.err;
  EXPECT_EQ(r1.status, 0) << r1.out << r1.err;
  for (int rank = 0; rank < 4; ++rank) {
    const LaunchResult& r = rank < 2 ? r0 : r1;
    auto lines = LinesOf(r.out, rank);
    const std::string expected =
        absl::StrCat("RDZV-OK rank=", rank, " size=4 local_rank=", rank % 2,
                     " local_size=2 cross_rank=", rank / 2, " cross_size=2");
    EXPECT_NE(std::find(lines.begin(), lines.end(), expected), lines.end())
        << "rank " << rank << ":\n"
        << r.out << r.err;
    for (const std::string& line : lines) {
      if (absl::StartsWith(line, "ALLREDUCE")) {
        EXPECT_EQ(line, "ALLREDUCE-OK sum=10") << "rank " << rank;
      }
    }
  }
}

TEST(LaunchTest, TwoLaunchersRunOneFourRankJob) { RunTwoNodeRendezvous({}, {}, "127.0.0.1"); }

TEST(LaunchTest, FailureOnOneNodeStopsTheOtherNode) {
  // Node 1's rank 3 exits 4 once everyone is READY; node 0's sleeping workers must be stopped.
  auto argv = [](int node, const std::string& addr) {
    return Launch(
        {"--slots", "2", "--nnodes", "2", "--node-rank", absl::StrCat(node), "--chief-addr", addr},
        {Worker(), "stop", "3", "exit:4", "sleep"});
  };
  LauncherProcess node0(argv(0, "127.0.0.1:0"));
  std::string port;
  ASSERT_TRUE(node0.WaitFor(
      [&](const std::string&, const std::string& err) {
        const std::string marker = "listening on port ";
        size_t at = err.find(marker), end = err.find(';', at);
        if (at == std::string::npos || end == std::string::npos) return false;
        port = err.substr(at + marker.size(), end - at - marker.size());
        return true;
      },
      absl::Seconds(30)));
  LauncherProcess node1(argv(1, absl::StrCat("127.0.0.1:", port)));
  LaunchResult r1 = node1.Wait(absl::Seconds(60));
  LaunchResult r0 = node0.Wait(absl::Seconds(60));
  ASSERT_TRUE(r0.exited && r1.exited);
  EXPECT_EQ(r1.status, 4) << r1.err;
  EXPECT_EQ(r0.status, 4) << r0.err;
  EXPECT_TRUE(absl::StrContains(r0.err, "another node stopped the job")) << r0.err;
  EXPECT_EQ(CountOf(r0.out + r1.out, "STILL-ALIVE"), 0);
}

// Launchers in two network namespaces joined by a veth pair (tests/testing/network_namespaces.h);
// skipped where namespaces cannot be made.
class NetworkNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = net_.Setup(); !why.empty()) GTEST_SKIP() << why;
  }
  std::vector<std::string> Exec(int node) { return net_.Exec(node); }

  NetworkNamespaces net_{"launch", 231};
};

TEST_F(NetworkNamespaceTest, LaunchersInSeparateNamespacesRunOneJob) {
  RunTwoNodeRendezvous(Exec(0), Exec(1), net_.address(0),
                       {{"COHORT_NETWORK_INTERFACE", net_.interface(0)}},
                       {{"COHORT_NETWORK_INTERFACE", net_.interface(1)}});
}

}  // namespace
}  // namespace cohort::testing
