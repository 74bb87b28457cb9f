#include "cli/search_commands.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using wire::Json;

wire::TrialTableRow Row(int64_t id, double lr, std::optional<double> loss) {
  wire::TrialTableRow row{.trial_id = id,
                          .state = wire::TrialState::kCompleted,
                          .hparams = {{"lr", lr}, {"opt", {{"momentum", 0.9}}}},
                          .batches = 100,
                          .restarts = 0,
                          .checkpoints = 1};
  if (loss) row.best_validation = wire::ValidationPoint{50, {{"loss", *loss}, {"acc", 1 - *loss}}};
  return row;
}

wire::TrialTable Table() {
  return {.metric = "loss",
          .smaller_is_better = true,
          .best_trial = 2,
          .trials = {Row(1, 0.1, 0.5), Row(2, 0.01, 0.2), Row(3, 0.001, std::nullopt)}};
}

TEST(TrialTableTextTest, HparamsBesideTheMetricBestFirstAndTheBestMarked) {
  absl::StatusOr<TextTable> t = TrialTableText(Table(), "", false);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->header, ElementsAre("trial", "state", "batches", "restarts", "lr", "opt.momentum",
                                     "loss", "acc", "checkpoints"));
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_EQ(t->rows[0][0], "2*");  // best first, marked
  EXPECT_EQ(t->rows[0][6], "0.2");
  EXPECT_EQ(t->rows[1][0], "1");
  EXPECT_EQ(t->rows[2][0], "3");  // no validation: last, its metrics "-"
  EXPECT_EQ(t->rows[2][6], "-");
}

TEST(TrialTableTextTest, SortsByAnyColumnEitherWayAndNamesTheColumnsForAnUnknownOne) {
  absl::StatusOr<TextTable> by_lr = TrialTableText(Table(), "lr", false);
  ASSERT_TRUE(by_lr.ok());
  EXPECT_EQ(by_lr->rows[0][0], "3");
  absl::StatusOr<TextTable> reversed = TrialTableText(Table(), "loss", true);
  ASSERT_TRUE(reversed.ok());
  EXPECT_EQ(reversed->rows[0][0], "1");   // worst first
  EXPECT_EQ(reversed->rows[2][0], "3");   // no value: still last
  wire::TrialTable higher = Table();
  higher.metric = "acc";
  higher.smaller_is_better = false;
  absl::StatusOr<TextTable> acc = TrialTableText(higher, "", false);
  ASSERT_TRUE(acc.ok());
  EXPECT_EQ(acc->rows[0][0], "2*");  // the highest accuracy first
  absl::Status bad = TrialTableText(Table(), "nope", false).status();
  EXPECT_THAT(std::string(bad.message()), HasSubstr("--sort nope: no such column (trial, state"));
}

TEST(CompareTextTest, OneColumnPerTrialAndDifferingHparamsMarked) {
  const wire::TrialTable table = Table();
  const TextTable t = CompareText({7, 7, 7}, table.trials, "loss");
  EXPECT_THAT(t.header, ElementsAre("field", "trial 1", "trial 2", "trial 3"));
  std::map<std::string, std::vector<std::string>> by_field;
  for (const auto& row : t.rows) by_field[row[0]] = row;
  ASSERT_TRUE(by_field.count("lr *")) << "lr differs";
  EXPECT_THAT(by_field["lr *"], ElementsAre("lr *", "0.1", "0.01", "0.001"));
  EXPECT_TRUE(by_field.count("opt.momentum")) << "the same everywhere: not marked";
  EXPECT_THAT(by_field["best loss"], ElementsAre("best loss", "0.5", "0.2", "-"));
  EXPECT_THAT(by_field["best validation at batch"], ElementsAre("best validation at batch", "50", "50", "-"));
}

}  // namespace
}  // namespace cohort::cli
