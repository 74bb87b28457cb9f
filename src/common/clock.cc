#include "common/clock.h"

namespace cohort {
namespace {

class SystemClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

bool Clock::SleepUntil(absl::Time deadline, const absl::Notification& stop) const {
  while (!stop.HasBeenNotified()) {
    const absl::Duration left = deadline - Now();
    if (left <= absl::ZeroDuration()) return true;
    if (stop.WaitForNotificationWithTimeout(RealWaitSlice(left))) return false;
  }
  return false;
}

Clock& RealClock() {
  static SystemClock* clock = new SystemClock();  // never destroyed: usable during shutdown
  return *clock;
}

}  // namespace cohort
