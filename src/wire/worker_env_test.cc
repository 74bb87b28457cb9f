#include "wire/worker_env.h"

#include <map>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

using Vars = std::map<std::string, std::optional<std::string>>;
using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::StatusIs;
using ::testing::Not;

absl::StatusOr<WorkerEnv> Read(const Vars& vars) {
  return WorkerEnv::FromEnv([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : it->second;
  });
}

TEST(WorkerEnvTest, EveryFieldRoundTripsThroughTheEnvironment) {
  WorkerEnv env;
  env.config_path = "/exp/config.yaml";
  env.run_dir = "/exp/run";
  env.hparams = Json{{"lr", 0.5}, {"layers", 3}};
  env.trial_seed = 1234;
  env.trial_id = 7;
  env.latest_checkpoint = "abc-123";
  env.searcher_ops = {10, 20, 40};
  env.master_url = "http://127.0.0.1:8080";
  env.num_threads = 4;
  const Vars vars = env.ToEnv();
  EXPECT_EQ(vars.at("COHORT_SEARCHER_OPS"), "10,20,40");
  EXPECT_EQ(vars.at("OMP_NUM_THREADS"), "4");
  absl::StatusOr<WorkerEnv> back = Read(vars);
  ASSERT_OK(back);
  EXPECT_EQ(back->config_path, env.config_path);
  EXPECT_EQ(back->run_dir, env.run_dir);
  EXPECT_EQ(back->hparams, env.hparams);
  EXPECT_EQ(back->trial_seed, env.trial_seed);
  EXPECT_EQ(back->trial_id, env.trial_id);
  EXPECT_EQ(back->latest_checkpoint, env.latest_checkpoint);
  EXPECT_EQ(back->searcher_ops, env.searcher_ops);
  EXPECT_EQ(back->master_url, env.master_url);
  EXPECT_EQ(back->num_threads, env.num_threads);
}

TEST(WorkerEnvTest, EmptyFieldsUnsetTheirVariablesAndLeaveTheThreadCountsAlone) {
  const Vars vars = WorkerEnv().ToEnv();
  for (const char* name :
       {"COHORT_CONFIG", "COHORT_RUN_DIR", "COHORT_HPARAMS", "COHORT_TRIAL_SEED", "COHORT_TRIAL_ID",
        "COHORT_LATEST_CHECKPOINT", "COHORT_SEARCHER_OPS", "COHORT_MASTER_URL"}) {
    ASSERT_TRUE(vars.count(name)) << name;
    EXPECT_EQ(vars.at(name), std::nullopt) << name;
  }
  for (const char* name : kThreadVariables) EXPECT_EQ(vars.count(name), 0u) << name;
}

TEST(WorkerEnvTest, NothingSetReadsAsDefaults) {
  absl::StatusOr<WorkerEnv> env = Read({{"COHORT_HPARAMS", ""}});
  ASSERT_OK(env);
  EXPECT_FALSE(env->hparams.has_value());
  EXPECT_FALSE(env->trial_seed.has_value());
  EXPECT_TRUE(env->searcher_ops.empty());
}

TEST(WorkerEnvTest, MalformedValuesNameTheirVariable) {
  const std::vector<std::pair<Vars, std::string>> cases = {
      {{{"COHORT_HPARAMS", "[1, 2"}}, "COHORT_HPARAMS must be a JSON object"},
      {{{"COHORT_HPARAMS", "[1, 2]"}}, "COHORT_HPARAMS must be a JSON object"},
      {{{"COHORT_TRIAL_SEED", "x"}}, "COHORT_TRIAL_SEED must be an integer >= 0, got 'x'"},
      {{{"COHORT_TRIAL_SEED", "-1"}}, "COHORT_TRIAL_SEED must be an integer >= 0"},
      {{{"COHORT_TRIAL_ID", "0"}}, "COHORT_TRIAL_ID must be an integer >= 1"},
      {{{"COHORT_SEARCHER_OPS", "20,10"}}, "COHORT_SEARCHER_OPS must be ascending"},
      {{{"COHORT_SEARCHER_OPS", "5,,6"}}, "COHORT_SEARCHER_OPS"},
      {{{"COHORT_SEARCHER_OPS", "0"}}, "COHORT_SEARCHER_OPS"},
      {{{"COHORT_NUM_THREADS", "0"}}, "COHORT_NUM_THREADS must be an integer >= 1"},
  };
  for (const auto& [vars, expected] : cases) {
    absl::StatusOr<WorkerEnv> env = Read(vars);
    ASSERT_THAT(env, Not(IsOk())) << expected;
    EXPECT_THAT(env.status().message(), HasSubstr(expected));
  }
}

TEST(WorkerEnvTest, HparamsNestedPastTheLimitAreRefusedNamingIt) {
  const std::string deep = "{\"a\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  absl::StatusOr<WorkerEnv> env = Read({{"COHORT_HPARAMS", deep}});
  EXPECT_THAT(
      env, StatusIs(absl::StatusCode::kInvalidArgument,
                    HasSubstr("COHORT_HPARAMS is refused: the JSON nests deeper than 128 levels")));
}

TEST(WorkerEnvTest, SearcherOpsFormatAndParse) {
  EXPECT_EQ(FormatSearcherOps({1, 3, 9}), "1,3,9");
  absl::StatusOr<std::vector<int64_t>> ops = ParseSearcherOps("1,3,9");
  ASSERT_OK(ops);
  EXPECT_EQ(*ops, (std::vector<int64_t>{1, 3, 9}));
  EXPECT_TRUE(ParseSearcherOps("")->empty());
}

}  // namespace
}  // namespace cohort::wire
