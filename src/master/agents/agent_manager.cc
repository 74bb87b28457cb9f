#include "master/agents/agent_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"

namespace cohort::master {

AgentManager::AgentManager(Database& db, const Clock& clock, absl::Duration timeout,
                           rm::Events& events, std::set<std::string> pools)
    : db_(db), events_(events), pools_(std::move(pools)), registry_(clock, timeout) {}

absl::Status AgentManager::CheckPool(const std::string& pool) const {
  if (pools_.count(pool) > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "resource pool '", pool, "' is not one of this master's: ", absl::StrJoin(pools_, ", "),
      " (its --resource-pools file names them)"));
}

absl::Status AgentManager::Register(const wire::AgentRegistration& registration) {
  COHORT_RETURN_IF_ERROR(CheckPool(registration.resource_pool));
  AgentRow row;
  row.id = registration.id;
  row.slots = registration.slots;
  row.host = registration.host;
  COHORT_RETURN_IF_ERROR(db_.UpsertAgent(row));
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_.ListAgents());
  bool enabled = true;
  for (const AgentRow& k : known) {
    if (k.id == row.id) enabled = k.enabled;
  }
  {
    MutexLock lock(&mu_);
    AgentLive& live = registry_.Register(row.id, row.slots, row.host, registration.port_lo,
                                         registration.port_hi, enabled,
                                         registration.resource_pool);
    live.state.used = HeldOnLocked(row.id);
  }
  COHORT_LOG(INFO) << "agent " << row.id << " registered: " << row.slots << " slots at "
                   << row.host << " in resource pool " << registration.resource_pool;
  // The master re-adopts what it claims, stops the rest and schedules.
  events_.NodeJoined(row.id, registration.allocations, registration.running);
  return absl::OkStatus();
}

absl::Status AgentManager::Heartbeat(const std::string& agent_id) {
  MutexLock lock(&mu_);
  return registry_.Touch(agent_id);
}

absl::StatusOr<bool> AgentManager::Leave(const std::string& agent_id) {
  {
    MutexLock lock(&mu_);
    AgentLive* live = registry_.Find(agent_id);
    if (live == nullptr) {
      return absl::NotFoundError(absl::StrCat("agent ", agent_id, " is not registered"));
    }
    if (!live->leaving) {
      live->leaving = true;  // Offers shows it disabled: no pass places on it any more
      COHORT_LOG(INFO) << "agent " << agent_id << " is stopping: nothing more is placed on it";
    }
  }
  if (events_.NodeLeaving(agent_id)) return false;
  {
    MutexLock lock(&mu_);
    AgentLive* live = registry_.Find(agent_id);
    // Registered again meanwhile (a new process under the same id): that one stays.
    if (live == nullptr || !live->leaving) return live == nullptr;
    registry_.Remove(agent_id);
  }
  COHORT_LOG(INFO) << "agent " << agent_id << " left";
  events_.OffersChanged();
  return true;
}

absl::StatusOr<wire::ActionBatch> AgentManager::WaitForActions(const std::string& agent_id,
                                                               absl::Duration wait) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + wait;
  COHORT_RETURN_IF_ERROR(registry_.Touch(agent_id));
  AgentLive& polled = *registry_.Find(agent_id);
  const int64_t generation = ++polled.poll_generation;
  polled.wakeup->SignalAll();  // an older poll of this agent ends
  while (true) {
    COHORT_RETURN_IF_ERROR(registry_.Touch(agent_id));
    AgentLive& agent = *registry_.Find(agent_id);
    if (agent.poll_generation != generation) return wire::ActionBatch{};  // superseded
    if (!agent.actions.empty() || stopping_ || absl::Now() >= deadline) {
      return registry_.TakeActions(agent);
    }
    ++agent.polling;
    // Its own reference: the agent may re-register or be removed while this waits.
    const std::shared_ptr<CondVar> wakeup = agent.wakeup;
    wakeup->WaitWithDeadline(&mu_, deadline);
    // The agent may have re-registered (or been dropped) while this poll waited.
    if (AgentLive* again = registry_.Find(agent_id); again != nullptr && again->polling > 0) {
      --again->polling;
    }
  }
}

absl::StatusOr<wire::AgentList> AgentManager::List() {
  COHORT_ASSIGN_OR_RETURN(std::vector<AgentRow> known, db_.ListAgents());
  MutexLock lock(&mu_);
  wire::AgentList out;
  for (const AgentRow& k : known) {
    const AgentLive* live = registry_.Find(k.id);
    out.agents.push_back({.id = k.id,
                          .host = k.host,
                          .slots = k.slots,
                          .used = live != nullptr ? live->state.used : 0,
                          .enabled = k.enabled,
                          .connected = live != nullptr,
                          .resource_pool = live != nullptr ? live->state.pool : kDefaultPool});
  }
  return out;
}

absl::Status AgentManager::SetEnabled(const std::string& agent_id, bool enabled) {
  COHORT_RETURN_IF_ERROR(db_.SetAgentEnabled(agent_id, enabled));
  {
    MutexLock lock(&mu_);
    if (AgentLive* live = registry_.Find(agent_id)) live->state.enabled = enabled;
  }
  events_.OffersChanged();
  return absl::OkStatus();
}

int AgentManager::WaitingPolls() const {
  MutexLock lock(&mu_);
  int polls = 0;
  for (const auto& [id, agent] : registry_.agents()) polls += agent.polling;
  return polls;
}

ScheduleResult AgentManager::Place(const ScheduleInput& input) const { return Schedule(input); }

