#include "agent/stall_watch.h"

#include "gtest/gtest.h"

namespace cohort::agent {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1764380000);

RankState Rank(int rank, double age_seconds, std::string phase, bool stopped = false) {
  RankState r;
  r.beat = {.rank = rank,
            .pid = 100 + rank,
            .batch = 36,
            .phase = std::move(phase),
            .time = static_cast<double>(absl::ToUnixSeconds(kNow)) - age_seconds};
  r.stopped = stopped;
  return r;
}

TEST(StallWatchTest, ASlowStepIsNoStallHoweverLong) {
  StallVerdict v = JudgeProgress({Rank(0, 900, "step"), Rank(1, 900, "after allgather #36")},
                                 kNow, absl::Minutes(10));
  EXPECT_TRUE(v.note.empty()) << v.note;
  EXPECT_FALSE(v.fail);
}

TEST(StallWatchTest, AStoppedRankIsNamedThenTheRunFailsPastTheDeadline) {
  const std::vector<RankState> ranks = {Rank(0, 62, "in allgather #37"),
                                        Rank(1, 63, "after allgather #36", /*stopped=*/true)};
  StallVerdict early = JudgeProgress(ranks, kNow, absl::Minutes(10));
  EXPECT_EQ(early.note,
            "rank 1 has made no progress for 63 s (its process 101 is stopped; last: after "
            "allgather #36, batch 36); rank 0 waits in allgather #37");
  EXPECT_FALSE(early.fail);
  EXPECT_TRUE(JudgeProgress(ranks, kNow + absl::Minutes(9), absl::Minutes(10)).fail);
}

TEST(StallWatchTest, TheRankOutsideTheCollectiveIsTheOneWaitedFor) {
  StallVerdict v = JudgeProgress({Rank(0, 8, "in broadcast #5"), Rank(1, 9, "step")}, kNow,
                                 absl::Seconds(10));
  EXPECT_EQ(v.note.rfind("rank 1 has made no progress for 9 s (last: step, batch 36)", 0), 0u)
      << v.note;
  EXPECT_FALSE(v.fail);
  EXPECT_TRUE(JudgeProgress({Rank(0, 11, "in broadcast #5"), Rank(1, 12, "step")}, kNow,
                            absl::Seconds(10))
                  .fail);
}

TEST(StallWatchTest, RanksThatAllWaitSayTheyWaitForAnotherNode) {
  StallVerdict v = JudgeProgress({Rank(0, 7, "in allgather #22")}, kNow, absl::Seconds(10));
  EXPECT_EQ(v.note, "rank 0 waits in allgather #22 for 7 s (for a rank on another node)");
  EXPECT_FALSE(v.fail);
}

TEST(StallWatchTest, NoBeatsNoVerdict) {
  EXPECT_TRUE(JudgeProgress({}, kNow, absl::Seconds(10)).note.empty());
}

}  // namespace
}  // namespace cohort::agent
