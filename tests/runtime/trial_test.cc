// The Trial API's loop with real worker processes (tests/runtime/trial_worker.cc): resuming from
// a checkpoint, validation metrics reduced across workers, the metrics file.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

using testing::BinaryPath;
using testing::Describe;
using testing::WorkerGroup;
using testing::WorkerGroupOptions;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

class TrialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            absl::StrCat("trial_test_", ::getpid(), "_", counter_++))
               .string();
  }
  void TearDown() override {
    const std::filesystem::path dir(::testing::TempDir());
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string path = entry.path().string();
      if (path.rfind(dir_, 0) == 0) std::filesystem::remove_all(entry.path());
    }
  }
  // Runs `ranks` trial workers; true when all exited 0.
  bool Run(int ranks, std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryPath("trial_worker")};
    argv.insert(argv.end(), args.begin(), args.end());
    WorkerGroupOptions options;
    options.size = ranks;
    WorkerGroup group(argv, options);
    auto results = group.Wait(absl::Seconds(240));
    for (const auto& r : results) {
      EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
      if (!(r.exited && r.exit_code == 0)) return false;
    }
    outputs_.clear();
    for (const auto& r : results) outputs_.push_back(r.output);
    return true;
  }
  // The Fashion-MNIST example's distributed.yaml through `cohort-launch <launch_flags>`, cut to
  // `batches`, its run directory `run_dir`: the exit status and what it printed.
  static std::pair<int, std::string> RunExampleUnderLauncher(const std::string& launch_flags,
                                                             const std::string& run_dir,
                                                             int batches) {
    const std::string config =
        std::string(COHORT_SOURCE_DIR) + "/examples/fashion_mnist/distributed.yaml";
    const std::string command = absl::StrCat(
        BinaryPath("cohort-launch"), " ", launch_flags, " -- ", BinaryPath("fashion_mnist_trial"),
        " --config ", config, " --run-dir ", run_dir, " --max-batches ", batches, " > ", run_dir,
        ".log 2>&1");
    const int status = std::system(command.c_str());
    return {status, ReadFile(run_dir + ".log")};
  }
  // The checkpoint directory a run's chief reported last in its metrics.
  static std::string LatestCheckpoint(const std::string& run_dir) {
    std::string path;
    for (const auto& line : ReadJsonLines(run_dir + "/metrics.jsonl")) {
      if (line["kind"] == "checkpoint") path = line["path"];
    }
    return path;
  }
  std::string dir_;
  std::vector<std::string> outputs_;
  static inline int counter_ = 0;
};

TEST_F(TrialTest, ResumedRunEndsWithTheWeightsOfAnUninterruptedRun) {
  const std::string straight = dir_ + "_straight", split = dir_ + "_split";
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", straight, "--out", straight + ".bin"}));
  ASSERT_TRUE(Run(2, {"--max-batches", "6", "--run-dir", split}));
  const std::string checkpoint = LatestCheckpoint(split);
  ASSERT_FALSE(checkpoint.empty());
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", split, "--restore", checkpoint, "--out",
                      split + ".bin"}));
  const std::string a = ReadFile(straight + ".bin"), b = ReadFile(split + ".bin");
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "resumed weights differ from the uninterrupted run's";

  // The chief's metrics: training every 4 batches with the seed's timings, validation and a
  // checkpoint at the end.
  std::vector<nlohmann::json> lines = ReadJsonLines(straight + "/metrics.jsonl");
  int training = 0, validation = 0, checkpoints = 0;
  for (const auto& line : lines) {
    const std::string kind = line["kind"];
    if (kind == "training") {
      ++training;
      EXPECT_TRUE(line["metrics"].contains("loss")) << line;
      for (const char* t :
           {"dataloader_next", "to_device", "train_batch", "step_lr_schedulers", "from_device",
            "reduce_metrics", "forward", "backward", "gradient_wait", "optimizer_step"}) {
        EXPECT_TRUE(line["metrics"]["timings"].contains(t)) << t << " missing in " << line;
      }
      // train_batch is its four parts (each timed between the same clock readings).
      const nlohmann::json& timings = line["metrics"]["timings"];
      const double parts = timings["forward"].get<double>() + timings["backward"].get<double>() +
                           timings["gradient_wait"].get<double>() +
                           timings["optimizer_step"].get<double>();
      EXPECT_NEAR(parts, timings["train_batch"].get<double>(),
                  0.1 * timings["train_batch"].get<double>() + 0.05)
          << line;
      EXPECT_GT(line["metrics"]["samples_per_second"].get<double>(), 0) << line;
    }
    if (kind == "validation") {
      ++validation;
      EXPECT_EQ(line["steps_completed"], 12);
      // It learned: an untrained net sits at chance (accuracy 0.1, loss ln 10 = 2.30).
      EXPECT_GT(line["metrics"]["accuracy"].get<double>(), 0.2) << line;
      EXPECT_LT(line["metrics"]["loss"].get<double>(), 2.2) << line;
    }
    if (kind == "checkpoint") ++checkpoints;
  }
  EXPECT_EQ(training, 3);
  EXPECT_EQ(validation, 1);
  EXPECT_EQ(checkpoints, 1);
}

