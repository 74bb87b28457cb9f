// The cluster end to end, on loopback: a real cohort-master (SQLite in a temp dir), real
// cohort-agents, real trials through cohort-launch, driven through the real `cohort` CLI.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/master_client.h"
#include "common/private_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/launch/launcher_process.h"
#include "tests/testing/network_namespaces.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BinaryPath;
using testing::LauncherProcess;
using testing::LaunchResult;
using testing::RunToCompletion;

// Reads MemTotal from /proc/meminfo, in bytes (0 when unreadable).
double MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("cluster_test_", ::getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "context");
  }
  void TearDown() override {
    agents_.clear();
    master_.reset();
    fs::remove_all(dir_);
  }

  void StartMaster(int port = 0) {
    std::vector<std::string> argv = master_exec_;
    // Experiments here may keep checkpoints in dir_/shared (besides the master's default).
    fs::create_directories(dir_ / "shared");
    argv.insert(argv.end(), {BinaryPath("cohort-master"), "--port", std::to_string(port),
                             "--data-dir", (dir_ / "master").string(), "--agent-timeout", "5",
                             "--checkpoint-storage-roots", (dir_ / "shared").string()});
    if (!master_host_.empty()) argv.insert(argv.end(), {"--host", master_host_});
    master_ = std::make_unique<LauncherProcess>(argv);
    ASSERT_TRUE(master_->WaitFor(
        [](const std::string& out, const std::string&) {
          return out.find("listening on http://") != std::string::npos;
        },
        absl::Seconds(30)))
        << master_->err();
    const std::string& out = master_->out();
    const size_t at = out.find("listening on ") + 13;
    url_ = out.substr(at, out.find(' ', at) - at);
    admin_password_ = ReadSecretFile((dir_ / "master" / "admin-password").string()).value();
  }
  void StartAgent(const std::string& id, int slots, int port_lo, bool artificial = false,
                  std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = agent_exec_[id];
    std::vector<std::string> agent = {BinaryPath("cohort-agent"),
                                      "--master",
                                      url_,
                                      "--id",
                                      id,
                                      artificial ? "--artificial-slots" : "--slots",
                                      std::to_string(slots),
                                      "--port-range",
                                      absl::StrCat(port_lo, "-", port_lo + 9),
                                      "--work-dir",
                                      (dir_ / id).string(),
                                      "--secret-file",
                                      SecretFile()};
    argv.insert(argv.end(), agent.begin(), agent.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    agents_.push_back(std::make_unique<LauncherProcess>(argv));
    json last;
    WaitUntil(
        [&] {
          last = Json({"agent", "list"});
          for (const json& a : last["agents"]) {
            if (a["id"] == id && a["connected"].get<bool>()) return true;
          }
          return false;
        },
        "agent " + id + " to connect: " + last.dump());
  }
  // The agent secret the master created in its data directory.
  std::string SecretFile() const { return (dir_ / "master" / "agent-secret").string(); }
  // A client of the master that presents the agent secret, as an agent does.
  client::MasterClient AgentClient() const {
    client::MasterClient client(url_);
    client.set_bearer_token(ReadSecretFile(SecretFile()).value());
    return client;
  }
  // The environment of a CLI with its own login file in the test's directory; as admin (by
  // $COHORT_USER and $COHORT_PASSWORD, which log it in when needed) unless `as_admin` is false.
  std::map<std::string, std::optional<std::string>> CliEnv(const std::string& config_dir = "config",
                                                           bool as_admin = true) const {
    return {{"XDG_CONFIG_HOME", (dir_ / config_dir).string()},
            {"COHORT_USER", as_admin ? std::optional<std::string>("admin") : std::nullopt},
            {"COHORT_PASSWORD", as_admin ? std::optional(admin_password_) : std::nullopt}};
  }
  // `cohort -m URL ARGS...`, logged in as admin.
  LaunchResult Cohort(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(60)) {
    std::vector<std::string> argv = master_exec_;
    argv.insert(argv.end(), {BinaryPath("cohort"), "-m", url_});
    argv.insert(argv.end(), args.begin(), args.end());
    return RunToCompletion(argv, CliEnv(), timeout);
  }
  // `cohort -m URL ARGS...` as whoever is logged in with the login file under `config_dir`.
  LaunchResult CohortAs(const std::string& config_dir, std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryPath("cohort"), "-m", url_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunToCompletion(argv, CliEnv(config_dir, /*as_admin=*/false));
  }
  json Json(std::vector<std::string> args) {
    args.push_back("--json");
    LaunchResult r = Cohort(args);
    EXPECT_EQ(r.status, 0) << r.err;
    json parsed = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.out;
    return parsed;
  }
  void WaitUntil(const std::function<bool()>& done, const std::string& what,
                 absl::Duration timeout = absl::Seconds(60)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!done()) {
      ASSERT_LT(absl::Now(), deadline) << "timed out waiting for " << what;
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  // `experiment archive` hides ended experiment `id` (named `name`) from `experiment list` until
  // --all; `experiment delete` asks first (without a terminal: wants --yes), then the experiment
  // goes, and nothing of it is left in its checkpoint `storage`.
  void ArchiveThenDelete(int64_t id, const std::string& name, const fs::path& storage) {
    // `experiment archive` hides it from `experiment list` (which says so) until --all.
    LaunchResult archived = Cohort({"experiment", "archive", std::to_string(id)});
    ASSERT_EQ(archived.status, 0) << archived.err;
    EXPECT_NE(archived.out.find("archived"), std::string::npos) << archived.out;
    LaunchResult listed = Cohort({"experiment", "list"});
    EXPECT_EQ(listed.out.find(name + " "), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("1 archived experiment(s) not shown (--all shows them)"),
              std::string::npos)
        << listed.out;
    EXPECT_NE(Cohort({"experiment", "list", "--all"}).out.find(name + " "), std::string::npos);

    // `experiment delete` asks first, and without a terminal to ask on wants --yes; then the
    // experiment goes with its checkpoints' files.
    LaunchResult asked = Cohort({"experiment", "delete", std::to_string(id)});
    EXPECT_NE(asked.status, 0);
    EXPECT_NE(asked.err.find("pass --yes"), std::string::npos) << asked.err;
    LaunchResult deleted_now = Cohort({"experiment", "delete", std::to_string(id), "--yes"});
    ASSERT_EQ(deleted_now.status, 0) << deleted_now.err;
    EXPECT_NE(deleted_now.out.find("deleting"), std::string::npos) << deleted_now.out;
    WaitUntil(
        [&] {
          return Cohort({"experiment", "describe", std::to_string(id)}).status != 0;
        },
        "the experiment to be deleted", absl::Seconds(30));
    LaunchResult gone = Cohort({"experiment", "describe", std::to_string(id)});
    EXPECT_NE(gone.err.find("not found"), std::string::npos) << gone.err;
    // Its checkpoints and its trials' TensorBoard files (the storage's tensorboard/trial_<id>).
    for (const auto& entry : fs::recursive_directory_iterator(storage)) {
      if (entry.path() == storage / "tensorboard") continue;
      ADD_FAILURE() << entry.path() << " is left in the checkpoint storage";
    }
  }
  // A context directory holding only fashion_mnist_trial: the whole build/bin (every program,
  // with debug info) packs to more than the master's 96 MB limit on contexts.
  std::string FashionMnistContext() {
    const fs::path context = dir_ / "fashion_mnist_context";
    fs::create_directories(context);
    fs::copy_file(BinaryPath("fashion_mnist_trial"), context / "fashion_mnist_trial",
                  fs::copy_options::overwrite_existing);
    return context.string();
  }
  // A script in the context directory.
  void Script(const std::string& name, const std::string& body) {
    const fs::path path = dir_ / "context" / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
  }
  std::string Config(const std::string& name, const std::string& body) {
    const fs::path path = dir_ / (name + ".yaml");
    std::ofstream(path) << "name: " << name << "\n"
                        << (body.find("hyperparameters:") == std::string::npos
                                ? "hyperparameters: {global_batch_size: 16}\n"
                                : "")
                        << "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
                        << body;
    return path.string();
  }
  int64_t Create(const std::string& config, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"experiment", "create", config, (dir_ / "context").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    LaunchResult r = Cohort(args);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    const size_t at = r.out.find("created experiment ");
    if (at == std::string::npos) return -1;
    return std::stoll(r.out.substr(at + 19));
  }
  // 4 adaptive_asha trials of the Core API tutorial's stage 3 (x grows by increment_by per
  // batch and is the searcher metric, smaller better), rungs 200 and 400 batches, one at a time.
  int64_t CreateAsha(bool stop_once) {
    Script("hp.sh", absl::StrCat("exec ", BinaryPath("core_api_3_hpsearch"),
                                 " --config \"$COHORT_CONFIG\"\n"));
    const fs::path config = dir_ / "asha.yaml";
    std::ofstream(config) << "name: asha\nentrypoint: ./hp.sh\n"
                             "reproducibility: {experiment_seed: 5}\n"
                             "hyperparameters:\n  global_batch_size: 16\n"
                             "  increment_by: {type: int, minval: 1, maxval: 50}\n"
                             "searcher:\n  name: adaptive_asha\n  metric: x\n"
                             "  max_length: {batches: 400}\n  max_trials: 4\n  max_rungs: 2\n"
                             "  divisor: 2\n  mode: aggressive\n  max_concurrent_trials: 1\n"
                          << "  stop_once: " << (stop_once ? "true" : "false") << "\n";
    return Create(config.string());
  }
  json Task(int64_t experiment) {
    const json tasks = Json({"task", "list"});  // named: the loop must not dangle
    for (const json& t : tasks["tasks"]) {
      if (t["experiment_id"] == experiment) return t;
    }
    return json::object();
  }

  // `trial profile --json`'s system series: every one of Determined's on both machines, with
  // plausible values, measured inside the profiling window (batches 11-50).
  static void CheckSystemSeries(const json& profile) {
    std::map<std::string, json> series;  // "name@agent"
    for (const json& s : profile["series"]) {
      series[absl::StrCat(s["name"].get<std::string>(), "@", s["label"].get<std::string>())] = s;
    }
    for (const char* agent : {"a1", "a2"}) {
      for (const char* name :
           {"cpu_util_simple", "free_memory", "net_throughput_sent", "net_throughput_recv",
            "disk_iops", "disk_throughput_read", "disk_throughput_write"}) {
        const std::string key = absl::StrCat(name, "@", agent);
        ASSERT_TRUE(series.count(key)) << key << " missing: " << profile.dump();
        const json& s = series[key];
        EXPECT_GE(s["first_batch"].get<int64_t>(), 11) << s.dump();
        EXPECT_LE(s["last_batch"].get<int64_t>(), 50) << s.dump();
        EXPECT_GE(s["min_value"].get<double>(), 0) << s.dump();
      }
      EXPECT_LE(series[absl::StrCat("cpu_util_simple@", agent)]["max_value"].get<double>(), 100);
      EXPECT_LE(series[absl::StrCat("free_memory@", agent)]["max_value"].get<double>(),
                MemTotalBytes());
      // The gradients cross the veth link: both directions on both machines.
      for (const char* net : {"net_throughput_sent@", "net_throughput_recv@"}) {
        EXPECT_GT(series[absl::StrCat(net, agent)]["max_value"].get<double>(), 0) << net << agent;
      }
    }
  }
  // Both ranks' step timings: 40 profiled batches each, the phases adding up to the step.
  static void CheckStepTimings(const json& timings) {
    EXPECT_EQ(timings["profiled_steps"], 80) << timings.dump();
    ASSERT_EQ(timings["ranks"].size(), 2u) << timings.dump();
    for (const json& rank : timings["ranks"]) {
      std::map<std::string, json> phase;
      for (const json& p : rank["phases"]) phase[p["name"].get<std::string>()] = p;
      ASSERT_TRUE(phase.count("step")) << rank.dump();
      EXPECT_EQ(phase["step"]["count"], 40) << rank.dump();
      double sum = 0;
      for (const char* part :
           {"dataloader_next", "to_device", "train_batch", "step_lr_schedulers", "from_device"}) {
        ASSERT_TRUE(phase.count(part)) << part << " missing: " << rank.dump();
        sum += phase[part]["mean_ms"].get<double>();
      }
      const double step = phase["step"]["mean_ms"].get<double>();
      EXPECT_NEAR(sum, step, 0.1 * step) << rank.dump();
      EXPECT_GT(phase["gradient_communication"]["mean_ms"].get<double>(), 0) << rank.dump();
    }
  }

  fs::path dir_;
  // Where the master and the CLI run (a network namespace's `ip netns exec ...`; empty: here)
  // and the address the master listens on (empty: its default, loopback); where an agent runs.
  std::vector<std::string> master_exec_;
  std::string master_host_;
  std::map<std::string, std::vector<std::string>> agent_exec_;
  std::unique_ptr<testing::NetworkNamespaces> net_;  // outlives the processes run inside it
  std::string url_;
  std::string admin_password_;  // the first admin's, generated by the master
  std::unique_ptr<LauncherProcess> master_;
  std::vector<std::unique_ptr<LauncherProcess>> agents_;
};

TEST_F(ClusterTest, TwoSlotFashionMnistTrialAcrossTwoOneSlotAgents) {
  StartMaster();
  StartAgent("a1", 1, 30100);
  StartAgent("a2", 1, 30200);
  const std::string config =
      Config("fm",
             "entrypoint: ./fashion_mnist_trial\n"
             "data: {dir: /usr/share/datasets/fashion-mnist}\n"
             "hyperparameters: {global_batch_size: 64, learning_rate: 0.02, momentum: 0.9,\n"
             "  n_filters1: 32, n_filters2: 64, dropout1: 0.25, dropout2: 0.5}\n"
             "resources: {slots_per_trial: 2}\nmax_restarts: 0\n");
  LaunchResult r = Cohort({"experiment", "create", "--follow", config, FashionMnistContext()},
                          absl::Seconds(240));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("COMPLETED"), std::string::npos) << r.out;
  json trial = Json({"trial", "describe", "1"});
  EXPECT_EQ(trial["trial"]["state"], "COMPLETED");
  EXPECT_EQ(trial["trial"]["batches"], 10);
  ASSERT_EQ(trial["validation"].size(), 1u) << trial.dump();
  EXPECT_GT(trial["validation"][0]["metrics"]["accuracy"].get<double>(), 0.3);
  ASSERT_EQ(trial["checkpoints"].size(), 1u);
  // Both agents ran a node: their exits are in the trial's log.
  LaunchResult logs = Cohort({"trial", "logs", "1"});
  EXPECT_NE(logs.out.find("node 0 (agent a1) exited with status 0"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("node 1 (agent a2) exited with status 0"), std::string::npos) << logs.out;
  LaunchResult rank0 = Cohort({"trial", "logs", "1", "--rank", "0"});
  EXPECT_NE(rank0.out.find("[rank=0] [batch 10/10] loss"), std::string::npos) << rank0.out;
  EXPECT_EQ(rank0.out.find("[rank=1]"), std::string::npos) << rank0.out;
  // The reported metrics are time series too, and the chief wrote TensorBoard event files.
  json series = Json({"trial", "metrics", "1"});
  bool accuracy = false;
  for (const json& s : series["series"]) {
    if (s["name"] != "validation/accuracy") continue;
    accuracy = true;
    ASSERT_EQ(s["points"].size(), 1u) << s.dump();
    EXPECT_EQ(s["points"][0][0], 10);
    EXPECT_EQ(s["points"][0][2], trial["validation"][0]["metrics"]["accuracy"]);
  }
  EXPECT_TRUE(accuracy) << series.dump();
  LaunchResult table = Cohort({"trial", "metrics", "1"});
  EXPECT_NE(table.out.find("validation/accuracy"), std::string::npos) << table.out;
  bool event_file = false;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "master" / "checkpoints")) {
    event_file |= e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  }
  EXPECT_TRUE(event_file) << "no TensorBoard event file under the checkpoint storage";
}

