// The Core API in one process (a single-worker trial): reporting, checkpoints, searcher and
// preemption against the real files. Multi-worker behaviour: tests/core/core_api_test.cc.
#include "cohort/core.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "config/hparam_sampler.h"
#include "core/local_reporter.h"
#include "core/tensorboard_reporter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;
using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<nlohmann::json> ReadLines(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

class CoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("core_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* var : {"COHORT_CONFIG", "COHORT_RUN_DIR", "COHORT_HPARAMS",
                            "COHORT_TRIAL_SEED", "COHORT_LATEST_CHECKPOINT", "COHORT_TRIAL_ID"}) {
      ::unsetenv(var);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteConfig(const std::string& extra) {
    const fs::path path = dir_ / "config.yaml";
    std::ofstream(path) << "name: core-test\n"
                           "entrypoint: ./core-test\n"
                           "hyperparameters:\n"
                           "  global_batch_size: 32\n"
                           "  lr: {type: double, minval: 0.1, maxval: 0.2}\n"
                           "searcher:\n"
                           "  name: single\n"
                           "  metric: loss\n"
                           "  max_length: {batches: 40}\n"
                           "reproducibility: {experiment_seed: 7}\n"
                        << extra;
    return path.string();
  }

  std::unique_ptr<Context> MustInit(const std::string& config) {
    InitOptions options;
    options.config_path = config;
    options.run_dir = (dir_ / "run").string();
    options.handle_sigterm = false;
    absl::StatusOr<std::unique_ptr<Context>> ctx = Init(options);
    EXPECT_OK(ctx);
    return ctx.ok() ? *std::move(ctx) : nullptr;
  }

  fs::path dir_;
};

TEST_F(CoreTest, InitReadsTheConfigSeedsAndHyperparameters) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->distributed().rank(), 0);
  EXPECT_EQ(ctx->distributed().size(), 1);
  EXPECT_TRUE(ctx->distributed().is_chief());
  EXPECT_EQ(ctx->info().experiment_seed, 7u);
  EXPECT_EQ(ctx->info().trial_seed, config::TrialSeed(7, 0));
  ASSERT_TRUE(ctx->info().hparams.contains("lr"));
  const double lr = ctx->info().hparams["lr"].get<double>();
  EXPECT_GE(lr, 0.1);
  EXPECT_LE(lr, 0.2);
  EXPECT_EQ(ctx->info().hparams["global_batch_size"], 32);
  EXPECT_TRUE(ctx->info().latest_checkpoint.empty());
}

TEST_F(CoreTest, EnvironmentOverridesHyperparametersSeedAndCheckpoint) {
  ::setenv("COHORT_HPARAMS", R"({"lr": 0.5})", 1);
  ::setenv("COHORT_TRIAL_SEED", "1234", 1);
  ::setenv("COHORT_LATEST_CHECKPOINT", "abc", 1);
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->info().hparams, nlohmann::json({{"lr", 0.5}}));
  EXPECT_EQ(ctx->info().trial_seed, 1234u);
  EXPECT_EQ(ctx->info().latest_checkpoint, "abc");
}

TEST_F(CoreTest, BadHyperparameterEnvironmentNamesTheVariable) {
  ::setenv("COHORT_HPARAMS", "[1, 2", 1);
  InitOptions options;
  options.run_dir = (dir_ / "run").string();
  options.handle_sigterm = false;
  absl::StatusOr<std::unique_ptr<Context>> ctx = Init(options);
  ASSERT_FALSE(ctx.ok());
  EXPECT_THAT(ctx.status().message(), HasSubstr("COHORT_HPARAMS"));
}

