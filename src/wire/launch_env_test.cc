#include "wire/launch_env.h"

#include <map>

#include "absl/strings/str_cat.h"
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

EnvLookup LookupIn(const Vars& vars) {
  return [&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : it->second;
  };
}

absl::StatusOr<LaunchEnv> Read(const Vars& vars) { return LaunchEnv::FromEnv(LookupIn(vars)); }

// A consistent rank set: rank 5 of 8, local 1 of 4, machine 1 of 2.
Vars Ranks() {
  return {{"COHORT_RANK", "5"},       {"COHORT_SIZE", "8"},       {"COHORT_LOCAL_RANK", "1"},
          {"COHORT_LOCAL_SIZE", "4"}, {"COHORT_CROSS_RANK", "1"}, {"COHORT_CROSS_SIZE", "2"}};
}

TEST(LaunchEnvTest, EveryFieldRoundTripsThroughTheEnvironment) {
  LaunchEnv env;
  env.ranks = WorkerRanks{
      .rank = 5, .size = 8, .local_rank = 1, .local_size = 4, .cross_rank = 1, .cross_size = 2};
  env.chief_addr = "10.1.2.3";
  env.rendezvous_port = 29400;
  env.network_interface = "eth1";
  env.launcher = true;
  env.host_store = true;
  env.collective_timeout = absl::Milliseconds(2500);
  env.rendezvous_timeout = absl::Seconds(90);
  env.cuda_visible_devices = "3";
  env.gpu_slot = true;
  const Vars vars = env.ToEnv();
  EXPECT_EQ(vars.at("COHORT_RANK"), "5");
  EXPECT_EQ(vars.at("COHORT_CROSS_SIZE"), "2");
  EXPECT_EQ(vars.at("COHORT_LAUNCHER"), "1");
  EXPECT_EQ(vars.at("COHORT_COLLECTIVE_TIMEOUT"), "2.5");
  absl::StatusOr<LaunchEnv> back = Read(vars);
  ASSERT_OK(back);
  ASSERT_TRUE(back->ranks.has_value());
  EXPECT_EQ(back->ranks->rank, 5);
  EXPECT_EQ(back->ranks->size, 8);
  EXPECT_EQ(back->ranks->local_rank, 1);
  EXPECT_EQ(back->ranks->local_size, 4);
  EXPECT_EQ(back->ranks->cross_rank, 1);
  EXPECT_EQ(back->ranks->cross_size, 2);
  EXPECT_EQ(back->chief_addr, env.chief_addr);
  EXPECT_EQ(back->rendezvous_port, env.rendezvous_port);
  EXPECT_EQ(back->network_interface, env.network_interface);
  EXPECT_TRUE(back->launcher);
  EXPECT_TRUE(back->host_store);
  EXPECT_EQ(back->collective_timeout, env.collective_timeout);
  EXPECT_EQ(back->rendezvous_timeout, env.rendezvous_timeout);
  EXPECT_EQ(vars.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(back->cuda_visible_devices, "3");
  EXPECT_EQ(vars.at("COHORT_GPU_SLOT"), "1");
  EXPECT_TRUE(back->gpu_slot);
}

TEST(GpuListTest, FormatsAndParsesCommaSeparatedIds) {
  EXPECT_EQ(FormatGpuList({0, 2, 7}), "0,2,7");
  EXPECT_EQ(FormatGpuList({}), "");
  absl::StatusOr<std::vector<int>> gpus = ParseGpuList("--gpus", "0,2,7");
  ASSERT_OK(gpus);
  EXPECT_EQ(*gpus, (std::vector<int>{0, 2, 7}));
  gpus = ParseGpuList("--gpus", "");
  ASSERT_OK(gpus);
  EXPECT_TRUE(gpus->empty());
}

TEST(GpuListTest, RefusesDuplicatesNegativesAndGarbageNamingTheFlag) {
  for (const char* text : {"0,0", "-1", "a", "0,,1", "1,", "4096"}) {
    absl::StatusOr<std::vector<int>> gpus = ParseGpuList("--gpus", text);
    ASSERT_THAT(gpus, StatusIs(absl::StatusCode::kInvalidArgument)) << text;
    EXPECT_THAT(gpus.status().message(), HasSubstr(absl::StrCat("--gpus must be distinct GPU ids")))
        << text;
    EXPECT_THAT(gpus.status().message(), HasSubstr(absl::StrCat("'", text, "'")));
  }
}

TEST(LaunchEnvTest, UnsetFieldsAreLeftOutSoTheStartersValuesPassThrough) {
  EXPECT_TRUE(LaunchEnv().ToEnv().empty());
}

TEST(LaunchEnvTest, NothingSetReadsAsNoLauncher) {
  absl::StatusOr<LaunchEnv> env = Read({{"COHORT_RANK", ""}, {"COHORT_LAUNCHER", ""}});
  ASSERT_OK(env);
  EXPECT_FALSE(env->ranks.has_value());
  EXPECT_TRUE(env->chief_addr.empty());
  EXPECT_FALSE(env->rendezvous_port.has_value());
  EXPECT_FALSE(env->launcher);
  EXPECT_FALSE(env->host_store);
  EXPECT_FALSE(env->collective_timeout.has_value());
  EXPECT_FALSE(env->rendezvous_timeout.has_value());
}

TEST(LaunchEnvTest, DerivesLocalAndCrossRanksWhenOnlyRankAndSizeAreSet) {
  absl::StatusOr<LaunchEnv> env = Read({{"COHORT_RANK", "2"}, {"COHORT_SIZE", "3"}});
  ASSERT_OK(env);
  ASSERT_TRUE(env->ranks.has_value());
  EXPECT_EQ(env->ranks->local_size, 3);
  EXPECT_EQ(env->ranks->local_rank, 2);
  EXPECT_EQ(env->ranks->cross_rank, 0);
  EXPECT_EQ(env->ranks->cross_size, 1);
}

// Ranks() with `name` set to `value`.
Vars RanksWith(const char* name, const char* value) {
  Vars vars = Ranks();
  vars[name] = value;
  return vars;
}

TEST(LaunchEnvTest, NamesEachMalformedVariable) {
  const std::vector<std::pair<Vars, std::string>> cases = {
      {RanksWith("COHORT_RANK", "x"), "COHORT_RANK must be an integer in [0, 16777216], got 'x'"},
      {RanksWith("COHORT_SIZE", "-1"), "COHORT_SIZE must be an integer"},
      {RanksWith("COHORT_LOCAL_RANK", "1.5"), "COHORT_LOCAL_RANK must be an integer"},
      {RanksWith("COHORT_LOCAL_SIZE", "four"), "COHORT_LOCAL_SIZE must be an integer"},
      {RanksWith("COHORT_CROSS_RANK", "1x"), "COHORT_CROSS_RANK must be an integer"},
      {RanksWith("COHORT_CROSS_SIZE", "99999999"), "COHORT_CROSS_SIZE must be an integer"},
      {{{"COHORT_RENDEZVOUS_PORT", "70000"}},
       "COHORT_RENDEZVOUS_PORT must be an integer in [0, 65535], got '70000'"},
      {{{"COHORT_LAUNCHER", "yes"}}, "COHORT_LAUNCHER must be 0 or 1, got 'yes'"},
      {{{"COHORT_HOST_STORE", "2"}}, "COHORT_HOST_STORE must be 0 or 1, got '2'"},
      {{{"COHORT_COLLECTIVE_TIMEOUT", "0"}},
       "COHORT_COLLECTIVE_TIMEOUT must be a positive number of seconds, got '0'"},
      {{{"COHORT_RENDEZVOUS_TIMEOUT", "soon"}},
       "COHORT_RENDEZVOUS_TIMEOUT must be a positive number of seconds, got 'soon'"},
  };
  for (const auto& [vars, message] : cases) {
    absl::StatusOr<LaunchEnv> env = Read(vars);
    ASSERT_THAT(env, Not(IsOk())) << message;
    EXPECT_TRUE(absl::IsInvalidArgument(env.status())) << env.status();
    EXPECT_THAT(std::string(env.status().message()), HasSubstr(message));
  }
}

TEST(LaunchEnvTest, NamesTheVariablesOfInconsistentRanks) {
  const std::vector<std::pair<Vars, std::string>> cases = {
      {{{"COHORT_RANK", "4"}, {"COHORT_SIZE", "4"}}, "COHORT_RANK=4 is not below COHORT_SIZE=4"},
      {{{"COHORT_RANK", "0"}}, "COHORT_RANK and COHORT_SIZE must both be set"},
      {{{"COHORT_RANK", "0"}, {"COHORT_SIZE", "0"}}, "COHORT_SIZE must be >= 1, got 0"},
      {RanksWith("COHORT_LOCAL_SIZE", "9"), "COHORT_LOCAL_SIZE=9 must be in [1, COHORT_SIZE=8]"},
      {RanksWith("COHORT_LOCAL_RANK", "4"), "COHORT_LOCAL_RANK=4 is not below COHORT_LOCAL_SIZE=4"},
      {RanksWith("COHORT_CROSS_RANK", "2"), "COHORT_CROSS_RANK=2 is not below COHORT_CROSS_SIZE=2"},
  };
  for (const auto& [vars, message] : cases) {
    absl::StatusOr<LaunchEnv> env = Read(vars);
    ASSERT_THAT(env, Not(IsOk())) << message;
    EXPECT_THAT(std::string(env.status().message()), HasSubstr(message));
  }
}

TEST(ReadRanksTest, ReadsAForeignLaunchersNamesAndTheLeadingIntegerOfLocalSize) {
  constexpr RankVariables kSlurm{"slurm",
                                 "SLURM_PROCID",
                                 "SLURM_NTASKS",
                                 "SLURM_LOCALID",
                                 "SLURM_NTASKS_PER_NODE",
                                 nullptr,
                                 nullptr,
                                 /*local_size_leading_integer=*/true};
  const Vars vars = {{"SLURM_PROCID", "4"},
                     {"SLURM_NTASKS", "6"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NTASKS_PER_NODE", "3(x2)"}};
  absl::StatusOr<std::optional<WorkerRanks>> ranks = ReadRanks(kSlurm, LookupIn(vars));
  ASSERT_OK(ranks);
  ASSERT_TRUE(ranks->has_value());
  EXPECT_EQ((*ranks)->local_size, 3);
  EXPECT_EQ((*ranks)->cross_rank, 1);
  EXPECT_EQ((*ranks)->cross_size, 2);

  const Vars no_size = {{"SLURM_PROCID", "4"}};
  absl::StatusOr<std::optional<WorkerRanks>> bad = ReadRanks(kSlurm, LookupIn(no_size));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("SLURM_PROCID and SLURM_NTASKS must both be set (slurm launcher"));
}

}  // namespace
}  // namespace cohort::wire
