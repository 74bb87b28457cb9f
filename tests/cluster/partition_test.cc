// Network partitions between an agent and the master (issue 16), staged with real processes in
// network namespaces this test creates (tests/testing/network_namespaces.h): the master, the CLI
// and a second agent in one namespace, agent a1 in the other, joined by a veth link that the
// test takes down and up again. Trials are shell scripts run through the real cohort-launch; no
// LibTorch. docs/reliability.md lists the promise each test proves. Needs root (CAP_NET_ADMIN);
// skipped without it.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/launch/launcher_process.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/network_namespaces.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Alive;
using testing::CountOf;
using testing::LaunchResult;
using testing::OneTo;
using testing::ReadFile;
using testing::RunToCompletion;

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Shell: `metric N` appends a training report at batch N to the trial's metrics.jsonl.
constexpr char kMetric[] =
    "m=\"$COHORT_RUN_DIR/metrics.jsonl\"\n"
    "metric() { echo \"{\\\"kind\\\":\\\"training\\\",\\\"steps_completed\\\":$1,"
    "\\\"metrics\\\":{\\\"loss\\\":$1}}\" >> \"$m\"; }\n";

class PartitionTest : public testing::ClusterFixture {
 protected:
  PartitionTest() : ClusterFixture("partition_test") {}

  void TearDown() override {
    ClusterFixture::TearDown();
    net_.reset();  // after the processes that ran inside it
  }
  // The namespaces: the master, the CLI and agent a2 in node 0's, agent a1 in node 1's. Empty
  // when done, else why not (for a skip).
  std::string SetUpNetwork() {
    net_ = std::make_unique<testing::NetworkNamespaces>("partition", 233);
    if (std::string why = net_->Setup(); !why.empty()) return why;
    master_exec_ = agent_exec_["a2"] = net_->Exec(0);
    agent_exec_["a1"] = net_->Exec(1);
    master_host_ = net_->address(0);
    return "";
  }
  // Cuts (false) or heals (true) the link of agent a1's namespace.
  void Link(bool up) {
    const std::string why = net_->SetLink(1, up);
    ASSERT_TRUE(why.empty()) << why;
  }

  std::unique_ptr<testing::NetworkNamespaces> net_;
};

// A partition shorter than the agent timeout (2 s of 6): the master never marks the agent lost,
// the trial rides it out on its allocation with no restart, and every line and metric it printed
// (those the agent held meanwhile included) arrives exactly once, in order.
TEST_F(PartitionTest, AShortPartitionIsRiddenOutWithoutARestartOrADuplicate) {
  if (std::string why = SetUpNetwork(); !why.empty()) GTEST_SKIP() << why;
  agent_timeout_ = 6;  // a 2 s cut heals into TCP's retransmission backoff: up to 3 s silent
  StartMaster();
  StartAgent("a1");
  const std::string d = dir_.string();
  Script("steady.sh", absl::StrCat(kMetric, "i=1\nwhile [ ! -e ", d,
                                   "/finish ]; do\n  echo \"line $i\"\n  metric $i\n"
                                   "  i=$((i+1))\n  sleep 0.05\ndone\necho finished\n"));
  const int64_t id = Create("steady", "./steady.sh", "max_restarts: 3\n");
  WaitUntil([&] { return Trial(id)["state"] == "RUNNING"; }, "the trial to run");
  const json before = Trial(id);
  const int64_t trial = before["id"];
  WaitUntil([&] { return Logs(trial).find("line 20\n") != std::string::npos; }, "20 lines");
  Link(false);
  const absl::Time cut = absl::Now();
  // Cut off: a1's namespace cannot reach the master.
  const LaunchResult reach = RunToCompletion(
      Concat(net_->Exec(1),
             {"/bin/bash", "-c", absl::StrCat("exec 3<>/dev/tcp/", net_->address(0), "/", port_)}),
      {}, absl::Seconds(5));
  EXPECT_NE(reach.status, 0) << "a1's namespace still reaches the master";
  absl::SleepFor(absl::Seconds(2) - (absl::Now() - cut));
  Link(true);  // Past the agent timeout after the heal: a lost agent would show by now.
  const absl::Time healed = absl::Now();
  WaitUntil([&] { return absl::Now() - healed > absl::Seconds(agent_timeout_ + 1); },
            "the agent timeout to pass after the heal");
  std::ofstream(dir_ / "finish") << "finish\n";
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; },
            "the experiment to end", absl::Seconds(60));
  const std::string logs = Logs(trial);
  ASSERT_EQ(State(id), "COMPLETED") << logs;
  const json after = Trial(id);
  EXPECT_EQ(after["restarts"], 0) << logs;
  EXPECT_EQ(CountOf(logs, "master: allocation "), 1) << "no second allocation: " << logs;
  EXPECT_EQ(logs.find("agent a1 lost"), std::string::npos) << logs;
  EXPECT_EQ(master_->err().find("agent a1 lost"), std::string::npos) << master_->err();
  const std::vector<int> lines = Numbered(logs, "line");
  ASSERT_GT(lines.size(), 60u) << "the trial printed through the partition: " << logs;
  EXPECT_EQ(lines, OneTo(static_cast<int>(lines.size()))) << logs;
  EXPECT_EQ(SeriesBatches(trial, "training/loss"), lines) << "each metric once, in order";
}

