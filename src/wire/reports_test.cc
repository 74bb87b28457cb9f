#include "wire/reports.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

ReportRecord RoundTrip(const ReportRecord& rec) {
  absl::StatusOr<ReportRecord> back = ParseReportRecord(Json::parse(rec.ToJson().dump()));
  EXPECT_OK(back);
  return back.ok() ? *back : ReportRecord{};
}

TEST(ReportsTest, EveryKindRoundTripsThroughItsName) {
  for (ReportKind k : {ReportKind::kTraining, ReportKind::kValidation, ReportKind::kCheckpoint,
                       ReportKind::kCompleted, ReportKind::kPreempted}) {
    absl::StatusOr<ReportKind> back = ParseReportKind(Name(k));
    ASSERT_OK(back) << Name(k);
    EXPECT_EQ(*back, k);
  }
  EXPECT_THAT(ParseReportKind("train").status().message(), HasSubstr("'train' is not a report"));
}

TEST(ReportsTest, MetricsRecordsRoundTrip) {
  ReportRecord rec;
  rec.kind = ReportKind::kValidation;
  rec.steps_completed = 100;
  rec.metrics = {{"loss", 0.25}};
  rec.time = 12.5;
  const ReportRecord back = RoundTrip(rec);
  EXPECT_EQ(back.kind, ReportKind::kValidation);
  EXPECT_EQ(back.steps_completed, 100);
  EXPECT_EQ(back.metrics, rec.metrics);
  EXPECT_EQ(back.time, 12.5);
}

TEST(ReportsTest, TheMetricsLineKeepsItsFieldNames) {
  ReportRecord rec;
  rec.kind = ReportKind::kTraining;
  rec.steps_completed = 3;
  rec.metrics = {{"loss", 1}};
  rec.time = 2;
  EXPECT_EQ(rec.ToJson().dump(),
            R"({"kind":"training","metrics":{"loss":1},"steps_completed":3,"time":2.0})");
}

TEST(ReportsTest, CheckpointRecordsRoundTripWithAndWithoutSteps) {
  ReportRecord rec;
  rec.kind = ReportKind::kCheckpoint;
  rec.storage_id = "uuid-1";
  rec.path = "/ckpt/uuid-1";
  rec.metadata = {{"steps_completed", 40}};
  ReportRecord back = RoundTrip(rec);
  EXPECT_EQ(back.storage_id, "uuid-1");
  EXPECT_EQ(back.path, "/ckpt/uuid-1");
  EXPECT_EQ(back.metadata, rec.metadata);
  EXPECT_FALSE(back.steps_completed.has_value());
  rec.steps_completed = 40;
  EXPECT_EQ(RoundTrip(rec).steps_completed, 40);
}

TEST(ReportsTest, ACompletedRecordWithoutAMetricWritesNullAndReadsNaN) {
  ReportRecord rec;
  rec.kind = ReportKind::kCompleted;
  rec.searcher_metric = std::nan("");
  rec.length = 20;
  EXPECT_TRUE(rec.ToJson()["searcher_metric"].is_null());
  const ReportRecord back = RoundTrip(rec);
  EXPECT_TRUE(std::isnan(back.searcher_metric));
  EXPECT_EQ(back.length, 20);
  rec.searcher_metric = 0.5;
  EXPECT_EQ(RoundTrip(rec).searcher_metric, 0.5);
}

TEST(ReportsTest, APreemptedRecordRoundTrips) {
  ReportRecord rec;
  rec.kind = ReportKind::kPreempted;
  rec.time = 5;
  EXPECT_EQ(RoundTrip(rec).kind, ReportKind::kPreempted);
}

