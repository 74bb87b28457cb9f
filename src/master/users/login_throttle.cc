#include "master/users/login_throttle.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace cohort::master::users {
namespace {

std::string UserKey(const std::string& user) { return "user:" + user; }
std::string AddressKey(const std::string& address) { return "address:" + address; }

// How long after failure number `failures` the next try must wait.
absl::Duration Backoff(int failures) {
  if (failures >= LoginThrottle::kLockoutFailures) return LoginThrottle::kLockout;
  if (failures <= LoginThrottle::kFreeFailures) return absl::ZeroDuration();
  return absl::Seconds(1 << std::min(failures - LoginThrottle::kFreeFailures - 1, 6));
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

absl::Status LoginThrottle::Check(const std::string& user, const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_->Now();
  absl::Status status = CheckLocked(UserKey(user), absl::StrCat("for user '", user, "'"), now);
  if (!status.ok()) return status;
  return CheckLocked(AddressKey(address), absl::StrCat("from ", address), now);
}

int LoginThrottle::Failed(const std::string& user, const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = clock_->Now();
  PruneLocked(now);
  int user_failures = 0;
  for (const std::string& key : {UserKey(user), AddressKey(address)}) {
    Entry& entry = EntryLocked(key, now);
    ++entry.failures;
    entry.last_failure = now;
    entry.next_allowed = now + Backoff(entry.failures);
    if (key == UserKey(user)) user_failures = entry.failures;
  }
  return user_failures;
}

void LoginThrottle::Succeeded(const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(UserKey(user));
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
