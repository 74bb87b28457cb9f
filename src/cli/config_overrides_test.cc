#include "cli/config_overrides.h"

#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

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

}  // namespace
}  // namespace cohort::cli
