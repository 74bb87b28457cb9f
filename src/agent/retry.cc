#include "agent/retry.h"

#include <algorithm>

namespace cohort::agent {

absl::StatusOr<nlohmann::json> RetryWhileUnavailable(
    const std::function<absl::StatusOr<nlohmann::json>()>& attempt, const Clock& clock,
    const absl::Notification& stop, RetryPolicy policy) {
  const absl::Time deadline = clock.Now() + policy.patience;
  while (true) {
    absl::StatusOr<nlohmann::json> r = attempt();
    if (r.ok() || !absl::IsUnavailable(r.status()) || clock.Now() >= deadline) return r;
    if (!clock.SleepFor(policy.interval, stop)) return r;
  }
}

absl::Duration RequestTimeout(absl::Duration normal, const absl::Notification* stop) {
  if (stop == nullptr || !stop->HasBeenNotified()) return normal;
  return std::min(normal, kStoppingTimeout);
}

}  // namespace cohort::agent