// A profiled 2-slot trial whose nodes run on agents in two network namespaces, so that the
// gradients cross a veth link as between machines: both machines' system series with
// plausible values, both ranks' step timings adding up to the step, the profiling window
// honoured, and a trace with both ranks' phases and gradient buckets.
TEST_F(ClusterTest, ProfiledTrialOnAgentsInTwoNetworkNamespaces) {
  net_ = std::make_unique<testing::NetworkNamespaces>("cluster", 232);
  if (std::string why = net_->Setup(); !why.empty()) GTEST_SKIP() << why;
  master_exec_ = agent_exec_["a1"] = net_->Exec(0);
  agent_exec_["a2"] = net_->Exec(1);
  master_host_ = net_->address(0);
  StartMaster();
  StartAgent("a1", 1, 30150, false, {"--host", net_->address(0)});
  StartAgent("a2", 1, 30250, false, {"--host", net_->address(1)});
  const fs::path config = dir_ / "profiled.yaml";
  std::ofstream(config) << "name: profiled\nentrypoint: ./fashion_mnist_trial\n"
                           "data: {dir: /usr/share/datasets/fashion-mnist}\n"
                           "hyperparameters: {global_batch_size: 64, learning_rate: 0.02,\n"
                           "  momentum: 0.9, n_filters1: 32, n_filters2: 64, dropout1: 0.25,\n"
                           "  dropout2: 0.5}\n"
                           "searcher: {name: single, metric: loss, max_length: {batches: 60}}\n"
                           "resources: {slots_per_trial: 2}\nmax_restarts: 0\n"
                           "profiling: {enabled: true, begin_on_batch: 11, end_after_batch: 50}\n";
  LaunchResult r =
      Cohort({"experiment", "create", "--follow", config.string(), FashionMnistContext()},
             absl::Seconds(300));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_NE(r.out.find("COMPLETED"), std::string::npos) << r.out;
  const json profile = Json({"trial", "profile", "1"});
  CheckSystemSeries(profile);
  CheckStepTimings(profile["timings"]);
  const fs::path trace_file = dir_ / "trace.json";
  LaunchResult written = Cohort({"trial", "profile", "1", "--trace", trace_file.string(),
                                 "--from-batch", "1", "--to-batch", "60"});
  ASSERT_EQ(written.status, 0) << written.out << written.err;
  std::ifstream in(trace_file);
  const json trace = json::parse(in, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << "the trace is not JSON";
  std::map<int, std::set<std::string>> categories;  // rank -> span categories
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    categories[e["pid"].get<int>()].insert(e["cat"].get<std::string>());
    const int64_t batch = e["args"]["batch"];
    EXPECT_TRUE(batch >= 11 && batch <= 50) << "outside the profiling window: " << e.dump();
  }
  const std::set<std::string> both = {"gradients", "step"};
  EXPECT_EQ(categories[0], both);
  EXPECT_EQ(categories[1], both);
}

