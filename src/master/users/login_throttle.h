#pragma once
// LoginThrottle: slows down, then refuses, password guessing without letting a stranger lock
// anyone out (docs/security.md, "Users and tokens"). Failed logins are counted over kWindow
// since the last failure, in three ways:
//   * per (user name, address) and per address, which refuse: after kFreeFailures the next
//     try must wait 1, 2, 4, ... 64 s (earlier tries are refused, 429), and from
//     kLockoutFailures on the pair (one address guessing one user) or the address (guessing
//     many users) is refused for kLockout. Neither touches the same user's logins from another
//     address: nobody can lock a user out by failing from somewhere else.
//   * per user name, from every address together, which only slows: past kUserSlowFailures a
//     try for that user is held kUserHold before its password is checked (doubling up to
//     kMaxUserHold), so guessing one account from many addresses is slow, while its owner, from
//     an address of their own, still logs in (a few seconds later).
// A success clears the user's own count and its pair with that address, not the address's, so
// one valid account cannot be used to reset an address that guesses at others. Decisions follow the
// Clock, so tests move a FakeClock instead of sleeping. Memory is bounded: at most kMaxEntries
// entries.
//
// Thread-safe.

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace cohort::master::users {

class LoginThrottle {
 public:
  static constexpr absl::Duration kWindow = absl::Minutes(15);
  static constexpr absl::Duration kLockout = absl::Minutes(15);
  static constexpr int kFreeFailures = 2;
  static constexpr int kLockoutFailures = 10;
  static constexpr int kUserSlowFailures = 10;
  static constexpr absl::Duration kUserHold = absl::Seconds(1);
  static constexpr absl::Duration kMaxUserHold = absl::Seconds(8);
  static constexpr size_t kMaxEntries = 100000;

  explicit LoginThrottle(const Clock* clock) : clock_(clock) {}

  // How long a try for `user` from `address` is held before its password is checked (zero
  // mostly); ResourceExhausted, saying what is throttled and in how many seconds to try again,
  // when the pair or the address is refused now.
  absl::StatusOr<absl::Duration> Check(const std::string& user, const std::string& address)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Counts a failed try; returns the pair's failure count (for the log line).
  int Failed(const std::string& user, const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // Clears the user's counts (every address's pair with it, and the user's own).
  void Succeeded(const std::string& user, const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    int failures = 0;
    absl::Time last_failure;
    absl::Time next_allowed;
  };
  // The entry of `key`, its count reset when its window has passed.
  Entry& EntryLocked(const std::string& key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckLocked(const std::string& key, const std::string& what, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PruneLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* clock_;
  Mutex mu_;
  // "pair:ADDR\nNAME", "address:ADDR" and "user:NAME" (a name holds no newline: it is checked
  // as a safe name before it is stored, and an unknown one only matches itself).
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cohort::master::users
