#include "master/series/follow_gate.h"

#include <algorithm>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "cohort/status.h"

namespace cohort::master::series {

namespace {
// A wait nobody ends still polls this often (news stored by another master process is not
// notified here).
constexpr absl::Duration kRepoll = absl::Seconds(1);
}  // namespace

absl::Status FollowGate::FollowUntil(absl::Duration wait,
                                     const std::function<absl::StatusOr<bool>(bool last)>& poll) {
  bool following = false;
  int64_t seen = 0;
  {
    MutexLock lock(&mu_);
    following = wait > absl::ZeroDuration() && followers_ < max_followers_;
    if (following) ++followers_;
    seen = generation_;
  }
  absl::Cleanup release = [&] {
    if (!following) return;
    MutexLock lock(&mu_);
    --followers_;
  };
  const absl::Time deadline = absl::Now() + (following ? wait : absl::ZeroDuration());
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool done, poll(absl::Now() >= deadline));
    if (done) return absl::OkStatus();
    MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the master is shutting down");
    if (generation_ == seen) {
      news_.WaitWithDeadline(&mu_, std::min(deadline, absl::Now() + kRepoll));
    }
    if (stopping_) return absl::UnavailableError("the master is shutting down");
    seen = generation_;
  }
}

void FollowGate::Notify() {
  {
    MutexLock lock(&mu_);
    ++generation_;
  }
  news_.SignalAll();
}

void FollowGate::Shutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  news_.SignalAll();
}

int FollowGate::waiting() const {
  MutexLock lock(&mu_);
  return followers_;
}

}  // namespace cohort::master::series
