#pragma once
// Clock: where the master and the agent read the time for what they decide by it (an agent
// silent too long is lost, a heartbeat is due, a retry backs off), so tests move time by hand
// instead of waiting for it. Blocking waits on condition variables or sockets keep using real
// time: a fake clock decides, it never sleeps.
// RealClock() is thread-safe; FakeClock is thread-safe (an atomic time).
//
// Example (a test):
//   FakeClock clock;
//   MasterOptions options{.clock = &clock};
//   clock.Advance(absl::Seconds(31));  // every agent is now 31 s silent

#include <atomic>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cohort {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// The system's clock (absl::Now); lives for the whole process.
Clock& RealClock();

// A clock that stands still until Advance() (starts at the Unix epoch + 1e9 s, a date in 2001,
// unless told otherwise).
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1000000000))
      : nanos_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }
  void Advance(absl::Duration by) { nanos_ += absl::ToInt64Nanoseconds(by); }

 private:
  std::atomic<int64_t> nanos_;
};

}  // namespace cohort
