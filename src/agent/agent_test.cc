// The agent against a real master in-process: the master's REST API (in-memory SQLite) on
// 127.0.0.1, a real agent polling it, and for a trial a tiny shell script in the launcher's
// place. The agent's decisions (flush intervals, the kill's grace, back-off) run on a FakeClock
// the test advances, so nothing waits for them in real time.

#include "agent/agent.h"

#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/allocation_run.h"
#include "common/clock.h"
#include "common/subprocess.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http/cluster_authenticator.h"
#include "master/http/routes.h"
#include "master/http/testing/master_server.h"
#include "master/master.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;
using wire::TrialState;

// The cluster's agent secret the test master expects and the test agent presents.
constexpr char kSecret[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// A real master serving its REST API on 127.0.0.1:`port` (0: any free one) that expects
// kSecret; `intercept` may add routes that answer before the master's.
std::unique_ptr<master::http::MasterServer> ServeMaster(
    const fs::path& data_dir, int port,
    std::function<void(master::http::Router&, master::Master&)> intercept = {}) {
  return std::make_unique<master::http::MasterServer>(
      data_dir.string(),
      master::http::MasterServer::Options{.authenticator =
                                              [](master::Master& m) {
                                                return master::http::MakeClusterAuthenticator(
                                                    m, kSecret, "agent-secret");
                                              },
                                          .port = port,
                                          .intercept = std::move(intercept)});
}

// Plays cohort-launch (it ignores its arguments): says it started, notes its pid, and ignores
// SIGTERM, noting that it got one, so only SIGKILL ends it.
constexpr char kStubbornLauncher[] =
    "#!/bin/sh\n"
    "trap 'echo \"got SIGTERM, ignoring it\"; touch got-sigterm' TERM\n"
    "echo $$ > launcher.pid\n"
    "echo started\n"
    "while :; do sleep 0.05; done\n";

int CountOf(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

std::string Config(int max_restarts) {
  return absl::StrCat(
      "name: t\nentrypoint: /bin/sh\nhyperparameters: {global_batch_size: 8}\n"
      "resources: {slots_per_trial: 1}\nmax_restarts: ",
      max_restarts, "\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n");
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("cohort-agent-test-", ::getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "master");
    const fs::path launcher = dir_ / "launcher.sh";
    std::ofstream(launcher) << kStubbornLauncher;
    ::chmod(launcher.c_str(), 0755);
  }
  void TearDown() override {
    StopAgent();
    master_.reset();
    fs::remove_all(dir_);
  }

  void StartMaster(int port = 0,
                   std::function<void(master::http::Router&, master::Master&)> intercept = {}) {
    master_ = ServeMaster(dir_ / "master", port, std::move(intercept));
    ASSERT_GT(master_->port(), 0);
  }
  // `gpus`: GPU slots (their number is the agent's slots); none: one CPU slot.
  void StartAgent(const std::string& secret = kSecret, std::vector<int> gpus = {}) {
    const int slots = gpus.empty() ? 1 : static_cast<int>(gpus.size());
    agent_ = std::make_unique<Agent>(AgentOptions{.master_url = master_->url(),
                                                  .secret = secret,
                                                  .id = "a1",
                                                  .slots = slots,
                                                  .gpus = std::move(gpus),
                                                  .work_dir = (dir_ / "a1").string(),
                                                  .launcher = (dir_ / "launcher.sh").string(),
                                                  .clock = &clock_,
                                                  .poll_wait = absl::Milliseconds(200)});
    agent_thread_ = std::thread([this] {
      run_status_ = agent_->Run();
      run_done_ = true;
    });
  }
  // Stops the agent and waits for Run() to return (at most `timeout` of real time).
  bool StopAgent(absl::Duration timeout = absl::Seconds(30)) {
    if (agent_ == nullptr) return true;
    agent_->Stop();
    auto done = std::make_shared<absl::Notification>();
    std::thread joiner([this, done] {
      agent_thread_.join();
      done->Notify();
    });
    const bool in_time = done->WaitForNotificationWithTimeout(timeout);
    if (!in_time) {
      ADD_FAILURE() << "the agent did not stop within " << timeout;
      clock_.Advance(absl::Hours(1));  // past any patience, so the join below ends
    }
    joiner.join();
    EXPECT_OK(run_status_);
    agent_.reset();
    return in_time;
  }
  // Waits (real time) until `done` holds; fails the test after 30 s, naming `what`.
  // `tick`, when given, runs before each look (say, to move the agent's clock).
  bool WaitUntil(const std::function<bool()>& done, const std::string& what,
                 const std::function<void()>& tick = {}) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (true) {
      if (tick) tick();
      if (done()) return true;
      if (absl::Now() > deadline) {
        ADD_FAILURE() << "timed out waiting for " << what;
        return false;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  bool Connected(const std::string& id) {
    absl::StatusOr<wire::AgentList> agents = master_->master().agents().List();
    if (!agents.ok()) return false;
    for (const wire::AgentSummary& a : agents->agents) {
      if (a.id == id && a.connected) return true;
    }
    return false;
  }
  // `extra`: more config (YAML lines).
  int64_t CreateTrial(int max_restarts, const std::string& extra = "") {
    absl::StatusOr<int64_t> exp = master_->master().CreateExperiment(
        Config(max_restarts) + extra, "", "", master::Actor{"admin", true});
    EXPECT_OK(exp);
    experiment_ = exp.value_or(0);
    return master_->master()
        .DescribeExperiment(experiment_, master::Actor{"admin", true})
        .value()
        .trials.at(0)
        .id;
  }
  // CreateTrial, then waits until the trial's first line ("started") has reached the master,
  // moving the agent's clock by its flush interval; -1 (the test failed) when it never does.
  int64_t StartedTrial(int max_restarts = 0) {
    const int64_t trial = CreateTrial(max_restarts);
    // Its output reaches the master at the agent's flush interval (0.5 s of its clock).
    if (!WaitUntil([&] { return Logs(trial).find("started") != std::string::npos; },
                   "the trial to start", [&] { clock_.Advance(absl::Milliseconds(500)); })) {
      return -1;
    }
    return trial;
  }
  wire::TrialDescription Trial(int64_t id) { return master_->master().DescribeTrial(id).value(); }
  std::string Logs(int64_t trial) {
    wire::LogsPage page =
        master_->master().trial_logs().Read(trial, std::nullopt, 0, absl::ZeroDuration()).value();
    std::string text;
    for (const wire::LogEntry& l : page.logs) absl::StrAppend(&text, l.line, "\n");
    return text;
  }
  // The allocation directory of the trial's current run on agent a1.
  fs::path AllocationDir(int64_t trial) {
    return dir_ / "a1" / absl::StrCat("alloc-", Trial(trial).allocation.value_or("none"));
  }

  fs::path dir_;
  FakeClock clock_;  // the agent's
  std::unique_ptr<master::http::MasterServer> master_;
  std::unique_ptr<Agent> agent_;
  std::thread agent_thread_;
  absl::Status run_status_;
  std::atomic<bool> run_done_{false};
  int64_t experiment_ = 0;
};

TEST_F(AgentTest, AKilledTrialThatIgnoresSigtermGetsSigkillWhenTheGraceHasPassedOnTheClock) {
  StartMaster();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = StartedTrial(/*max_restarts=*/0);
  ASSERT_GT(trial, 0);
  const fs::path marker = AllocationDir(trial) / "context" / "got-sigterm";

  ASSERT_OK(master_->master().KillExperiment(experiment_, master::Actor{"admin", true}));
  // The clock stands still from here until the SIGTERM arrived: the grace ends 10 s later.
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(marker); }, "the launcher to get SIGTERM"));
  absl::Duration moved = absl::ZeroDuration();
  ASSERT_TRUE(
      WaitUntil([&] { return Logs(trial).find("got SIGTERM, ignoring it") != std::string::npos; },
                "the SIGTERM line to be flushed",
                [&] {
                  if (moved < absl::Seconds(9)) {
                    clock_.Advance(absl::Milliseconds(600));
                    moved += absl::Milliseconds(600);
                  }
                }));
  clock_.Advance(absl::Milliseconds(9900) - moved);
  // 9.9 s into the grace the launcher still runs: a quick real look at the master says so.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(Trial(trial).state, TrialState::kRunning);
  EXPECT_THAT(Logs(trial), Not(HasSubstr("exited with status")));

  clock_.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(WaitUntil([&] { return Trial(trial).state == TrialState::kCanceled; },
                        "the killed trial to end"));
  EXPECT_THAT(Logs(trial), HasSubstr("node 0 (agent a1) exited with status 137"));
  EXPECT_TRUE(StopAgent());
}