TEST_F(CoreTest, MetricsGoToTheRunDirectory) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  ASSERT_OK(ctx->train().ReportTrainingMetrics(10, {{"loss", 0.5}}));
  ASSERT_OK(ctx->train().ReportValidationMetrics(10, {{"accuracy", 0.75}}));
  EXPECT_THAT(ctx->train().ReportTrainingMetrics(11, 3.0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ctx->train().ReportTrainingMetrics(-1, {{"loss", 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<nlohmann::json> lines = ReadLines(dir_ / "run" / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["kind"], "training");
  EXPECT_EQ(lines[0]["steps_completed"], 10);
  EXPECT_EQ(lines[0]["metrics"]["loss"], 0.5);
  EXPECT_EQ(lines[1]["kind"], "validation");
  EXPECT_EQ(lines[1]["metrics"]["accuracy"], 0.75);
}

// The bytes of every file under `dir` (event files are binary; their tags are plain strings).
std::string AllBytes(const fs::path& dir) {
  std::string bytes;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return bytes;
}

TEST_F(CoreTest, TheChiefWritesTensorBoardEventFilesBesideTheCheckpoints) {
  ::setenv("COHORT_TRIAL_ID", "7", 1);
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  ASSERT_OK(ctx->train().ReportTrainingMetrics(10, {{"loss", 0.5}}));
  ASSERT_OK(ctx->train().ReportValidationMetrics(10, {{"accuracy", 0.75}}));
  const fs::path dir = dir_ / "run" / "checkpoints" / "tensorboard" / "trial_7";
  ASSERT_TRUE(fs::is_directory(dir));
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_THAT(entry.path().filename().string(), HasSubstr("events.out.tfevents."));
    ++files;
  }
  EXPECT_EQ(files, 1);
  const std::string bytes = AllBytes(dir);
  EXPECT_THAT(bytes, HasSubstr("brain.Event:2"));
  EXPECT_THAT(bytes, HasSubstr("training/loss"));
  EXPECT_THAT(bytes, HasSubstr("validation/accuracy"));
  ::unsetenv("COHORT_TRIAL_ID");
}

TEST_F(CoreTest, CheckpointsAreStoredAtomicallyAndRestoredById) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  std::string id;
  {
    auto writer = ctx->checkpoint().StorePath({{"steps_completed", 5}});
    ASSERT_OK(writer);
    std::ofstream(fs::path(writer->path()) / "state.txt") << "five";
    // Not visible under its id before Commit.
    EXPECT_THAT(ctx->checkpoint().RestorePath(writer->storage_id()),
                StatusIs(absl::StatusCode::kNotFound));
    auto committed = writer->Commit();
    ASSERT_OK(committed);
    id = *committed;
  }
  auto path = ctx->checkpoint().RestorePath(id);
  ASSERT_OK(path);
  EXPECT_EQ(fs::path(*path).parent_path(), dir_ / "run" / "checkpoints");
  std::string content;
  std::ifstream(fs::path(*path) / "state.txt") >> content;
  EXPECT_EQ(content, "five");
  auto metadata = ctx->checkpoint().GetMetadata(id);
  ASSERT_OK(metadata);
  EXPECT_EQ((*metadata)["steps_completed"], 5);
  EXPECT_EQ((*metadata)["storage_id"], id);
  std::vector<nlohmann::json> lines = ReadLines(dir_ / "run" / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["kind"], "checkpoint");
  EXPECT_EQ(lines[0]["storage_id"], id);
  EXPECT_EQ(lines[0]["steps_completed"], 5);
}

TEST_F(CoreTest, AbandonedCheckpointLeavesNothingBehind) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  {
    auto writer = ctx->checkpoint().StorePath({{"steps_completed", 1}});
    ASSERT_OK(writer);
    std::ofstream(fs::path(writer->path()) / "partial") << "x";
  }
  for (const auto& entry : fs::directory_iterator(dir_ / "run" / "checkpoints")) {
    EXPECT_EQ(entry.path().filename(), "tensorboard") << "only the event files stay";
  }
}

TEST_F(CoreTest, RestoreRejectsUnknownAndMalformedIds) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  auto missing = ctx->checkpoint().RestorePath("0000");
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kNotFound, HasSubstr("checkpoints")));
  EXPECT_THAT(ctx->checkpoint().RestorePath("../etc"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CoreTest, SharedFsStorageComesFromTheConfig) {
  const std::string storage = (dir_ / "shared").string();
  auto ctx =
      MustInit(WriteConfig("checkpoint_storage:\n  type: shared_fs\n  host_path: " + storage +
                           "\n  storage_path: ckpts\n"));
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->checkpoint().storage_dir(), storage + "/ckpts");
  auto writer = ctx->checkpoint().StorePath(nlohmann::json::object());
  ASSERT_OK(writer);
  auto id = writer->Commit();
  ASSERT_OK(id);
  EXPECT_TRUE(fs::exists(fs::path(storage) / "ckpts" / *id / "metadata.json"));
}

