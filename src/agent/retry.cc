#include "agent/retry.h"

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

absl::StatusOr<nlohmann::json> PostPatiently(client::MasterClient& client, const std::string& path,
                                             const nlohmann::json& body, const Clock& clock,
                                             const absl::Notification& stop, RetryPolicy policy) {
  return RetryWhileUnavailable([&] { return client.Post(path, body); }, clock, stop, policy);
}

}  // namespace cohort::agent
