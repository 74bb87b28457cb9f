#include "common/clock.h"

namespace cohort {
namespace {

class SystemClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

Clock& RealClock() {
  static SystemClock* clock = new SystemClock();  // never destroyed: usable during shutdown
  return *clock;
}

}  // namespace cohort