// checkpoint_policy: all checkpoints after every validation, none only at the end, best after
// each validation whose searcher metric (the loss, smaller better) beats every earlier one.
TEST_F(TrialTest, CheckpointPolicyDecidesWhichValidationsAreFollowedByACheckpoint) {
  auto steps_of = [](const std::vector<nlohmann::json>& lines, const std::string& kind) {
    std::vector<int64_t> steps;
    for (const auto& line : lines) {
      if (line["kind"] == kind) steps.push_back(line["steps_completed"].get<int64_t>());
    }
    return steps;
  };
  std::map<std::string, std::vector<nlohmann::json>> runs;
  for (const char* policy : {"all", "none", "best"}) {
    const std::string run_dir = absl::StrCat(dir_, "_", policy);
    ASSERT_TRUE(Run(2, {"--max-batches", "12", "--validation-period", "2", "--run-dir", run_dir,
                        "--searcher-metric", "loss", "--checkpoint-policy", policy}));
    runs[policy] = ReadJsonLines(run_dir + "/metrics.jsonl");
    EXPECT_EQ(steps_of(runs[policy], "validation"), (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  }
  EXPECT_EQ(steps_of(runs["all"], "checkpoint"), (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(steps_of(runs["none"], "checkpoint"), (std::vector<int64_t>{12}));
  // best: the validations that improved on every earlier one, and the end.
  std::vector<int64_t> expected;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& line : runs["best"]) {
    if (line["kind"] != "validation") continue;
    const double loss = line["metrics"]["loss"].get<double>();
    const int64_t step = line["steps_completed"].get<int64_t>();
    if (loss < best || step == 12) expected.push_back(step);
    best = std::min(best, loss);
  }
  EXPECT_EQ(steps_of(runs["best"], "checkpoint"), expected);
  EXPECT_GE(expected.size(), 2u) << "the loss should improve at least once while learning";
}

TEST_F(TrialTest, LrSchedulerIsSteppedAndReplayedOnResume) {
  const std::string straight = dir_ + "_straight", split = dir_ + "_split", flat = dir_ + "_flat";
  ASSERT_TRUE(Run(2, {"--max-batches", "10", "--step-lr", "3", "--run-dir", straight, "--out",
                      straight + ".bin"}));
  ASSERT_TRUE(Run(2, {"--max-batches", "10", "--run-dir", flat, "--out", flat + ".bin"}));
  ASSERT_TRUE(Run(2, {"--max-batches", "4", "--step-lr", "3", "--run-dir", split}));
  ASSERT_TRUE(Run(2, {"--max-batches", "10", "--step-lr", "3", "--run-dir", split, "--restore",
                      LatestCheckpoint(split), "--out", split + ".bin"}));
  const std::string a = ReadFile(straight + ".bin"), b = ReadFile(split + ".bin");
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "resumed weights differ: the scheduler's steps were not replayed";
  EXPECT_FALSE(a == ReadFile(flat + ".bin")) << "the scheduler changed nothing";
}

TEST_F(TrialTest, PreemptionStopsEveryWorkerAfterTheSameBatchAndResumes) {
  const std::string straight = dir_ + "_straight", preempted = dir_ + "_preempted";
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", straight, "--out", straight + ".bin"}));
  // Rank 1 (not the chief) gets SIGTERM while training batch index 4: the vote after that
  // batch stops both workers with 5 batches done, and the chief checkpoints there.
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", preempted, "--sigterm-at", "4",
                      "--sigterm-rank", "1"}));
  ASSERT_EQ(outputs_.size(), 2u);
  for (const std::string& out : outputs_) {
    EXPECT_NE(out.find("batches 5 preempted 1"), std::string::npos) << out;
  }
  // The chief recorded the vote, then the checkpoint after batch 5, and nothing after it.
  std::vector<nlohmann::json> lines = ReadJsonLines(preempted + "/metrics.jsonl");
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2]["kind"], "preempted");
  EXPECT_EQ(lines.back()["kind"], "checkpoint");
  EXPECT_EQ(lines.back()["steps_completed"], 5);
  const std::string checkpoint = LatestCheckpoint(preempted);
  ASSERT_FALSE(checkpoint.empty());
  EXPECT_NE(ReadFile(checkpoint + "/metadata.json").find("\"steps_completed\": 5"),
            std::string::npos);
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", preempted, "--restore", checkpoint,
                      "--out", preempted + ".bin"}));
  for (const std::string& out : outputs_) {
    EXPECT_NE(out.find("batches 12 preempted 0"), std::string::npos) << out;
  }
  const std::string a = ReadFile(straight + ".bin"), b = ReadFile(preempted + ".bin");
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "the preempted and resumed run ended with other weights";
}