TEST_F(AgentTest, AnAgentWithGpuSlotsGivesEachAllocationFreeGpusThroughTheLaunchersGpusFlag) {
  // Plays cohort-launch: prints its arguments and ends at once.
  const fs::path launcher = dir_ / "launcher.sh";
  std::ofstream(launcher, std::ios::trunc) << "#!/bin/sh\necho \"launched: $*\"\n";
  ::chmod(launcher.c_str(), 0755);
  StartMaster();
  StartAgent(kSecret, /*gpus=*/{5, 3});
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t first = CreateTrial(/*max_restarts=*/0);
  auto ended = [&](int64_t trial) {
    return Logs(trial).find("exited with status 0") != std::string::npos;
  };
  ASSERT_TRUE(WaitUntil([&] { return ended(first); }, "the first trial's exit",
                        [&] { clock_.Advance(absl::Milliseconds(500)); }));
  EXPECT_THAT(Logs(first), HasSubstr("launched: --slots 1 --nnodes 1 --node-rank 0 --grace-period "
                                     "60 --gpus 3 -- "));
  // Its GPU went back to the pool: the next trial gets the lowest free one again.
  const int64_t second = CreateTrial(/*max_restarts=*/0);
  ASSERT_TRUE(WaitUntil([&] { return ended(second); }, "the second trial's exit",
                        [&] { clock_.Advance(absl::Milliseconds(500)); }));
  EXPECT_THAT(Logs(second), HasSubstr("--gpus 3 -- "));
  EXPECT_TRUE(StopAgent());
}