TEST(ReportsTest, BadRecordsNameTheLineAndTheField) {
  EXPECT_EQ(ParseReportRecord(Json{{"time", 1}}, "metrics.jsonl line 3").status().message(),
            "metrics.jsonl line 3: missing \"kind\"");
  EXPECT_THAT(
      ParseReportRecord(Json{{"kind", "training"}, {"steps_completed", 1}, {"metrics", "loss"}})
          .status()
          .message(),
      HasSubstr("\"metrics\" must be a JSON object, got \"loss\""));
  EXPECT_THAT(
      ParseReportRecord(
          Json{{"kind", "validation"}, {"steps_completed", -1}, {"metrics", Json::object()}})
          .status()
          .message(),
      HasSubstr("\"steps_completed\" must be an integer >= 0, got -1"));
  EXPECT_THAT(
      ParseReportRecord(Json{{"kind", "checkpoint"}, {"storage_id", ""}}).status().message(),
      HasSubstr("\"storage_id\" must not be empty"));
  EXPECT_THAT(ParseReportRecord(Json{{"kind", "finished"}}).status().message(),
              HasSubstr("\"kind\" 'finished' is not a report kind"));
}

TEST(ReportsTest, ProgressRoundTrips) {
  ProgressRecord p;
  p.completed = 1200;
  p.total = 2000;
  p.unit = "batches";
  p.training = {{"loss", 0.3}};
  p.training_steps_completed = 1200;
  p.validation = {{"loss", 0.4}};
  p.validation_steps_completed = 1000;
  p.latest_checkpoint = "uuid";
  p.searcher_metric = 0.4;
  p.preempted = true;
  p.time = 9;
  absl::StatusOr<ProgressRecord> back = ParseProgressRecord(Json::parse(p.ToJson().dump()));
  ASSERT_OK(back);
  EXPECT_EQ(back->completed, 1200);
  EXPECT_EQ(back->total, 2000);
  EXPECT_EQ(back->unit, "batches");
  EXPECT_EQ(back->training, p.training);
  EXPECT_EQ(back->training_steps_completed, 1200);
  EXPECT_EQ(back->validation, p.validation);
  EXPECT_EQ(back->validation_steps_completed, 1000);
  EXPECT_EQ(back->latest_checkpoint, "uuid");
  EXPECT_EQ(back->searcher_metric, 0.4);
  EXPECT_TRUE(back->preempted);
  EXPECT_EQ(back->time, 9);
}

TEST(ReportsTest, ProgressWithoutCountsHasNone) {
  ProgressRecord p;
  p.preempted = true;
  EXPECT_FALSE(p.ToJson().contains("completed"));
  absl::StatusOr<ProgressRecord> back = ParseProgressRecord(p.ToJson());
  ASSERT_OK(back);
  EXPECT_FALSE(back->has_counts());
}

TEST(ReportsTest, BadProgressNamesTheField) {
  EXPECT_EQ(ParseProgressRecord(Json{{"completed", 3}}).status().message(),
            "progress: missing \"total\"");
  EXPECT_THAT(ParseProgressRecord(Json{{"completed", "3"}, {"total", 4}}).status().message(),
              HasSubstr("\"completed\" must be a number"));
  EXPECT_THAT(ParseProgressRecord(Json{{"completed", -3}, {"total", 4}}).status().message(),
              HasSubstr("\"completed\" must be >= 0"));
}

