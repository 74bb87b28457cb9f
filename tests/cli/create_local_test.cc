// `cohort experiment create --local` end to end: the real CLI running real trials through
// cohort-launch (the Core API tutorial's grid search, the Fashion-MNIST trial's smoke test),
// and its errors: a missing context directory or entrypoint, a trial that keeps failing.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/launch/launcher_process.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using testing::BinaryPath;
using testing::LaunchResult;
using testing::RunToCompletion;

class CreateLocalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runs_ = fs::path(::testing::TempDir()) /
            absl::StrCat("create_local_test_", ::getpid(), "_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(runs_);
  }
  void TearDown() override { fs::remove_all(runs_); }

  LaunchResult Create(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(120)) {
    std::vector<std::string> argv = {BinaryPath("cohort"), "experiment",  "create", "--local",
                                     "--runs-dir",         runs_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunToCompletion(argv, {}, timeout);
  }
  static std::string Example(const std::string& path) {
    return absl::StrCat(COHORT_SOURCE_DIR, "/examples/", path);
  }
  static std::string BinDir() { return fs::path(BinaryPath("cohort")).parent_path().string(); }
  // The one experiment directory the run created.
  fs::path ExperimentDir() {
    for (const auto& entry : fs::directory_iterator(runs_)) return entry.path();
    return {};
  }
  // Summary rows of the table on stdout that start with a trial number.
  static std::vector<std::vector<std::string>> SummaryRows(const std::string& out) {
    std::vector<std::vector<std::string>> rows;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (!cells.empty() && std::isdigit(static_cast<unsigned char>(cells[0][0]))) {
        rows.push_back(cells);
      }
    }
    return rows;
  }

  // 4 adaptive_asha trials of the Core API tutorial's stage 3 (x grows by increment_by per
  // batch and is the searcher metric, smaller better), rungs 100 and 200 batches. Seed 5 draws
  // the increments 12, 21, 23, 20 (the cluster tests' experiment at half the length).
  std::string AshaConfig(bool stop_once) {
    fs::create_directories(runs_);
    const fs::path config = runs_ / "asha.yaml";
    std::ofstream(config) << absl::StrCat(
        "name: asha\nentrypoint: ./core_api_3_hpsearch\n",
        "reproducibility: {experiment_seed: 5}\n", "hyperparameters:\n  global_batch_size: 16\n",
        "  increment_by: {type: int, minval: 1, maxval: 50}\n",
        "searcher: {name: adaptive_asha, metric: x, max_length: {batches: 200}, max_trials: 4,\n",
        "  max_rungs: 2, divisor: 2, mode: aggressive, stop_once: ", stop_once ? "true" : "false",
        "}\n");
    return config.string();
  }

  // Issue 43: `cohort trial profile --run-dir` reads a local run's step timelines (the example
  // profiles batches 0-2000: all 10 of the smoke test, on both ranks) as a master's are read.
  void CheckLocalProfile(const std::string& trial_dir) {
    const std::string cohort = BinaryPath("cohort");
    LaunchResult table = RunToCompletion(
        {cohort, "trial", "profile", "--run-dir", trial_dir, "--all-ranks"}, {}, absl::Seconds(30));
    ASSERT_EQ(table.status, 0) << table.out << table.err;
    EXPECT_NE(table.out.find("step timings (ms per batch, over 10 profiled batches"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("rank 1 ms"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("rank 1: gradient wait"), std::string::npos) << table.out;
    // The machine's system metrics, sampled by the local runner inside the profiling window.
    EXPECT_NE(table.out.find("cpu_util_simple        local"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("free_memory"), std::string::npos) << table.out;
    LaunchResult json = RunToCompletion(
        {cohort, "trial", "profile", "--run-dir", trial_dir, "--json"}, {}, absl::Seconds(30));
    const nlohmann::json profile = nlohmann::json::parse(json.out);  // named: loops must not dangle
    const nlohmann::json& timings = profile["timings"];
    EXPECT_EQ(timings["profiled_steps"], 20) << "10 batches on 2 ranks";
    EXPECT_EQ(timings["ranks"].size(), 2u);
    bool cpu = false;
    for (const nlohmann::json& s : profile["series"]) {
      cpu |= s["name"] == "cpu_util_simple" && s["min_value"] >= 0 && s["max_value"] <= 100;
    }
    EXPECT_TRUE(cpu) << json.out;
    const std::string trace_file = (runs_ / "trace.json").string();
    LaunchResult trace =
        RunToCompletion({cohort, "trial", "profile", "--run-dir", trial_dir, "--trace", trace_file},
                        {}, absl::Seconds(30));
    ASSERT_EQ(trace.status, 0) << trace.err;
    EXPECT_NE(trace.out.find("spans of ranks 0, 1, batches 1-10"), std::string::npos) << trace.out;
    std::ifstream in(trace_file);
    const nlohmann::json events = nlohmann::json::parse(in)["traceEvents"];
    EXPECT_GT(events.size(), 40u);
    LaunchResult neither = RunToCompletion({cohort, "trial", "profile"}, {}, absl::Seconds(30));
    EXPECT_EQ(neither.status, 2);
    EXPECT_NE(neither.err.find("give a trial id, or --run-dir DIR"), std::string::npos);
    LaunchResult empty = RunToCompletion({cohort, "trial", "profile", "--run-dir", runs_.string()},
                                         {}, absl::Seconds(30));
    EXPECT_EQ(empty.status, 1);
    EXPECT_NE(empty.err.find("holds no profile/rank-<R>.jsonl"), std::string::npos) << empty.err;
  }

  fs::path runs_;
};

TEST_F(CreateLocalTest, GridSearchRunsOneTrialPerPointWithItsHyperparameters) {
  LaunchResult r = Create({Example("core_api/3_hpsearch.yaml"), BinDir()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // trial  state  batches  restarts  searcher metric  hyperparameters  validation
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[i][0], std::to_string(i + 1)) << r.out;
    EXPECT_EQ(rows[i][1], "COMPLETED") << r.out;
    EXPECT_EQ(rows[i][2], "50") << r.out;
    EXPECT_EQ(rows[i][4], std::to_string(50 * (i + 1))) << r.out;  // x = length * increment_by
  }
  const fs::path exp = ExperimentDir();
  EXPECT_TRUE(fs::exists(exp / "config.yaml"));
  for (int t = 1; t <= 3; ++t) {
    EXPECT_TRUE(fs::exists(exp / absl::StrCat("trial-", t) / "metrics.jsonl"));
    EXPECT_TRUE(fs::exists(exp / absl::StrCat("trial-", t) / "output.log"));
  }
  EXPECT_NE(r.err.find("trial 3/3 [####################] 50/50 batches"), std::string::npos)
      << r.err;
}

TEST_F(CreateLocalTest, FashionMnistSmokeTestTrainsAFewBatchesOnTwoSlotsAndValidates) {
  LaunchResult r =
      Create({"--test", Example("fashion_mnist/distributed.yaml"), BinDir()}, absl::Seconds(240));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][1], "COMPLETED");
  EXPECT_EQ(rows[0][2], "10");
  EXPECT_NE(r.err.find("trial 1/1 [####################] 10/10 batches"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("trial 1: validation after 10 batches: accuracy="), std::string::npos)
      << r.err;
  const std::string log_path = (ExperimentDir() / "trial-1" / "output.log").string();
  std::ifstream log(log_path);
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[rank=0] "), std::string::npos) << text;
  EXPECT_NE(text.find("on 2 slot(s), 10 batches of 128"), std::string::npos) << text;
  CheckLocalProfile((ExperimentDir() / "trial-1").string());
}

TEST_F(CreateLocalTest, CtrlCAsksTheTrialToCheckpointAndStop) {
  std::vector<std::string> argv = {BinaryPath("cohort"),
                                   "experiment",
                                   "create",
                                   "--local",
                                   "--runs-dir",
                                   runs_.string(),
                                   Example("fashion_mnist/distributed.yaml"),
                                   BinDir()};
  testing::LauncherProcess cli(argv);
  // Wait until the trial has trained a few batches.
  auto batches_done = [&]() -> double {
    std::error_code ec;
    if (!fs::is_directory(runs_, ec)) return 0;
    std::ifstream in(ExperimentDir() / "trial-1" / "progress.json");
    nlohmann::json p = nlohmann::json::parse(in, nullptr, false);
    return p.is_object() && p.contains("completed") ? p["completed"].get<double>() : 0;
  };
  ASSERT_TRUE(
      cli.WaitFor([&](const std::string&, const std::string&) { return batches_done() >= 5; },
                  absl::Seconds(120)))
      << cli.err();
  ASSERT_EQ(::kill(cli.pid(), SIGINT), 0);
  LaunchResult r = cli.Wait(absl::Seconds(120));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("stopping: trial 1 checkpoints and stops"), std::string::npos) << r.err;
  const size_t at = r.err.find("trial 1 stopped after ");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][1], "PAUSED");
  const int stopped_at = std::stoi(rows[0][2]);
  EXPECT_GE(stopped_at, 5);
  EXPECT_LT(stopped_at, 2000);
  // The checkpoint it names holds the batches trained when it stopped.
  const size_t id_at = r.err.find("its checkpoint ", at);
  ASSERT_NE(id_at, std::string::npos) << r.err;
  const std::string id = r.err.substr(id_at + 15, 36);
  std::ifstream in(ExperimentDir() / "trial-1" / "checkpoints" / id / "metadata.json");
  nlohmann::json metadata = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(metadata.is_object()) << id;
  EXPECT_EQ(metadata["steps_completed"], stopped_at);
}