TEST_F(AgentTest, AStartActionThatDoesNotParseIsReportedAsExitStatusOneSoTheTrialRestarts) {
  // The master's real actions, with every start's "slots" spoiled on the way to the agent.
  StartMaster(0, [](master::http::Router& router, master::Master& master) {
    router.Get(
        R"(/api/v1/agents/([^/]+)/actions)",
        [&master](const master::http::Request& req) -> absl::StatusOr<master::http::Reply> {
          const double wait = std::atof(req.raw().get_param_value("timeout").c_str());
          absl::StatusOr<wire::ActionBatch> batch =
              master.agents().WaitForActions(req.PathPart(1), absl::Seconds(wait));
          if (!batch.ok()) return absl::NotFoundError(batch.status().message());
          Json body = batch->ToJson();
          for (Json& action : body["actions"]) {
            if (action["type"] == "start") action["slots"] = "two";
          }
          return master::http::Reply::Ok(body);
        },
        {.require = master::http::Require::kAgent, .waits = true});
  });
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = CreateTrial(/*max_restarts=*/1);
  // Both runs fail at once; the second failure uses up the restart.
  ASSERT_TRUE(
      WaitUntil([&] { return Trial(trial).state == TrialState::kError; }, "the trial to fail"));
  EXPECT_EQ(Trial(trial).restarts, 1);
  const std::string logs = Logs(trial);
  EXPECT_THAT(logs, HasSubstr("agent a1: cannot start node 0 of allocation "));
  EXPECT_THAT(logs, HasSubstr("(start): \"slots\" must be an integer in [1, 65536], got \"two\""));
  EXPECT_EQ(CountOf(logs, "node 0 (agent a1) exited with status 1"), 2) << logs;
  // The launcher never ran: no allocation directory was made.
  for (const auto& entry : fs::directory_iterator(dir_ / "a1")) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("alloc-")));
  }
}

TEST_F(AgentTest, AContextWithAnUnsafeEntryIsNotUnpackedAndTheReasonIsInTheTrialsLog) {
  // An archive whose one entry is an absolute path (GNU tar keeps it with -P), served by the
  // master's context route in place of the (empty) stored context.
  const fs::path evil = dir_ / "evil.txt";
  std::ofstream(evil) << "written outside the allocation\n";
  const std::string pack = absl::StrCat("tar czPf '", (dir_ / "evil.tar.gz").string(), "' '",
                                        evil.string(), "' 2>/dev/null");
  ASSERT_EQ(std::system(pack.c_str()), 0) << pack;
  fs::remove(evil);
  std::ifstream in(dir_ / "evil.tar.gz", std::ios::binary);
  const std::string archive((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StartMaster(0, [archive](master::http::Router& router, master::Master&) {
    router.Get(
        R"(/api/v1/experiments/(\d+)/context)",
        [archive](const master::http::Request&) -> absl::StatusOr<master::http::Reply> {
          return master::http::Reply::Bytes(archive, "application/gzip");
        },
        {.require = master::http::Require::kAnyone});
  });
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = CreateTrial(/*max_restarts=*/0);
  ASSERT_TRUE(
      WaitUntil([&] { return Trial(trial).state == TrialState::kError; }, "the trial to fail"));
  EXPECT_THAT(Logs(trial),
              HasSubstr(absl::StrCat("unpacking the context failed: context entry '", evil.string(),
                                     "': absolute paths are not allowed")));
  EXPECT_FALSE(fs::exists(evil)) << "the entry was written outside the allocation directory";
}

TEST_F(AgentTest, TheAgentRegistersAgainWithAMasterThatForgotIt) {
  StartMaster();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int port = master_->port();
  // A restart on the same port: the new master's database knows no agents.
  master_.reset();
  StartMaster(port);
  EXPECT_FALSE(Connected("a1"));
  // While the master was away the agent backs off a second of its clock at a time.
  EXPECT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register again",
                        [&] { clock_.Advance(absl::Seconds(1)); }));
}

