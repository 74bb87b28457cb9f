#include "master/users/login_throttle.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace cohort::master::users {
namespace {

std::string PairKey(const std::string& user, const std::string& address) {
  return absl::StrCat("pair:", address, "\n", user);
}
std::string AddressKey(const std::string& address) { return "address:" + address; }
std::string UserKey(const std::string& user) { return "user:" + user; }

// How long after failure number `failures` of a pair or an address the next try must wait.
absl::Duration Backoff(int failures) {
  if (failures >= LoginThrottle::kLockoutFailures) return LoginThrottle::kLockout;
  if (failures <= LoginThrottle::kFreeFailures) return absl::ZeroDuration();
  return absl::Seconds(1 << std::min(failures - LoginThrottle::kFreeFailures - 1, 6));
}

// How long a try for a user with `failures` failures (from anywhere) is held.
absl::Duration Hold(int failures) {
  if (failures < LoginThrottle::kUserSlowFailures) return absl::ZeroDuration();
  const int doublings = std::min(failures - LoginThrottle::kUserSlowFailures, 3);
  return std::min(LoginThrottle::kUserHold * (1 << doublings), LoginThrottle::kMaxUserHold);
}

}  // namespace

LoginThrottle::Entry& LoginThrottle::EntryLocked(const std::string& key, absl::Time now) {
  Entry& entry = entries_[key];
  if (entry.failures > 0 && now - entry.last_failure > kWindow && now >= entry.next_allowed) {
    entry = Entry{};
  }
  return entry;
}

absl::Status LoginThrottle::CheckLocked(const std::string& key, const std::string& what,
                                        absl::Time now) {
  auto it = entries_.find(key);
  if (it == entries_.end() || now >= it->second.next_allowed) return absl::OkStatus();
  const int64_t seconds =
      static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(it->second.next_allowed - now)));
  return absl::ResourceExhaustedError(absl::StrCat("too many failed logins ", what, " (",
                                                   it->second.failures, "): try again in ", seconds,
                                                   " s"));
}

absl::StatusOr<absl::Duration> LoginThrottle::Check(const std::string& user,
                                                    const std::string& address) {
  MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  absl::Status status = CheckLocked(PairKey(user, address),
                                    absl::StrCat("for user '", user, "' from ", address), now);
  if (!status.ok()) return status;
  status = CheckLocked(AddressKey(address), absl::StrCat("from ", address), now);
  if (!status.ok()) return status;
  auto it = entries_.find(UserKey(user));
  if (it == entries_.end() || now - it->second.last_failure > kWindow) {
    return absl::ZeroDuration();
  }
  return Hold(it->second.failures);
}

int LoginThrottle::Failed(const std::string& user, const std::string& address) {
  MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  PruneLocked(now);
  int pair_failures = 0;
  for (const std::string& key : {PairKey(user, address), AddressKey(address), UserKey(user)}) {
    Entry& entry = EntryLocked(key, now);
    ++entry.failures;
    entry.last_failure = now;
    // The user's own count only holds tries (Check), it never refuses them.
    if (key != UserKey(user)) entry.next_allowed = now + Backoff(entry.failures);
    if (key == PairKey(user, address)) pair_failures = entry.failures;
  }
  return pair_failures;
}

void LoginThrottle::Succeeded(const std::string& user, const std::string& address) {
  MutexLock lock(&mu_);
  entries_.erase(UserKey(user));
  entries_.erase(PairKey(user, address));
}

void LoginThrottle::PruneLocked(absl::Time now) {
  if (entries_.size() < kMaxEntries) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const bool idle = now - it->second.last_failure > kWindow && now >= it->second.next_allowed;
    it = idle ? entries_.erase(it) : std::next(it);
  }
  // Still full of fresh entries (a flood of names): forget the oldest rather than grow.
  while (entries_.size() >= kMaxEntries) {
    auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.last_failure < b.second.last_failure; });
    entries_.erase(oldest);
  }
}

}  // namespace cohort::master::users
