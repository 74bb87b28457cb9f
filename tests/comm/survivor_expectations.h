#pragma once
// ExpectSurvivorsFailed: what the collectives' failure tests (collectives_test, and
// nccl_collectives_test on GPUs) expect of every rank but the one a scenario kills or stalls.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {

// Every rank but `victim` exited with status 3 (the worker's "failed as expected"), printed
// "FAILED-AS-EXPECTED at T" with T - `since` < `within_seconds`, and said `expected` (the
// victim's name, or the error code).
inline void ExpectSurvivorsFailed(const std::vector<WorkerResult>& results, int victim,
                                  double since, double within_seconds,
                                  const std::string& expected) {
  for (const WorkerResult& r : results) {
    if (r.rank == victim) continue;
    ASSERT_TRUE(r.exited) << "rank " << r.rank << " hung\n" << Describe(results);
    EXPECT_EQ(r.exit_code, 3) << Describe(results);
    const double failed_at = NumberAfter(r.output, "FAILED-AS-EXPECTED at ");
    ASSERT_GT(failed_at, 0) << Describe(results);
    EXPECT_LT(failed_at - since, within_seconds) << Describe(results);
    EXPECT_NE(r.output.find(expected), std::string::npos) << Describe(results);
  }
}

}  // namespace cohort::testing