TEST_F(AgentTest, StoppingWithTheMasterGoneKillsTheTrialAfterTheGraceWithoutRetryingPosts) {
  StartMaster();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = CreateTrial(/*max_restarts=*/0);
  const fs::path alloc = AllocationDir(trial);
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(alloc / "context" / "launcher.pid"); },
                        "the trial to start"));
  std::ifstream pid_file(alloc / "context" / "launcher.pid");
  pid_t launcher = 0;
  ASSERT_TRUE(pid_file >> launcher);
  master_.reset();

  agent_->Stop();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(alloc / "context" / "got-sigterm"); },
                        "the launcher to get SIGTERM"));
  EXPECT_EQ(::kill(launcher, 0), 0);  // it ignores SIGTERM: still there for the grace
  // Past the grace: SIGKILL. The posts that follow find no master and are not retried for
  // minutes of the clock (which stands still from here).
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE(StopAgent(absl::Seconds(10)));
  EXPECT_NE(::kill(launcher, 0), 0);  // killed and reaped
}

TEST_F(AgentTest, AnAgentTheMasterRefusesStopsSayingWhichSecretFileToPass) {
  StartMaster();
  StartAgent("not-the-secret");
  ASSERT_TRUE(WaitUntil([&] { return run_done_.load(); }, "the refused agent to stop"));
  agent_thread_.join();
  agent_.reset();
  EXPECT_TRUE(absl::IsUnauthenticated(run_status_)) << run_status_;
  EXPECT_THAT(run_status_.message(), HasSubstr("refused agent a1"));
  EXPECT_THAT(run_status_.message(), HasSubstr("--secret-file"));
  EXPECT_FALSE(Connected("a1"));
}

TEST_F(AgentTest, AProfiledTrialsMachineIsSampledAndItsSeriesReachTheMaster) {
  StartMaster();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = CreateTrial(/*max_restarts=*/0, "profiling: {enabled: true}\n");
  // The sampler averages a second of real time; the agent's flushes follow its (fake) clock.
  std::map<std::string, wire::SeriesSummary> seen;
  ASSERT_TRUE(WaitUntil(
      [&] {
        seen.clear();
        const absl::StatusOr<wire::SeriesList> list = master_->master().series().TrialSeries(trial);
        if (!list.ok()) return false;
        for (const wire::SeriesSummary& s : list->series) seen[s.name] = s;
        return seen.count("cpu_util_simple") > 0;
      },
      "the machine's series to reach the master",
      [&] { clock_.Advance(absl::Milliseconds(500)); }));
  const wire::SeriesSummary& cpu = seen["cpu_util_simple"];
  EXPECT_EQ(cpu.label, "a1");
  EXPECT_GE(cpu.min_value, 0);
  EXPECT_LE(cpu.max_value, 100);
  ASSERT_TRUE(seen.count("free_memory"));
  EXPECT_GT(seen["free_memory"].last_value, 0);
  EXPECT_TRUE(seen.count("net_throughput_sent"));
  ASSERT_OK(master_->master().KillExperiment(experiment_, master::Actor{"admin", true}));
  ASSERT_TRUE(WaitUntil([&] { return wire::IsTerminal(Trial(trial).state); }, "the kill",
                        [&] { clock_.Advance(absl::Seconds(1)); }));
}

// An agent's runs send their output through its combined post (POST /agents/{id}/outputs,
// output_shipper.h): the allocations' own routes, replaced here by ones that count and fail,
// are never used, and the trial's lines and exit still reach the master.
TEST_F(AgentTest, ARunsLogsAndExitGoInTheAgentsCombinedPostNotItsOwnRoutes) {
  auto own_posts = std::make_shared<std::atomic<int>>(0);
  StartMaster(0, [own_posts](master::http::Router& router, master::Master&) {
    for (const char* part : {"logs", "reports", "exit"}) {
      router.Post(absl::StrCat(R"(/api/v1/allocations/([^/]+)/)", part),
                  [own_posts](const master::http::Request&)
                      -> absl::StatusOr<master::http::Reply> {
                    ++*own_posts;
                    return absl::InternalError("posted on its own route");
                  },
                  {.require = master::http::Require::kAnyone});
    }
  });
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = StartedTrial(/*max_restarts=*/0);
  ASSERT_GT(trial, 0);
  ASSERT_OK(master_->master().KillExperiment(experiment_, master::Actor{"admin", true}));
  // The stand-in launcher ignores SIGTERM: the kill's grace passes on the agent's clock.
  ASSERT_TRUE(WaitUntil([&] { return Trial(trial).state == TrialState::kCanceled; },
                        "the killed trial to end", [&] { clock_.Advance(absl::Seconds(1)); }));
  EXPECT_THAT(Logs(trial), HasSubstr("got SIGTERM, ignoring it"));
  EXPECT_THAT(Logs(trial), HasSubstr("node 0 (agent a1) exited with status 137"));
  EXPECT_EQ(own_posts->load(), 0);
}