// A warm start (searcher.source_trial_id): the new experiment's trial starts from the source
// trial's latest checkpoint's weights: its validation before training (perform_initial_validation)
// equals the source's last validation exactly. An unknown source is refused at creation. The
// source's checkpoints (every 5 batches) were garbage-collected when it ended: Determined's
// defaults keep its latest and its best, `checkpoint list` shows the rest DELETED and their
// directories are gone.
TEST_F(ClusterTest, WarmStartBeginsFromTheSourceTrialsWeights) {
  StartMaster();
  StartAgent("a1", 1, 30500);
  auto config = [&](const std::string& name, int batches, const std::string& extra) {
    const fs::path path = dir_ / (name + ".yaml");
    std::ofstream(path) << "name: " << name << "\nentrypoint: ./fashion_mnist_trial\n"
                        << "data: {dir: /usr/share/datasets/fashion-mnist}\n"
                        << "hyperparameters: {global_batch_size: 32, learning_rate: 0.02,\n"
                        << "  momentum: 0.9, n_filters1: 8, n_filters2: 16, dropout1: 0.25,\n"
                        << "  dropout2: 0.5}\nmax_restarts: 0\n"
                        << "min_validation_period: {batches: 5}\n"
                        << "min_checkpoint_period: {batches: 5}\n"
                        << "searcher: {name: single, metric: loss, max_length: {batches: "
                        << batches << "}" << extra << "}\n"
                        << (extra.empty() ? "" : "perform_initial_validation: true\n");
    return path.string();
  };
  const std::string context = FashionMnistContext();
  LaunchResult source = Cohort(
      {"experiment", "create", "--follow", config("source", 20, ""), context}, absl::Seconds(240));
  ASSERT_EQ(source.status, 0) << source.out << source.err;
  LaunchResult unknown =
      Cohort({"experiment", "create", config("unknown", 1, ", source_trial_id: 99"), context});
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.err.find("searcher.source_trial_id: trial 99 does not exist"),
            std::string::npos)
      << unknown.err;
  LaunchResult warm = Cohort(
      {"experiment", "create", "--follow", config("warm", 1, ", source_trial_id: 1"), context},
      absl::Seconds(240));
  ASSERT_EQ(warm.status, 0) << warm.out << warm.err;
  const json before = Json({"trial", "describe", "1"})["validation"];
  const json after = Json({"trial", "describe", "2"})["validation"];
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after[0]["steps_completed"], 0) << after.dump();
  EXPECT_EQ(after[0]["metrics"], before.back()["metrics"])
      << "the warm-started trial's weights differ from the source's last checkpoint";
  LaunchResult logs = Cohort({"trial", "logs", "2"});
  EXPECT_NE(logs.out.find("its weights from"), std::string::npos) << logs.out;

  const json checkpoints = Json({"checkpoint", "list", "1"})["checkpoints"];
  ASSERT_EQ(checkpoints.size(), 4u) << checkpoints.dump();
  int active = 0;
  for (const json& c : checkpoints) {
    const bool kept = c["state"] == "ACTIVE";
    active += kept;
    if (c["steps_completed"] == 20) EXPECT_TRUE(kept) << "the latest is kept: " << c.dump();
    EXPECT_EQ(fs::exists(c["path"].get<std::string>()), kept) << c.dump();
  }
  EXPECT_TRUE(active == 1 || active == 2) << "the latest and the best: " << checkpoints.dump();
  LaunchResult table = Cohort({"checkpoint", "list", "--trial", "1"});
  EXPECT_NE(table.out.find("DELETED"), std::string::npos) << table.out;
}

TEST_F(ClusterTest, LogsAreFilterableByRankAndTheirTailComesAtOnce) {
  StartMaster();
  StartAgent("a1", 2, 30300);
  Script("hello.sh",
         "echo \"hello from rank $COHORT_RANK of $COHORT_SIZE\"\n"
         "for i in 1 2 3; do echo \"rank $COHORT_RANK line $i\"; done\n");
  const int64_t id =
      Create(Config("hello", "entrypoint: ./hello.sh\nresources: {slots_per_trial: 2}\n"));
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(id)})["state"] == "COMPLETED";
      },
      "the experiment to complete");
  LaunchResult one = Cohort({"trial", "logs", "1", "--rank", "1"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out,
            "[rank=1] hello from rank 1 of 2\n[rank=1] rank 1 line 1\n[rank=1] rank 1 line 2\n"
            "[rank=1] rank 1 line 3\n");
  // --tail: the last lines (of the rank); with --follow, and nothing after them, the same.
  LaunchResult tail = Cohort({"trial", "logs", "1", "--rank", "1", "--tail", "2"});
  ASSERT_EQ(tail.status, 0) << tail.err;
  EXPECT_EQ(tail.out, "[rank=1] rank 1 line 2\n[rank=1] rank 1 line 3\n");
  LaunchResult tail_followed =
      Cohort({"trial", "logs", "1", "--rank", "1", "--tail", "2", "-f"}, absl::Seconds(20));
  EXPECT_EQ(tail_followed.status, 0) << tail_followed.err;
  EXPECT_EQ(tail_followed.out, tail.out);
  EXPECT_EQ(Cohort({"trial", "logs", "1", "--tail", "0"}).status, 2) << "a usage error";
  LaunchResult all = Cohort({"trial", "logs", "1"});
  EXPECT_NE(all.out.find("[rank=0] hello from rank 0 of 2"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("[rank=1] hello from rank 1 of 2"), std::string::npos) << all.out;
  // --follow on an ended trial prints everything and returns.
  LaunchResult followed = Cohort({"trial", "logs", "1", "--follow"}, absl::Seconds(20));
  EXPECT_EQ(followed.status, 0);
  EXPECT_EQ(followed.out, all.out);
}

TEST_F(ClusterTest, TheContextsDetignoreLeavesFilesOutOfTheUpload) {
  StartMaster();
  StartAgent("a1", 1, 31600);
  Script("ls.sh", "find . -name '*.ckpt' -o -name '*.bin' -o -name '.detignore' | sort\n");
  fs::create_directories(dir_ / "context" / "data");
  std::ofstream(dir_ / "context" / "data" / "train.bin") << "big";
  std::ofstream(dir_ / "context" / "a.ckpt") << "old";
  std::ofstream(dir_ / "context" / "keep.ckpt") << "best";
  std::ofstream(dir_ / "context" / ".detignore") << "# large files\ndata/\n*.ckpt\n!keep.ckpt\n";
  const int64_t id = Create(Config("ignore", "entrypoint: ./ls.sh\n"));
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(id)})["state"] == "COMPLETED";
      },
      "the experiment to complete");
  LaunchResult logs = Cohort({"trial", "logs", "1", "--rank", "0"});
  EXPECT_EQ(logs.out, "[rank=0] ./.detignore\n[rank=0] ./keep.ckpt\n");

  // A fork runs the same uploaded context (the master copies it, whatever the directory holds
  // now) with the parent's config, changed by --config.
  fs::remove(dir_ / "context" / "keep.ckpt");
  LaunchResult bad = Cohort({"experiment", "fork", std::to_string(id), "--config", "name"});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--config name: expected KEY=VALUE"), std::string::npos) << bad.err;
  LaunchResult forked = Cohort({"experiment", "fork", std::to_string(id), "--config", "name=forked",
                                "--config", "max_restarts=2", "--follow"});
  ASSERT_EQ(forked.status, 0) << forked.out << forked.err;
  EXPECT_NE(forked.out.find("(a fork of experiment " + std::to_string(id) + ")"), std::string::npos)
      << forked.out;
  const json child = Json({"experiment", "describe", std::to_string(id + 1)});
  EXPECT_EQ(child["name"], "forked");
  EXPECT_EQ(child["max_restarts"], 2);
  EXPECT_EQ(child["state"], "COMPLETED");
  LaunchResult child_logs =
      Cohort({"trial", "logs", std::to_string(child["trials"][0]["id"].get<int64_t>())});
  EXPECT_NE(child_logs.out.find("[rank=0] ./keep.ckpt"), std::string::npos) << child_logs.out;
}

