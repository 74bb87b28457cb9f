// Conformance suite: every communicator transport runs the same scenarios in real processes
// (tests/comm/collective_worker.cc): correctness of every collective for sizes 0, 1, odd and
// 64 MiB on 1-4 ranks, and failure semantics (a peer killed or stalled mid-collective).

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
using testing::WorkerResult;

struct Case {
  std::string transport;
  int size;
  int machines;
  std::string expect_transport;  // what "auto" must resolve to
  // COHORT_SHM_CMA_MIN_BYTES for the workers: "" leaves the default (the paths measured at
  // setup, or the cache's), "1" sends every allreduce through single-copy, "0" disables it (the
  // staged path only).
  std::string cma_min_bytes = "";
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.transport << " on " << c.size << " ranks over " << c.machines << " machine(s)";
  if (!c.cma_min_bytes.empty()) *os << ", COHORT_SHM_CMA_MIN_BYTES=" << c.cma_min_bytes;
}

WorkerGroupOptions OptionsFor(const Case& c) {
  WorkerGroupOptions options;
  options.size = c.size;
  options.machines = c.machines;
  if (!c.cma_min_bytes.empty()) options.env["COHORT_SHM_CMA_MIN_BYTES"] = c.cma_min_bytes;
  return options;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string cma;
  if (info.param.cma_min_bytes == "0") cma = "_nocma";
  if (info.param.cma_min_bytes == "1") cma = "_allcma";
  return absl::StrCat(info.param.transport, "_", info.param.size, "ranks_",
                      info.param.machines, "machines", cma);
}

class CollectivesTest : public ::testing::TestWithParam<Case> {};

TEST_P(CollectivesTest, EveryCollectiveIsCorrectForEverySizeAndDtype) {
  const Case& c = GetParam();
  WorkerGroupOptions options = OptionsFor(c);
  WorkerGroup group({BinaryPath("collective_worker"), "--transport", c.transport, "--scenario",
                     "correctness", "--large-bytes", std::to_string(64u << 20)},
                    options);
  auto results = group.Wait(absl::Seconds(240));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
    EXPECT_NE(r.output.find(absl::StrCat("PASS rank ", r.rank, " transport ", c.expect_transport)),
              std::string::npos)
        << Describe(results);
  }
}

TEST_P(CollectivesTest, PeerKilledMidCollectiveFailsSurvivorsWithinTenSecondsNamingIt) {
  const Case& c = GetParam();
  if (c.size < 2) GTEST_SKIP() << "needs a peer";
  const int victim = c.size - 1;
  WorkerGroupOptions options = OptionsFor(c);
  WorkerGroup group({BinaryPath("collective_worker"), "--transport", c.transport, "--scenario",
                     "die", "--victim", std::to_string(victim)},
                    options);
  auto results = group.Wait(absl::Seconds(60));
  double died_at = NumberAfter(results[victim].output, "VICTIM dying at ");
  ASSERT_GT(died_at, 0) << Describe(results);
  EXPECT_EQ(results[victim].signal, SIGKILL) << Describe(results);
  // The victim sleeps 0.3 s after printing, then dies.
  ExpectSurvivorsFailed(results, victim, died_at, 10.3, absl::StrCat("rank ", victim));
}

TEST_P(CollectivesTest, StalledPeerIsReportedAtTheDeadlineNamingIt) {
  const Case& c = GetParam();
  if (c.size < 2) GTEST_SKIP() << "needs a peer";
  const int victim = c.size - 1;
  WorkerGroupOptions options = OptionsFor(c);
  options.env["COHORT_COLLECTIVE_TIMEOUT"] = "3";
  WorkerGroup group({BinaryPath("collective_worker"), "--transport", c.transport, "--scenario",
                     "stall", "--victim", std::to_string(victim)},
                    options);
  auto results = group.Wait(absl::Seconds(40), /*stop_when_others_exit=*/{victim});
  double stalled_at = NumberAfter(results[victim].output, "VICTIM stalling at ");
  ASSERT_GT(stalled_at, 0) << Describe(results);
  ExpectSurvivorsFailed(results, victim, stalled_at, 3 + 10, "DEADLINE_EXCEEDED");
}

// The shared-memory allreduce's path is rank 0's choice alone: ranks whose own environment
// asks for another path (or holds a setting that would be an error) follow it, and every
// collective is still correct; ranks on different paths would hang or sum garbage.
TEST(ShmPathAgreementTest, RanksFollowRankZeroWhateverTheirOwnEnvironmentSays) {
  WorkerGroupOptions options;
  options.size = 3;
  options.rank_env[0] = {{"COHORT_SHM_CMA_MIN_BYTES", "0"}};
  options.rank_env[1] = {{"COHORT_SHM_CMA_MIN_BYTES", "1"}};
  options.rank_env[2] = {{"COHORT_COMM_CALIBRATE", "sometimes"}};
  WorkerGroup group({BinaryPath("collective_worker"), "--transport", "shm", "--scenario",
                     "correctness", "--large-bytes", std::to_string(4u << 20)},
                    options);
  auto results = group.Wait(absl::Seconds(120));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
  }
}

// A setting rank 0 cannot use fails every rank's setup at once, naming it.
TEST(ShmPathAgreementTest, BadSettingOnRankZeroFailsEveryRankNamingIt) {
  WorkerGroupOptions options;
  options.size = 3;
  options.rank_env[0] = {{"COHORT_COMM_CALIBRATE", "sometimes"}};
  WorkerGroup group({BinaryPath("collective_worker"), "--transport", "shm"}, options);
  auto results = group.Wait(absl::Seconds(30));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited && r.exit_code == 2) << Describe(results);
    EXPECT_NE(r.output.find("COHORT_COMM_CALIBRATE=sometimes"), std::string::npos)
        << Describe(results);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shm, CollectivesTest,
    ::testing::Values(Case{"shm", 1, 1, "shm"}, Case{"shm", 2, 1, "shm"}, Case{"shm", 3, 1, "shm"},
                      Case{"shm", 4, 1, "shm"}, Case{"shm", 3, 1, "shm", "1"},
                      Case{"shm", 2, 1, "shm", "0"}, Case{"shm", 4, 1, "shm", "0"}),
    CaseName);
INSTANTIATE_TEST_SUITE_P(
    Gloo, CollectivesTest,
    ::testing::Values(Case{"gloo", 1, 1, "gloo"}, Case{"gloo", 2, 1, "gloo"},
                      Case{"gloo", 3, 1, "gloo"}, Case{"gloo", 4, 1, "gloo"}),
    CaseName);
INSTANTIATE_TEST_SUITE_P(
    Hierarchical, CollectivesTest,
    ::testing::Values(Case{"hierarchical", 2, 2, "hierarchical"},
                      Case{"hierarchical", 4, 2, "hierarchical"}),
    CaseName);
INSTANTIATE_TEST_SUITE_P(
    Auto, CollectivesTest,
    ::testing::Values(Case{"auto", 4, 1, "shm"}, Case{"auto", 2, 2, "gloo"},
                      Case{"auto", 4, 2, "hierarchical"}),
    CaseName);

}  // namespace
}  // namespace cohort
