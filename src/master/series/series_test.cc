#include "master/series/series.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::series {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// --- FollowGate ---------------------------------------------------------------------------

// Whether a follow waits at `gate` within 10 s.
bool WaitUntilFollowing(const FollowGate& gate) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (gate.waiting() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  return gate.waiting() > 0;
}

TEST(FollowGateTest, AFollowWaitsForNewsAndPollsAgain) {
  FollowGate gate(4);
  std::atomic<bool> stored{false};
  std::atomic<int> polls{0};
  absl::Notification waiting;
  absl::Status followed;
  std::thread follower([&] {
    followed = gate.FollowUntil(absl::Seconds(60), [&](bool last) -> absl::StatusOr<bool> {
      if (++polls == 1) {  // finds nothing, then waits for news
        waiting.Notify();
        return false;
      }
      return stored.load() || last;
    });
  });
  ASSERT_TRUE(waiting.WaitForNotificationWithTimeout(absl::Seconds(10)));
  stored = true;
  gate.Notify();
  follower.join();
  EXPECT_TRUE(followed.ok()) << followed;
  EXPECT_GE(polls.load(), 2);
  EXPECT_EQ(gate.waiting(), 0);
}

TEST(FollowGateTest, NewsThatArrivesWhileAPollRunsIsNotMissed) {
  FollowGate gate(4);
  int polls = 0;
  // The first poll finds nothing, and news arrives before it returns: the follow must poll again
  // at once rather than wait out its 60 s.
  absl::Status followed = gate.FollowUntil(absl::Seconds(60), [&](bool) -> absl::StatusOr<bool> {
    if (++polls == 1) {
      gate.Notify();
      return false;
    }
    return true;
  });
  EXPECT_TRUE(followed.ok()) << followed;
  EXPECT_EQ(polls, 2);
}