TEST_F(ClusterTest, GangSchedulingOnTwoEightSlotAgents) {
  StartMaster();
  StartAgent("agent-a", 8, 30400, /*artificial=*/true);
  StartAgent("agent-b", 8, 30500, /*artificial=*/true);
  Script("sleep.sh", "exec sleep 60\n");
  auto sleeper = [&](const std::string& name, int slots) {
    return Config(name, absl::StrCat("entrypoint: ./sleep.sh\nresources: {slots_per_trial: ", slots,
                                     "}\nmax_restarts: 0\n"));
  };
  // 16 slots: both whole agents.
  const int64_t big = Create(sleeper("big", 16));
  WaitUntil([&] { return Task(big).value("state", std::string()) == "RUNNING"; },
            "the 16-slot trial to run");
  EXPECT_EQ(Task(big)["agents"], json({"agent-a", "agent-b"}));
  // 12 slots: fits in total, never in shape: waits, saying why.
  const int64_t twelve = Create(sleeper("twelve", 12));
  WaitUntil([&] { return Task(twelve).contains("reason"); }, "the 12-slot trial's reason");
  EXPECT_EQ(Task(twelve)["reason"], "needs 12 slots: not a multiple of the 8 slots per agent");
  LaunchResult describe = Cohort({"experiment", "describe", std::to_string(twelve)});
  EXPECT_NE(describe.out.find("not a multiple of the 8 slots per agent"), std::string::npos);
  // Killing the 16-slot experiment frees its slots.
  ASSERT_EQ(Cohort({"experiment", "kill", std::to_string(big)}).status, 0);
  WaitUntil(
      [&] {
        const json slots = Json({"slot", "list"});
        for (const json& s : slots["slots"]) {
          if (s.contains("trial_id")) return false;
        }
        return true;
      },
      "the slots to be free");
  EXPECT_EQ(Json({"experiment", "describe", std::to_string(big)})["trials"][0]["state"],
            "CANCELED");
  // Two 4-slot trials share one agent (best fit), past the waiting 12-slot one.
  const int64_t four_a = Create(sleeper("four-a", 4));
  const int64_t four_b = Create(sleeper("four-b", 4));
  WaitUntil(
      [&] {
        return Task(four_a).value("state", std::string()) == "RUNNING" &&
               Task(four_b).value("state", std::string()) == "RUNNING";
      },
      "both 4-slot trials to run");
  EXPECT_EQ(Task(four_a)["agents"], Task(four_b)["agents"]);
  EXPECT_EQ(Task(twelve).value("state", std::string()), "QUEUED");
  // More than the whole cluster: refused at creation, with the reason.
  LaunchResult refused =
      Cohort({"experiment", "create", sleeper("huge", 17), (dir_ / "context").string()});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("needs 17 slots but the whole cluster has 16 (2 agents)"),
            std::string::npos)
      << refused.err;
  for (int64_t id : {twelve, four_a, four_b}) Cohort({"experiment", "kill", std::to_string(id)});
}

TEST_F(ClusterTest, TwelveSlotTrialRunsOnThreeFourSlotAgentsBesideAnEightSlotOne) {
  StartMaster();
  StartAgent("big", 8, 31200, /*artificial=*/true);
  StartAgent("small-a", 4, 31300, /*artificial=*/true);
  StartAgent("small-b", 4, 31400, /*artificial=*/true);
  StartAgent("small-c", 4, 31500, /*artificial=*/true);
  Script("sleep.sh", "exec sleep 60\n");
  auto sleeper = [&](const std::string& name, int slots) {
    return Config(name, absl::StrCat("entrypoint: ./sleep.sh\nresources: {slots_per_trial: ", slots,
                                     "}\nmax_restarts: 0\n"));
  };
  // 12 slots: no 8 + 4, but three whole 4-slot agents.
  const int64_t twelve = Create(sleeper("twelve", 12));
  WaitUntil([&] { return Task(twelve).value("state", std::string()) == "RUNNING"; },
            "the 12-slot trial to run");
  EXPECT_EQ(Task(twelve)["agents"], json({"small-a", "small-b", "small-c"}));
  // 16 slots: two 8s or four 4s, and the cluster has neither: waits, saying why.
  const int64_t sixteen = Create(sleeper("sixteen", 16));
  WaitUntil([&] { return Task(sixteen).contains("reason"); }, "the 16-slot trial's reason");
  EXPECT_EQ(Task(sixteen)["reason"],
            "needs 16 slots: 2 agents of 8 or 4 agents of 4, the cluster has 1 of 8 and 3 of 4");
  for (int64_t id : {twelve, sixteen}) Cohort({"experiment", "kill", std::to_string(id)});
}

TEST_F(ClusterTest, NineSlotsOnOneEightSlotAgentIsRefusedAtCreation) {
  StartMaster();
  StartAgent("only", 8, 30600, /*artificial=*/true);
  Script("sleep.sh", "exec sleep 60\n");
  LaunchResult r =
      Cohort({"experiment", "create",
              Config("nine", "entrypoint: ./sleep.sh\nresources: {slots_per_trial: 9}\n"),
              (dir_ / "context").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find("resources.slots_per_trial: needs 9 slots but the whole cluster has 8 (1 agent)"),
      std::string::npos)
      << r.err;
  EXPECT_TRUE(Json({"experiment", "list"})["experiments"].empty());
}

TEST_F(ClusterTest, TemplatesMergeAndTheStoredConfigDoesNotChangeLater) {
  StartMaster();
  StartAgent("a1", 2, 30700);
  Script("hello.sh", "echo \"$GREETING from rank $COHORT_RANK\"\n");
  const fs::path tmpl = dir_ / "team.yaml";
  std::ofstream(tmpl) << "resources: {slots_per_trial: 2}\n"
                         "environment: {environment_variables: [GREETING=hi, OTHER=1], image: "
                         "team/pytorch:2.1}\n";
  ASSERT_EQ(Cohort({"template", "set", "team", tmpl.string()}).status, 0);
  EXPECT_EQ(Json({"template", "list"})["templates"][0]["name"], "team");
  const std::string config = Config("greet",
                                    "entrypoint: ./hello.sh\n"
                                    "environment: {environment_variables: [GREETING=hello]}\n");
  LaunchResult created =
      Cohort({"experiment", "create", config, (dir_ / "context").string(), "--template", "team"});
  ASSERT_EQ(created.status, 0) << created.err;
  const int64_t id = std::stoll(created.out.substr(created.out.find("created experiment ") + 19));
  // The template's image is ignored (no containers): the master's warning about the merged
  // config reaches the user.
  EXPECT_NE(created.err.find("warning: environment.image: ignored"), std::string::npos)
      << created.err;
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(id)})["state"] == "COMPLETED";
      },
      "the experiment to complete");
  LaunchResult logs = Cohort({"trial", "logs", "1"});
  // The config's GREETING wins over the template's; slots_per_trial came from the template.
  EXPECT_NE(logs.out.find("[rank=0] hello from rank 0"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("[rank=1] hello from rank 1"), std::string::npos) << logs.out;
  // Changing the template later does not change the experiment's stored config.
  std::ofstream(tmpl) << "resources: {slots_per_trial: 1}\n";
  ASSERT_EQ(Cohort({"template", "set", "team", tmpl.string()}).status, 0);
  json e = Json({"experiment", "describe", std::to_string(id)});
  EXPECT_EQ(e["slots_per_trial"], 2);
  EXPECT_NE(e["config"].get<std::string>().find("OTHER=1"), std::string::npos);
  EXPECT_EQ(e["template"], "team");
  ASSERT_EQ(Cohort({"template", "remove", "team"}).status, 0);
  EXPECT_NE(Cohort({"template", "describe", "team"}).status, 0);
}

