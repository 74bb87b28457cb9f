#include "wire/system_metrics.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using ::cohort::testing_support::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

SystemMetricsRecord Example() {
  SystemMetricsRecord rec;
  rec.time = 1700000000.5;
  rec.agent = "agent-1";
  rec.metrics = {{"cpu_util_simple", 12.5}, {"free_memory", 2.1e10}, {"disk_iops", 0}};
  rec.gpus = {{.uuid = "GPU-a", .gpu_util = 37, .gpu_free_memory = 1073741824},
              {.uuid = "GPU-b", .gpu_util = 100, .gpu_free_memory = 0}};
  return rec;
}

std::string ErrorOf(const Json& json) {
  absl::StatusOr<SystemMetricsRecord> rec = ParseSystemMetricsRecord(json);
  EXPECT_THAT(rec, Not(IsOk())) << json.dump();
  return std::string(rec.status().message());
}

TEST(SystemMetricsTest, RoundTripsThroughJsonText) {
  const SystemMetricsRecord rec = Example();
  absl::StatusOr<SystemMetricsRecord> back =
      ParseSystemMetricsRecord(Json::parse(rec.ToJson().dump()));
  ASSERT_OK(back);
  EXPECT_EQ(back->time, rec.time);
  EXPECT_EQ(back->agent, rec.agent);
  EXPECT_EQ(back->metrics, rec.metrics);
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].uuid, "GPU-a");
  EXPECT_EQ(back->gpus[0].gpu_util, 37);
  EXPECT_EQ(back->gpus[0].gpu_free_memory, 1073741824);
  EXPECT_EQ(back->gpus[1].uuid, "GPU-b");
}

TEST(SystemMetricsTest, TheRecordKeepsItsFieldNames) {
  SystemMetricsRecord rec;
  rec.time = 2;
  rec.agent = "a";
  rec.metrics = {{"disk_iops", 3}};
  rec.gpus = {{.uuid = "GPU-a", .gpu_util = 1, .gpu_free_memory = 4}};
  EXPECT_EQ(rec.ToJson().dump(),
            R"({"agent":"a","gpus":[{"gpu_free_memory":4.0,"gpu_util":1.0,"uuid":"GPU-a"}],)"
            R"("metrics":{"disk_iops":3.0},"time":2.0})");
}

TEST(SystemMetricsTest, GpusAreOptionalAndUnknownFieldsIgnored) {
  absl::StatusOr<SystemMetricsRecord> rec = ParseSystemMetricsRecord(
      Json{{"time", 1}, {"agent", "a"}, {"metrics", Json::object()}, {"new", true}});
  ASSERT_OK(rec);
  EXPECT_TRUE(rec->gpus.empty());
  EXPECT_TRUE(rec->metrics.empty());
}

TEST(SystemMetricsTest, ErrorsNameTheRecordAndTheField) {
  Json j = Example().ToJson();
  j.erase("time");
  EXPECT_EQ(ErrorOf(j), "system metrics: missing \"time\"");
  j = Example().ToJson();
  j["agent"] = "../etc";
  EXPECT_THAT(ErrorOf(j), HasSubstr("system metrics: \"agent\" must be 1 to 128 characters"));
  j = Example().ToJson();
  j["metrics"]["disk_iops"] = -1;
  EXPECT_EQ(ErrorOf(j), "system metrics: \"metrics\": \"disk_iops\" must be a number >= 0, got -1");
  j["metrics"]["disk_iops"] = "fast";
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"disk_iops\" must be a number >= 0, got \"fast\""));
  j["metrics"]["disk_iops"] = nullptr;
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"metrics\": missing \"disk_iops\""));
  j = Example().ToJson();
  j["gpus"][1]["gpu_util"] = 101;
  EXPECT_EQ(ErrorOf(j),
            "system metrics: \"gpus\"[1]: \"gpu_util\" must be a number in [0, 100], got 101");
  j = Example().ToJson();
  j["gpus"][1]["uuid"] = "GPU-a";
  EXPECT_EQ(ErrorOf(j), "system metrics: \"gpus\" has uuid \"GPU-a\" twice");
  j["gpus"][1]["uuid"] = "";
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"uuid\" must not be empty"));
}

TEST(SystemMetricsTest, SizesAreBounded) {
  Json j = Example().ToJson();
  for (size_t i = 0; i <= kMaxSystemSeries; ++i) j["metrics"]["s" + std::to_string(i)] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"metrics\" must have at most 64 series, got 68"));
  j = Example().ToJson();
  j["metrics"][std::string(kMaxMetricNameBytes + 1, 'x')] = 1;
  EXPECT_THAT(ErrorOf(j), HasSubstr("series names must be at most 256 bytes, got one of 257"));
  j = Example().ToJson();
  j["gpus"] = Json::array();
  for (size_t i = 0; i <= kMaxGpus; ++i) {
    j["gpus"].push_back(
        {{"uuid", "GPU-" + std::to_string(i)}, {"gpu_util", 0}, {"gpu_free_memory", 0}});
  }
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"gpus\" must have at most 64 elements, got 65"));
  j = Example().ToJson();
  j["gpus"][0]["uuid"] = std::string(kMaxGpuUuidBytes + 1, 'u');
  EXPECT_THAT(ErrorOf(j), HasSubstr("\"gpus\"[0]: \"uuid\""));
}

TEST(SystemMetricsTest, TheContextNamesTheRecord) {
  Json j = Example().ToJson();
  j.erase("agent");
  EXPECT_EQ(ParseSystemMetricsRecord(j, "system metrics 3").status().message(),
            "system metrics 3: missing \"agent\"");
}

TEST(SystemMetricsTest, EverySystemSeriesHasItsUnitAndOtherSeriesNone) {
  EXPECT_EQ(SystemSeriesUnit("cpu_util_simple"), SeriesUnit::kPercent);
  EXPECT_EQ(SystemSeriesUnit("gpu_util"), SeriesUnit::kPercent);
  EXPECT_EQ(SystemSeriesUnit("free_memory"), SeriesUnit::kBytes);
  EXPECT_EQ(SystemSeriesUnit("memory_free"), SeriesUnit::kBytes) << "the old name, one release";
  EXPECT_EQ(CurrentSeriesName("memory_free"), "free_memory");
  EXPECT_EQ(CurrentSeriesName("loss"), "loss");
  EXPECT_EQ(OldSeriesName("free_memory"), "memory_free");
  EXPECT_EQ(OldSeriesName("loss"), "");
  EXPECT_EQ(SystemSeriesUnit("gpu_free_memory"), SeriesUnit::kBytes);
  EXPECT_EQ(SystemSeriesUnit("disk_iops"), SeriesUnit::kPerSecond);
  for (const char* name : {"net_throughput_sent", "net_throughput_recv", "disk_throughput_read",
                           "disk_throughput_write"}) {
    EXPECT_EQ(SystemSeriesUnit(name), SeriesUnit::kBytesPerSecond) << name;
  }
  EXPECT_EQ(SystemSeriesUnit("training/loss"), SeriesUnit::kNone);
  EXPECT_EQ(SystemSeriesUnit("memory_free_ratio"), SeriesUnit::kNone);
}

}  // namespace
}  // namespace cohort::wire
