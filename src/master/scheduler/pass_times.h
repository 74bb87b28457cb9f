#pragma once
// PassTimes: how long the scheduler's passes take (master_scheduling.cc), for monitoring
// (/metrics) and the master's load benchmark: every pass counted and summed, and the durations
// of the last kWindow passes kept for their quantiles. No clock of its own: the caller times.
// Thread-safe.
//
// Example:
//   const absl::Time start = absl::Now();
//   ... one pass ...
//   pass_times.Add(absl::Now() - start);
//   PassTimes::Summary s = pass_times.Get();  // s.p99_seconds ...

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace cohort::master {

class PassTimes {
 public:
  static constexpr size_t kWindow = 1000;

  struct Summary {
    int64_t passes = 0;        // since the master started
    double total_seconds = 0;  // their sum
    double p50_seconds = 0;    // over the last kWindow passes (0 when none)
    double p99_seconds = 0;
    double max_seconds = 0;
  };

  void Add(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_) {
    const double seconds = absl::ToDoubleSeconds(d);
    MutexLock lock(&mu_);
    ++passes_;
    total_ += seconds;
    recent_.push_back(seconds);
    if (recent_.size() > kWindow) recent_.pop_front();
  }

  Summary Get() const ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<double> sorted;
    Summary s;
    {
      MutexLock lock(&mu_);
      s.passes = passes_;
      s.total_seconds = total_;
      sorted.assign(recent_.begin(), recent_.end());
    }
    if (sorted.empty()) return s;
    std::sort(sorted.begin(), sorted.end());
    auto at = [&](double q) {
      return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
    };
    s.p50_seconds = at(0.5);
    s.p99_seconds = at(0.99);
    s.max_seconds = sorted.back();
    return s;
  }

 private:
  mutable Mutex mu_;
  int64_t passes_ ABSL_GUARDED_BY(mu_) = 0;
  double total_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<double> recent_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cohort::master