TEST_F(CoreTest, SearcherHandsOutTheConfigLengthOnce) {
  auto ctx = MustInit(WriteConfig(""));
  ASSERT_NE(ctx, nullptr);
  auto op = ctx->searcher().Next();
  ASSERT_OK(op);
  ASSERT_TRUE(op->has_value());
  EXPECT_EQ((*op)->length(), 40);
  EXPECT_EQ((*op)->unit(), "batches");
  EXPECT_THAT(ctx->searcher().Next(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT((*op)->ReportProgress(41), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK((*op)->ReportProgress(40));
  ASSERT_OK((*op)->ReportCompleted(0.25));
  auto next = ctx->searcher().Next();
  ASSERT_OK(next);
  EXPECT_FALSE(next->has_value());
  std::ifstream in(dir_ / "run" / "progress.json");
  nlohmann::json progress = nlohmann::json::parse(in);
  EXPECT_EQ(progress["completed"], 40);
  EXPECT_EQ(progress["total"], 40);
  EXPECT_EQ(progress["searcher_metric"], 0.25);
}

TEST_F(CoreTest, SearcherHandsOutTheMastersOperationsInOrder) {
  ::setenv("COHORT_SEARCHER_OPS", "10,20,40", 1);
  auto ctx = MustInit(WriteConfig(""));
  ::unsetenv("COHORT_SEARCHER_OPS");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->searcher().lengths(), (std::vector<int64_t>{10, 20, 40}));
  for (int64_t expected : {10, 20, 40}) {
    auto op = ctx->searcher().Next();
    ASSERT_OK(op);
    ASSERT_TRUE(op->has_value());
    EXPECT_EQ((*op)->length(), expected);
    EXPECT_THAT(ctx->searcher().Next(), StatusIs(absl::StatusCode::kFailedPrecondition));
    ASSERT_OK((*op)->ReportCompleted(static_cast<double>(expected) / 100));
  }
  auto done = ctx->searcher().Next();
  ASSERT_OK(done);
  EXPECT_FALSE(done->has_value());
  std::vector<double> lengths;
  for (const nlohmann::json& line : ReadLines(dir_ / "run" / "metrics.jsonl")) {
    if (line["kind"] == "completed") lengths.push_back(line["length"].get<double>());
  }
  EXPECT_EQ(lengths, (std::vector<double>{10, 20, 40}));
}

TEST_F(CoreTest, MalformedSearcherOperationsAreNamed) {
  for (const char* bad : {"10,x", "20,10", "0", "5,,6"}) {
    ::setenv("COHORT_SEARCHER_OPS", bad, 1);
    InitOptions options;
    options.config_path = WriteConfig("");
    options.run_dir = (dir_ / "run").string();
    options.handle_sigterm = false;
    absl::StatusOr<std::unique_ptr<Context>> ctx = Init(options);
    ::unsetenv("COHORT_SEARCHER_OPS");
    ASSERT_THAT(ctx, Not(IsOk())) << bad;
    EXPECT_THAT(ctx.status().message(), HasSubstr("COHORT_SEARCHER_OPS")) << bad;
  }
}

TEST_F(CoreTest, SearcherWithoutConfigSaysWhatIsMissing) {
  auto ctx = MustInit("");
  ASSERT_NE(ctx, nullptr);
  auto op = ctx->searcher().Next();
  ASSERT_FALSE(op.ok());
  EXPECT_THAT(op.status().message(), HasSubstr("searcher.max_length"));
}

TEST_F(CoreTest, PreemptionIsStickyOnceRequested) {
  auto ctx = MustInit("");
  ASSERT_NE(ctx, nullptr);
  auto first = ctx->preempt().ShouldPreempt();
  ASSERT_OK(first);
  EXPECT_FALSE(*first);
  RequestPreemption();
  auto second = ctx->preempt().ShouldPreempt();
  ASSERT_OK(second);
  EXPECT_TRUE(*second);
}

TEST_F(CoreTest, ObjectCollectivesOnOneWorkerReturnTheValue) {
  auto ctx = MustInit("");
  ASSERT_NE(ctx, nullptr);
  auto all = ctx->distributed().Allgather(std::vector<int>{1, 2});
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0], (std::vector<int>{1, 2}));
  auto text = ctx->distributed().Broadcast(std::string("hello"));
  ASSERT_OK(text);
  EXPECT_EQ(*text, "hello");
  auto local = ctx->distributed().GatherLocal(3.5);
  ASSERT_OK(local);
  EXPECT_EQ(*local, std::vector<double>{3.5});
}

}  // namespace
}  // namespace cohort::core