TEST_F(TrialTest, ValidationMetricsAreTheSameOnOneAndThreeWorkers) {
  // No training: validation of the initial weights over 2000 images, sharded 667/667/666 on 3
  // workers and weighted by sample counts, must equal the 1-worker figures.
  ASSERT_TRUE(Run(1, {"--max-batches", "0", "--global-batch", "6", "--run-dir", dir_ + "_1"}));
  ASSERT_TRUE(Run(3, {"--max-batches", "0", "--global-batch", "6", "--run-dir", dir_ + "_3"}));
  auto one = ReadJsonLines(dir_ + "_1/metrics.jsonl"),
       three = ReadJsonLines(dir_ + "_3/metrics.jsonl");
  ASSERT_GE(one.size(), 1u);
  ASSERT_GE(three.size(), 1u);
  ASSERT_EQ(one[0]["kind"], "validation");
  ASSERT_EQ(three[0]["kind"], "validation");
  for (const char* metric : {"loss", "accuracy"}) {
    EXPECT_NEAR(one[0]["metrics"][metric].get<double>(), three[0]["metrics"][metric].get<double>(),
                1e-6)
        << metric;
  }
}

TEST_F(TrialTest, FashionMnistExampleRunsFromItsConfigUnderTheLauncher) {
  // The example's distributed.yaml on 2 slots through cohort-launch, cut to 30 batches.
  const std::string run_dir = dir_ + "_example";
  const auto [status, log] = RunExampleUnderLauncher("--slots 2", run_dir, 30);
  ASSERT_EQ(status, 0) << log;
  EXPECT_NE(log.find("[rank=0] [batch 30/30] loss"), std::string::npos) << log;
  std::vector<nlohmann::json> lines = ReadJsonLines(run_dir + "/metrics.jsonl");
  ASSERT_FALSE(lines.empty()) << log;
  bool validated = false;
  for (const auto& line : lines) {
    if (line["kind"] != "validation") continue;
    validated = true;
    EXPECT_EQ(line["steps_completed"], 30);
    EXPECT_GT(line["metrics"]["accuracy"].get<double>(), 0.5) << line;
  }
  EXPECT_TRUE(validated) << log;
  const std::string checkpoint = LatestCheckpoint(run_dir);
  EXPECT_EQ(std::filesystem::path(checkpoint).parent_path(),
            std::filesystem::path(run_dir) / "checkpoints");
  EXPECT_TRUE(std::filesystem::exists(checkpoint + "/model.pt")) << log;
}

