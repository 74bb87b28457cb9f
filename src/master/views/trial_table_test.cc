#include "master/views/trial_table.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::views {
namespace {

using wire::Json;

wire::ValidationPoint Point(int64_t batches, Json metrics) { return {batches, std::move(metrics)}; }

TEST(PickValidationsTest, BestIsByTheSearcherMetricInItsDirectionAndLatestIsTheLast) {
  const std::vector<wire::ValidationPoint> v = {
      Point(10, {{"loss", 0.5}, {"accuracy", 0.7}}), Point(20, {{"loss", 0.3}, {"accuracy", 0.8}}),
      Point(30, {{"accuracy", 0.9}}),  // no loss: never the best by loss
      Point(40, {{"loss", 0.4}, {"accuracy", 0.85}})};
  BestAndLatest lower = PickValidations(v, "loss", true);
  ASSERT_TRUE(lower.best && lower.latest);
  EXPECT_EQ(lower.best->batches, 20);
  EXPECT_EQ(lower.best->metrics["accuracy"], 0.8);  // every metric of that report
  EXPECT_EQ(lower.latest->batches, 40);
  BestAndLatest higher = PickValidations(v, "accuracy", false);
  ASSERT_TRUE(higher.best);
  EXPECT_EQ(higher.best->batches, 30);
  EXPECT_FALSE(PickValidations({}, "loss", true).best);
  EXPECT_FALSE(PickValidations({Point(1, {{"loss", "NaN"}})}, "loss", true).best);
}

TEST(SearcherMetricTest, ReadsTheMetricAndItsDirectionFromTheConfig) {
  EXPECT_EQ(SearcherMetric("searcher: {name: grid, metric: acc, smaller_is_better: false}\n"),
            (std::pair<std::string, bool>("acc", false)));
  EXPECT_EQ(SearcherMetric("searcher: {name: single, metric: loss}\n"),
            (std::pair<std::string, bool>("loss", true)));
  EXPECT_EQ(SearcherMetric(": not yaml ["), (std::pair<std::string, bool>("", true)));
}

TEST(BuildTrialTableTest, EveryTrialWithItsHparamsValidationsCheckpointsAndTheBestTrial) {
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(":memory:");
  ASSERT_TRUE(db.ok()) << db.status();
  ExperimentRow e = MakeExperiment("grid");
  e.config_yaml = "searcher: {name: grid, metric: validation_loss}\n";
  absl::StatusOr<int64_t> exp = (*db)->InsertExperiment(e);
  ASSERT_TRUE(exp.ok()) << exp.status();
  std::vector<int64_t> trials;
  for (double lr : {0.1, 0.01, 0.001}) {
    TrialRow t = MakeTrial(*exp);
    t.hparams_json = Json({{"lr", lr}, {"optimizer", {{"momentum", 0.9}}}}).dump();
    absl::StatusOr<int64_t> id = (*db)->InsertTrial(t);
    ASSERT_TRUE(id.ok()) << id.status();
    trials.push_back(*id);
  }
  // Trial 2 validates best; trial 3 has not validated yet.
  const auto validation = [&](int64_t trial, int64_t batches, double loss) {
    return MetricRow{trial, "validation", batches,
                     Json({{"validation_loss", loss}, {"accuracy", 1 - loss}}).dump(), 1.0};
  };
  ASSERT_TRUE((*db)->InsertMetrics({validation(trials[0], 10, 0.6), validation(trials[0], 20, 0.5),
                                    validation(trials[1], 10, 0.2),
                                    validation(trials[1], 20, 0.25)})
                  .ok());
  ASSERT_TRUE((*db)->InsertCheckpoint({"c1", trials[1], 10, "/c1"}).ok());
  ASSERT_TRUE((*db)->InsertCheckpoint({"c2", trials[1], 20, "/c2"}).ok());
  ASSERT_TRUE((*db)->MarkCheckpointDeleted("c1").ok());

  absl::StatusOr<wire::TrialTable> table = BuildTrialTable(**db, *exp);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->metric, "validation_loss");
  EXPECT_TRUE(table->smaller_is_better);
  EXPECT_EQ(table->best_trial, trials[1]);
  ASSERT_EQ(table->trials.size(), 3u);
  const wire::TrialTableRow& second = table->trials[1];
  EXPECT_EQ(second.hparams["optimizer"]["momentum"], 0.9);
  ASSERT_TRUE(second.best_validation && second.latest_validation);
  EXPECT_EQ(second.best_validation->batches, 10);
  EXPECT_EQ(second.latest_validation->batches, 20);
  EXPECT_EQ(second.checkpoints, 1);  // the deleted one is not counted
  EXPECT_FALSE(table->trials[2].best_validation);
  // The body goes over the wire and back unchanged.
  absl::StatusOr<wire::TrialTable> parsed = wire::ParseTrialTable(table->ToJson());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->ToJson(), table->ToJson());
  EXPECT_EQ(BuildTrialTable(**db, 99).status().code(), absl::StatusCode::kNotFound);
}

TEST(FlattenHparamsTest, GroupsAreJoinedByDots) {
  const auto flat = wire::FlattenHparams(Json::parse(R"({"lr": 1, "opt": {"m": 2, "b": {"x": 3}}})"));
  ASSERT_EQ(flat.size(), 3u);
  EXPECT_EQ(flat[0].first, "lr");
  EXPECT_EQ(flat[1].first, "opt.b.x");  // wire::Json keeps an object's names sorted
  EXPECT_EQ(flat[2].first, "opt.m");
}

}  // namespace
}  // namespace cohort::master::views