// Checkpoint GC over a 3-trial experiment with known metrics, then `cohort checkpoint download`,
// then archiving and deleting the experiment (ArchiveThenDelete).
// Each trial (the Core API tutorial's stage 2) validates x = its step and checkpoints every 10
// steps to 100; smaller x is better, so a trial's best checkpoint is step 10 and its latest step
// 100: with save_trial_best 1, save_trial_latest 1, save_experiment_best 0 each keeps those two.
TEST_F(ClusterTest, CheckpointGcKeepsEachTrialsBestAndLatestAndDownloadCopiesOne) {
  StartMaster();
  StartAgent("a1", 2, 30900);
  Script("ck.sh", absl::StrCat("exec ", BinaryPath("core_api_2_checkpoints"),
                               " --config \"$COHORT_CONFIG\"\n"));
  const fs::path storage = dir_ / "shared" / "ckpt";
  const fs::path config = dir_ / "gc.yaml";
  std::ofstream(config) << "name: gc\nentrypoint: ./ck.sh\n"
                           "hyperparameters: {global_batch_size: 1, lr: {type: double, minval: "
                           "0.1, maxval: 1}}\n"
                           "searcher: {name: random, metric: x, smaller_is_better: true, "
                           "max_trials: 3, max_length: {batches: 100}}\n"
                           "checkpoint_storage: {type: shared_fs, host_path: "
                        << storage.string()
                        << ", save_trial_best: 1, save_trial_latest: 1, save_experiment_best: 0}\n";
  const int64_t id = Create(config.string());
  WaitUntil(
      [&] {
        const std::string state = Json({"experiment", "describe", std::to_string(id)})["state"];
        return state == "COMPLETED" || state == "ERROR";
      },
      "the experiment to end", absl::Seconds(120));
  json list = Json({"checkpoint", "list", std::to_string(id)})["checkpoints"];
  std::map<int64_t, std::vector<int64_t>> kept;  // trial -> batches of its ACTIVE checkpoints
  int deleted = 0;
  std::string best_of_first;
  for (const json& c : list) {
    if (c["state"] == "DELETED") {
      ++deleted;
      EXPECT_FALSE(fs::exists(storage / c["storage_id"].get<std::string>())) << c.dump();
      continue;
    }
    kept[c["trial_id"]].push_back(c["steps_completed"]);
    EXPECT_TRUE(fs::exists(storage / c["storage_id"].get<std::string>())) << c.dump();
    if (c["steps_completed"] == 10 && best_of_first.empty()) best_of_first = c["storage_id"];
  }
  ASSERT_EQ(kept.size(), 3u) << list.dump(2);
  for (auto& [trial, batches] : kept) {
    std::sort(batches.begin(), batches.end());
    EXPECT_EQ(batches, (std::vector<int64_t>{10, 100})) << "trial " << trial;
  }
  EXPECT_EQ(deleted, 24) << "8 of each trial's 10 checkpoints";

  // Download the best one into a new directory: the file the trial wrote, as it wrote it.
  const fs::path into = dir_ / "downloaded";
  LaunchResult got = Cohort({"checkpoint", "download", best_of_first, into.string()});
  ASSERT_EQ(got.status, 0) << got.out << got.err;
  EXPECT_NE(got.out.find("batch 10"), std::string::npos) << got.out;
  std::ifstream state(into / "state");
  std::string x, steps;
  state >> x >> steps;
  EXPECT_EQ(x + " " + steps, "10 10");
  // Refusals name the problem: a directory with files, a deleted checkpoint, an unknown one.
  LaunchResult again = Cohort({"checkpoint", "download", best_of_first, into.string()});
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.err.find("is not an empty directory"), std::string::npos) << again.err;
  for (const json& c : list) {
    if (c["state"] != "DELETED") continue;
    LaunchResult gone =
        Cohort({"checkpoint", "download", c["storage_id"], (dir_ / "gone").string()});
    EXPECT_NE(gone.status, 0);
    EXPECT_NE(gone.err.find("deleted by the checkpoint GC"), std::string::npos) << gone.err;
    EXPECT_FALSE(fs::exists(dir_ / "gone")) << "nothing is left of a refused download";
    break;
  }
  LaunchResult unknown = Cohort({"checkpoint", "download", "no-such-id", (dir_ / "x").string()});
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.err.find("no checkpoint no-such-id"), std::string::npos) << unknown.err;

  ArchiveThenDelete(id, "gc", storage);
  EXPECT_TRUE(fs::exists(into / "state")) << "a downloaded copy is the user's";
}

