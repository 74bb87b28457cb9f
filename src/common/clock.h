#pragma once
// Clock: where the master and the agent read the time for what they decide by it (an agent
// silent too long is lost, a heartbeat is due, a retry backs off, a kill's grace is over), and
// how they sleep between retries, so tests move time by hand instead of waiting for it.
// Blocking I/O (sockets, pipes, a long poll's condition variable) keeps using real time: a
// fake clock decides and ends back-off sleeps, it never times a socket.
// RealClock() is thread-safe; FakeClock is thread-safe (an atomic time).
//
// Example (a test):
//   FakeClock clock;
//   MasterOptions options{.clock = &clock};
//   clock.Advance(absl::Seconds(31));  // every agent is now 31 s silent
//
// Example (a retry that a shutdown cuts short):
//   absl::Notification stop;  // Notify()d by the shutdown
//   while (!TryOnce().ok()) {
//     if (!clock.SleepFor(absl::Seconds(1), stop)) break;  // stopping: no more retries
//   }

#include <algorithm>
#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cohort {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;

  // Sleeps until Now() reaches `deadline`, or until `stop` is notified, whichever comes first.
  // Returns true when the deadline was reached, false when `stop` was (at once when it already
  // is). The system clock sleeps in real time; a FakeClock's sleep ends once a test advances
  // it past the deadline.
  bool SleepUntil(absl::Time deadline, const absl::Notification& stop) const;
  bool SleepFor(absl::Duration duration, const absl::Notification& stop) const {
    return SleepUntil(Now() + duration, stop);
  }

 protected:
  // The longest real time a sleep waits before it reads Now() again, `left` being what is left
  // of it by this clock: all of it for the system clock.
  virtual absl::Duration RealWaitSlice(absl::Duration left) const { return left; }
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

 protected:
  // Time moves only when a test advances it: a sleeper looks again every millisecond (real).
  absl::Duration RealWaitSlice(absl::Duration left) const override {
    return std::min(left, absl::Milliseconds(1));
  }

 private:
  std::atomic<int64_t> nanos_;
};

}  // namespace cohort
