#pragma once
// MetricsAggregator: turns a stream of counter samples into one SystemMetrics per period. It
// is SystemSampler's arithmetic, without its thread or clock, so tests feed it samples at
// chosen times.
//
// Rates (network, disk) and CPU utilization come from the differences between consecutive
// samples, summed over the period and divided by the time they cover, which is the average of
// the per-interval rates weighted by the intervals' lengths (so a late sample does not skew
// it). A counter that went backwards (an interface or disk gone, a counter reset) makes that
// interval count for nothing in that series. Gauges (free_memory, and per GPU gpu_util and
// gpu_free_memory) are the mean of the period's samples.
//
// Periods: the first sample opens one; the first sample at least `period` after the opening
// one closes it (its difference and gauges belong to the closing period) and opens the next.
// Thread-compatible.
//
// Example:
//   MetricsAggregator aggregator(absl::Seconds(1));
//   if (std::optional<SystemMetrics> m = aggregator.Add(clock.Now(), source.Read())) Emit(*m);

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "sampler/counter_source.h"
#include "sampler/system_metrics.h"

namespace cohort::sampler {

class MetricsAggregator {
 public:
  // `period` must be positive.
  explicit MetricsAggregator(absl::Duration period);

  // Adds the counters read at `time` (not before the previous sample's time: an earlier one is
  // ignored). Returns the closed period's metrics when this sample closes one and it had any
  // series.
  std::optional<SystemMetrics> Add(absl::Time time, const SystemCounters& counters);

  // The metrics of the open period so far (when it has any series; time: its last sample's),
  // and starts a new period at the last sample. For a stop in mid-period.
  std::optional<SystemMetrics> Flush();

 private:
  // An amount (bytes, operations) over the seconds it accrued in.
  struct Rate {
    double amount = 0;
    double seconds = 0;
    void Add(uint64_t before, uint64_t after, double dt);
  };
  struct Mean {
    double sum = 0;
    int count = 0;
    void Add(double value) { sum += value, ++count; }
  };
  struct GpuMeans {
    Mean util;
    Mean free_memory;
  };

  void AddDifferences(const SystemCounters& before, const SystemCounters& after, double dt);
  void AddGauges(const SystemCounters& counters);
  SystemMetrics Collect() const;
  void Reset();

  absl::Duration period_;
  std::optional<absl::Time> period_start_;
  std::optional<absl::Time> last_time_;  // of the last sample, whose counters are last_
  SystemCounters last_;
  // CPU: busy and total jiffies of the period.
  uint64_t cpu_busy_ = 0;
  uint64_t cpu_total_ = 0;
  Rate sent_, received_, disk_ios_, disk_read_, disk_written_;
  Mean memory_free_;
  std::map<std::string, GpuMeans> gpus_;
};

}  // namespace cohort::sampler
