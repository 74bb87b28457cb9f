#pragma once
// How the agent retries the master while it is away (restarting, or the network down): an
// attempt that fails Unavailable is tried again `interval` later by the agent's Clock, until
// `patience` has passed; any other answer (success, 404, 400, 409, 500) is final. A stopping
// agent (`stop` notified) makes one attempt and no more, so its shutdown takes seconds even
// when the master is gone.
// Thread-safe: the functions keep no state.
//
// A request made once the agent is stopping waits at most kStoppingTimeout (RequestTimeout):
// behind a partition it would otherwise wait out its whole timeout.
//
// Example:
//   client.set_timeout(RequestTimeout(absl::Seconds(30), &stop));
//   absl::StatusOr<Json> r =
//       RetryWhileUnavailable([&] { return client.Post(path, body); }, clock, stop);
//   if (absl::IsUnavailable(r.status())) ...  // away for 10 minutes, or the agent is stopping

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"

namespace cohort::agent {

struct RetryPolicy {
  absl::Duration patience = absl::Minutes(10);  // no retry starts later than this after the first
  absl::Duration interval = absl::Seconds(1);   // between the end of one try and the next
};

// Calls `attempt` until it returns anything but Unavailable, `policy.patience` has passed by
// `clock` since the first call, or `stop` is notified. Returns the last attempt's result.
absl::StatusOr<nlohmann::json> RetryWhileUnavailable(
    const std::function<absl::StatusOr<nlohmann::json>()>& attempt, const Clock& clock,
    const absl::Notification& stop, RetryPolicy policy = {});

// `normal`, or at most kStoppingTimeout once `stop` (may be null: never) is notified.
inline constexpr absl::Duration kStoppingTimeout = absl::Seconds(2);
absl::Duration RequestTimeout(absl::Duration normal, const absl::Notification* stop);

}  // namespace cohort::agent
