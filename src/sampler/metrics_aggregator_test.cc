#include "sampler/metrics_aggregator.h"

#include <cmath>
#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::sampler {
namespace {

using ::testing::Contains;
using ::testing::DoubleEq;
using ::testing::Key;
using ::testing::Not;

const absl::Time kStart = absl::FromUnixSeconds(1000);

// Whole milliseconds, so that period boundaries compare exactly.
absl::Time At(double seconds) { return kStart + absl::Milliseconds(std::llround(seconds * 1000)); }

// Counters that grow at fixed rates from t = 0: 2 CPUs a quarter busy, 1000 bytes/s sent,
// 500 received, 10 reads and 30 writes a second of 4096 bytes each, free_memory = `free`.
SystemCounters Steady(double t, uint64_t free = 1000) {
  const auto at = [t](double per_second) { return static_cast<uint64_t>(per_second * t); };
  SystemCounters c;
  c.cpu = CpuTimes{.busy = at(50), .total = at(200)};
  c.memory = MemoryInfo{.total = 4000, .available = free};
  c.net = NetCounters{.sent_bytes = at(1000), .received_bytes = at(500)};
  c.disk = DiskCounters{
      .reads = at(10), .writes = at(30), .read_bytes = at(40960), .written_bytes = at(122880)};
  return c;
}

TEST(MetricsAggregatorTest, EmitsOneRecordPerPeriodWithEveryRate) {
  MetricsAggregator aggregator(absl::Seconds(1));
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(aggregator.Add(At(i * 0.1), Steady(i * 0.1)).has_value()) << i;
  }
  std::optional<SystemMetrics> m = aggregator.Add(At(1), Steady(1));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->time, At(1));
  EXPECT_THAT(m->metrics[kCpuUtilSimple], DoubleEq(25));
  EXPECT_THAT(m->metrics[kMemoryFree], DoubleEq(1000));
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(1000));
  EXPECT_THAT(m->metrics[kNetThroughputRecv], DoubleEq(500));
  EXPECT_THAT(m->metrics[kDiskIops], DoubleEq(40));
  EXPECT_THAT(m->metrics[kDiskThroughputRead], DoubleEq(40960));
  EXPECT_THAT(m->metrics[kDiskThroughputWrite], DoubleEq(122880));
  EXPECT_EQ(m->metrics.size(), 7u);
  EXPECT_TRUE(m->gpus.empty());
}

TEST(MetricsAggregatorTest, TheClosingSampleStartsTheNextPeriod) {
  MetricsAggregator aggregator(absl::Seconds(1));
  aggregator.Add(At(0), Steady(0));
  ASSERT_TRUE(aggregator.Add(At(1), Steady(1)).has_value());
  // The next period's rates count from the closing sample: 3000 bytes sent in 1 s.
  SystemCounters later = Steady(2);
  later.net->sent_bytes = 1000 + 3000;
  std::optional<SystemMetrics> m = aggregator.Add(At(2), later);
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(3000));
}

TEST(MetricsAggregatorTest, RatesAreWeightedByTheTimeTheyCover) {
  MetricsAggregator aggregator(absl::Seconds(1));
  SystemCounters c = Steady(0);
  aggregator.Add(At(0), c);
  c.net->sent_bytes = 100;  // 100 bytes in 0.1 s
  aggregator.Add(At(0.1), c);
  c.net->sent_bytes = 1000;  // 900 bytes in 0.9 s (a late sample)
  std::optional<SystemMetrics> m = aggregator.Add(At(1), c);
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(1000));
}

TEST(MetricsAggregatorTest, GaugesAreTheMeanOfTheSamples) {
  MetricsAggregator aggregator(absl::Seconds(1));
  aggregator.Add(At(0), Steady(0, /*free=*/100));
  SystemCounters c = Steady(0.5, 300);
  c.gpus = {{.uuid = "GPU-a", .utilization = 20, .free_memory = 10},
            {.uuid = "GPU-b", .utilization = 90, .free_memory = 5}};
  aggregator.Add(At(0.5), c);
  c = Steady(1, 200);
  c.gpus = {{.uuid = "GPU-a", .utilization = 40, .free_memory = 30}};
  std::optional<SystemMetrics> m = aggregator.Add(At(1), c);
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics[kMemoryFree], DoubleEq(200));
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[0].uuid, "GPU-a");
  EXPECT_THAT(m->gpus[0].gpu_util, DoubleEq(30));
  EXPECT_THAT(m->gpus[0].gpu_free_memory, DoubleEq(20));
  EXPECT_EQ(m->gpus[1].uuid, "GPU-b");
  EXPECT_THAT(m->gpus[1].gpu_util, DoubleEq(90));
}

TEST(MetricsAggregatorTest, ACounterThatGoesBackwardsCountsForNothing) {
  MetricsAggregator aggregator(absl::Seconds(1));
  SystemCounters c = Steady(0);
  c.net->sent_bytes = 5000;
  aggregator.Add(At(0), c);
  c.net->sent_bytes = 100;  // an interface went away
  aggregator.Add(At(0.5), c);
  c.net->sent_bytes = 600;
  std::optional<SystemMetrics> m = aggregator.Add(At(1), c);
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(1000));  // 500 bytes in 0.5 s
}

TEST(MetricsAggregatorTest, ASourceThatCannotBeReadHasNoSeries) {
  MetricsAggregator aggregator(absl::Seconds(1));
  SystemCounters c = Steady(0);
  c.disk.reset();
  aggregator.Add(At(0), c);
  c = Steady(1);
  c.disk.reset();
  std::optional<SystemMetrics> m = aggregator.Add(At(1), c);
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics, Not(Contains(Key(kDiskIops))));
  EXPECT_THAT(m->metrics, Contains(Key(kCpuUtilSimple)));
}

TEST(MetricsAggregatorTest, NothingReadableEmitsNothing) {
  MetricsAggregator aggregator(absl::Seconds(1));
  aggregator.Add(At(0), {});
  EXPECT_FALSE(aggregator.Add(At(1), {}).has_value());
  EXPECT_FALSE(aggregator.Flush().has_value());
}

TEST(MetricsAggregatorTest, FlushEmitsThePartialPeriodOnce) {
  MetricsAggregator aggregator(absl::Seconds(1));
  EXPECT_FALSE(aggregator.Flush().has_value());
  aggregator.Add(At(0), Steady(0));
  aggregator.Add(At(0.3), Steady(0.3));
  std::optional<SystemMetrics> m = aggregator.Flush();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->time, At(0.3));
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(1000));
  EXPECT_FALSE(aggregator.Flush().has_value());
  // The next period counts from the flushed sample and closes a period after it.
  EXPECT_FALSE(aggregator.Add(At(1.2), Steady(1.2)).has_value());
  EXPECT_TRUE(aggregator.Add(At(1.3), Steady(1.3)).has_value());
}

TEST(MetricsAggregatorTest, ASampleFromBeforeTheLastIsIgnored) {
  MetricsAggregator aggregator(absl::Seconds(1));
  aggregator.Add(At(0.5), Steady(0.5));
  EXPECT_FALSE(aggregator.Add(At(0.2), Steady(9)).has_value());
  std::optional<SystemMetrics> m = aggregator.Add(At(1.5), Steady(1.5));
  ASSERT_TRUE(m.has_value());
  EXPECT_THAT(m->metrics[kNetThroughputSent], DoubleEq(1000));
}

}  // namespace
}  // namespace cohort::sampler
