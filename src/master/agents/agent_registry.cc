#include "master/agents/agent_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort::master {

AgentLive& AgentRegistry::Register(const std::string& id, int slots, const std::string& host,
                                   int port_lo, int port_hi, bool enabled,
                                   const std::string& pool) {
  AgentLive& live = agents_[id];
  const std::shared_ptr<CondVar> wakeup = live.wakeup;  // a poll may wait on it
  live = AgentLive{};
  live.wakeup = wakeup;
  live.wakeup->SignalAll();  // the poll of the agent's previous registration ends
  live.state = {id, slots, 0, enabled, pool};
  live.host = host;
  live.port_lo = port_lo;
  live.port_hi = std::max(port_lo, port_hi);
  live.next_port = port_lo;
  live.last_seen = clock_.Now();
  return live;
}

AgentLive* AgentRegistry::Find(const std::string& id) {
  auto it = agents_.find(id);
  return it == agents_.end() ? nullptr : &it->second;
}

absl::Status AgentRegistry::Touch(const std::string& id) {
  AgentLive* agent = Find(id);
  if (agent == nullptr) {
    return absl::NotFoundError(absl::StrCat("agent ", id, " is not registered (register again)"));
  }
  agent->last_seen = clock_.Now();
  return absl::OkStatus();
}

bool AgentRegistry::Push(const std::string& id, wire::Action action) {
  AgentLive* agent = Find(id);
  if (agent == nullptr) return false;
  agent->actions.push_back(std::move(action));
  agent->wakeup->SignalAll();
  return true;
}

void AgentRegistry::Remove(const std::string& id) {
  auto it = agents_.find(id);
  if (it == agents_.end()) return;
  it->second.wakeup->SignalAll();
  agents_.erase(it);
}

void AgentRegistry::WakeAll() {
  for (auto& [id, agent] : agents_) agent.wakeup->SignalAll();
}

wire::ActionBatch AgentRegistry::TakeActions(AgentLive& agent) {
  wire::ActionBatch batch;
  for (wire::Action& a : agent.actions) batch.actions.push_back(std::move(a));
  agent.actions.clear();
  return batch;
}

std::string AgentRegistry::NextChiefAddress(AgentLive& agent) {
  const int port = agent.next_port;
  agent.next_port = agent.next_port >= agent.port_hi ? agent.port_lo : agent.next_port + 1;
  return absl::StrCat(agent.host, ":", port);
}

void AgentRegistry::Release(const std::string& id, int slots) {
  if (AgentLive* agent = Find(id)) agent->state.used = std::max(0, agent->state.used - slots);
}

std::vector<std::string> AgentRegistry::Expired() const {
  const absl::Time now = clock_.Now();
  std::vector<std::string> lost;
  for (const auto& [id, agent] : agents_) {
    if (agent.polling == 0 && now - agent.last_seen > timeout_) lost.push_back(id);
  }
  return lost;
}

std::vector<AgentState> AgentRegistry::States() const {
  std::vector<AgentState> states;
  for (const auto& [id, agent] : agents_) {
    states.push_back(agent.state);
    if (agent.leaving) states.back().enabled = false;
  }
  return states;
}

}  // namespace cohort::master
