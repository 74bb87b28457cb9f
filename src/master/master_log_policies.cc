// Part of Master (master.h): acting on log policies (master/experiments/log_policies.h). Every
// batch of log lines an allocation posts is matched against its experiment's policies; the
// first match of each policy in each run is stored and kept in log_policy_matches_, from which
// the exit decision (cancel_retries), the scheduling pass (exclude_node) and the trial's
// description read.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {

absl::Status Master::LoadLogPolicyMatches() {
  COHORT_ASSIGN_OR_RETURN(auto rows, db_->ListLogPolicyMatches());
  absl::MutexLock lock(&mu_);
  for (auto& [trial, match] : rows) {
    std::vector<wire::LogPolicyMatch>& list = log_policy_matches_[trial];
    if (list.size() < wire::kMaxLogPolicyMatches) list.push_back(std::move(match));
  }
  return absl::OkStatus();
}

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

std::string Describe(const wire::LogPolicyMatch& m) {
  return absl::StrCat(
      "log policy \"", m.policy, "\"",
      m.action == wire::LogPolicyAction::kNone ? "" : absl::StrCat(" (", wire::Name(m.action), ")"),
      " matched on agent ", m.agent, m.rank >= 0 ? absl::StrCat(", rank ", m.rank) : "");
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
  if (auto it = log_policy_matches_.find(a.trial_id); it != log_policy_matches_.end()) {
    for (const wire::LogPolicyMatch& m : it->second) {
      if (m.allocation == a.id) context.seen.insert(m.policy);
    }
  }
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
  std::vector<wire::LogPolicyMatch>& list = log_policy_matches_[batch.trial_id];
  for (wire::LogPolicyMatch& m : found) {
    // Bounded: a trial keeps its first kMaxLogPolicyMatches (one per policy and run).
    if (list.size() >= wire::kMaxLogPolicyMatches) break;
    m.time_ms = absl::ToUnixMillis(options_.clock->Now());
    COHORT_RETURN_IF_ERROR(db_->InsertLogPolicyMatch(batch.trial_id, m));
    AppendLogLocked(batch.trial_id, absl::StrCat("master: ", Describe(m)));
    list.push_back(std::move(m));
  }
  return absl::OkStatus();
}

std::set<std::string> Master::ExcludedAgentsLocked(int64_t trial_id) const {
  auto it = log_policy_matches_.find(trial_id);
  return it == log_policy_matches_.end() ? std::set<std::string>{} : ExcludedAgents(it->second);
}

const wire::LogPolicyMatch* Master::CancelRetriesMatchLocked(int64_t trial_id,
                                                             const std::string& allocation) const {
  auto it = log_policy_matches_.find(trial_id);
  return it == log_policy_matches_.end() ? nullptr : CancelRetriesMatch(it->second, allocation);
}

}  // namespace cohort::master