// A GPU slot (cohort-launch --gpus) puts the model and batches on cuda:0; a trial built against
// a CPU-only LibTorch (this machine's) says so, naming the slot and the two ways out, before it
// builds anything.
TEST_F(TrialTest, AGpuSlotWithACpuOnlyLibTorchSaysWhatToBuildOrChoose) {
  if (std::filesystem::exists("/dev/nvidia0")) GTEST_SKIP() << "a GPU here: the slot would train";
  const auto [status, log] = RunExampleUnderLauncher("--slots 1 --gpus 3", dir_ + "_gpu", 2);
  EXPECT_NE(status, 0);
  EXPECT_NE(log.find("slot is a GPU (COHORT_GPU_SLOT=1, CUDA_VISIBLE_DEVICES=3) but this LibTorch "
                     "sees no CUDA device"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("-DCOHORT_CUDA=ON"), std::string::npos) << log;
  EXPECT_EQ(log.find("[batch 1/2]"), std::string::npos) << "it trained anyway: " << log;
}

// global_batch_size is optional in a config (Core API programs need none) and required by the
// Trial API, which says so before it builds anything.
// perform_initial_validation: a validation at steps_completed 0 before any training (an
// untrained net is at chance), then the usual one at the end; none on a resumed run.
TEST_F(TrialTest, InitialValidationComesBeforeTheFirstBatch) {
  ASSERT_TRUE(Run(2, {"--max-batches", "8", "--run-dir", dir_, "--initial-validation", "1"}));
  std::vector<int64_t> validated;
  for (const auto& line : ReadJsonLines(dir_ + "/metrics.jsonl")) {
    if (line["kind"] == "validation") validated.push_back(line["steps_completed"]);
    if (line["kind"] == "validation" && line["steps_completed"] == 0) {
      EXPECT_LT(line["metrics"]["accuracy"].get<double>(), 0.3)
          << "trained before batch 0? " << line;
    }
  }
  EXPECT_EQ(validated, (std::vector<int64_t>{0, 8}));
  const std::string resumed = dir_ + "_resumed";
  ASSERT_TRUE(Run(2, {"--max-batches", "4", "--run-dir", resumed}));
  ASSERT_TRUE(Run(2, {"--max-batches", "8", "--run-dir", resumed, "--restore",
                      LatestCheckpoint(resumed), "--initial-validation", "1"}));
  validated.clear();
  for (const auto& line : ReadJsonLines(resumed + "/metrics.jsonl")) {
    if (line["kind"] == "validation") validated.push_back(line["steps_completed"]);
  }
  EXPECT_EQ(validated, (std::vector<int64_t>{4, 8}));
}

// Runs the Fashion-MNIST example binary on the config `yaml` (written to dir_/NAME.yaml) in
// dir_/run; its exit status (std::system's) and its output in *log.
int RunExampleOnConfig(const std::string& dir, const std::string& name, const std::string& yaml,
                       std::string* log, const std::string& extra_flags = "") {
  std::filesystem::create_directories(dir);
  const std::string config = absl::StrCat(dir, "/", name, ".yaml");
  std::ofstream(config) << yaml;
  const std::string command = absl::StrCat(BinaryPath("fashion_mnist_trial"), " --config ", config,
                                           " --run-dir ", dir, "/run ", extra_flags, " > ", dir,
                                           "/out.log 2>&1");
  const int status = std::system(command.c_str());
  *log = ReadFile(dir + "/out.log");
  return status;
}

TEST_F(TrialTest, TrialApiWithoutGlobalBatchSizeSaysItIsNeeded) {
  std::string log;
  EXPECT_NE(RunExampleOnConfig(dir_, "no_batch",
                               "name: no_batch\nentrypoint: ./fashion_mnist_trial\n"
                               "data: {dir: /usr/share/datasets/fashion-mnist}\n"
                               "hyperparameters: {learning_rate: 0.02}\n"
                               "searcher: {name: single, metric: loss, max_length: {batches: 5}}\n",
                               &log),
            0);
  EXPECT_NE(log.find("hyperparameters.global_batch_size is needed by the Trial API"),
            std::string::npos)
      << log;
}

// A searched global_batch_size (Determined allows an int or a categorical): the trial trains on
// its sampled value, and lengths in records count its batches.
TEST_F(TrialTest, ASearchedGlobalBatchSizeIsTheTrialsSampledValue) {
  const std::string yaml =
      "name: searched_batch\nentrypoint: ./fashion_mnist_trial\n"
      "data: {dir: /usr/share/datasets/fashion-mnist}\n"
      "hyperparameters:\n"
      "  global_batch_size: {type: categorical, vals: [48]}\n"
      "  learning_rate: 0.02\n  momentum: 0.9\n  n_filters1: 8\n"
      "  n_filters2: 16\n  dropout1: 0.25\n  dropout2: 0.5\n"
      "searcher: {name: single, metric: validation_loss, max_length: {records: 480}}\n";
  std::string log;
  EXPECT_EQ(RunExampleOnConfig(dir_, "searched_batch", yaml, &log), 0) << log;
  EXPECT_NE(log.find("10 batches of 48 (per slot 48)"), std::string::npos) << log;
  // Hyperparameters given by hand (--hparams) choose the batch too.
  const std::string given =
      R"('{"global_batch_size": 24, "learning_rate": 0.02, "momentum": 0.9, "n_filters1": 8, )"
      R"("n_filters2": 16, "dropout1": 0.25, "dropout2": 0.5}')";
  EXPECT_EQ(RunExampleOnConfig(dir_ + "/given", "searched_batch", yaml, &log,
                               "--hparams " + given),
            0)
      << log;
  EXPECT_NE(log.find("20 batches of 24 (per slot 24)"), std::string::npos) << log;
}

TEST_F(TrialTest, ALossOfManyElementsIsRefusedWithTheFix) {
  WorkerGroupOptions options;
  options.size = 1;
  WorkerGroup group({BinaryPath("trial_worker"), "--max-batches", "2", "--global-batch", "16",
                     "--run-dir", dir_, "--unreduced-loss", "1"},
                    options);
  const auto results = group.Wait(absl::Seconds(120));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].exited && results[0].exit_code != 0) << Describe(results);
  EXPECT_NE(results[0].output.find("TrainBatch returned a loss of 16 elements; return one number"),
            std::string::npos)
      << results[0].output;
}