// An agent asked to stop (SIGTERM) while a partition hides its master, with its posts on their
// way into the black hole (no answer, no refusal): it stops its trial and exits within 10 s,
// keeping the exit it could not deliver in its work directory for its next run.
TEST_F(PartitionTest, AnAgentStoppedBehindAPartitionExitsWithinTenSecondsAndKeepsTheExit) {
  if (std::string why = SetUpNetwork(); !why.empty()) GTEST_SKIP() << why;
  agent_timeout_ = 30;  // the master does not give up on it during the test
  StartMaster();
  StartAgent("a1");
  Script("chatty.sh", "i=1\nwhile :; do echo \"line $i\"; i=$((i+1)); sleep 0.05; done\n");
  const int64_t id = Create("chatty", "./chatty.sh");
  WaitUntil([&] { return Trial(id)["state"] == "RUNNING"; }, "the trial to run");
  const int64_t trial = Trial(id)["id"];
  WaitUntil([&] { return Logs(trial).find("line 20\n") != std::string::npos; }, "20 lines");
  Link(false);
  absl::SleepFor(absl::Seconds(2));  // a flush's post is on its way, unanswered
  const absl::Time asked = absl::Now();
  ASSERT_EQ(::kill(agents_[0]->pid(), SIGTERM), 0);
  const LaunchResult exited = agents_[0]->Wait(absl::Seconds(60));
  const absl::Duration took = absl::Now() - asked;
  EXPECT_EQ(exited.status, 0) << exited.err;
  EXPECT_LT(took, absl::Seconds(10)) << exited.err;
  EXPECT_TRUE(fs::exists(dir_ / "a1" / "undelivered")) << exited.err;
  bool kept = false;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_ / "a1" / "undelivered", ec)) {
    kept = kept || entry.is_regular_file();
  }
  EXPECT_TRUE(kept) << "no exit kept for the next run: " << exited.err;
  std::cout << "[ measured ] stopped behind the partition in " << absl::FormatDuration(took)
            << std::endl;
}

