#pragma once
// AgentRegistry: the agents connected to this master run, as the master sees them: slots and
// what is used, where they are reached, when they were last heard from (by the master's
// Clock), whether a long poll is waiting, and the actions queued for their next poll.
// Registration and enabling are stored in the database by the master; this is the live part,
// rebuilt as agents (re)register after a master restart.
//
// Not thread-safe: AgentManager (agent_manager.h) owns it and calls it under its own lock; each
// agent's long poll waits under that lock on the agent's own condition variable (`wakeup`), so
// an action queued for one agent wakes that agent's poll only, not every agent's.

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/scheduler/scheduler.h"
#include "wire/agent_protocol.h"

namespace cohort::master {

struct AgentLive {
  AgentState state;  // id, slots, used, enabled, pool
  std::string host;
  int port_lo = 29500, port_hi = 29599, next_port = 29500;
  absl::Time last_seen;
  // The agent said it is stopping (AgentManager::Leave): nothing more is placed on it, and it
  // is removed once its nodes have exited.
  bool leaving = false;
  int polling = 0;              // long polls in progress: the agent is there while it waits
  int64_t poll_generation = 0;  // the newest poll; an older one that sees a newer one ends
  std::deque<wire::Action> actions;
  // Notified when an action is queued, a newer poll supersedes the one waiting, the agent
  // registers again or is removed. Shared, so a waiting poll keeps its own reference through a
  // re-registration or a removal.
  std::shared_ptr<CondVar> wakeup = std::make_shared<CondVar>();
};

class AgentRegistry {
 public:
  AgentRegistry(const Clock& clock, absl::Duration timeout) : clock_(clock), timeout_(timeout) {}

  // (Re)creates the agent's live entry: nothing used, no actions queued, seen now; in `pool`.
  AgentLive& Register(const std::string& id, int slots, const std::string& host, int port_lo,
                      int port_hi, bool enabled, const std::string& pool = kDefaultPool);
  // The agent, or null when it is not connected.
  AgentLive* Find(const std::string& id);
  // Marks the agent as heard from now; NotFound ("agent a1 is not registered") otherwise.
  absl::Status Touch(const std::string& id);
  // Queues an action for the agent's next poll and wakes its waiting poll; false when the agent
  // is not connected.
  bool Push(const std::string& id, wire::Action action);
  // The agent's queued actions, emptied.
  wire::ActionBatch TakeActions(AgentLive& agent);
  // "host:port" for a trial's rendezvous on the agent, ports taken round-robin from its range.
  std::string NextChiefAddress(AgentLive& agent);
  // Frees slots a finished allocation held on the agent (if it is still connected).
  void Release(const std::string& id, int slots);
  // Agents silent for longer than the timeout that are not in a long poll right now.
  std::vector<std::string> Expired() const;
  // Forgets the agent, waking its waiting poll (which then finds it gone).
  void Remove(const std::string& id);
  // Wakes every agent's waiting poll (the master is stopping).
  void WakeAll();

  // What the scheduler sees: every connected agent, enabled or not (a leaving one as disabled).
  std::vector<AgentState> States() const;
  const std::map<std::string, AgentLive>& agents() const { return agents_; }
  absl::Duration timeout() const { return timeout_; }

 private:
  const Clock& clock_;
  absl::Duration timeout_;
  std::map<std::string, AgentLive> agents_;
};

}  // namespace cohort::master
