#pragma once
// SystemSampler: samples the machine's counters at an interval (0.1 s by default) on its own
// thread and emits their averages, one SystemMetrics per period (1 s by default), through a
// callback: what the agent (or a node's local rank 0) runs while a profiled trial's batch is
// inside the profiling window (docs/architecture.md §9). The arithmetic is MetricsAggregator's.
//
// Thread-safety: Start and Stop may be called from any thread, but not concurrently with each
// other or the destructor. The callback runs on the sampler's thread, one call at a time; it
// should return quickly (a slow callback delays the next samples, which are then taken late,
// never in a burst).
//
// Example:
//   SystemSampler sampler({}, std::make_unique<ProcCounterSource>(), RealClock(),
//                         [&](const SystemMetrics& m) { queue.Push(m); });
//   COHORT_RETURN_IF_ERROR(sampler.Start());
//   ...                 // the profiling window
//   sampler.Stop();     // within one interval; emits the partial last period

#include <functional>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "sampler/counter_source.h"
#include "sampler/metrics_aggregator.h"
#include "sampler/system_metrics.h"

namespace cohort::sampler {

struct SystemSamplerOptions {
  absl::Duration interval = absl::Milliseconds(100);  // between samples
  absl::Duration period = absl::Seconds(1);           // between emitted averages
};

class SystemSampler {
 public:
  using Callback = std::function<void(const SystemMetrics&)>;

  // `clock` times the samples and the waits between them (a FakeClock in tests) and must
  // outlive the sampler. Nothing runs until Start().
  SystemSampler(SystemSamplerOptions options, std::unique_ptr<CounterSource> source,
                const Clock& clock, Callback callback);
  // Stops (see Stop).
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  // Takes the first sample at once on a new thread, then one every interval. InvalidArgument
  // when the interval is not positive or the period is shorter than the interval;
  // FailedPrecondition when called a second time (a sampler runs once).
  absl::Status Start();

  // Stops sampling: returns once the thread has ended, which is within one sample (and one
  // callback) of the call, since the wait between samples ends at once. The open period's
  // metrics are emitted first if it has any. Does nothing when not running.
  void Stop();

 private:
  void Run();

  const SystemSamplerOptions options_;
  std::unique_ptr<CounterSource> source_;
  const Clock& clock_;
  const Callback callback_;
  MetricsAggregator aggregator_;  // used by the sampler's thread only
  absl::Notification stop_;
  std::thread thread_;
  bool started_ = false;
};

}  // namespace cohort::sampler
