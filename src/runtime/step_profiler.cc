#include "runtime/step_profiler.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/logging.h"

namespace cohort::runtime {

namespace fs = std::filesystem;

StepProfiler::StepProfiler(StepProfilerOptions options) : options_(std::move(options)) {
  if (options_.run_dir.empty()) options_.enabled = false;
}

bool StepProfiler::Profiles(int64_t batch) const {
  if (!options_.enabled || failed_) return false;
  const int64_t n = batch + 1;
  return n >= options_.begin_on_batch &&
         (!options_.end_after_batch || n <= *options_.end_after_batch);
}

void StepProfiler::Begin(int64_t batch, absl::Time start) {
  active_ = Profiles(batch);
  if (!active_) return;
  start_ = start;
  record_ = {.rank = options_.rank,
             .batch = batch + 1,  // the wire's batch numbers start at 1
             .time = absl::ToDoubleSeconds(start - absl::UnixEpoch()),
             .phases = {},
             .buckets = {}};
}

int64_t StepProfiler::Micros(absl::Time t) const {
  return std::clamp<int64_t>(absl::ToInt64Microseconds(t - start_), 0, wire::kMaxSpanMicros);
}

void StepProfiler::Phase(absl::string_view name, absl::Time start, absl::Time end) {
  if (!active_ || record_.phases.size() >= wire::kMaxStepPhases) return;
  // Both ends rounded down alike, so a span inside another stays inside it.
  const int64_t begin_us = Micros(start);
  record_.phases.push_back(
      {std::string(name), begin_us, std::max<int64_t>(0, Micros(end) - begin_us)});
}

void StepProfiler::Buckets(const std::vector<BucketTiming>& buckets) {
  if (!active_) return;
  for (const BucketTiming& b : buckets) {
    if (record_.buckets.size() >= wire::kMaxStepBuckets) break;
    const int64_t begin_us = Micros(b.start);
    record_.buckets.push_back(
        {b.bucket, b.bytes, begin_us, std::max<int64_t>(0, Micros(b.end) - begin_us)});
  }
}

std::string StepProfiler::path() const {
  return (fs::path(options_.run_dir) / wire::StepProfilePath(options_.rank)).string();
}

void StepProfiler::End() {
  if (!active_) return;
  active_ = false;
  if (!out_.is_open()) {
    std::error_code ec;
    fs::create_directories(fs::path(path()).parent_path(), ec);
    out_.open(path(), std::ios::app);
  }
  // One line per batch, flushed, so the agent forwards it while the trial runs.
  out_ << record_.ToJson().dump() << '\n';
  out_.flush();
  if (!out_) {
    failed_ = true;
    COHORT_LOG(WARNING) << "rank " << options_.rank << ": profiling: cannot write " << path()
                        << "; the step timeline of this rank stops here (training goes on)";
  }
}

}  // namespace cohort::runtime
