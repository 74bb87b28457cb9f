#include "master/agents/allocations.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/constant_time.h"

namespace cohort::master {

const char* Name(AllocationState state) {
  switch (state) {
    case AllocationState::kRunning:
      return "running";
    case AllocationState::kRecovering:
      return "recovering";
  }
  return "?";
}

const char* Name(ClaimOutcome outcome) {
  switch (outcome) {
    case ClaimOutcome::kAdopted:
      return "adopted";
    case ClaimOutcome::kKept:
      return "kept";
    case ClaimOutcome::kUnknown:
      return "unknown";
    case ClaimOutcome::kMismatch:
      return "mismatch";
  }
  return "?";
}

bool Allocation::HeardFrom() const {
  for (size_t node = 0; node < agents.size(); ++node) {
    if ((node < claimed.size() && claimed[node]) || (exits[node] && *exits[node] >= 0)) {
      return true;
    }
  }
  return false;
}

bool Allocation::AllExited() const {
  return std::all_of(exits.begin(), exits.end(), [](const auto& e) { return e.has_value(); });
}

bool Allocation::AllExitedOk() const {
  return std::all_of(exits.begin(), exits.end(),
                     [](const auto& e) { return e.has_value() && *e == 0; });
}

Allocation& Allocations::Add(int64_t trial_id, const Placement& placement, std::string token,
                             std::string token_hash) {
  Allocation a;
  a.token = std::move(token);
  a.token_hash = std::move(token_hash);
  a.id = absl::StrCat(trial_id, ".", boot_, ".", next_++);
  a.trial_id = trial_id;
  a.agents = placement.agents;
  a.exits.assign(placement.agents.size(), std::nullopt);
  of_trial_[trial_id] = a.id;
  latest_[trial_id] = a.id;
  const std::string id = a.id;
  return running_[id] = std::move(a);
}

Allocation& Allocations::Restore(int64_t trial_id, const std::string& id, std::string token_hash,
                                 const std::vector<std::pair<std::string, int>>& nodes,
                                 absl::Time recover_by) {
  Allocation a;
  a.id = id;
  a.trial_id = trial_id;
  a.token_hash = std::move(token_hash);
  a.agents = nodes;
  a.exits.assign(nodes.size(), std::nullopt);
  a.state = AllocationState::kRecovering;
  a.claimed.assign(nodes.size(), false);
  a.recover_by = recover_by;
  of_trial_[trial_id] = id;
  latest_[trial_id] = id;
  return running_[id] = std::move(a);
}

ClaimOutcome Allocations::Claim(const std::string& agent, const wire::RunningAllocation& node) {
  Allocation* a = Find(node.allocation);
  if (a == nullptr) return ClaimOutcome::kUnknown;
  const size_t rank = static_cast<size_t>(node.node_rank);
  if (a->trial_id != node.trial_id || rank >= a->agents.size() || a->agents[rank].first != agent ||
      a->agents[rank].second != node.slots || a->exits[rank]) {
    return ClaimOutcome::kMismatch;
  }
  if (a->state == AllocationState::kRunning) return ClaimOutcome::kKept;
  a->claimed[rank] = true;
  bool all = true;
  for (size_t n = 0; n < a->agents.size(); ++n) all = all && (a->claimed[n] || a->exits[n]);
  if (all) a->state = AllocationState::kRunning;
  return ClaimOutcome::kAdopted;
}

std::vector<std::string> Allocations::RecoveryExpired(absl::Time now) const {
  std::vector<std::string> expired;
  for (const auto& [id, a] : running_) {
    if (a.state == AllocationState::kRecovering && a.recover_by <= now) expired.push_back(id);
  }
  return expired;
}

void Allocations::EndRecovery(const std::string& id) {
  Allocation* a = Find(id);
  if (a == nullptr || a->state != AllocationState::kRecovering) return;
  for (size_t n = 0; n < a->agents.size(); ++n) {
    if (!a->claimed[n] && !a->exits[n]) a->exits[n] = -1;
  }
  a->state = AllocationState::kRunning;
}

absl::Status Allocations::CheckToken(const std::string& id, const std::string& token_hash) const {
  const Allocation* a = Find(id);
  if (a == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("allocation ", id, " is not running (it ended, or the master restarted)"));
  }
  if (token_hash.empty() || !ConstantTimeEquals(token_hash, a->token_hash)) {
    return absl::UnauthenticatedError(absl::StrCat("not the token of allocation ", id));
  }
  return absl::OkStatus();
}

Allocation* Allocations::Find(const std::string& id) {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

const Allocation* Allocations::Find(const std::string& id) const {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

const Allocation* Allocations::OfTrial(int64_t trial_id) const {
  auto it = of_trial_.find(trial_id);
  return it == of_trial_.end() ? nullptr : Find(it->second);
}

Allocation* Allocations::OfTrial(int64_t trial_id) {
  auto it = of_trial_.find(trial_id);
  return it == of_trial_.end() ? nullptr : Find(it->second);
}

void Allocations::Remove(const std::string& id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  if (auto t = of_trial_.find(it->second.trial_id); t != of_trial_.end() && t->second == id) {
    of_trial_.erase(t);
  }
  running_.erase(it);
}

absl::Status Allocations::CheckBelongs(const std::string& allocation, int64_t trial_id,
                                       bool latest) const {
  if (!absl::StartsWith(allocation, absl::StrCat(trial_id, "."))) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation ", allocation, " does not belong to trial ", trial_id));
  }
  if (!latest) return absl::OkStatus();
  auto it = latest_.find(trial_id);
  if (it != latest_.end() && it->second != allocation) {
    return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation, " of trial ",
                                                      trial_id, " was superseded by allocation ",
                                                      it->second, ": its reports are ignored"));
  }
  return absl::OkStatus();
}

std::vector<std::string> Allocations::MarkAgentLost(
    const std::string& agent, const std::vector<std::pair<std::string, int>>& keep) {
  std::vector<std::string> touched;
  for (auto& [id, a] : running_) {
    bool hit = false;
    for (size_t node = 0; node < a.agents.size(); ++node) {
      if (a.agents[node].first != agent || a.exits[node]) continue;
      const std::pair<std::string, int> here(id, static_cast<int>(node));
      if (std::find(keep.begin(), keep.end(), here) != keep.end()) continue;
      a.exits[node] = -1;
      hit = true;
    }
    if (hit) touched.push_back(id);
  }
  return touched;
}

}  // namespace cohort::master