// A trial's progress.json is its own output: one of 4 GiB (sparse, so the test writes nothing)
// is refused before it is read, said once in the trial's log, and the trial runs on.
TEST_F(AgentTest, AHugeProgressFileIsRefusedUnreadAndSaidOnce) {
  StartMaster();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connected("a1"); }, "agent a1 to register"));
  const int64_t trial = StartedTrial(/*max_restarts=*/0);
  ASSERT_GT(trial, 0);
  const fs::path progress = AllocationDir(trial) / "run" / "progress.json";
  fs::create_directories(progress.parent_path());
  {
    std::ofstream create(progress);
  }
  fs::resize_file(progress, uintmax_t{4} << 30);
  const std::string said = "progress.json holds more than 65536 bytes";
  ASSERT_TRUE(WaitUntil([&] { return Logs(trial).find(said) != std::string::npos; },
                        "the refusal in the trial's log",
                        [&] { clock_.Advance(absl::Milliseconds(500)); }));
  for (int i = 0; i < 4; ++i) {  // more flushes read it again, and say nothing new
    clock_.Advance(absl::Milliseconds(500));
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(CountOf(Logs(trial), said), 1) << Logs(trial);
  EXPECT_EQ(Trial(trial).state, TrialState::kRunning);
  fs::remove(progress);
  ASSERT_OK(master_->master().KillExperiment(experiment_, master::Actor{"admin", true}));
  ASSERT_TRUE(WaitUntil([&] { return wire::IsTerminal(Trial(trial).state); }, "the kill",
                        [&] { clock_.Advance(absl::Seconds(1)); }));
}

// cohort-launch takes a second SIGTERM as "kill the workers now", which would cut a checkpoint
// short: however many stops reach one allocation (the master's stop action and the run's own
// "the master forgot it", say), its launcher gets one SIGTERM; a kill after a preempt only
// brings the SIGKILL nearer. A real process that counts its SIGTERMs plays the launcher.
TEST(AllocationControlTest, OnlyTheFirstStopSignalsTheLauncherAndALaterKillSetsTheGrace) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("cohort-control-test-", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  absl::StatusOr<std::unique_ptr<Subprocess>> child = Subprocess::Start(
      {.argv = {"/bin/sh", "-c",
                "trap 'echo term >> terms' TERM; touch ready; while :; do sleep 0.05; done"},
       .cwd = dir.string()});
  ASSERT_OK(child);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!fs::exists(dir / "ready") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(dir / "ready")) << "the stand-in launcher did not start";

  FakeClock clock;
  AllocationControl control(clock);
  control.Stop(wire::StopMode::kPreempt, absl::Seconds(10));  // before the start
  control.Attach(child->get());                               // SIGTERM now
  // Apart, so that signals sent would not merge into one pending signal.
  absl::SleepFor(absl::Milliseconds(300));
  control.Stop(wire::StopMode::kKill, absl::Seconds(10));
  absl::SleepFor(absl::Milliseconds(300));
  control.Stop(wire::StopMode::kPreempt, absl::Seconds(10));
  absl::SleepFor(absl::Milliseconds(300));  // a trap for it would have run by now
  std::ifstream terms(dir / "terms");
  std::string all((std::istreambuf_iterator<char>(terms)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "term\n") << "one SIGTERM, not one per stop";

  clock.Advance(absl::Milliseconds(9900));
  control.KillIfDue();
  EXPECT_FALSE((*child)->Poll().has_value()) << "killed before the kill's grace had passed";
  clock.Advance(absl::Milliseconds(100));
  control.KillIfDue();
  absl::StatusOr<int> status = (*child)->Wait(absl::Seconds(10));
  control.Attach(nullptr);
  ASSERT_OK(status);
  EXPECT_EQ(*status, 128 + SIGKILL);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cohort::agent
