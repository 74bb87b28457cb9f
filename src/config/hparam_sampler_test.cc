#include "config/hparam_sampler.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "config/config_parser.h"
#include "config/error_list.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::ElementsAre;

constexpr char kHparams[] = R"(
entrypoint: ./trial
hyperparameters:
  global_batch_size: 32
  lr: {type: log, minval: -4, maxval: -1, base: 10, count: 4}
  layers: {type: int, minval: 1, maxval: 3, count: 3}
  dropout: {type: double, minval: 0.0, maxval: 0.5, count: 2}
  act: {type: categorical, vals: [relu, tanh]}
  opt: {name: sgd, momentum: {type: const, val: 0.9}}
)";

ExperimentConfig Config(const std::string& searcher, const std::string& hparams = kHparams) {
  auto tree = ParseYaml(absl::StrCat(hparams, "searcher: ", searcher, "\n"));
  EXPECT_OK(tree);
  auto config = ParseExperimentConfig(*tree, ParseOptions{7});
  EXPECT_OK(config);
  return config.ok() ? *config : ExperimentConfig();
}

std::vector<Json> Samples(const ExperimentConfig& c, uint32_t seed) {
  auto samples = SampleHyperparameters(c.hyperparameters, c.searcher, seed);
  EXPECT_OK(samples);
  return samples.ok() ? *samples : std::vector<Json>();
}

TEST(TrialSeedTest, IsAPureFunctionOfExperimentSeedAndIndex) {
  EXPECT_EQ(TrialSeed(42, 0), TrialSeed(42, 0));
  EXPECT_NE(TrialSeed(42, 0), TrialSeed(42, 1));
  EXPECT_NE(TrialSeed(42, 0), TrialSeed(43, 0));
  std::set<uint32_t> seen;
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint32_t s = TrialSeed(42, i);
    EXPECT_LE(s, 0x7fffffffu);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 1000u);
  // Pinned so that a change to the documented formula is noticed.
  EXPECT_EQ(Mix64(1), 0x5692161d100b05e5ULL);
  EXPECT_EQ(TrialSeed(42, 3), 1818050278u);
  EXPECT_EQ(TrialSeed(0, 0), 0u);
}

TEST(HparamSamplerTest, SingleGivesOneSampleShapedLikeTheTree) {
  auto samples = Samples(Config("{name: single, metric: loss}"), 1);
  ASSERT_EQ(samples.size(), 1u);
  const Json& s = samples[0];
  EXPECT_EQ(s["global_batch_size"], 32);
  EXPECT_EQ(s["opt"]["name"], "sgd");
  EXPECT_EQ(s["opt"]["momentum"], 0.9);
  EXPECT_TRUE(s["layers"].is_number_integer());
  EXPECT_GE(s["layers"].get<int64_t>(), 1);
  EXPECT_LE(s["layers"].get<int64_t>(), 3);
  EXPECT_GE(s["lr"].get<double>(), 1e-4);
  EXPECT_LE(s["lr"].get<double>(), 1e-1);
  EXPECT_TRUE(s["act"] == "relu" || s["act"] == "tanh");
}

TEST(HparamSamplerTest, RandomIsDeterministicInTheExperimentSeed) {
  ExperimentConfig c = Config("{name: random, metric: loss, max_trials: 20}");
  std::vector<Json> a = Samples(c, 5), b = Samples(c, 5), other = Samples(c, 6);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  std::set<std::string> distinct;
  for (const Json& s : a) {
    distinct.insert(s.dump());
    EXPECT_GE(s["dropout"].get<double>(), 0.0);
    EXPECT_LT(s["dropout"].get<double>(), 0.5);
  }
  EXPECT_GT(distinct.size(), 15u);
}

TEST(HparamSamplerTest, AdaptiveAshaSamplesMaxTrialsLikeRandom) {
  ExperimentConfig asha =
      Config("{name: adaptive_asha, metric: loss, max_trials: 8, max_length: {batches: 100}}");
  ExperimentConfig random = Config("{name: random, metric: loss, max_trials: 8}");
  EXPECT_EQ(Samples(asha, 3), Samples(random, 3));
  EXPECT_EQ(Samples(asha, 3).size(), 8u);
}

TEST(HparamSamplerTest, GridIsTheCartesianProductOfTheAxes) {
  std::vector<Json> samples = Samples(Config("{name: grid, metric: loss}"), 1);
  ASSERT_EQ(samples.size(), 4u * 3u * 2u * 2u);
  // The first hyperparameter varies slowest, the last fastest.
  EXPECT_DOUBLE_EQ(samples[0]["lr"].get<double>(), 1e-4);
  EXPECT_EQ(samples[0]["layers"], 1);
  EXPECT_EQ(samples[0]["dropout"], 0.0);
  EXPECT_EQ(samples[0]["act"], "relu");
  EXPECT_EQ(samples[1]["act"], "tanh");
  EXPECT_EQ(samples[2]["dropout"], 0.5);
  EXPECT_EQ(samples[4]["layers"], 2);
  EXPECT_DOUBLE_EQ(samples.back()["lr"].get<double>(), 1e-1);
  EXPECT_EQ(samples.back()["opt"]["momentum"], 0.9);
  std::set<std::string> distinct;
  for (const Json& s : samples) distinct.insert(s.dump());
  EXPECT_EQ(distinct.size(), samples.size());
  EXPECT_EQ(samples, Samples(Config("{name: grid, metric: loss}"), 99));
}

TEST(HparamSamplerTest, GridAxesHandleCountOneAndSmallIntRanges) {
  std::vector<Json> samples = Samples(Config("{name: grid, metric: loss}", R"(
entrypoint: x
hyperparameters:
  global_batch_size: 8
  a: {type: int, minval: 0, maxval: 2, count: 10}
  b: {type: double, minval: 1, maxval: 3, count: 1}
)"),
                                      1);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0]["a"], 0);
  EXPECT_EQ(samples[2]["a"], 2);
  EXPECT_EQ(samples[0]["b"], 2.0);
}

TEST(HparamSamplerTest, GridRejectsSearchedHyperparametersWithoutCount) {
  // ParseExperimentConfig rejects such a grid config, so parse it as random and switch.
  ExperimentConfig c = Config("{name: random, metric: loss, max_trials: 1}", R"(
entrypoint: x
hyperparameters:
  global_batch_size: 8
  a: {type: int, minval: 0, maxval: 2}
  g: {b: {type: log, minval: -3, maxval: 0}}
)");
  c.searcher.name = "grid";
  auto samples = SampleHyperparameters(c.hyperparameters, c.searcher, 1);
  ASSERT_THAT(samples, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ConfigErrors(samples.status()),
              ElementsAre("hyperparameters.a: grid search needs count for an int hyperparameter",
                          "hyperparameters.g.b: grid search needs count for a log "
                          "hyperparameter"));
}

}  // namespace
}  // namespace cohort::config
