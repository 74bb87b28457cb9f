#include "master/logs/policy_matches.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/experiments/log_policies.h"

namespace cohort::master::logs {
namespace {

std::string Describe(const wire::LogPolicyMatch& m) {
  return absl::StrCat(
      "log policy \"", m.policy, "\"",
      m.action == wire::LogPolicyAction::kNone ? "" : absl::StrCat(" (", wire::Name(m.action), ")"),
      " matched on agent ", m.agent, m.rank >= 0 ? absl::StrCat(", rank ", m.rank) : "");
}

}  // namespace

absl::Status PolicyMatches::Load() {
  COHORT_ASSIGN_OR_RETURN(auto rows, db_.ListLogPolicyMatches());
  MutexLock lock(&mu_);
  for (auto& [trial, match] : rows) {
    std::vector<wire::LogPolicyMatch>& list = matches_[trial];
    if (list.size() < wire::kMaxLogPolicyMatches) list.push_back(std::move(match));
  }
  return absl::OkStatus();
}

std::set<std::string> PolicyMatches::SeenIn(int64_t trial_id, const std::string& allocation) const {
  std::set<std::string> seen;
  MutexLock lock(&mu_);
  if (auto it = matches_.find(trial_id); it != matches_.end()) {
    for (const wire::LogPolicyMatch& m : it->second) {
      if (m.allocation == allocation) seen.insert(m.policy);
    }
  }
  return seen;
}

absl::StatusOr<std::vector<std::string>> PolicyMatches::Record(
    int64_t trial_id, std::vector<wire::LogPolicyMatch> found) {
  std::vector<std::string> notes;
  if (found.empty()) return notes;
  MutexLock lock(&mu_);
  std::vector<wire::LogPolicyMatch>& list = matches_[trial_id];
  for (wire::LogPolicyMatch& m : found) {
    // Bounded: a trial keeps its first kMaxLogPolicyMatches (one per policy and run).
    if (list.size() >= wire::kMaxLogPolicyMatches) break;
    m.time_ms = absl::ToUnixMillis(clock_.Now());
    COHORT_RETURN_IF_ERROR(db_.InsertLogPolicyMatch(trial_id, m));
    notes.push_back(absl::StrCat("master: ", Describe(m)));
    list.push_back(std::move(m));
  }
  return notes;
}

std::vector<wire::LogPolicyMatch> PolicyMatches::Of(int64_t trial_id) const {
  MutexLock lock(&mu_);
  auto it = matches_.find(trial_id);
  return it == matches_.end() ? std::vector<wire::LogPolicyMatch>{} : it->second;
}

std::set<std::string> PolicyMatches::ExcludedAgents(int64_t trial_id) const {
  MutexLock lock(&mu_);
  auto it = matches_.find(trial_id);
  return it == matches_.end() ? std::set<std::string>{} : master::ExcludedAgents(it->second);
}

std::map<int64_t, std::set<std::string>> PolicyMatches::AllExcludedAgents() const {
  std::map<int64_t, std::set<std::string>> out;
  MutexLock lock(&mu_);
  for (const auto& [trial_id, matches] : matches_) {
    std::set<std::string> excluded = master::ExcludedAgents(matches);
    if (!excluded.empty()) out.emplace(trial_id, std::move(excluded));
  }
  return out;
}

std::optional<wire::LogPolicyMatch> PolicyMatches::CancelRetriesMatch(
    int64_t trial_id, const std::string& allocation) const {
  MutexLock lock(&mu_);
  auto it = matches_.find(trial_id);
  if (it == matches_.end()) return std::nullopt;
  const wire::LogPolicyMatch* match = master::CancelRetriesMatch(it->second, allocation);
  return match == nullptr ? std::nullopt : std::optional<wire::LogPolicyMatch>(*match);
}

void PolicyMatches::Forget(int64_t trial_id) {
  MutexLock lock(&mu_);
  matches_.erase(trial_id);
}

}  // namespace cohort::master::logs