// A partition longer than the agent timeout (4 s): the master marks agent a1 lost and the trial
// restarts on agent a2 from its latest checkpoint, counted against max_restarts. The old run
// keeps running behind the partition; when the link heals it is fenced: what it printed and
// reported after the cut (lines, metrics, a checkpoint it stores on SIGTERM) is refused and
// never counted, and it is told to stop. Only the new run's reports reach the trial.
TEST_F(PartitionTest, ALongPartitionRestartsTheTrialElsewhereAndFencesTheOldRun) {
  if (std::string why = SetUpNetwork(); !why.empty()) GTEST_SKIP() << why;
  agent_timeout_ = 4;
  StartMaster();
  StartAgent("a1");
  const std::string d = dir_.string();
  Script("fenced.sh",
         absl::StrCat(
             kMetric, "if [ -n \"$COHORT_LATEST_CHECKPOINT\" ]; then\n",
             "  echo \"run 2 resumed from $COHORT_LATEST_CHECKPOINT\"\n  i=1\n", "  while [ ! -e ",
             d, "/finish ]; do\n",
             "    echo \"run2 tick $i\"; metric $((1000+i)); i=$((i+1)); sleep 0.1\n  done\n",
             "  echo 'run 2 done'; exit 0\nfi\n",
             "trap 'echo \"run 1 got SIGTERM\"; echo \"{\\\"kind\\\":\\\"checkpoint\\\",",
             "\\\"storage_id\\\":\\\"ck-stale\\\",\\\"path\\\":\\\"ck-stale\\\",",
             "\\\"steps_completed\\\":9}\" >> \"$m\"; touch ", d,
             "/stopped; sleep 1; exit 0' TERM\n", "echo $$ > ", d, "/run1\n",
             "echo '{\"kind\":\"checkpoint\",\"storage_id\":\"ck-1\",\"path\":\"ck-1\",",
             "\"steps_completed\":5}' >> \"$m\"\n", "i=1\nwhile :; do\n", "  if [ -e ", d,
             "/cut ]; then echo \"run1 cut $i\"; metric $((500+i));\n",
             "  else echo \"run1 tick $i\"; metric $i; fi\n", "  i=$((i+1)); sleep 0.1\ndone\n"));
  const int64_t id = Create("fenced", "./fenced.sh", "max_restarts: 2\n");
  WaitUntil([&] { return Trial(id).value("latest_checkpoint", "") == "ck-1"; }, "checkpoint ck-1");
  const json first = Trial(id);
  const int64_t trial = first["id"];
  WaitUntil([&] { return Logs(trial).find("run1 tick 5\n") != std::string::npos; }, "5 ticks");
  StartAgent("a2");

  const absl::Time cut = absl::Now();
  Link(false);
  std::ofstream(dir_ / "cut") << "cut\n";
  WaitUntil(
      [&] {
        const json t = Trial(id);
        return t.value("restarts", 0) == 1 && t["state"] == "RUNNING" &&
               t["allocation"] != first["allocation"];
      },
      "the trial to restart on agent a2", absl::Seconds(60));
  const absl::Duration restarted = absl::Now() - cut;
  WaitUntil([&] { return Logs(trial).find("run2 tick 3\n") != std::string::npos; },
            "the new run to report");
  pid_t run1 = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(dir_ / "run1")), &run1));
  const bool old_ran_on = Alive(run1);
  EXPECT_TRUE(old_ran_on) << "behind the partition nothing can stop the old run";

  const absl::Time healed = absl::Now();
  Link(true);
  WaitUntil([&] { return fs::exists(dir_ / "stopped"); },
            "the old run to be told to stop once the partition healed", absl::Seconds(90));
  const absl::Duration stopped = absl::Now() - healed;
  WaitUntil([&] { return !Alive(run1); }, "the old run to exit", absl::Seconds(30));
  WaitUntil([&] { return Connected("a1"); }, "agent a1 to register again", absl::Seconds(60));
  absl::SleepFor(absl::Seconds(2));  // what the old run's agent still posts reaches the master
  Drain();
  std::ofstream(dir_ / "finish") << "finish\n";
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; },
            "the experiment to end", absl::Seconds(60));
  const std::string logs = Logs(trial);
  ASSERT_EQ(State(id), "COMPLETED") << logs;
  const json done = Trial(id);
  EXPECT_EQ(done["restarts"], 1) << logs;
  EXPECT_EQ(done["latest_checkpoint"], "ck-1") << "the fenced run's checkpoint was taken";
  EXPECT_NE(logs.find("agent a1 lost"), std::string::npos) << logs;
  EXPECT_NE(logs.find("restart 1 of 2 from checkpoint ck-1"), std::string::npos) << logs;
  EXPECT_NE(logs.find("run 2 resumed from ck-1"), std::string::npos) << logs;
  EXPECT_EQ(CountOf(logs, "master: allocation "), 2) << logs;
  // Nothing of the old run after the cut was counted.
  EXPECT_TRUE(Numbered(logs, "run1 cut").empty()) << logs;
  EXPECT_EQ(logs.find("run 1 got SIGTERM"), std::string::npos) << logs;
  const std::vector<int> ticks = Numbered(logs, "run2 tick");
  ASSERT_FALSE(ticks.empty()) << logs;
  EXPECT_EQ(ticks, OneTo(static_cast<int>(ticks.size()))) << logs;
  for (int batch : SeriesBatches(trial, "training/loss")) {
    EXPECT_FALSE(batch > 500 && batch < 1000) << "a metric of the fenced run: batch " << batch;
  }
  std::cout << "[ measured ] restarted on a2 " << absl::FormatDuration(restarted)
            << " after the cut (agent timeout 4 s); the old run "
            << (old_ran_on ? "ran on" : "had stopped") << " behind the partition and was told "
            << "to stop " << absl::FormatDuration(stopped) << " after the heal" << std::endl;
}

}  // namespace
}  // namespace cohort
