// Part of Master (master.h): acting on log policies (master/experiments/log_policies.h). Every
// batch of log lines an allocation posts is matched against its experiment's policies; the
// first match of each policy in each run is stored and kept by logs::PolicyMatches
// (policy_matches_), from which the exit decision (cancel_retries), the scheduling pass
// (exclude_node) and the trial's description read.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

namespace {

// The first line of `batch` matching each policy that has not matched in this run yet.
std::vector<wire::LogPolicyMatch> NewMatches(const LogPolicyMatcher& matcher,
                                             const wire::LogBatch& batch,
                                             std::set<std::string> seen,
                                             const wire::LogPolicyMatch& base) {
  std::vector<wire::LogPolicyMatch> out;
  for (const wire::LogLine& line : batch.lines) {
    for (int index : matcher.Match(line.line)) {
      if (!seen.insert(matcher.label(index)).second) continue;
      wire::LogPolicyMatch m = base;
      m.policy = matcher.label(index);
      m.action = matcher.action(index);
      m.rank = line.rank;
      m.line = line.line;
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Master::LogPolicyContext> Master::LogPolicyContextLocked(
    const Allocation& a, const wire::LogBatch& batch) {
  LogPolicyContext context;
  context.base.allocation = a.id;
  context.base.agent = a.agents[batch.node].first;
  // A running trial is in the in-memory queue: no database read per batch of lines.
  auto queued = queue_.trials().find(a.trial_id);
  int64_t experiment_id = 0;
  if (queued != queue_.trials().end()) {
    experiment_id = queued->second.experiment_id;
  } else {
    COHORT_ASSIGN_OR_RETURN(const TrialRow trial, db_->GetTrial(a.trial_id));
    experiment_id = trial.experiment_id;
  }
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(experiment_id));
  context.matcher = facts.log_policies;
  context.seen = policy_matches_.SeenIn(a.trial_id, a.id);
  return context;
}

std::vector<wire::LogPolicyMatch> Master::MatchLogPolicies(LogPolicyContext context,
                                                           const wire::LogBatch& batch) {
  if (context.matcher == nullptr || context.matcher->empty()) return {};
  return NewMatches(*context.matcher, batch, std::move(context.seen), context.base);
}

absl::Status Master::RecordLogPolicyMatchesLocked(const wire::LogBatch& batch,
                                                  std::vector<wire::LogPolicyMatch> found) {
  if (found.empty()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> notes,
                          policy_matches_.Record(batch.trial_id, std::move(found)));
  for (const std::string& note : notes) AppendLogLocked(batch.trial_id, note);
  return absl::OkStatus();
}

}  // namespace cohort::master
