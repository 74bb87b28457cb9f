// single, random and grid: the trials they create (samples and seeds as config/hparam_sampler.h
// draws them), that nothing is decided on the way, and Restore after a restart.

#include "master/searcher/non_adaptive_searcher.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "config/config_parser.h"
#include "config/hparam_sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::master::searcher {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using wire::TrialState;

constexpr char kHparams[] = R"(
entrypoint: ./trial
reproducibility: {experiment_seed: 11}
hyperparameters:
  global_batch_size: 32
  lr: {type: log, minval: -4, maxval: -1, base: 10, count: 2}
  layers: {type: int, minval: 1, maxval: 3, count: 3}
)";

config::ExperimentConfig Config(const std::string& searcher) {
  auto tree = config::ParseYaml(absl::StrCat(kHparams, "searcher: ", searcher, "\n"));
  EXPECT_OK(tree);
  auto cfg = config::ParseExperimentConfig(*tree);
  EXPECT_OK(cfg);
  return cfg.ok() ? *cfg : config::ExperimentConfig();
}

std::unique_ptr<Searcher> New(const config::ExperimentConfig& cfg, SearcherOptions options = {}) {
  auto s = NewSearcher(cfg, options);
  EXPECT_OK(s);
  return s.ok() ? *std::move(s) : nullptr;
}

// Every operation must be a Create; returns them in order.
std::vector<Create> Creates(const std::vector<Operation>& ops) {
  std::vector<Create> out;
  for (const Operation& op : ops) {
    const Create* c = std::get_if<Create>(&op);
    EXPECT_NE(c, nullptr) << "not a Create: " << LogLine(op);
    if (c != nullptr) out.push_back(*c);
  }
  return out;
}

// The creates must be the config's samples with config::TrialSeed seeds, in index order.
void ExpectTheConfigsSamples(const config::ExperimentConfig& cfg,
                             const std::vector<Create>& creates) {
  auto samples =
      config::SampleHyperparameters(cfg.hyperparameters, cfg.searcher, cfg.experiment_seed);
  ASSERT_OK(samples);
  ASSERT_EQ(creates.size(), samples->size());
  for (size_t i = 0; i < creates.size(); ++i) {
    EXPECT_EQ(creates[i].trial, static_cast<int64_t>(i));
    EXPECT_EQ(creates[i].hparams, (*samples)[i]);
    EXPECT_EQ(creates[i].seed, config::TrialSeed(11, i));
    EXPECT_TRUE(creates[i].rungs.empty()) << "one operation of max_length";
  }
}

TEST(NonAdaptiveSearcherTest, SingleCreatesOneTrial) {
  const config::ExperimentConfig cfg = Config("{name: single, metric: loss}");
  std::unique_ptr<Searcher> s = New(cfg);
  std::vector<Create> creates = Creates(s->Start());
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].hparams["global_batch_size"], 32);
  ExpectTheConfigsSamples(cfg, creates);
  EXPECT_EQ(s->TrialCount(), 1);
}

TEST(NonAdaptiveSearcherTest, RandomCreatesMaxTrialsSamplesWithTheirTrialSeeds) {
  const config::ExperimentConfig cfg = Config("{name: random, metric: loss, max_trials: 5}");
  std::vector<Create> creates = Creates(New(cfg)->Start());
  ASSERT_EQ(creates.size(), 5u);
  ExpectTheConfigsSamples(cfg, creates);
  EXPECT_NE(creates[0].seed, creates[1].seed);
}

TEST(NonAdaptiveSearcherTest, GridCreatesEveryPoint) {
  const config::ExperimentConfig cfg = Config("{name: grid, metric: loss}");
  std::vector<Create> creates = Creates(New(cfg)->Start());
  ASSERT_EQ(creates.size(), 6u);  // 2 lr x 3 layers
  ExpectTheConfigsSamples(cfg, creates);
  EXPECT_EQ(creates[0].hparams["layers"], 1);
  EXPECT_EQ(creates[2].hparams["layers"], 3);
  EXPECT_EQ(creates[3].hparams["layers"], 1);
}

TEST(NonAdaptiveSearcherTest, MaxTrialsOptionKeepsTheFirstTrials) {
  const config::ExperimentConfig cfg = Config("{name: grid, metric: loss}");
  std::vector<Create> all = Creates(New(cfg)->Start());
  std::vector<Create> first = Creates(New(cfg, {.max_trials = 1})->Start());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].hparams, all[0].hparams);
}

TEST(NonAdaptiveSearcherTest, ReportsAndExitsDecideNothing) {
  std::unique_ptr<Searcher> s = New(Config("{name: random, metric: loss, max_trials: 2}"));
  EXPECT_EQ(s->Start().size(), 2u);
  EXPECT_TRUE(s->Start().empty()) << "a second Start creates nothing";
  auto reported = s->ValidationReported(0, 100, 0.5);
  ASSERT_OK(reported);
  EXPECT_TRUE(reported->empty());
  auto exited = s->TrialExited(0, TrialState::kCompleted);
  ASSERT_OK(exited);
  EXPECT_TRUE(exited->empty());
  EXPECT_TRUE(s->Rungs(0).empty());
}

TEST(NonAdaptiveSearcherTest, EventsForATrialNeverCreatedAreRejected) {
  std::unique_ptr<Searcher> s = New(Config("{name: single, metric: loss}"));
  s->Start();
  auto reported = s->ValidationReported(1, 100, 0.5);
  EXPECT_THAT(reported, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no trial 1")));
  EXPECT_THAT(s->TrialExited(-1, TrialState::kError), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NonAdaptiveSearcherTest, RestoreCreatesOnlyTheTrialsNotYetCreated) {
  const config::ExperimentConfig cfg = Config("{name: random, metric: loss, max_trials: 3}");
  std::vector<Create> all = Creates(New(cfg)->Start());
  std::unique_ptr<Searcher> s = New(cfg);
  auto ops = s->Restore({TrialState::kCompleted, TrialState::kRunning}, {});
  ASSERT_OK(ops);
  std::vector<Create> rest = Creates(*ops);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].trial, 2);
  EXPECT_EQ(rest[0].hparams, all[2].hparams);
  EXPECT_EQ(rest[0].seed, all[2].seed);
  EXPECT_TRUE(s->Start().empty());
}

TEST(NonAdaptiveSearcherTest, RestoreRejectsMoreTrialsThanTheSearcherCreates) {
  std::unique_ptr<Searcher> s = New(Config("{name: single, metric: loss}"));
  auto ops = s->Restore({TrialState::kCompleted, TrialState::kQueued}, {});
  EXPECT_THAT(ops, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("has 2 trials but its searcher creates 1")));
  auto bad_report = s->Restore({TrialState::kQueued}, {{.trial = 3, .length = 10, .metric = 1}});
  EXPECT_THAT(bad_report.status().message(), HasSubstr("trial 3"));
}

TEST(NonAdaptiveSearcherTest, AnUnknownSearcherNameIsAnError) {
  config::ExperimentConfig cfg = Config("{name: single, metric: loss}");
  cfg.searcher.name = "bayesian";
  auto s = NewSearcher(cfg);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bayesian")));
}

}  // namespace
}  // namespace cohort::master::searcher