TEST_F(TrialTest, TrialApiValidatesAndReportsAtEverySearcherOperation) {
  // adaptive_asha's rungs as the master passes them: the loop validates at batch 10 and reports
  // that operation completed (with its length) before going on to 20.
  const std::string run_dir = dir_ + "_ops";
  const std::string config =
      std::string(COHORT_SOURCE_DIR) + "/examples/fashion_mnist/distributed.yaml";
  const std::string command =
      absl::StrCat("COHORT_SEARCHER_OPS=10,20 ", BinaryPath("cohort-launch"), " --slots 1 -- ",
                   BinaryPath("fashion_mnist_trial"), " --config ", config, " --run-dir ", run_dir,
                   " --max-batches 20 > ", run_dir, ".log 2>&1");
  const int status = std::system(command.c_str());
  const std::string log = ReadFile(run_dir + ".log");
  ASSERT_EQ(status, 0) << log;
  std::vector<std::string> events;
  for (const auto& line : ReadJsonLines(run_dir + "/metrics.jsonl")) {
    if (line["kind"] == "validation") {
      events.push_back(absl::StrCat("validation@", line["steps_completed"].get<int64_t>()));
    } else if (line["kind"] == "completed") {
      events.push_back(absl::StrCat("completed@", line["length"].get<double>()));
      EXPECT_TRUE(line["searcher_metric"].is_number()) << line;
    }
  }
  EXPECT_EQ(events, (std::vector<std::string>{"validation@10", "completed@10", "validation@20",
                                              "completed@20"}))
      << log;
}

