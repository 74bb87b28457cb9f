#include "sampler/metrics_aggregator.h"

#include <utility>

namespace cohort::sampler {

void MetricsAggregator::Rate::Add(uint64_t before, uint64_t after, double dt) {
  if (after < before || dt <= 0) return;
  amount += static_cast<double>(after - before);
  seconds += dt;
}

MetricsAggregator::MetricsAggregator(absl::Duration period) : period_(period) {}

std::optional<SystemMetrics> MetricsAggregator::Add(absl::Time time,
                                                    const SystemCounters& counters) {
  if (last_time_.has_value() && time < *last_time_) return std::nullopt;
  if (!period_start_.has_value()) period_start_ = time;
  if (last_time_.has_value()) {
    AddDifferences(last_, counters, absl::ToDoubleSeconds(time - *last_time_));
  }
  AddGauges(counters);
  last_time_ = time;
  last_ = counters;
  if (time - *period_start_ < period_) return std::nullopt;
  return Flush();
}

std::optional<SystemMetrics> MetricsAggregator::Flush() {
  if (!last_time_.has_value()) return std::nullopt;
  SystemMetrics metrics = Collect();
  Reset();
  period_start_ = *last_time_;
  if (metrics.metrics.empty() && metrics.gpus.empty()) return std::nullopt;
  return metrics;
}

void MetricsAggregator::AddDifferences(const SystemCounters& before, const SystemCounters& after,
                                       double dt) {
  if (before.cpu && after.cpu && after.cpu->total >= before.cpu->total &&
      after.cpu->busy >= before.cpu->busy) {
    cpu_busy_ += after.cpu->busy - before.cpu->busy;
    cpu_total_ += after.cpu->total - before.cpu->total;
  }
  if (before.net && after.net) {
    sent_.Add(before.net->sent_bytes, after.net->sent_bytes, dt);
    received_.Add(before.net->received_bytes, after.net->received_bytes, dt);
  }
  if (before.disk && after.disk) {
    disk_ios_.Add(before.disk->reads + before.disk->writes, after.disk->reads + after.disk->writes,
                  dt);
    disk_read_.Add(before.disk->read_bytes, after.disk->read_bytes, dt);
    disk_written_.Add(before.disk->written_bytes, after.disk->written_bytes, dt);
  }
}

void MetricsAggregator::AddGauges(const SystemCounters& counters) {
  if (counters.memory) memory_free_.Add(static_cast<double>(counters.memory->available));
  for (const GpuReading& gpu : counters.gpus) {
    GpuMeans& means = gpus_[gpu.uuid];
    means.util.Add(gpu.utilization);
    means.free_memory.Add(static_cast<double>(gpu.free_memory));
  }
}

SystemMetrics MetricsAggregator::Collect() const {
  SystemMetrics result;
  result.time = *last_time_;
  auto put_rate = [&result](const char* name, const Rate& rate) {
    if (rate.seconds > 0) result.metrics[name] = rate.amount / rate.seconds;
  };
  if (cpu_total_ > 0) {
    result.metrics[kCpuUtilSimple] =
        100.0 * static_cast<double>(cpu_busy_) / static_cast<double>(cpu_total_);
  }
  if (memory_free_.count > 0) result.metrics[kMemoryFree] = memory_free_.sum / memory_free_.count;
  put_rate(kNetThroughputSent, sent_);
  put_rate(kNetThroughputRecv, received_);
  put_rate(kDiskIops, disk_ios_);
  put_rate(kDiskThroughputRead, disk_read_);
  put_rate(kDiskThroughputWrite, disk_written_);
  for (const auto& [uuid, means] : gpus_) {
    result.gpus.push_back({.uuid = uuid,
                           .gpu_util = means.util.sum / means.util.count,
                           .gpu_free_memory = means.free_memory.sum / means.free_memory.count});
  }
  return result;
}

void MetricsAggregator::Reset() {
  cpu_busy_ = 0;
  cpu_total_ = 0;
  sent_ = received_ = disk_ios_ = disk_read_ = disk_written_ = Rate{};
  memory_free_ = Mean{};
  gpus_.clear();
}

}  // namespace cohort::sampler
