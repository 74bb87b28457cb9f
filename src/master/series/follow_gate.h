#pragma once
// FollowGate: the long polls that wait for news (a trial's new log lines or series points):
// `cohort trial logs --follow`, the web interface's live charts. A follow polls the database,
// and when it found nothing new waits here until something is stored (Notify) or a second
// passes, then polls again, until its deadline. At most `max_followers` wait at once; more are
// answered at once (their poll runs once as the last), so followers cannot take the request
// threads the agents need.
//
// Thread-safe, with a lock of its own that nothing else is taken under. Callers may hold their
// own locks (the master's) when they call Notify: the gate never calls out under its lock.
//
// Example:
//   COHORT_RETURN_IF_ERROR(gate.FollowUntil(wait, [&](bool last) -> absl::StatusOr<bool> {
//     ... read the database ...;
//     return found_something || last;
//   }));

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"

namespace cohort::master::series {

class FollowGate {
 public:
  explicit FollowGate(int max_followers) : max_followers_(max_followers) {}
  FollowGate(const FollowGate&) = delete;
  FollowGate& operator=(const FollowGate&) = delete;

  // Calls `poll` until it returns true, waiting for news in between, at most `wait` in all;
  // `last` is true on the call it must answer. News that arrives while `poll` runs is not
  // missed: the wait after it returns at once. Unavailable ("the master is shutting down") once
  // Shutdown was called; `poll`'s errors end the follow.
  absl::Status FollowUntil(absl::Duration wait,
                           const std::function<absl::StatusOr<bool>(bool last)>& poll)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Something was stored: every waiting follow polls again.
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  // Every follow waiting now or later answers Unavailable at once. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);
  // Follows waiting now (for monitoring and tests).
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const int max_followers_;
  mutable Mutex mu_;
  CondVar news_;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // Notify calls so far
  int followers_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cohort::master::series