// progress.json as the agent and `--local` read it: missing is NotFound; whole, its record; too
// large, not JSON or not a record, an error that starts "progress.json: " and says which.
TEST(ReportsTest, AProgressFileIsReadBoundedAndItsErrorsNameIt) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/progress-", ::getpid(), "/progress.json");
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  EXPECT_THAT(ReadProgressFile(path), StatusIs(absl::StatusCode::kNotFound));
  std::ofstream(path) << R"({"completed": 3, "total": 10})";
  absl::StatusOr<ProgressRecord> read = ReadProgressFile(path);
  ASSERT_OK(read);
  EXPECT_EQ(read->completed, 3);
  std::ofstream(path) << "{";
  EXPECT_THAT(std::string(ReadProgressFile(path).status().message()),
              ::testing::StartsWith("progress.json: "));
  std::ofstream(path) << R"({"completed": 3})";
  EXPECT_EQ(ReadProgressFile(path).status().message(), "progress.json: missing \"total\"");
  std::ofstream(path) << std::string(kMaxProgressFileBytes + 1, ' ');
  EXPECT_THAT(ReadProgressFile(path).status().message(),
              ::testing::AllOf(HasSubstr("holds more than 65536 bytes"), HasSubstr("appending")));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(ReportsTest, ProgressCountsAreFiniteAndBoundedSoTheyConvertToInt64) {
  EXPECT_EQ(ParseProgressRecord(Json{{"completed", 1e300}, {"total", 4}}).status().message(),
            "progress: \"completed\" must be a number <= 1e+15, got 1e+300");
  EXPECT_THAT(ParseProgressRecord(Json{{"completed", 1}, {"total", 2e15}}).status().message(),
              HasSubstr("\"total\" must be a number <= 1e+15, got 2e+15"));
  absl::StatusOr<ProgressRecord> at_limit =
      ParseProgressRecord(Json{{"completed", 1e15}, {"total", 1e15}});
  ASSERT_OK(at_limit);
  EXPECT_EQ(at_limit->completed, 1e15);
  EXPECT_THAT(ParseProgressRecord(Json{{"time", -5}}).status().message(),
              HasSubstr("\"time\" must be a number in [0, 1e+11], got -5"));
}

TEST(ReportsTest, RecordLengthsAndTimesAreBounded) {
  EXPECT_THAT(ParseReportRecord(Json{{"kind", "completed"}, {"length", 1e20}}).status().message(),
              HasSubstr("\"length\" must be a number <= 1e+15, got 1e+20"));
  EXPECT_THAT(ParseReportRecord(Json{{"kind", "preempted"}, {"time", 1e12}}).status().message(),
              HasSubstr("\"time\" must be a number in [0, 1e+11], got 1000000000000"));
}

TEST(ReportsTest, AnInfiniteCountIsRefused) {
  // JSON text cannot carry one (the parser refuses 1e400), but a Json built in code can.
  const Json json = {{"completed", std::numeric_limits<double>::infinity()}, {"total", 4}};
  EXPECT_THAT(ParseProgressRecord(json).status().message(),
              HasSubstr("\"completed\" must be a number <= 1e+15"));
}

TEST(ReportsTest, MetricNamesAreBoundedInCountAndLength) {
  Json many = Json::object();
  for (int i = 0; i < 1025; ++i) many[absl::StrCat("m", i)] = i;
  EXPECT_EQ(ParseReportRecord(Json{{"kind", "training"}, {"steps_completed", 1}, {"metrics", many}})
                .status()
                .message(),
            "report record: \"metrics\" must have at most 1024 metrics, got 1025");
  const Json long_name = {{std::string(300, 'x'), 1}};
  EXPECT_THAT(ParseProgressRecord(Json{{"validation", long_name}}).status().message(),
              HasSubstr("\"validation\" metric names must be at most 256 bytes, got one of 300"));
}

TEST(MetricSeriesTest, NestedMetricsBecomeSlashSeparatedNamesOfNumbersOnly) {
  const Json metrics = {{"loss", 0.5},
                        {"acc", {{"top1", 0.9}, {"top5", 1}}},
                        {"note", "x"},
                        {"ok", true},
                        {"nan", std::nan("")}};
  EXPECT_EQ(MetricSeries("validation", metrics),
            (std::map<std::string, double>{{"validation/acc/top1", 0.9},
                                           {"validation/acc/top5", 1},
                                           {"validation/loss", 0.5},
                                           {"validation/ok", 1}}));
  EXPECT_TRUE(MetricSeries("training", Json::array({1, 2})).empty());
}

}  // namespace
}  // namespace cohort::wire
