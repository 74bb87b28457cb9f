// The log lines of the searcher's operations: the texts the master and the local runner print.

#include "master/searcher/operation.h"

#include "gtest/gtest.h"

namespace cohort::master::searcher {
namespace {

Standing At200(double metric, bool among_best, int64_t keep, int64_t reached) {
  return {.length = 200,
          .unit = "batches",
          .rung = 1,
          .rungs = 2,
          .metric = metric,
          .among_best = among_best,
          .keep = keep,
          .reached = reached};
}

TEST(OperationTest, ContinueAndStopLinesStateTheStandingAndTheVerdict) {
  EXPECT_EQ(LogLine(Continue{.trial = 0, .standing = At200(2400, true, 1, 1)}),
            "adaptive_asha rung 1 of 2 (200 batches): searcher metric 2400 is among the best 1 "
            "of 1 trials of its bracket there; it goes on");
  EXPECT_EQ(LogLine(Stop{.trial = 1, .standing = At200(0.25, false, 1, 2), .final = true}),
            "adaptive_asha rung 1 of 2 (200 batches): searcher metric 0.25 is not among the best "
            "1 of 2 trials of its bracket there; the trial stops");
  EXPECT_EQ(LogLine(Stop{.trial = 1, .standing = At200(std::nan(""), false, 1, 2)}),
            "adaptive_asha rung 1 of 2 (200 batches): searcher metric missing is not among the "
            "best 1 of 2 trials of its bracket there; the trial stops (it resumes if later "
            "trials promote it)");
}

TEST(OperationTest, PromoteCompleteAndStoppedEarlyLines) {
  EXPECT_EQ(LogLine(Promote{.trial = 1, .standing = At200(4200, true, 2, 3)}),
            "adaptive_asha promotes the trial at 200 batches: it is now among the best 2 of 3 "
            "trials of its bracket there; it resumes from its checkpoint");
  EXPECT_EQ(LogLine(Complete{.trial = 2}),
            "adaptive_asha promoted no further trial; the trial is COMPLETED");
  EXPECT_EQ(LogLine(Create{.trial = 3}), "");
  EXPECT_EQ(LogLine(RecordMetric{.trial = 3, .length = 200, .metric = 1}), "");
  EXPECT_EQ(StoppedEarlyLine(150, wire::TrialState::kStopped),
            "stopped early by adaptive_asha after 150 batches; it is STOPPED");
}

TEST(OperationTest, TrialOfNamesTheTrialOfEveryKind) {
  EXPECT_EQ(TrialOf(Create{.trial = 3}), 3);
  EXPECT_EQ(TrialOf(RecordMetric{.trial = 8}), 8);
  EXPECT_EQ(TrialOf(Continue{.trial = 4}), 4);
  EXPECT_EQ(TrialOf(Stop{.trial = 5}), 5);
  EXPECT_EQ(TrialOf(Promote{.trial = 6}), 6);
  EXPECT_EQ(TrialOf(Complete{.trial = 7}), 7);
}

}  // namespace
}  // namespace cohort::master::searcher
