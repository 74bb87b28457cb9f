#pragma once
// LoginThrottle: slows down and then refuses password guessing (docs/security.md, "Users and
// tokens"). Failed logins are counted per user name and per client address, each over a window
// of kWindow since its last failure:
//   failures 1-2:  the next try may come at once;
//   failures 3-9:  the next try must wait 1, 2, 4, ... 64 s (earlier tries are refused);
//   failure 10+:   refused for kLockout.
// A success clears the user's count (not the address's, so one valid account cannot be used to
// reset an address that guesses at others). Decisions follow the Clock, so tests move a
// FakeClock instead of sleeping. Memory is bounded: at most kMaxEntries names and addresses.
//
// Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace cohort::master::users {

class LoginThrottle {
 public:
  static constexpr absl::Duration kWindow = absl::Minutes(15);
  static constexpr absl::Duration kLockout = absl::Minutes(15);
  static constexpr int kFreeFailures = 2;
  static constexpr int kLockoutFailures = 10;
  static constexpr size_t kMaxEntries = 100000;

  explicit LoginThrottle(const Clock* clock) : clock_(clock) {}

  // OK when `user` may try to log in from `address` now; otherwise ResourceExhausted saying
  // which of the two is throttled and in how many seconds to try again.
  absl::Status Check(const std::string& user, const std::string& address);
  // Counts a failed try; returns the failure count of the user (for the log line).
  int Failed(const std::string& user, const std::string& address);
  void Succeeded(const std::string& user);

 private:
  struct Entry {
    int failures = 0;
    absl::Time last_failure;
    absl::Time next_allowed;
  };
  // The entry of `key`, its count reset when its window has passed.
  Entry& EntryLocked(const std::string& key, absl::Time now);
  absl::Status CheckLocked(const std::string& key, const std::string& what, absl::Time now);
  void PruneLocked(absl::Time now);

  const Clock* clock_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // "user:NAME" and "address:ADDR"
};

}  // namespace cohort::master::users