absl::Status AgentManager::Feasible(int slots, const std::string& pool) const {
  COHORT_RETURN_IF_ERROR(CheckPool(pool));
  std::vector<AgentState> in_pool = Offers();
  in_pool.erase(std::remove_if(in_pool.begin(), in_pool.end(),
                               [&pool](const AgentState& a) { return a.pool != pool; }),
                in_pool.end());
  return master::Feasible(in_pool, slots);
}

std::optional<std::string> AgentManager::Waiting(const std::string& /*allocation*/) const {
  return std::nullopt;
}

absl::StatusOr<wire::StartAction> AgentManager::NodeStart(const std::string& allocation,
                                                          int node_rank,
                                                          const std::string& /*host*/) {
  return absl::FailedPreconditionError(
      absl::StrCat("node ", node_rank, " of allocation ", allocation,
                   ": this master runs trials on its agents, which receive their starts through "
                   "their polls"));
}

std::vector<AgentState> AgentManager::Offers() const {
  MutexLock lock(&mu_);
  return registry_.States();
}

bool AgentManager::Fits(const Placement& placement, const std::set<std::string>& excluded) const {
  MutexLock lock(&mu_);
  for (const auto& [agent_id, slots] : placement.agents) {
    const auto it = registry_.agents().find(agent_id);
    if (it == registry_.agents().end()) return false;
    const AgentLive& agent = it->second;
    if (!agent.state.enabled || agent.leaving || excluded.count(agent_id) > 0 ||
        agent.state.slots - agent.state.used < slots) {
      return false;
    }
  }
  return true;
}

absl::Status AgentManager::Start(const Placement& placement,
                                 std::vector<wire::StartAction> starts) {
  if (placement.agents.empty() || starts.size() != placement.agents.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a start of ", starts.size(), " node(s) on ",
                                                   placement.agents.size(), " agent(s)"));
  }
  MutexLock lock(&mu_);
  for (const auto& [agent_id, slots] : placement.agents) {
    if (registry_.Find(agent_id) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("agent ", agent_id, " is gone: allocation ", starts[0].allocation,
                       " was not started"));
    }
  }
  const std::string chief_addr =
      registry_.NextChiefAddress(*registry_.Find(placement.agents[0].first));
  Held& held = held_[starts[0].allocation];
  held.trial_id = starts[0].trial_id;
  held.nodes = placement.agents;
  for (size_t node = 0; node < placement.agents.size(); ++node) {
    const auto& [agent_id, slots] = placement.agents[node];
    registry_.Find(agent_id)->state.used += slots;
    starts[node].chief_addr = chief_addr;
    registry_.Push(agent_id, std::move(starts[node]));  // wakes the agent's poll
  }
  return absl::OkStatus();
}

void AgentManager::Stop(const std::string& allocation, const std::string& where,
                        wire::StopMode mode) {
  MutexLock lock(&mu_);
  registry_.Push(where, wire::StopAction{allocation, mode});  // gone: nothing to tell
}

void AgentManager::Release(const std::string& allocation) {
  MutexLock lock(&mu_);
  const auto it = held_.find(allocation);
  if (it == held_.end()) return;
  for (const auto& [agent_id, slots] : it->second.nodes) registry_.Release(agent_id, slots);
  held_.erase(it);
}

void AgentManager::Restore(const std::string& allocation, int64_t trial_id,
                           const std::vector<std::pair<std::string, int>>& nodes) {
  MutexLock lock(&mu_);
  auto [it, added] = held_.try_emplace(allocation);
  if (!added) return;
  it->second = {trial_id, nodes};
  for (const auto& [agent_id, slots] : nodes) {
    if (AgentLive* live = registry_.Find(agent_id)) live->state.used += slots;
  }
}

std::vector<rm::LostNode> AgentManager::ExpireLost() {
  MutexLock lock(&mu_);
  std::vector<rm::LostNode> lost;
  for (const std::string& id : registry_.Expired()) {
    lost.push_back({id, absl::StrCat("agent ", id, " lost (no contact for ",
                                     absl::FormatDuration(registry_.timeout()), ")")});
    registry_.Remove(id);
  }
  return lost;
}

wire::SlotList AgentManager::Slots() const {
  MutexLock lock(&mu_);
  wire::SlotList out;
  for (const auto& [id, agent] : registry_.agents()) {
    // Per slot used on the agent: the allocation holding it, in allocation id order.
    std::vector<std::pair<std::string, int64_t>> owners;
    for (const auto& [allocation, held] : held_) {
      for (const auto& [agent_id, slots] : held.nodes) {
        if (agent_id != id) continue;
        for (int s = 0; s < slots; ++s) owners.emplace_back(allocation, held.trial_id);
      }
    }
    for (int s = 0; s < agent.state.slots; ++s) {
      wire::SlotEntry slot{.agent = id, .slot = s, .enabled = agent.state.enabled};
      if (s < static_cast<int>(owners.size())) {
        slot.allocation = owners[s].first;
        slot.trial_id = owners[s].second;
      }
      out.slots.push_back(std::move(slot));
    }
  }
  return out;
}

void AgentManager::Shutdown() {
  MutexLock lock(&mu_);
  stopping_ = true;
  registry_.WakeAll();  // every agent's long poll answers now
}

int AgentManager::HeldOnLocked(const std::string& agent_id) const {
  int used = 0;
  for (const auto& [allocation, held] : held_) {
    for (const auto& [agent, slots] : held.nodes) {
      if (agent == agent_id) used += slots;
    }
  }
  return used;
}

}  // namespace cohort::master