TEST_F(TrialTest, InferenceExampleGivesTheSamePredictionsOnOneAndThreeWorkers) {
  std::string csv[2];
  int k = 0;
  for (int slots : {1, 3}) {
    csv[k] = absl::StrCat(dir_, "_predictions", slots, ".csv");
    const std::string command = absl::StrCat(BinaryPath("cohort-launch"), " --slots ", slots,
                                             " -- ", BinaryPath("fashion_mnist_inference"),
                                             " --out ", csv[k], " > ", csv[k], ".log 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(csv[k] + ".log");
    EXPECT_NE(ReadFile(csv[k] + ".log").find("inference: 10000 images"), std::string::npos);
    ++k;
  }
  const std::string one = ReadFile(csv[0]), three = ReadFile(csv[1]);
  EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 10001);  // header + every test image
  EXPECT_TRUE(one == three) << "3-worker predictions differ from 1-worker predictions";
}

// Profiling writes one timeline per rank and profiled batch: the window is honoured, the
// step's phases add up to the step, train_batch holds its parts, and the gradient buckets'
// communication spans lie inside the batch on both ranks.
TEST_F(TrialTest, ProfiledBatchesWriteEachRanksTimeline) {
  ASSERT_TRUE(Run(2, {"--max-batches", "12", "--run-dir", dir_, "--profile", "3:8"}));
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = absl::StrCat(dir_, "/profile/rank-", rank, ".jsonl");
    std::vector<nlohmann::json> records = ReadJsonLines(path);
    ASSERT_EQ(records.size(), 6u) << path << ": batches 3..8 are profiled";
    for (size_t i = 0; i < records.size(); ++i) {
      const nlohmann::json& r = records[i];
      EXPECT_EQ(r["rank"], rank);
      EXPECT_EQ(r["batch"], static_cast<int64_t>(i) + 3);
      std::map<std::string, std::pair<int64_t, int64_t>> span;  // name -> (start, duration)
      for (const auto& p : r["phases"]) span[p[0]] = {p[1].get<int64_t>(), p[2].get<int64_t>()};
      ASSERT_TRUE(span.count("step")) << r;
      const auto [step_start, step_us] = span["step"];
      int64_t phases_us = 0;
      for (const char* phase :
           {"dataloader_next", "to_device", "train_batch", "step_lr_schedulers", "from_device"}) {
        ASSERT_TRUE(span.count(phase)) << phase << " missing in " << r;
        phases_us += span[phase].second;
      }
      EXPECT_NEAR(static_cast<double>(phases_us), static_cast<double>(step_us),
                  0.1 * static_cast<double>(step_us) + 5)
          << r;
      const auto [train_start, train_us] = span["train_batch"];
      for (const char* part : {"forward", "backward", "gradient_wait", "optimizer_step"}) {
        ASSERT_TRUE(span.count(part)) << part << " missing in " << r;
        EXPECT_GE(span[part].first, train_start) << part << " " << r;
        EXPECT_LE(span[part].first + span[part].second, train_start + train_us) << part << r;
      }
      ASSERT_FALSE(r["buckets"].empty()) << "no gradient bucket spans: " << r;
      for (const auto& b : r["buckets"]) {
        EXPECT_GT(b[1].get<int64_t>(), 0) << r;
        EXPECT_GE(b[2].get<int64_t>(), span["forward"].first) << "a bucket before forward " << r;
        EXPECT_LE(b[2].get<int64_t>() + b[3].get<int64_t>(),
                  span["gradient_wait"].first + span["gradient_wait"].second)
            << "a bucket still in flight after Synchronize returned " << r;
      }
    }
  }
  // Without profiling, nothing is written.
  const std::string plain = dir_ + "_plain";
  ASSERT_TRUE(Run(2, {"--max-batches", "4", "--run-dir", plain}));
  EXPECT_FALSE(std::filesystem::exists(plain + "/profile"));
}

}  // namespace
}  // namespace cohort
