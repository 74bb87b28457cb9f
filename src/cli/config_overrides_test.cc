#include "cli/config_overrides.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

using ::testing::HasSubstr;
using Json = config::Json;

TEST(ConfigOverridesTest, EachValueTakesItsYamlTypeAndMissingMappingsAreMade) {
  Json tree = {{"name", "mnist"}, {"hyperparameters", {{"lr", 0.1}}}};
  ASSERT_OK(ApplyConfigOverrides(
      {"hyperparameters.lr=0.01", "searcher.max_trials=4", "name=fork of mnist",
       "profiling.enabled=true", "hyperparameters.layers=[64, 32]",
       "hyperparameters.dropout={type: const, val: 0.5}", "description=\"a=b\""},
      tree));
  EXPECT_EQ(tree["hyperparameters"]["lr"], 0.01);
  EXPECT_EQ(tree["searcher"]["max_trials"], 4);
  EXPECT_EQ(tree["name"], "fork of mnist");
  EXPECT_EQ(tree["profiling"]["enabled"], true);
  EXPECT_EQ(tree["hyperparameters"]["layers"], Json::array({64, 32}));
  EXPECT_EQ(tree["hyperparameters"]["dropout"]["val"], 0.5);
  EXPECT_EQ(tree["description"], "a=b") << "only the first '=' splits";
}

TEST(ConfigOverridesTest, BadOverridesAreRefusedNamingThem) {
  Json tree = {{"name", "mnist"}};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"name", "expected KEY=VALUE"},          {"=3", "expected KEY=VALUE"},
      {"a..b=1", "the key has an empty part"}, {"name.first=x", "name is"},
      {"x=[1, 2", "the value is not YAML"},
  };
  for (const auto& [bad, message] : cases) {
    absl::Status s = ApplyConfigOverrides({bad}, tree);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_THAT(s.message(), HasSubstr("--config " + bad)) << bad;
    EXPECT_THAT(s.message(), HasSubstr(message)) << bad;
  }
}

// --test with a master: one `single` trial of at most 10 batches, validated once at the end,
// whatever searcher the file names; the metric and its direction are kept.
TEST(ConfigOverridesTest, SmokeTestIsOneShortSingleTrial) {
  Json grid = Json::parse(R"({"name": "g", "min_checkpoint_period": {"batches": 5},
      "min_validation_period": {"batches": 500},
      "searcher": {"name": "grid", "metric": "acc", "smaller_is_better": false,
                   "max_concurrent_trials": 2, "max_length": {"batches": 2000}}})");
  ApplySmokeTest(grid);
  EXPECT_EQ(grid["searcher"], Json::parse(R"({"name": "single", "metric": "acc",
      "smaller_is_better": false, "max_length": {"batches": 10}})"));
  EXPECT_EQ(grid["min_validation_period"], Json::parse(R"({"batches": 10})"));
  EXPECT_FALSE(grid.contains("min_checkpoint_period"));
  EXPECT_EQ(grid["name"], "g");

  Json shorter = Json::parse(R"({"searcher": {"name": "single", "max_length": {"batches": 3}}})");
  ApplySmokeTest(shorter);
  EXPECT_EQ(shorter["searcher"]["max_length"]["batches"], 3);
  Json epochs = Json::parse(R"({"searcher": {"name": "random", "max_length": {"epochs": 4}}})");
  ApplySmokeTest(epochs);
  EXPECT_EQ(epochs["searcher"]["max_length"], Json::parse(R"({"batches": 10})"));
  Json none = Json::object();  // a template supplies the searcher
  ApplySmokeTest(none);
  EXPECT_EQ(none["searcher"]["name"], "single");
}

}  // namespace
}  // namespace cohort::cli
