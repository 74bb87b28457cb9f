#include "common/clock.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace cohort {
namespace {

TEST(ClockTest, AFakeClockSleepEndsOnlyOnceTheClockIsAdvancedPastItsDeadline) {
  FakeClock clock;
  absl::Notification stop, woke;
  std::atomic<bool> reached{false};
  const absl::Time deadline = clock.Now() + absl::Seconds(1);
  std::thread sleeper([&] {
    reached = clock.SleepUntil(deadline, stop);
    woke.Notify();
  });
  clock.Advance(absl::Milliseconds(999));
  // Nothing can end the sleep now but the clock; a short real look says it has not.
  EXPECT_FALSE(woke.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(woke.WaitForNotificationWithTimeout(absl::Seconds(10)));
  sleeper.join();
  EXPECT_TRUE(reached);
}

TEST(ClockTest, AStopNotificationCutsASleepShortAndLaterSleepsReturnAtOnce) {
  FakeClock clock;
  absl::Notification stop, woke;
  std::atomic<bool> reached{true};
  std::thread sleeper([&] {
    reached = clock.SleepFor(absl::Hours(1), stop);
    woke.Notify();
  });
  stop.Notify();
  EXPECT_TRUE(woke.WaitForNotificationWithTimeout(absl::Seconds(10)));
  sleeper.join();
  EXPECT_FALSE(reached);
  EXPECT_FALSE(clock.SleepFor(absl::Hours(1), stop));
  EXPECT_FALSE(RealClock().SleepFor(absl::Hours(1), stop));
}

TEST(ClockTest, TheRealClockSleepsInRealTime) {
  absl::Notification stop;
  const absl::Time start = absl::Now();
  EXPECT_TRUE(RealClock().SleepFor(absl::Milliseconds(30), stop));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
}

}  // namespace
}  // namespace cohort
