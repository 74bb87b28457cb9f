#pragma once
// PolicyMatches: what the trials' log policies found (Determined's log_policies; the matcher is
// master/experiments/log_policies.h). The first line matching each policy in each run of a trial
// is stored, kept here for the decisions that read it (exclude_node: the scheduler avoids the
// agent; cancel_retries: the exit decision does not restart the trial) and shown in the trial's
// description. A trial keeps at most wire::kMaxLogPolicyMatches, oldest first.
//
// Thread-safe, with a lock of its own under which only the database is called (lock order:
// docs/design/0016-components-and-locks.md); the master calls it with or without its own lock.
//
// Example:
//   PolicyMatches matches(db, clock);
//   COHORT_RETURN_IF_ERROR(matches.Load());
//   std::set<std::string> seen = matches.SeenIn(trial, allocation);
//   COHORT_ASSIGN_OR_RETURN(std::vector<std::string> notes, matches.Record(trial, found));

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/db/database.h"
#include "wire/trial_bodies.h"

namespace cohort::master::logs {

class PolicyMatches {
 public:
  PolicyMatches(Database& db, const Clock& clock) : db_(db), clock_(clock) {}
  PolicyMatches(const PolicyMatches&) = delete;
  PolicyMatches& operator=(const PolicyMatches&) = delete;

  // Reads the stored matches; once, before the master serves.
  absl::Status Load() ABSL_LOCKS_EXCLUDED(mu_);
  // The policies that matched already in the run `allocation` of `trial_id`.
  std::set<std::string> SeenIn(int64_t trial_id, const std::string& allocation) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stores `found` (new first matches of one batch), stamped with the clock, up to the trial's
  // bound; returns a line for the trial's log per match stored ("log policy \"oom\"
  // (cancel_retries) matched on agent a1, rank 0"). An error of the database ends it (what was
  // stored stays).
  absl::StatusOr<std::vector<std::string>> Record(int64_t trial_id,
                                                  std::vector<wire::LogPolicyMatch> found)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The trial's matches, oldest first (its description).
  std::vector<wire::LogPolicyMatch> Of(int64_t trial_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // The agents the trial's runs must avoid (its exclude_node matches).
  std::set<std::string> ExcludedAgents(int64_t trial_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // ExcludedAgents of every trial that has one, under one hold of the lock (a scheduling pass
  // reads it for thousands of queued trials).
  std::map<int64_t, std::set<std::string>> AllExcludedAgents() const ABSL_LOCKS_EXCLUDED(mu_);
  // The first cancel_retries match in the run `allocation` of the trial, if any.
  std::optional<wire::LogPolicyMatch> CancelRetriesMatch(int64_t trial_id,
                                                         const std::string& allocation) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The trial's rows are gone (its experiment was deleted): forgets it.
  void Forget(int64_t trial_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Database& db_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::map<int64_t, std::vector<wire::LogPolicyMatch>> matches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cohort::master::logs
