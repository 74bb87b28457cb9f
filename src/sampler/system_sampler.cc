#include "sampler/system_sampler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort::sampler {

SystemSampler::SystemSampler(SystemSamplerOptions options, std::unique_ptr<CounterSource> source,
                             const Clock& clock, Callback callback)
    : options_(options),
      source_(std::move(source)),
      clock_(clock),
      callback_(std::move(callback)),
      aggregator_(options.period) {}

SystemSampler::~SystemSampler() { Stop(); }

absl::Status SystemSampler::Start() {
  if (options_.interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("system sampler: interval must be positive, got ",
                     absl::FormatDuration(options_.interval)));
  }
  if (options_.period < options_.interval) {
    return absl::InvalidArgumentError(absl::StrCat(
        "system sampler: period must be at least the interval (",
        absl::FormatDuration(options_.interval), "), got ", absl::FormatDuration(options_.period)));
  }
  if (started_) return absl::FailedPreconditionError("system sampler: already started once");
  started_ = true;
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void SystemSampler::Stop() {
  if (!thread_.joinable()) return;
  stop_.Notify();
  thread_.join();
}

void SystemSampler::Run() {
  absl::Time next = clock_.Now();
  while (true) {
    const absl::Time now = clock_.Now();
    if (std::optional<SystemMetrics> metrics = aggregator_.Add(now, source_->Read())) {
      callback_(*metrics);
    }
    // The next sample is due an interval after this one was; when the source or the callback
    // made us miss it, the missed samples are skipped rather than taken in a burst.
    next += options_.interval;
    if (next <= now) next = now + options_.interval;
    if (!clock_.SleepUntil(next, stop_)) break;
  }
  if (std::optional<SystemMetrics> metrics = aggregator_.Flush()) callback_(*metrics);
}

}  // namespace cohort::sampler