TEST(FollowGateTest, PastMaxFollowersAFollowIsAnsweredAtOnce) {
  FollowGate gate(1);
  absl::Notification first_waits;
  std::atomic<bool> release{false};
  std::thread first([&] {
    EXPECT_TRUE(gate.FollowUntil(absl::Seconds(60), [&](bool last) -> absl::StatusOr<bool> {
                      if (!first_waits.HasBeenNotified()) first_waits.Notify();
                      return release.load() || last;
                    })
                    .ok());
  });
  ASSERT_TRUE(first_waits.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(gate.waiting(), 1);
  std::vector<bool> lasts;
  ASSERT_TRUE(gate.FollowUntil(absl::Seconds(60), [&](bool last) -> absl::StatusOr<bool> {
                    lasts.push_back(last);
                    return last;
                  })
                  .ok());
  EXPECT_THAT(lasts, ElementsAre(true)) << "the second follow polls once, as its last";
  release = true;
  gate.Notify();
  first.join();
}

TEST(FollowGateTest, ShutdownAnswersWaitingAndLaterFollowsUnavailable) {
  FollowGate gate(4);
  absl::Notification waiting;
  absl::Status followed;
  std::thread follower([&] {
    followed = gate.FollowUntil(absl::Seconds(60), [&](bool last) -> absl::StatusOr<bool> {
      if (!waiting.HasBeenNotified()) waiting.Notify();
      return last;
    });
  });
  ASSERT_TRUE(waiting.WaitForNotificationWithTimeout(absl::Seconds(10)));
  gate.Shutdown();
  follower.join();
  EXPECT_EQ(followed.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(followed.message(), HasSubstr("shutting down"));
  absl::Status later =
      gate.FollowUntil(absl::Seconds(5), [](bool last) -> absl::StatusOr<bool> { return false; });
  EXPECT_EQ(later.code(), absl::StatusCode::kUnavailable);
  // A plain read (no wait) still answers.
  EXPECT_TRUE(gate.FollowUntil(absl::ZeroDuration(), [](bool last) -> absl::StatusOr<bool> {
                    return true;
                  }).ok());
}

TEST(FollowGateTest, APollsErrorEndsTheFollow) {
  FollowGate gate(4);
  absl::Status followed = gate.FollowUntil(absl::Seconds(60), [](bool) -> absl::StatusOr<bool> {
    return absl::NotFoundError("trial 9 not found");
  });
  EXPECT_EQ(followed.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(gate.waiting(), 0);
}

// --- the pure rules -----------------------------------------------------------------------

config::Profiling Window(int64_t begin, std::optional<int64_t> end) {
  config::Profiling window;
  window.enabled = true;
  window.begin_on_batch = begin;
  window.end_after_batch = end;
  return window;
}

TEST(SeriesRulesTest, SystemPointsOnlyInsideTheWindowLabelledByAgentAndGpu) {
  wire::SystemMetricsRecord r;
  r.time = 1700000000;
  r.agent = "node-a";
  r.metrics = {{"cpu_util", 55.0}};
  r.gpus = {{"GPU-1", 90.0, 1e9}};
  EXPECT_TRUE(SystemPoints(Window(10, 20), 9, {r}).empty());
  EXPECT_TRUE(SystemPoints(Window(10, 20), 21, {r}).empty());
  EXPECT_TRUE(SystemPoints(config::Profiling{}, 15, {r}).empty()) << "profiling off";
  std::vector<PointRow> points = SystemPoints(Window(10, std::nullopt), 15, {r});
  ASSERT_THAT(points, SizeIs(3));
  EXPECT_EQ(points[0].name, "cpu_util");
  EXPECT_EQ(points[0].label, "node-a");
  EXPECT_EQ(points[0].batch, 15);
  EXPECT_EQ(points[1].name, "gpu_util");
  EXPECT_EQ(points[1].label, "node-a/GPU-1");
  EXPECT_DOUBLE_EQ(points[2].value, 1e9);
}

wire::StepProfileRecord Step(int rank, int64_t batch, int64_t forward_us, int64_t comm_us) {
  wire::StepProfileRecord r;
  r.rank = rank;
  r.batch = batch;
  r.phases = {{"forward", 0, forward_us}};
  r.buckets = {{0, 1024, 0, comm_us}};
  return r;
}

TEST(SeriesRulesTest, StepProfilesKeepTheTrialsRanksInsideTheWindowUpToTheLimit) {
  const std::vector<wire::StepProfileRecord> records = {
      Step(0, 5, 100, 10), Step(1, 5, 300, 30), Step(7, 5, 1, 1) /* no such rank */,
      Step(0, 50, 1, 1) /* outside the window */};
  StepProfiles kept = SelectStepProfiles(Window(1, 10), /*slots=*/2, /*stored=*/0, records);
  EXPECT_THAT(kept.rows, SizeIs(2));
  EXPECT_EQ(kept.dropped, 0);
  // forward and gradient_communication for each of the two ranks.
  ASSERT_THAT(kept.timings, SizeIs(4));
  EXPECT_EQ(kept.timings[0].rank, 0);
  EXPECT_EQ(kept.timings[0].phase, "forward");
  EXPECT_EQ(kept.timings[0].total_us, 100);
  EXPECT_EQ(kept.timings[1].phase, wire::kGradientCommunicationPhase);
  EXPECT_EQ(kept.timings[1].total_us, 10);

  // At the limit, records still count in the timings but are not kept.
  StepProfiles full =
      SelectStepProfiles(Window(1, 10), 2, kMaxStepProfilesPerTrial - 1, records);
  EXPECT_THAT(full.rows, SizeIs(1));
  EXPECT_EQ(full.dropped, 1);
  EXPECT_THAT(full.timings, SizeIs(4));
}

// --- Series against a real database --------------------------------------------------------

class SeriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(":memory:");
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    absl::StatusOr<int64_t> experiment = db_->InsertExperiment(MakeExperiment("e"));
    ASSERT_TRUE(experiment.ok()) << experiment.status();
    experiment_ = *experiment;
    absl::StatusOr<int64_t> trial = db_->InsertTrial(MakeTrial(experiment_));
    ASSERT_TRUE(trial.ok()) << trial.status();
    trial_ = *trial;
    series_ = std::make_unique<Series>(*db_, gate_);
  }
  std::unique_ptr<SqliteDatabase> db_;
  FollowGate gate_{4};
  std::unique_ptr<Series> series_;
  int64_t experiment_ = 0, trial_ = 0;
};

TEST_F(SeriesTest, ListsReadsAndRangesATrialsSeries) {
  ASSERT_TRUE(db_->InsertPoints(trial_, {{"training/loss", "", 1, 10.0, 2.0},
                                         {"training/loss", "", 2, 11.0, 1.5},
                                         {"training/loss", "", 3, 12.0, 1.0}})
                  .ok());
  absl::StatusOr<wire::SeriesList> list = series_->TrialSeries(trial_);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_THAT(list->series, SizeIs(1));
  EXPECT_EQ(list->series[0].name, "training/loss");
  EXPECT_EQ(list->series[0].points, 3);

  SeriesRequest request;
  request.names = {"training/loss"};
  request.min_batch = 2;
  absl::StatusOr<wire::SeriesData> data = series_->TrialSeriesData(trial_, request, {});
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_THAT(data->series, SizeIs(1));
  ASSERT_THAT(data->series[0].points, SizeIs(2));
  EXPECT_DOUBLE_EQ(data->series[0].points[0].value, 1.5);

  absl::StatusOr<wire::ExperimentSeriesData> curves = series_->ExperimentSeries(experiment_, request);
  ASSERT_TRUE(curves.ok()) << curves.status();
  ASSERT_THAT(curves->trials, SizeIs(1));
  EXPECT_EQ(curves->trials[0].trial_id, trial_);
}

// A trial stored before the free-memory series was renamed (memory_free, now free_memory) is
// read under its old name when free_memory is asked for; a trial since, under the new one.
TEST_F(SeriesTest, TheRenamedFreeMemorySeriesIsReadUnderItsOldNameForOlderTrials) {
  ASSERT_TRUE(db_->InsertPoints(trial_, {{"memory_free", "node-1", 1, 10.0, 4e9}}).ok());
  SeriesRequest request;
  request.names = {"free_memory"};
  request.label = "node-1";
  absl::StatusOr<wire::SeriesData> old = series_->TrialSeriesData(trial_, request, {});
  ASSERT_TRUE(old.ok()) << old.status();
  ASSERT_THAT(old->series, SizeIs(1));
  ASSERT_THAT(old->series[0].points, SizeIs(1));
  EXPECT_DOUBLE_EQ(old->series[0].points[0].value, 4e9);
  ASSERT_TRUE(db_->InsertPoints(trial_, {{"free_memory", "node-1", 2, 11.0, 5e9}}).ok());
  absl::StatusOr<wire::SeriesData> now = series_->TrialSeriesData(trial_, request, {});
  ASSERT_TRUE(now.ok()) << now.status();
  ASSERT_THAT(now->series[0].points, SizeIs(1));
  EXPECT_DOUBLE_EQ(now->series[0].points[0].value, 5e9);
}

TEST_F(SeriesTest, RefusesARequestWithoutANameAndUnknownTrials) {
  SeriesRequest none;
  EXPECT_EQ(series_->TrialSeriesData(trial_, none, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(series_->TrialSeries(trial_ + 100).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(series_->TrialStepTimings(trial_ + 100).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SeriesTest, AFollowEndsWhenAPointArrives) {
  SeriesRequest request;
  request.names = {"validation/acc"};
  absl::StatusOr<wire::SeriesData> followed;
  std::thread follower(
      [&] { followed = series_->TrialSeriesData(trial_, request, absl::Seconds(60)); });
  ASSERT_TRUE(WaitUntilFollowing(gate_)) << "the follow never started waiting";
  ASSERT_TRUE(db_->InsertPoints(trial_, {{"validation/acc", "", 1, 10.0, 0.9}}).ok());
  gate_.Notify();
  follower.join();
  ASSERT_TRUE(followed.ok()) << followed.status();
  ASSERT_THAT(followed->series[0].points, SizeIs(1));
  EXPECT_GT(followed->last_id, 0);
}

TEST_F(SeriesTest, TimingsAndTraceOfStoredStepProfiles) {
  StepProfiles kept = SelectStepProfiles(Window(1, 10), 2, 0,
                                         {Step(0, 1, 1000, 100), Step(1, 1, 3000, 300)});
  ASSERT_TRUE(db_->InsertStepProfiles(trial_, kept.rows, kept.timings).ok());
  absl::StatusOr<wire::StepTimings> timings = series_->TrialStepTimings(trial_);
  ASSERT_TRUE(timings.ok()) << timings.status();
  EXPECT_EQ(timings->profiled_steps, 2);
  ASSERT_THAT(timings->ranks, SizeIs(2));
  EXPECT_EQ(timings->ranks[1].rank, 1);
  absl::StatusOr<nlohmann::json> trace = series_->TrialTrace(trial_, std::nullopt, std::nullopt);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_TRUE(trace->contains("traceEvents")) << trace->dump();
  EXPECT_FALSE((*trace)["traceEvents"].empty());
}

TEST_F(SeriesTest, AStepSeriesHasEveryBatchOfARankUpToItsLimitThenAnEvenSample) {
  std::vector<wire::StepProfileRecord> records;
  for (int64_t b = 1; b <= 12; ++b) {
    records.push_back(Step(0, b, 1000 * b, 0));
    records.push_back(Step(1, b, 5000, 0));
  }
  records[0].phases.push_back({"forward", 1000, 500});  // twice in batch 1: summed
  records[2].phases.push_back({"dataloader_next", 0, 250});  // batch 2 only
  StepProfiles kept = SelectStepProfiles(Window(1, 100), 2, 0, records);
  ASSERT_TRUE(db_->InsertStepProfiles(trial_, kept.rows, kept.timings).ok());

  absl::StatusOr<wire::StepSeries> every = series_->TrialStepSeries(trial_, 0, 100);
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_EQ(every->stride, 1);
  EXPECT_EQ(every->batches, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  ASSERT_THAT(every->phases, SizeIs(2));
  EXPECT_EQ(every->phases[0].name, "forward");
  EXPECT_EQ(every->phases[0].ms[0], 1.5);
  EXPECT_EQ(every->phases[0].ms[11], 12.0);
  EXPECT_EQ(every->phases[1].name, "dataloader_next");
  EXPECT_EQ(every->phases[1].ms[1], 0.25);
  EXPECT_FALSE(every->phases[1].ms[0].has_value());
  EXPECT_THAT(every->phases[1].ms, SizeIs(12));

  absl::StatusOr<wire::StepSeries> sample = series_->TrialStepSeries(trial_, 1, 5);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->stride, 3);
  EXPECT_EQ(sample->batches, (std::vector<int64_t>{3, 6, 9, 12}));
  EXPECT_EQ(sample->phases.at(0).ms.at(0), 5.0);
  EXPECT_TRUE(series_->TrialStepSeries(trial_, 7, 5)->batches.empty());
  EXPECT_EQ(series_->TrialStepSeries(trial_ + 100, 0, 5).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace cohort::master::series
