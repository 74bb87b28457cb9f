// The Core API tutorial (examples/core_api) as its users run it: each stage on 2 slots under
// cohort-launch, checked through the files the chief writes (metrics.jsonl, checkpoints).

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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
using testing::LauncherProcess;
using testing::LaunchResult;
using testing::RunToCompletion;

std::vector<nlohmann::json> ReadLines(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

std::vector<nlohmann::json> OfKind(const std::vector<nlohmann::json>& lines, const char* kind) {
  std::vector<nlohmann::json> out;
  for (const auto& line : lines) {
    if (line["kind"] == kind) out.push_back(line);
  }
  return out;
}

class CoreApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::path(::testing::TempDir()) /
               absl::StrCat("core_api_test_", ::getpid(), "_",
                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(run_dir_);
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  std::vector<std::string> Command(const std::string& stage, int slots) {
    return {BinaryPath("cohort-launch"), "--slots", std::to_string(slots), "--grace-period", "30",
            "--", BinaryPath("core_api_" + stage), "--config",
            absl::StrCat(COHORT_SOURCE_DIR, "/examples/core_api/", stage, ".yaml")};
  }
  std::map<std::string, std::optional<std::string>> Env(
      std::map<std::string, std::optional<std::string>> extra = {}) {
    extra["COHORT_RUN_DIR"] = run_dir_.string();
    for (const char* var : {"COHORT_HPARAMS", "COHORT_LATEST_CHECKPOINT", "COHORT_TRIAL_SEED"}) {
      extra.try_emplace(var, std::nullopt);
    }
    return extra;
  }
  std::vector<nlohmann::json> Metrics() { return ReadLines(run_dir_ / "metrics.jsonl"); }

  fs::path run_dir_;
};

TEST_F(CoreApiTest, Stage1OnlyTheChiefReportsEveryStep) {
  LaunchResult r = RunToCompletion(Command("1_metrics", 2), Env(), absl::Seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[rank=0] done: x = 100"), std::string::npos) << r.out;
  std::vector<nlohmann::json> lines = Metrics();
  std::vector<nlohmann::json> training = OfKind(lines, "training");
  ASSERT_EQ(training.size(), 100u);  // once per step: the other worker reported nothing
  for (size_t i = 0; i < training.size(); ++i) {
    EXPECT_EQ(training[i]["steps_completed"], i + 1);
    EXPECT_EQ(training[i]["metrics"]["x"], i + 1);
  }
  EXPECT_EQ(OfKind(lines, "validation").size(), 10u);
}

TEST_F(CoreApiTest, Stage2PreemptedRunStopsEverywhereAndResumesFromItsCheckpoint) {
  LauncherProcess launcher(Command("2_checkpoints", 2), Env());
  const fs::path metrics = run_dir_ / "metrics.jsonl";
  ASSERT_TRUE(launcher.WaitFor(
      [&](const std::string&, const std::string&) {
        return OfKind(ReadLines(metrics), "training").size() >= 15;
      },
      absl::Seconds(60)))
      << launcher.err();
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  LaunchResult r = launcher.Wait(absl::Seconds(60));
  ASSERT_TRUE(r.exited);
  // The launcher reports the signal it got; the workers themselves stopped cleanly.
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
  EXPECT_EQ(r.err.find("exited with status"), std::string::npos) << r.err;
  const size_t at = r.out.find("[rank=0] preempted at step ");
  ASSERT_NE(at, std::string::npos) << r.out << r.err;
  const int step = std::stoi(r.out.substr(at + 27));
  EXPECT_GE(step, 15);
  EXPECT_LT(step, 100);
  std::vector<nlohmann::json> lines = Metrics();
  ASSERT_EQ(OfKind(lines, "preempted").size(), 1u);
  std::vector<nlohmann::json> checkpoints = OfKind(lines, "checkpoint");
  ASSERT_FALSE(checkpoints.empty());
  EXPECT_EQ(checkpoints.back()["steps_completed"], step);
  EXPECT_EQ(OfKind(lines, "training").back()["steps_completed"], step);

  const std::string id = checkpoints.back()["storage_id"];
  LaunchResult resumed = RunToCompletion(Command("2_checkpoints", 2),
                                         Env({{"COHORT_LATEST_CHECKPOINT", id}}),
                                         absl::Seconds(60));
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(absl::StrCat("[rank=0] resumed from ", id, " at step ", step,
                                          ", x = ", step)),
            std::string::npos)
      << resumed.out;
  EXPECT_NE(resumed.out.find("[rank=0] done: x = 100"), std::string::npos) << resumed.out;
  std::vector<nlohmann::json> training = OfKind(Metrics(), "training");
  ASSERT_EQ(training.size(), 100u);  // every step reported exactly once across both runs
  for (size_t i = 0; i < training.size(); ++i) EXPECT_EQ(training[i]["metrics"]["x"], i + 1);
}

TEST_F(CoreApiTest, Stage3TrainsTheSearcherLengthWithItsHyperparameters) {
  LaunchResult r = RunToCompletion(Command("3_hpsearch", 2),
                                   Env({{"COHORT_HPARAMS", R"({"increment_by": 3})"}}),
                                   absl::Seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[rank=0] done: increment_by 3, x = 150"), std::string::npos) << r.out;
  std::vector<nlohmann::json> lines = Metrics();
  EXPECT_EQ(OfKind(lines, "training").size(), 50u);
  std::vector<nlohmann::json> completed = OfKind(lines, "completed");
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_EQ(completed[0]["searcher_metric"], 150);
  std::ifstream in(run_dir_ / "progress.json");
  nlohmann::json progress = nlohmann::json::parse(in);
  EXPECT_EQ(progress["completed"], 50);
  EXPECT_EQ(progress["total"], 50);
  EXPECT_EQ(progress["unit"], "batches");
}

TEST_F(CoreApiTest, Stage3WithoutTheHyperparameterSaysWhichIsMissing) {
  LaunchResult r = RunToCompletion(Command("3_hpsearch", 2),
                                   Env({{"COHORT_HPARAMS", R"({"increment": 3})"}}),
                                   absl::Seconds(60));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("[rank=0] core_api_3_hpsearch: INVALID_ARGUMENT: hyperparameters.increment_by"),
            std::string::npos)
      << r.err;
}

TEST_F(CoreApiTest, Stage4AllgathersEveryWorkersIncrement) {
  LaunchResult r = RunToCompletion(Command("4_distributed", 2), Env(), absl::Seconds(60));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[rank=0] done: 2 workers, increment_by 1, x = 100"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("[rank=1] done"), std::string::npos) << r.out;  // the chief reports
  std::vector<nlohmann::json> training = OfKind(Metrics(), "training");
  ASSERT_EQ(training.size(), 50u);
  for (size_t i = 0; i < training.size(); ++i) {
    EXPECT_EQ(training[i]["metrics"]["x"], 2 * (i + 1));
    EXPECT_EQ(training[i]["metrics"]["workers"], 2);
  }
  // Checkpoints every 10 steps hold both workers' x.
  std::vector<nlohmann::json> checkpoints = OfKind(Metrics(), "checkpoint");
  ASSERT_EQ(checkpoints.size(), 5u);
  std::ifstream in(fs::path(checkpoints.back()["path"].get<std::string>()) / "state.json");
  nlohmann::json state = nlohmann::json::parse(in);
  EXPECT_EQ(state["xs"], nlohmann::json::array({50, 50}));
}

}  // namespace
}  // namespace cohort
