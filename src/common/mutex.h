#pragma once
// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable carrying Abseil's
// thread-safety annotations, so clang checks every lock (tests/thread_safety) while the lock
// behaves as glibc's: a thread that finds it held sleeps at once. absl::Mutex spins first (up to
// about 1500 iterations); on a machine of few cores, a thread spinning for a lock whose holder
// was preempted takes the core the holder needs. On the master's 200-agent bench absl::Mutex
// cost 10-15% more of the master's CPU and doubled the registration burst's p99
// (docs/performance.md, "locks the compiler checks"). The interface is absl's, so code reads the
// same: `MutexLock lock(&mu_);`, `cv_.WaitWithDeadline(&mu_, deadline)`.
//
// Thread-safe, as the standard types.
//
// Example:
//   Mutex mu_;
//   CondVar ready_;
//   bool done_ ABSL_GUARDED_BY(mu_) = false;
//   ...
//   MutexLock lock(&mu_);
//   while (!done_) ready_.Wait(&mu_);

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace cohort {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits release `mu` (held by the caller) while they sleep and hold it again when they return;
// a wait may also end spuriously, so callers wait in a loop over their condition.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // True when the deadline passed (not when woken).
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool timed_out =
        cv_.wait_until(lock, absl::ToChronoTime(deadline)) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return WaitWithDeadline(mu, absl::Now() + timeout);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace cohort
