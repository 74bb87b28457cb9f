#pragma once
// Determined's log policies, acted on (experiment config `log_policies`; docs/design/0003):
// every log line of a trial's run is matched against its experiment's policies, and the first
// match of each policy in a run is kept (LogPolicyRecord). What the matches mean when the run
// fails:
//
//   a match of a cancel_retries policy in this run   the trial is not restarted: ERROR
//   a match of an exclude_node policy (any run)      its restarts avoid that agent
//   a policy with no action                          shown with the trial, nothing else
//
// Patterns are RE2 (Go's regexp syntax, as Determined's), matched anywhere in the line (as Go's
// regexp.MatchString), in time linear in the line whatever the pattern: a trial's output is
// untrusted. A policy without a pattern (a default turned off by its name) matches nothing.
//
// Example:
//   auto matcher = LogPolicyMatcher::Create(config.log_policies);
//   for (int i : (*matcher)->Match("RuntimeError: CUDA out of memory")) ... // "CUDA OOM"
//
// Pure; a LogPolicyMatcher is immutable once created, so one may be shared between threads.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cohort/config/experiment_config.h"
#include "wire/trial_bodies.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace cohort::master {

class LogPolicyMatcher {
 public:
  // InvalidArgument naming the policy when a pattern does not compile (the config parser checks
  // them, so only a config stored by an older build can get here).
  static absl::StatusOr<std::shared_ptr<const LogPolicyMatcher>> Create(
      const std::vector<config::LogPolicy>& policies);
  ~LogPolicyMatcher();

  // Indices (into the policies given to Create) of the policies whose pattern matches `line`,
  // ascending; empty for most lines.
  std::vector<int> Match(absl::string_view line) const;
  // How a match of policy `index` is shown: its name, or its pattern when it has none.
  const std::string& label(int index) const { return labels_[index]; }
  wire::LogPolicyAction action(int index) const { return actions_[index]; }
  // True when no policy has a pattern: Match always returns nothing.
  bool empty() const { return patterns_.empty(); }

 private:
  LogPolicyMatcher() = default;

  std::vector<std::string> labels_;
  std::vector<wire::LogPolicyAction> actions_;
  std::vector<std::pair<int, std::unique_ptr<re2::RE2>>> patterns_;  // (policy index, pattern)
};

// Why the run `allocation` must not be restarted: the first match of a cancel_retries policy in
// it among `matches` (the trial's, of all its runs); null when there is none.
const wire::LogPolicyMatch* CancelRetriesMatch(const std::vector<wire::LogPolicyMatch>& matches,
                                               absl::string_view allocation);
// The agents a trial's next runs avoid: where an exclude_node policy matched, in any run.
std::set<std::string> ExcludedAgents(const std::vector<wire::LogPolicyMatch>& matches);

}  // namespace cohort::master