TEST_F(ClusterTest, CrashedWorkerRestartsFromTheCheckpointThenSucceeds) {
  StartMaster();
  StartAgent("a1", 2, 30800);
  // Rank 1 of the first run dies by SIGKILL after ~1.5 s (a crash); later runs are healthy.
  Script("crashy.sh",
         absl::StrCat("if [ -z \"$COHORT_LATEST_CHECKPOINT\" ] && [ \"$COHORT_RANK\" = 1 ]; then\n"
                      "  (sleep 1.5; kill -9 $$) &\n"
                      "fi\n"
                      "exec ",
                      BinaryPath("core_api_2_checkpoints"), " --config \"$COHORT_CONFIG\"\n"));
  const int64_t id = Create(Config("crashy",
                                   "entrypoint: ./crashy.sh\n"
                                   "resources: {slots_per_trial: 2}\nmax_restarts: 2\n"));
  WaitUntil(
      [&] {
        const std::string state = Json({"experiment", "describe", std::to_string(id)})["state"];
        return state == "COMPLETED" || state == "ERROR";
      },
      "the experiment to end", absl::Seconds(120));
  json e = Json({"experiment", "describe", std::to_string(id)});
  EXPECT_EQ(e["state"], "COMPLETED") << e.dump(2);
  EXPECT_EQ(e["trials"][0]["restarts"], 1);
  LaunchResult logs = Cohort({"trial", "logs", "1"});
  EXPECT_NE(logs.out.find("master: the trial failed; restart 1 of 2 from checkpoint"),
            std::string::npos)
      << logs.out;
  EXPECT_NE(logs.out.find("[rank=0] resumed from"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("[rank=0] done: x = 100"), std::string::npos) << logs.out;

  // The first run's allocation ended and was superseded by the restart: a late report from it
  // (a stale agent, even one holding the cluster secret) is refused and must not move the
  // trial's progress or checkpoint back: its credential ended with it.
  const std::string marker = "master: allocation ";
  const size_t at = logs.out.find(marker);
  ASSERT_NE(at, std::string::npos) << logs.out;
  const std::string first = logs.out.substr(
      at + marker.size(), logs.out.find(' ', at + marker.size()) - at - marker.size());
  ASSERT_NE(logs.out.find(marker, at + 1), std::string::npos) << "no second allocation";
  const json before = Json({"trial", "describe", "1"});
  client::MasterClient client = AgentClient();
  absl::StatusOr<json> stale = client.Post(
      absl::StrCat("/api/v1/allocations/", first, "/reports"),
      {{"trial_id", 1},
       {"lines", {{{"kind", "checkpoint"}, {"storage_id", "stale"}, {"steps_completed", 1}}}},
       {"progress", {{"completed", 1.0}, {"total", 100.0}, {"unit", "batches"}}}});
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(absl::IsNotFound(stale.status())) << stale.status();
  EXPECT_NE(stale.status().message().find("is not running"), std::string::npos) << stale.status();
  const json after = Json({"trial", "describe", "1"});
  EXPECT_EQ(after["trial"]["latest_checkpoint"], before["trial"]["latest_checkpoint"])
      << after["trial"].dump(2);
  EXPECT_NE(after["trial"]["latest_checkpoint"], "stale");
  EXPECT_EQ(after["trial"]["batches"], before["trial"]["batches"]) << after["trial"].dump(2);
}

TEST_F(ClusterTest, AdaptiveAshaStopsTrialsThatAreNotAmongTheBestAtARung) {
  StartMaster();
  StartAgent("a1", 1, 30850);
  // Stage 3 of the Core API tutorial: x grows by increment_by per batch, and each searcher
  // operation ends with x as the searcher metric (smaller is better here). Rungs: 200, 400.
  const int64_t id = CreateAsha(/*stop_once=*/true);
  // One trial at a time (max_concurrent_trials: 1 and one slot).
  WaitUntil(
      [&] {
        const json e = Json({"experiment", "describe", std::to_string(id)});
        int running = 0;
        for (const json& t : e["trials"]) running += t["state"] == "RUNNING";
        EXPECT_LE(running, 1) << e.dump(2);
        return e["state"] == "COMPLETED" || e["state"] == "ERROR";
      },
      "the adaptive_asha experiment to end", absl::Seconds(150));
  const json e = Json({"experiment", "describe", std::to_string(id)});
  ASSERT_EQ(e["state"], "COMPLETED") << e.dump(2);
  ASSERT_EQ(e["trials"].size(), 4u) << e.dump(2);
  // Trials ran in creation order; trial i goes on past rung 1 only if fewer than
  // ceil((i + 1) / 2) of the earlier ones had a strictly smaller x there.
  std::vector<int64_t> at_rung;
  int stopped = 0;
  for (const json& t : e["trials"]) {
    const int64_t x = t["hparams"]["increment_by"].get<int64_t>() * 200;
    int64_t better = 0;
    for (int64_t earlier : at_rung) better += earlier < x;
    const bool promoted = better < (static_cast<int64_t>(at_rung.size()) + 2) / 2;
    at_rung.push_back(x);
    const std::string trial = std::to_string(t["id"].get<int64_t>());
    EXPECT_EQ(t["state"], "COMPLETED") << t.dump(2);
    LaunchResult logs = Cohort({"trial", "logs", trial});
    EXPECT_NE(logs.out.find("adaptive_asha rungs 200, 400 batches"), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find("adaptive_asha rung 1 of 2 (200 batches): searcher metric " +
                            std::to_string(x)),
              std::string::npos)
        << logs.out;
    if (promoted) {
      EXPECT_EQ(t["batches"], 400) << t.dump(2);
      EXPECT_NE(logs.out.find("it goes on"), std::string::npos) << logs.out;
    } else {
      ++stopped;
      EXPECT_GE(t["batches"].get<int64_t>(), 200) << t.dump(2);
      EXPECT_LT(t["batches"].get<int64_t>(), 400) << "not stopped: " << t.dump(2);
      EXPECT_NE(logs.out.find("the trial stops"), std::string::npos) << logs.out;
      EXPECT_NE(logs.out.find("stopped early by adaptive_asha"), std::string::npos) << logs.out;
    }
  }
  // The seed gives increments for which the rule stops at least one trial.
  EXPECT_GE(stopped, 1) << e.dump(2);

  // The search read from one table (issue 38): each trial's increment_by beside its best x,
  // the trial with the smallest x marked best; and two trials compared side by side.
  const json table = Json({"experiment", "trials", std::to_string(id)});
  ASSERT_EQ(table["trials"].size(), 4u) << table.dump(2);
  int64_t best_trial = 0;
  double best_x = 1e300;
  for (const json& t : table["trials"]) {
    ASSERT_TRUE(t["best_validation"].is_object()) << t.dump(2);
    const double x = t["best_validation"]["metrics"]["x"];
    if (x < best_x) best_x = x, best_trial = t["trial_id"];
  }
  EXPECT_EQ(table["best_trial"], best_trial) << table.dump(2);
  LaunchResult text = Cohort({"experiment", "trials", std::to_string(id)});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("increment_by"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(std::to_string(best_trial) + "*"), std::string::npos) << text.out;
  const std::string first = std::to_string(e["trials"][0]["id"].get<int64_t>());
  const std::string second = std::to_string(e["trials"][1]["id"].get<int64_t>());
  LaunchResult compared = Cohort({"trial", "compare", first, second});
  ASSERT_EQ(compared.status, 0) << compared.err;
  EXPECT_NE(compared.out.find("increment_by *"), std::string::npos) << compared.out;
  EXPECT_NE(compared.out.find("best x"), std::string::npos) << compared.out;
}

TEST_F(ClusterTest, AdaptiveAshaWithoutStopOnceResumesAStoppedTrialWhenLaterOnesPromoteIt) {
  StartMaster();
  StartAgent("a1", 1, 30890);
  // Seed 5 draws increments 12, 21, 23, 20: x at rung 200 is 2400, 4200, 4600, 4000.
  const int64_t id = CreateAsha(/*stop_once=*/false);
  WaitUntil(
      [&] {
        const json e = Json({"experiment", "describe", std::to_string(id)});
        return e["state"] == "COMPLETED" || e["state"] == "ERROR";
      },
      "the adaptive_asha experiment to end", absl::Seconds(150));
  const json e = Json({"experiment", "describe", std::to_string(id)});
  ASSERT_EQ(e["state"], "COMPLETED") << e.dump(2);
  ASSERT_EQ(e["trials"].size(), 4u) << e.dump(2);
  std::vector<int64_t> increments, batches;
  for (const json& t : e["trials"]) {
    EXPECT_EQ(t["state"], "COMPLETED") << t.dump(2);
    increments.push_back(t["hparams"]["increment_by"].get<int64_t>());
    batches.push_back(t["batches"].get<int64_t>());
  }
  ASSERT_EQ(increments, (std::vector<int64_t>{12, 21, 23, 20})) << "the sampler changed";
  // Trial 2 stops at rung 1 (1 of 2 kept), trial 3's arrival makes it second of 3 (2 kept):
  // it resumes and finishes. Trial 3 stays stopped; trial 4 goes on (second of 4).
  EXPECT_EQ(batches[0], 400);
  EXPECT_EQ(batches[1], 400) << e.dump(2);
  EXPECT_LT(batches[2], 400) << e.dump(2);
  EXPECT_EQ(batches[3], 400) << e.dump(2);
  const std::string id2 = std::to_string(e["trials"][1]["id"].get<int64_t>());
  LaunchResult logs2 = Cohort({"trial", "logs", id2});
  EXPECT_NE(logs2.out.find("it resumes if later trials promote it"), std::string::npos)
      << logs2.out;
  EXPECT_NE(logs2.out.find("adaptive_asha promotes the trial at 200 batches"), std::string::npos)
      << logs2.out;
  const std::string id3 = std::to_string(e["trials"][2]["id"].get<int64_t>());
  LaunchResult logs3 = Cohort({"trial", "logs", id3});
  EXPECT_NE(logs3.out.find("promoted no further trial"), std::string::npos) << logs3.out;
}

TEST_F(ClusterTest, AgentSplitsItsCpusAmongSlotsAndKeepsOnlyTheNewestAllocationDirs) {
  StartMaster();
  StartAgent("a1", 2, 30870, /*artificial=*/false, {"--cpus", "6", "--keep-allocations", "1"});
  Script("threads.sh", "echo \"threads=$COHORT_NUM_THREADS\"\n");
  for (int i = 0; i < 2; ++i) {
    const int64_t id = Create(Config(absl::StrCat("t", i), "entrypoint: ./threads.sh\n"));
    WaitUntil(
        [&] {
          return Json({"experiment", "describe", std::to_string(id)})["state"] == "COMPLETED";
        },
        "a one-line trial to complete");
    // 6 cpus over 2 slots: 3 threads per worker (unless the test's own environment sets it).
    if (std::getenv("COHORT_NUM_THREADS") == nullptr) {
      const json e = Json({"experiment", "describe", std::to_string(id)});
      LaunchResult logs =
          Cohort({"trial", "logs", std::to_string(e["trials"][0]["id"].get<int64_t>())});
      EXPECT_NE(logs.out.find("threads=3"), std::string::npos) << logs.out;
    }
  }
  // Both allocations finished; the agent keeps the newest one's directory only.
  std::vector<std::string> allocs;
  WaitUntil(
      [&] {
        allocs.clear();
        for (const auto& entry : fs::directory_iterator(dir_ / "a1")) {
          const std::string name = entry.path().filename().string();
          if (name.rfind("alloc-", 0) == 0) allocs.push_back(name);
        }
        return allocs.size() == 1;
      },
      "the agent to prune its work directory");
  EXPECT_EQ(allocs[0].substr(0, 8), "alloc-2.") << allocs[0];
}

TEST_F(ClusterTest, PausedTrialCheckpointsAndActivateResumesIt) {
  StartMaster();
  StartAgent("a1", 2, 31000);
  const std::string bin = FashionMnistContext();
  const std::string config =
      Config("pausable",
             "entrypoint: ./fashion_mnist_trial\n"
             "data: {dir: /usr/share/datasets/fashion-mnist}\n"
             "hyperparameters: {global_batch_size: 32, learning_rate: 0.02, momentum: 0.9,\n"
             "  n_filters1: 8, n_filters2: 16, dropout1: 0.25, dropout2: 0.5}\n"
             "resources: {slots_per_trial: 2}\nmax_restarts: 0\n");
  // 1000 batches instead of the default 10, so that there is time to pause (a busy machine
  // slows the CLI's polls more than the trial).
  std::string text;
  {
    std::ifstream in(config);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  text.replace(text.find("batches: 10"), 11, "batches: 1000");
  std::ofstream(config) << text;
  LaunchResult created = Cohort({"experiment", "create", config, bin});
  ASSERT_EQ(created.status, 0) << created.err;
  auto trial = [&] { return Json({"experiment", "describe", "1"})["trials"][0]; };
  WaitUntil([&] { return trial()["batches"].get<int64_t>() >= 1; }, "a first batch");
  ASSERT_EQ(Cohort({"experiment", "pause", "1"}).status, 0);
  WaitUntil([&] { return trial()["state"] == "PAUSED"; }, "the trial to pause");
  const json paused = trial();
  EXPECT_LT(paused["batches"].get<int64_t>(), 1000);
  ASSERT_FALSE(paused["latest_checkpoint"].get<std::string>().empty()) << paused.dump();
  json checkpoints = Json({"trial", "describe", "1"})["checkpoints"];
  ASSERT_EQ(checkpoints.size(), 1u);
  EXPECT_EQ(checkpoints[0]["steps_completed"], paused["batches"]);
  EXPECT_EQ(Json({"task", "list"})["tasks"][0]["reason"], "the experiment is paused");
  ASSERT_EQ(Cohort({"experiment", "activate", "1"}).status, 0);
  WaitUntil([&] { return trial()["state"] == "COMPLETED"; }, "the trial to complete",
            absl::Seconds(180));
  EXPECT_EQ(trial()["batches"], 1000);
  EXPECT_EQ(trial()["restarts"], 0);
  LaunchResult logs = Cohort({"trial", "logs", "1"});
  EXPECT_NE(
      logs.out.find("resuming from checkpoint " + paused["latest_checkpoint"].get<std::string>()),
      std::string::npos)
      << logs.out;
}

// `cohort trial kill`: the running trial's processes are stopped, it ends CANCELED (not a
// failure to restart), its slot is free again and its experiment ends with it.
TEST_F(ClusterTest, TrialKillStopsTheRunningTrialForGood) {
  StartMaster();
  StartAgent("a1", 1, 31050, /*artificial=*/true);
  Script("sleep.sh", "exec sleep 600\n");
  const int64_t id = Create(Config("sleeper", "entrypoint: ./sleep.sh\nmax_restarts: 3\n"));
  WaitUntil([&] { return Task(id).value("state", std::string()) == "RUNNING"; },
            "the trial to run");
  const std::string trial = std::to_string(
      Json({"experiment", "describe", std::to_string(id)})["trials"][0]["id"].get<int64_t>());
  LaunchResult kill = Cohort({"trial", "kill", trial});
  ASSERT_EQ(kill.status, 0) << kill.err;
  EXPECT_EQ(kill.out, "trial " + trial + ": kill requested\n");
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(id)})["state"] != "ACTIVE";
      },
      "the experiment to end");
  const json e = Json({"experiment", "describe", std::to_string(id)});
  EXPECT_EQ(e["state"], "COMPLETED") << "a canceled trial is not an error";
  EXPECT_EQ(e["trials"][0]["state"], "CANCELED");
  EXPECT_EQ(e["trials"][0]["restarts"], 0);
  EXPECT_FALSE(Json({"slot", "list"})["slots"][0].contains("trial_id")) << "the slot is free";
  EXPECT_NE(Cohort({"trial", "logs", trial}).out.find("killed by admin"), std::string::npos);
  EXPECT_EQ(Cohort({"trial", "kill", trial}).status, 0) << "killing what ended is a no-op";
  LaunchResult waited = Cohort({"experiment", "wait", std::to_string(id)});
  EXPECT_EQ(waited.status, 0) << "it ended COMPLETED: " << waited.out << waited.err;
  EXPECT_NE(waited.out.find(absl::StrCat("experiment ", id, " COMPLETED\n")), std::string::npos)
      << waited.out;
  LaunchResult no_such = Cohort({"experiment", "wait", "999"});
  EXPECT_EQ(no_such.status, 1);
  EXPECT_NE(no_such.err.find("experiment 999"), std::string::npos) << no_such.err;
  LaunchResult unknown = Cohort({"trial", "kill", "999"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("trial 999"), std::string::npos) << unknown.err;
}