TEST_F(CreateLocalTest, MissingContextDirectoryAndEntrypointAreUsageErrors) {
  LaunchResult r = Create({Example("core_api/1_metrics.yaml"), "/nonexistent/context"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("context directory /nonexistent/context does not exist"), std::string::npos)
      << r.err;
  r = Create({Example("core_api/1_metrics.yaml"), runs_.parent_path().string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("entrypoint ./core_api_1_metrics: not found in the context directory"),
            std::string::npos)
      << r.err;
  r = Create({"/nonexistent/config.yaml", BinDir()});
  EXPECT_EQ(r.status, 2) << r.err;
}

TEST_F(CreateLocalTest, AdaptiveAshaWithStopOnceStopsTrialsThatAreNotAmongTheBestForGood) {
  LaunchResult r = Create({AshaConfig(/*stop_once=*/true), BinDir()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("adaptive_asha: 1 bracket with rungs {100, 200}"), std::string::npos)
      << r.err;
  // trial  state  batches  restarts  searcher metric  hyperparameters  validation
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  // As on a cluster (tests/cluster: AdaptiveAshaStopsTrialsThatAreNotAmongTheBestAtARung):
  // trial i goes on past rung 1 only if fewer than ceil((i + 1) / 2) of the earlier ones had a
  // strictly smaller x there.
  std::vector<int64_t> at_rung;
  int stopped = 0;
  for (const auto& row : rows) {
    const nlohmann::json hparams = nlohmann::json::parse(row[5]);
    const int64_t x = hparams["increment_by"].get<int64_t>() * 100;
    int64_t better = 0;
    for (int64_t earlier : at_rung) better += earlier < x;
    const bool promoted = better < (static_cast<int64_t>(at_rung.size()) + 2) / 2;
    at_rung.push_back(x);
    EXPECT_EQ(row[1], "COMPLETED") << r.out;
    const int64_t batches = std::stoll(row[2]);
    if (promoted) {
      EXPECT_EQ(batches, 200) << r.out << r.err;
    } else {
      ++stopped;
      EXPECT_GE(batches, 100) << r.out;
      EXPECT_LT(batches, 200) << r.out << r.err;
      EXPECT_EQ(row[4], std::to_string(x)) << "the rung's metric: " << r.out;
      EXPECT_NE(r.err.find(absl::StrCat("trial ", row[0], ": stopped early by adaptive_asha")),
                std::string::npos)
          << r.err;
    }
  }
  EXPECT_EQ(stopped, 2) << r.out;  // trials 2 and 3 (x 2100 and 2300)
  EXPECT_EQ(r.err.find("promotes the trial"), std::string::npos) << "stop_once: " << r.err;
}

TEST_F(CreateLocalTest, AdaptiveAshaWithoutStopOnceResumesAStoppedTrialWhenLaterOnesPromoteIt) {
  LaunchResult r = Create({AshaConfig(/*stop_once=*/false), BinDir()});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 4u) << r.out;
  std::vector<int64_t> increments, batches;
  for (const auto& row : rows) {
    EXPECT_EQ(row[1], "COMPLETED") << r.out;
    increments.push_back(nlohmann::json::parse(row[5])["increment_by"].get<int64_t>());
    batches.push_back(std::stoll(row[2]));
  }
  ASSERT_EQ(increments, (std::vector<int64_t>{12, 21, 23, 20})) << "the sampler changed";
  // The cluster's decisions (tests/cluster: AdaptiveAshaWithoutStopOnceResumesAStoppedTrial...):
  // x at rung 100 is 1200, 2100, 2300, 2000. Trial 2 stops (1 of 2 kept); trial 3's arrival
  // makes it second of 3 (2 kept): it resumes and finishes. Trial 3 stays stopped; trial 4
  // goes on (second of 4).
  EXPECT_EQ(batches[0], 200) << r.out;
  EXPECT_EQ(batches[1], 200) << r.out << r.err;
  EXPECT_GE(batches[2], 100) << r.out;
  EXPECT_LT(batches[2], 200) << r.out << r.err;
  EXPECT_EQ(rows[2][4], "2300") << "the rung's metric: " << r.out;
  EXPECT_EQ(batches[3], 200) << r.out << r.err;
  EXPECT_NE(r.err.find("trial 2: adaptive_asha rung 1 of 2 (100 batches): searcher metric 2100 "
                       "is not among the best 1 of 2 trials of its bracket there; the trial "
                       "stops (it resumes if later trials promote it)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("trial 2: stopped early by adaptive_asha"), std::string::npos) << r.err;
  const size_t promoted = r.err.find(
      "trial 2: adaptive_asha promotes the trial at 100 batches: it is now among the best 2 of "
      "3 trials of its bracket there; it resumes from its checkpoint");
  ASSERT_NE(promoted, std::string::npos) << r.err;
  // Trial 2 resumes after trial 3 ends and before trial 4 starts.
  const size_t resumed_done = r.err.find("trial 2/4 [####################] 200/200 batches");
  const size_t fourth = r.err.find("trial 4/4");
  EXPECT_LT(promoted, resumed_done) << r.err;
  EXPECT_LT(resumed_done, fourth) << r.err;
  EXPECT_NE(r.err.find("trial 3: adaptive_asha promoted no further trial; the trial is COMPLETED"),
            std::string::npos)
      << r.err;
}

TEST_F(CreateLocalTest, FailingTrialIsRestartedThenReportedWithItsLastLines) {
  fs::create_directories(runs_);
  const fs::path config = runs_ / "broken.yaml";
  std::ofstream(config) << "name: broken\n"
                           "entrypoint: ./core_api_3_hpsearch\n"
                           "hyperparameters: {global_batch_size: 1, increment: 3}\n"
                           "searcher: {name: single, metric: x, max_length: {batches: 5}}\n"
                           "max_restarts: 1\n";
  LaunchResult r = Create({config.string(), BinDir()});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("trial 1: restart 1 of 1 from the beginning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hyperparameters.increment_by (an integer) is needed"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("giving up after 1 restart(s)"), std::string::npos) << r.err;
  std::vector<std::vector<std::string>> rows = SummaryRows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][1], "ERROR");
}

}  // namespace
}  // namespace cohort
