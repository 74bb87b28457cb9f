#include "cohort/comm/topology.h"

#include <cstdlib>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm {
namespace {

// Clears every launcher variable the topology reads, so each test starts from nothing.
void ClearEnv() {
  for (const char* name :
       {"COHORT_RANK", "COHORT_SIZE", "COHORT_LOCAL_RANK", "COHORT_LOCAL_SIZE",
        "COHORT_CROSS_RANK", "COHORT_CROSS_SIZE", "COHORT_CHIEF_ADDR", "COHORT_RENDEZVOUS_PORT",
        "COHORT_HOST_STORE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
        "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
        "SLURM_NODEID", "SLURM_NNODES", "COHORT_COLLECTIVE_TIMEOUT"}) {
    unsetenv(name);
  }
}

TEST(TopologyTest, NoLauncherMeansOneWorker) {
  ClearEnv();
  auto t = TopologyFromEnv();
  ASSERT_OK(t);
  EXPECT_EQ(t->size, 1);
  EXPECT_EQ(t->rank, 0);
  EXPECT_EQ(t->source, "none");
}

TEST(TopologyTest, ReadsCohortLaunchVariables) {
  ClearEnv();
  setenv("COHORT_RANK", "5", 1);
  setenv("COHORT_SIZE", "8", 1);
  setenv("COHORT_LOCAL_RANK", "1", 1);
  setenv("COHORT_LOCAL_SIZE", "4", 1);
  setenv("COHORT_CROSS_RANK", "1", 1);
  setenv("COHORT_CROSS_SIZE", "2", 1);
  setenv("COHORT_CHIEF_ADDR", "10.1.2.3", 1);
  setenv("COHORT_RENDEZVOUS_PORT", "29400", 1);
  auto t = TopologyFromEnv();
  ASSERT_OK(t);
  EXPECT_EQ(t->rank, 5);
  EXPECT_EQ(t->local_rank, 1);
  EXPECT_EQ(t->cross_rank, 1);
  EXPECT_EQ(t->cross_size, 2);
  EXPECT_EQ(t->chief_addr, "10.1.2.3");
  EXPECT_EQ(t->rendezvous_port, 29400);
  EXPECT_FALSE(t->host_store);
}

TEST(TopologyTest, ReadsTorchrunVariablesAndHostsStoreOnRankZero) {
  ClearEnv();
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("GROUP_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  auto t = TopologyFromEnv();
  ASSERT_OK(t);
  EXPECT_EQ(t->source, "torchrun");
  EXPECT_EQ(t->cross_size, 2);
  EXPECT_EQ(t->rendezvous_port, 29501);
  EXPECT_TRUE(t->host_store);
}

TEST(TopologyTest, ReadsOpenMpiAndSlurmVariables) {
  ClearEnv();
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  setenv("MASTER_ADDR", "node0", 1);
  setenv("COHORT_RENDEZVOUS_PORT", "1234", 1);
  auto mpi = TopologyFromEnv();
  ASSERT_OK(mpi);
  EXPECT_EQ(mpi->source, "openmpi");
  EXPECT_EQ(mpi->cross_rank, 1);
  EXPECT_EQ(mpi->cross_size, 2);

  ClearEnv();
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "6", 1);
  setenv("SLURM_LOCALID", "2", 1);
  setenv("SLURM_NTASKS_PER_NODE", "3(x2)", 1);
  setenv("SLURM_NODEID", "0", 1);
  setenv("SLURM_NNODES", "2", 1);
  setenv("MASTER_ADDR", "node0", 1);
  setenv("MASTER_PORT", "5000", 1);
  auto slurm = TopologyFromEnv();
  ASSERT_OK(slurm);
  EXPECT_EQ(slurm->source, "slurm");
  EXPECT_EQ(slurm->local_size, 3);
  EXPECT_EQ(slurm->cross_size, 2);
  EXPECT_EQ(slurm->rendezvous_port, 5001);
}

TEST(TopologyTest, RejectsInconsistentValuesNamingTheVariables) {
  ClearEnv();
  setenv("COHORT_RANK", "4", 1);
  setenv("COHORT_SIZE", "4", 1);
  setenv("COHORT_RENDEZVOUS_PORT", "1", 1);
  auto t = TopologyFromEnv();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("COHORT_RANK=4 is not below COHORT_SIZE=4"),
            absl::string_view::npos)
      << t.status();

  ClearEnv();
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  auto no_port = TopologyFromEnv();
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.status().message().find("COHORT_RENDEZVOUS_PORT"), absl::string_view::npos);

  ClearEnv();
  setenv("COHORT_RANK", "x", 1);
  setenv("COHORT_SIZE", "2", 1);
  auto malformed = TopologyFromEnv();
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("COHORT_RANK"), absl::string_view::npos);
}

}  // namespace
}  // namespace cohort::comm
