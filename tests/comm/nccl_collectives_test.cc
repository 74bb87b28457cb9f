// The conformance suite against the NCCL transport (COHORT_CUDA builds): the scenarios of
// collectives_test.cc, run by nccl_collective_worker (collective_worker.cc staging its buffers
// through device memory) with one rank per GPU this machine shows, each rank on its own device.
// Where no GPU is visible the GPU cases skip, saying so, and one case checks that a worker
// asking for the nccl transport fails its set-up with an error naming CUDA instead of hanging.

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/comm/survivor_expectations.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

using testing::BinaryPath;
using testing::Describe;
using testing::ExpectSurvivorsFailed;
using testing::NumberAfter;
using testing::WorkerGroup;
using testing::WorkerGroupOptions;

// The CUDA devices this process sees (0 without a GPU or driver), and why there are none.
int CountGpus(std::string* why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *why = absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(error), " (",
                        cudaGetErrorString(error), ")");
    return 0;
  }
  if (count == 0) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

// The number of ranks for the GPU cases (one per GPU), or 0 after GTEST_SKIP's message.
#define REQUIRE_GPUS(min_gpus)                                                              \
  std::string why_no_gpu;                                                                   \
  const int gpus = CountGpus(&why_no_gpu);                                                  \
  if (gpus < (min_gpus)) {                                                                  \
    GTEST_SKIP() << "needs " << (min_gpus) << " CUDA device(s), this machine shows " << gpus \
                 << (why_no_gpu.empty() ? "" : ": ") << why_no_gpu;                         \
  }

std::vector<std::string> Worker(const std::string& transport, const std::string& scenario) {
  return {BinaryPath("nccl_collective_worker"), "--transport", transport, "--scenario", scenario,
          "--large-bytes", std::to_string(64u << 20)};
}

TEST(NcclCollectivesTest, EveryCollectiveIsCorrectWithOneRankPerGpu) {
  REQUIRE_GPUS(1);
  WorkerGroupOptions options;
  options.size = gpus;
  WorkerGroup group(Worker("nccl", "correctness"), options);
  auto results = group.Wait(absl::Seconds(240));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
    EXPECT_NE(r.output.find(absl::StrCat("PASS rank ", r.rank, " transport nccl")),
              std::string::npos)
        << Describe(results);
  }
}

TEST(NcclCollectivesTest, AutoWithDeviceBuffersChoosesNccl) {
  REQUIRE_GPUS(1);
  WorkerGroupOptions options;
  options.size = gpus;
  options.env["COHORT_TRANSPORT"] = "shm";  // device buffers win over the environment
  std::vector<std::string> argv = Worker("auto", "correctness");
  argv.insert(argv.end(), {"--device", "auto"});  // and the factory picks each rank's GPU
  WorkerGroup group(argv, options);
  auto results = group.Wait(absl::Seconds(240));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
    EXPECT_NE(r.output.find("transport nccl"), std::string::npos) << Describe(results);
  }
}

TEST(NcclCollectivesTest, PeerKilledMidCollectiveFailsSurvivorsWithinTenSecondsNamingIt) {
  REQUIRE_GPUS(2);
  const int victim = gpus - 1;
  WorkerGroupOptions options;
  options.size = gpus;
  WorkerGroup group({BinaryPath("nccl_collective_worker"), "--transport", "nccl", "--scenario",
                     "die", "--victim", std::to_string(victim)},
                    options);
  auto results = group.Wait(absl::Seconds(60));
  double died_at = NumberAfter(results[victim].output, "VICTIM dying at ");
  ASSERT_GT(died_at, 0) << Describe(results);
  // The victim sleeps 0.3 s after printing, then dies.
  ExpectSurvivorsFailed(results, victim, died_at, 10.3, absl::StrCat("rank ", victim));
}

TEST(NcclCollectivesTest, StalledPeerIsReportedAtTheDeadlineNamingIt) {
  REQUIRE_GPUS(2);
  const int victim = gpus - 1;
  WorkerGroupOptions options;
  options.size = gpus;
  options.env["COHORT_COLLECTIVE_TIMEOUT"] = "3";
  WorkerGroup group({BinaryPath("nccl_collective_worker"), "--transport", "nccl", "--scenario",
                     "stall", "--victim", std::to_string(victim)},
                    options);
  auto results = group.Wait(absl::Seconds(40), /*stop_when_others_exit=*/{victim});
  double stalled_at = NumberAfter(results[victim].output, "VICTIM stalling at ");
  ASSERT_GT(stalled_at, 0) << Describe(results);
  ExpectSurvivorsFailed(results, victim, stalled_at, 3 + 10, "DEADLINE_EXCEEDED");
}

// Without a GPU the worker must say so at set-up (exit 2) rather than hang or crash.
TEST(NcclCollectivesTest, WithoutAGpuTheWorkerFailsItsSetUpNamingCuda) {
  std::string why;
  if (CountGpus(&why) > 0) GTEST_SKIP() << "this machine has a GPU";
  WorkerGroupOptions options;
  options.size = 2;
  WorkerGroup group(Worker("nccl", "correctness"), options);
  auto results = group.Wait(absl::Seconds(60));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited) << Describe(results);
    EXPECT_EQ(r.exit_code, 2) << Describe(results);
    EXPECT_NE(r.output.find("SETUP-ERROR: no CUDA device: cudaGetDeviceCount"),
              std::string::npos)
        << Describe(results);
  }
}

// The communicator's own check: asked for device buffers where CUDA finds no device, the
// factory's set-up fails naming the CUDA call, on every rank.
TEST(NcclCollectivesTest, WithoutAGpuTheCommunicatorSetUpFailsNamingCuda) {
  std::string why;
  if (CountGpus(&why) > 0) GTEST_SKIP() << "this machine has a GPU";
  WorkerGroupOptions options;
  options.size = 2;
  std::vector<std::string> argv = Worker("auto", "correctness");
  argv.insert(argv.end(), {"--device", "auto"});
  WorkerGroup group(argv, options);
  auto results = group.Wait(absl::Seconds(60));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited) << Describe(results);
    EXPECT_EQ(r.exit_code, 2) << Describe(results);
    EXPECT_NE(r.output.find("SETUP-ERROR: "), std::string::npos) << Describe(results);
    EXPECT_NE(r.output.find("cudaGetDeviceCount failed"), std::string::npos) << Describe(results);
  }
}

}  // namespace
}  // namespace cohort
