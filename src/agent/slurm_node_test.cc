#include "agent/slurm_node.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::agent::slurm_node {
namespace {

using ::testing::HasSubstr;

// The environment the tests read (GetEnv is a plain function pointer).
std::map<std::string, std::string>& TestEnv() {
  static auto* env = new std::map<std::string, std::string>;
  return *env;
}
std::optional<std::string> Get(const char* name) {
  const auto it = TestEnv().find(name);
  if (it == TestEnv().end()) return std::nullopt;
  return it->second;
}

void SetJobEnv(int nnodes, int rank) {
  TestEnv() = {{"COHORT_MASTER", "http://m:8080"},
               {"COHORT_ALLOCATION", "7.ab.1"},
               {"COHORT_ALLOCATION_TOKEN", "tok"},
               {"COHORT_SLURM_NNODES", std::to_string(nnodes)},
               {"SLURM_JOB_ID", "42"},
               {"SLURM_NODEID", std::to_string(rank)},
               {"SLURMD_NODENAME", "n2"},
               {"SLURM_CPUS_PER_TASK", "4"},
               {"COHORT_NODE_WORK_DIR", "/scratch"}};
}

TEST(SlurmNodeTest, TheNodeReadsItsJobFromTheEnvironment) {
  SetJobEnv(2, 1);
  TestEnv()["COHORT_CHIEF_ADDR"] = "n1:4000";
  absl::StatusOr<NodeEnv> env = ReadNodeEnv(&Get);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->node_rank, 1);
  EXPECT_EQ(env->nnodes, 2);
  EXPECT_EQ(env->cpus, 4);
  EXPECT_EQ(env->node_name, "n2");
  EXPECT_EQ(env->chief_addr, "n1:4000");
  EXPECT_EQ(env->work_dir, "/scratch/cohort-slurm-42-1");
}

TEST(SlurmNodeTest, AMissingOrOutOfRangeVariableIsNamed) {
  SetJobEnv(2, 1);
  TestEnv().erase("COHORT_ALLOCATION_TOKEN");
  EXPECT_THAT(std::string(ReadNodeEnv(&Get).status().message()),
              HasSubstr("COHORT_ALLOCATION_TOKEN is not set"));
  SetJobEnv(2, 2);
  TestEnv()["COHORT_CHIEF_ADDR"] = "n1:4000";
  EXPECT_THAT(std::string(ReadNodeEnv(&Get).status().message()),
              HasSubstr("SLURM_NODEID must be a whole number in [0, 1], got '2'"));
  SetJobEnv(2, 0);
  EXPECT_THAT(std::string(ReadNodeEnv(&Get).status().message()),
              HasSubstr("COHORT_CHIEF_ADDR is not set"));
  SetJobEnv(1, 0);
  TestEnv()["COHORT_ALLOCATION"] = "../../etc";
  EXPECT_THAT(std::string(ReadNodeEnv(&Get).status().message()),
              HasSubstr("cannot name a directory"));
}

TEST(SlurmNodeTest, TheJobStepStartsOneNodeProcessPerNodeWithAChiefPort) {
  SetJobEnv(3, 0);
  TestEnv()["COHORT_CHIEF_HOST"] = "n1";
  absl::StatusOr<JobStep> step = PlanJobStep("/opt/cohort/bin/cohort-slurm-node", &Get);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_THAT(step->argv,
              ::testing::ElementsAre("srun", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1",
                                     "--kill-on-bad-exit=0", "--export=ALL", "--cpus-per-task=4",
                                     "/opt/cohort/bin/cohort-slurm-node", "node"));
  ASSERT_THAT(step->chief_addr, HasSubstr("n1:"));
  const int port = std::stoi(step->chief_addr.substr(3));
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  SetJobEnv(1, 0);  // one node: no rendezvous port (the launcher binds its own)
  step = PlanJobStep("/x/cohort-slurm-node", &Get);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(step->chief_addr, "");
}

}  // namespace
}  // namespace cohort::agent::slurm_node