TEST_F(ClusterTest, TrialThatKeepsFailingEndsAsErrorWithItsLastLines) {
  StartMaster();
  StartAgent("a1", 2, 31100);
  Script("boom.sh", "echo \"boom on rank $COHORT_RANK\"\nexit 3\n");
  const int64_t id = Create(Config("boom",
                                   "entrypoint: ./boom.sh\nresources: {slots_per_trial: 2}\n"
                                   "max_restarts: 1\n"));
  // `experiment wait` follows it to its end: 1, since it did not complete.
  LaunchResult waited = Cohort({"experiment", "wait", std::to_string(id)}, absl::Seconds(120));
  EXPECT_EQ(waited.status, 1) << waited.out << waited.err;
  EXPECT_NE(waited.out.find(absl::StrCat("experiment ", id, " ERROR\n")), std::string::npos)
      << waited.out;
  EXPECT_NE(waited.out.find("failed; its last lines:"), std::string::npos) << waited.out;
  json t = Json({"experiment", "describe", std::to_string(id)})["trials"][0];
  EXPECT_EQ(t["state"], "ERROR");
  EXPECT_EQ(t["restarts"], 1);
  LaunchResult describe = Cohort({"experiment", "describe", std::to_string(id)});
  EXPECT_NE(describe.out.find("failed; its last log lines:"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("boom on rank"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("exited with status 3"), std::string::npos) << describe.out;
}

// Log policies (docs/design/0003): a cancel_retries match ends the failed trial at once, with
// restarts left; an exclude_node match keeps its restart off the agent where the line was
// printed. Both are shown by `experiment describe`.
TEST_F(ClusterTest, LogPoliciesCancelRetriesAndKeepRestartsOffAnExcludedAgent) {
  StartMaster();
  StartAgent("a1", 1, 31100);
  StartAgent("a2", 1, 31120);
  // Created first, so its first run goes on a1 (best fit by id). Fails on a1 unless the run is on
  // a2 (its run directory is under the agent's work dir).
  Script("ecc.sh",
         "case \"$COHORT_RUN_DIR\" in */a1/*) echo 'uncorrectable ECC error encountered'; "
         "exit 4;; esac\necho fine\n");
  const int64_t moved = Create(
      Config("ecc",
             "entrypoint: ./ecc.sh\nmax_restarts: 3\n"
             "log_policies: [{name: ECC Error, pattern: 'ECC error', action: exclude_node}]\n"));
  Script("bad_data.sh", "echo 'ValueError: corrupt shard 17'\nexit 3\n");
  const int64_t canceled =
      Create(Config("bad-data",
                    "entrypoint: ./bad_data.sh\nmax_restarts: 3\n"
                    "log_policies: [{name: bad data, pattern: 'corrupt shard \\d+', action: "
                    "cancel_retries}]\n"));
  auto state = [&](int64_t id) {
    return Json({"experiment", "describe", std::to_string(id)})["state"].get<std::string>();
  };
  WaitUntil([&] { return state(canceled) == "ERROR" && state(moved) == "COMPLETED"; },
            "the bad-data experiment to fail and the ECC one to complete");

  json bad = Json({"experiment", "describe", std::to_string(canceled)})["trials"][0];
  EXPECT_EQ(bad["restarts"], 0) << "a cancel_retries match means no restart";
  ASSERT_EQ(bad["log_policy_matches"].size(), 1u) << bad.dump();
  EXPECT_EQ(bad["log_policy_matches"][0]["policy"], "bad data");
  EXPECT_EQ(bad["log_policy_matches"][0]["line"], "ValueError: corrupt shard 17");

  json ecc = Json({"experiment", "describe", std::to_string(moved)})["trials"][0];
  EXPECT_GE(ecc["restarts"], 1);
  const json& matches = ecc["log_policy_matches"];
  ASSERT_FALSE(matches.empty()) << ecc.dump();
  for (const json& m : matches) {
    EXPECT_EQ(m["agent"], "a1") << "only a1 prints the ECC line";
    EXPECT_EQ(m["action"], "exclude_node");
  }
  EXPECT_EQ(matches.size(), 1u) << "after its first failure on a1, the trial never ran there again";
  LaunchResult logs = Cohort({"trial", "logs", std::to_string(ecc["id"].get<int64_t>())});
  EXPECT_NE(logs.out.find("fine"), std::string::npos) << logs.out;

  LaunchResult describe = Cohort({"experiment", "describe", std::to_string(canceled)});
  EXPECT_NE(describe.out.find("log policies matched"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("cancel_retries"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("corrupt shard 17"), std::string::npos) << describe.out;
}

TEST_F(ClusterTest, BadRequestsGetErrorsNamingTheProblem) {
  StartMaster();
  LaunchResult missing = Cohort({"experiment", "describe", "999"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("experiment 999 not found"), std::string::npos) << missing.err;
  const fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << "name: bad\nentrypoint: ./x\nhyperparameters: {global_batch_size: 8}\n"
                        "resources: {slots_per_trial: -2}\nsearcher: {name: single, metric: m, "
                        "max_length: {batches: 1}}\nmax_restart: 1\n";
  LaunchResult invalid =
      Cohort({"experiment", "create", bad.string(), (dir_ / "context").string()});
  EXPECT_EQ(invalid.status, 1);
  EXPECT_NE(invalid.err.find("resources.slots_per_trial: must be >= 0, got -2"), std::string::npos)
      << invalid.err;
  EXPECT_NE(invalid.err.find("max_restart"), std::string::npos) << invalid.err;
  const fs::path tmpl = dir_ / "t.yaml";
  std::ofstream(tmpl) << "template: other\n";
  LaunchResult nested = Cohort({"template", "set", "t", tmpl.string()});
  EXPECT_EQ(nested.status, 1);
  EXPECT_NE(nested.err.find("template"), std::string::npos) << nested.err;
  LaunchResult unknown_template =
      Cohort({"experiment", "create", "--template", "nope", Config("x", "entrypoint: ./x\n"),
              (dir_ / "context").string()});
  EXPECT_NE(unknown_template.err.find("template 'nope' does not exist"), std::string::npos)
      << unknown_template.err;
}

TEST_F(ClusterTest, RestartedMasterKeepsEverythingAndAgentsReconnect) {
  StartMaster();
  StartAgent("a1", 2, 30900);
  Script("hello.sh", "echo \"hello from rank $COHORT_RANK\"\n");
  const int64_t id =
      Create(Config("before", "entrypoint: ./hello.sh\nresources: {slots_per_trial: 2}\n"));
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(id)})["state"] == "COMPLETED";
      },
      "the experiment to complete");
  const std::string port = url_.substr(url_.rfind(':') + 1);
  ASSERT_EQ(::kill(master_->pid(), SIGKILL), 0);
  master_->Wait(absl::Seconds(10));
  StartMaster(std::stoi(port));
  json e = Json({"experiment", "describe", std::to_string(id)});
  EXPECT_EQ(e["state"], "COMPLETED");
  EXPECT_EQ(e["name"], "before");
  LaunchResult logs = Cohort({"trial", "logs", "1", "--rank", "1"});
  EXPECT_EQ(logs.out, "[rank=1] hello from rank 1\n");
  WaitUntil(
      [&] {
        json agents = Json({"agent", "list"})["agents"];
        return agents.size() == 1 && agents[0]["connected"].get<bool>();
      },
      "the agent to reconnect");
  // The restarted cluster runs new work.
  const int64_t after =
      Create(Config("after", "entrypoint: ./hello.sh\nresources: {slots_per_trial: 2}\n"));
  WaitUntil(
      [&] {
        return Json({"experiment", "describe", std::to_string(after)})["state"] == "COMPLETED";
      },
      "the new experiment to complete");
}

// Whether `pid` has exited (gone, or a zombie waiting for its parent).
bool Exited(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  return stat >> pid_field >> name >> state && state == "Z";
}

TEST_F(ClusterTest, AgentWhoseMasterIsGoneExitsWithinSecondsOfSigtermAndStopsItsTrial) {
  StartMaster();
  StartAgent("a1", 1, 31600);
  // A trial that notes its pid and keeps printing, so the agent always has lines to post.
  const fs::path pid_file = dir_ / "trial.pid";
  Script("forever.sh", absl::StrCat("echo $$ > ", pid_file.string(),
                                    "\nwhile :; do echo tick; sleep 0.2; done\n"));
  const int64_t id = Create(Config("forever", "entrypoint: ./forever.sh\n"));
  ASSERT_GT(id, 0);
  WaitUntil([&] { return fs::exists(pid_file) && fs::file_size(pid_file) > 0; },
            "the trial to start");
  pid_t trial = 0;
  ASSERT_TRUE(std::ifstream(pid_file) >> trial);
  ASSERT_EQ(::kill(master_->pid(), SIGKILL), 0);
  master_->Wait(absl::Seconds(10));
  // The agent finds its master gone (its trial's posts are being retried by then too).
  LauncherProcess& agent = *agents_[0];
  ASSERT_TRUE(agent.WaitFor(
      [](const std::string&, const std::string& err) {
        return err.find("retrying every second") != std::string::npos;
      },
      absl::Seconds(30)))
      << agent.err();

  const absl::Time sent = absl::Now();
  ASSERT_EQ(::kill(agent.pid(), SIGTERM), 0);
  LaunchResult stopped = agent.Wait(absl::Seconds(8));
  ASSERT_TRUE(stopped.exited) << "still running 8 s after SIGTERM:\n" << stopped.err;
  EXPECT_EQ(stopped.status, 0) << stopped.err;
  EXPECT_LT(stopped.end_time - sent, absl::Seconds(5)) << stopped.err;
  EXPECT_NE(stopped.err.find("agent a1: stopping 1 allocation(s)"), std::string::npos)
      << stopped.err;
  WaitUntil([&] { return Exited(trial); }, "the trial process to end", absl::Seconds(5));
}

TEST_F(ClusterTest, ClusterUpStartsALocalClusterTheCliFindsAndDownStopsIt) {
  // A free port for the master (bind 0, read it, release it).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  // The data directory (master database, agents, logs, cluster.json) goes under XDG_DATA_HOME.
  // The CLI's login file goes under XDG_CONFIG_HOME; `up` logs it in as admin by itself.
  const std::map<std::string, std::optional<std::string>> env = {
      {"XDG_DATA_HOME", (dir_ / "data").string()},
      {"XDG_CONFIG_HOME", (dir_ / "config").string()},
      {"COHORT_MASTER", std::nullopt},
      {"COHORT_USER", std::nullopt},
      {"COHORT_PASSWORD", std::nullopt},
      {"COHORT_INITIAL_PASSWORD", std::nullopt}};
  LaunchResult up = RunToCompletion({BinaryPath("cohort"), "cluster", "up", "--agents", "2",
                                     "--slots", "1", "--port", std::to_string(port)},
                                    env, absl::Seconds(60));
  ASSERT_EQ(up.status, 0) << up.out << up.err;
  EXPECT_NE(
      up.out.find(absl::StrCat("master http://127.0.0.1:", port, ", 2 agent(s) of 1 slot(s)")),
      std::string::npos)
      << up.out;
  EXPECT_NE(up.out.find("logged in as admin"), std::string::npos) << up.out << up.err;
  EXPECT_TRUE(fs::exists(dir_ / "data" / "cohort" / "cluster.json"));
  // Without --master the CLI finds the local cluster.
  LaunchResult agents = RunToCompletion({BinaryPath("cohort"), "agent", "list"}, env);
  EXPECT_EQ(agents.status, 0) << agents.err;
  EXPECT_NE(agents.out.find("agent-1"), std::string::npos) << agents.out;
  EXPECT_NE(agents.out.find("agent-2"), std::string::npos) << agents.out;
  // A second `up` with the same flags finds it running.
  const std::vector<std::string> same = {BinaryPath("cohort"), "cluster", "up", "--agents", "2",
                                         "--slots", "1", "--port", std::to_string(port)};
  LaunchResult again = RunToCompletion(same, env);
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("already running"), std::string::npos) << again.out;
  // With other flags it says what differs and fails, instead of ignoring them (issue 44).
  LaunchResult other = RunToCompletion(
      {BinaryPath("cohort"), "cluster", "up", "--agents", "1", "--slots", "1", "--port",
       std::to_string(port)},
      env);
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.err.find("--agents 2 (asked: 1)"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--replace"), std::string::npos) << other.err;
  // --replace stops it and starts the one asked for.
  LaunchResult replaced = RunToCompletion(
      {BinaryPath("cohort"), "cluster", "up", "--agents", "1", "--slots", "1", "--port",
       std::to_string(port), "--replace"},
      env, absl::Seconds(60));
  EXPECT_EQ(replaced.status, 0) << replaced.out << replaced.err;
  EXPECT_NE(replaced.out.find("1 agent(s) of 1 slot(s)"), std::string::npos) << replaced.out;
  LaunchResult down =
      RunToCompletion({BinaryPath("cohort"), "cluster", "down"}, env, absl::Seconds(60));
  EXPECT_EQ(down.status, 0) << down.err;
  EXPECT_NE(down.out.find("stopped 2 process(es)"), std::string::npos) << down.out;
  EXPECT_FALSE(fs::exists(dir_ / "data" / "cohort" / "cluster.json"));
  LaunchResult gone = RunToCompletion(
      {BinaryPath("cohort"), "-m", absl::StrCat("http://127.0.0.1:", port), "agent", "list"}, env);
  EXPECT_NE(gone.status, 0);
  EXPECT_NE(gone.err.find("cannot reach the master"), std::string::npos) << gone.err;
}

TEST_F(ClusterTest, UsersLogInWithTheCliAndChangeOnlyTheirOwnExperiments) {
  StartMaster();
  Script("sleep.sh", "sleep 60\n");
  // Not logged in: every verb says how to log in.
  LaunchResult anonymous = CohortAs("nobody", {"experiment", "list"});
  EXPECT_EQ(anonymous.status, 1);
  EXPECT_NE(anonymous.err.find("cohort user login"), std::string::npos) << anonymous.err;
  // `user login` as admin with the password on standard input; the token is kept privately.
  const std::string cohort = absl::StrCat(BinaryPath("cohort"), " -m ", url_);
  auto sh = [&](const std::string& config_dir, const std::string& command) {
    return RunToCompletion({"/bin/sh", "-c", command}, CliEnv(config_dir, /*as_admin=*/false));
  };
  LaunchResult login =
      sh("admin", absl::StrCat("echo '", admin_password_, "' | ", cohort, " user login admin"));
  ASSERT_EQ(login.status, 0) << login.err;
  EXPECT_NE(login.out.find("as admin (admin)"), std::string::npos) << login.out;
  struct stat info {};
  ASSERT_EQ(::stat((dir_ / "admin" / "cohort" / "auth.json").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_NE(CohortAs("admin", {"user", "whoami"}).out.find("admin (admin)"), std::string::npos);
  ASSERT_EQ(sh("admin", cohort + " user create alice <<EOF\nalice-password\nEOF\n").status, 0);
  ASSERT_EQ(sh("alice", cohort + " user login alice <<EOF\nalice-password\nEOF\n").status, 0);
  // Each owns what they create; alice cannot kill admin's experiment.
  const int64_t admins = Create(Config("admins", "entrypoint: ./sleep.sh\n"));
  LaunchResult denied = CohortAs("alice", {"experiment", "kill", std::to_string(admins)});
  EXPECT_EQ(denied.status, 1);
  EXPECT_NE(denied.err.find("belongs to 'admin'"), std::string::npos) << denied.err;
  LaunchResult created =
      CohortAs("alice", {"experiment", "create", Config("alices", "entrypoint: ./sleep.sh\n"),
                         (dir_ / "context").string()});
  ASSERT_EQ(created.status, 0) << created.err;
  LaunchResult list = CohortAs("alice", {"experiment", "list"});
  EXPECT_NE(list.out.find("alices  alice"), std::string::npos) << list.out;
  const int64_t alices = admins + 1;
  EXPECT_EQ(CohortAs("alice", {"experiment", "kill", std::to_string(alices)}).status, 0);
  EXPECT_EQ(CohortAs("admin", {"experiment", "kill", std::to_string(admins)}).status, 0);
  // Admins' verbs are refused to alice; logout ends her login.
  EXPECT_NE(CohortAs("alice", {"user", "list"}).err.find("is for admins"), std::string::npos);
  EXPECT_EQ(CohortAs("alice", {"user", "logout"}).status, 0);
  LaunchResult after = CohortAs("alice", {"user", "whoami"});
  EXPECT_EQ(after.status, 1);
  EXPECT_NE(after.err.find("cohort user login"), std::string::npos) << after.err;
}

}  // namespace
}  // namespace cohort
