#pragma once
// AgentManager: the resource manager of Cohort's own agents (rm/resource_manager.h). Agents
// register with their slots, heartbeat, long-poll for the actions queued for them (starts and
// stops) and say when they leave; the manager keeps the live part (AgentRegistry), the slots
// each allocation holds, and the agents' rows (registration, enabled) in the database.
//
// Thread-safe, with a lock of its own (mu_): a long poll waits on it, not on the master's, so
// two hundred agents polling never queue behind a scheduling pass. Lock order: the master's
// state lock, then this one; nothing here calls the master (Events) while holding mu_.
// The agents' routes (http/agent_routes.cc) take it directly.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/agents/agent_registry.h"
#include "master/db/database.h"
#include "master/rm/resource_manager.h"
#include "wire/agent_protocol.h"
#include "wire/cluster_bodies.h"

namespace cohort::master {

class AgentManager : public rm::ResourceManager {
 public:
  // `db`, `clock` and `events` outlive the manager. `timeout`: an agent silent this long (and
  // not in a long poll) is lost.
  // `pools`: the resource pools an agent may join (registering into another is refused,
  // naming them).
  AgentManager(Database& db, const Clock& clock, absl::Duration timeout, rm::Events& events,
               std::set<std::string> pools = {kDefaultPool});

  // The agents' own calls (http/agent_routes.cc).
  // (Re)registers the agent: its row is stored (an agent disabled before stays disabled), its
  // live entry made anew (queued actions dropped), its used slots are what the allocations
  // holding slots on it hold, and the master is told what it runs (Events::NodeJoined).
  absl::Status Register(const wire::AgentRegistration& registration) ABSL_LOCKS_EXCLUDED(mu_);
  // NotFound ("agent a1 is not registered (register again)") for an agent not connected.
  absl::Status Heartbeat(const std::string& agent_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The agent is stopping cleanly (SIGTERM): nothing more is placed on it, the master stops
  // what runs there (Events::NodeLeaving), and it is removed at once when nothing runs there
  // any more (it calls again once it has stopped its nodes). True when it is gone; NotFound
  // when it is not connected.
  absl::StatusOr<bool> Leave(const std::string& agent_id) ABSL_LOCKS_EXCLUDED(mu_);
  // The actions queued for the agent, waiting up to `wait` for one (a long poll; the agent
  // counts as alive while it waits). A newer poll of the same agent ends an older one (with no
  // actions), so one agent holds at most one request thread. NotFound when the agent must
  // register (again).
  absl::StatusOr<wire::ActionBatch> WaitForActions(const std::string& agent_id, absl::Duration wait)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Users' and admins' calls.
  // Every agent ever registered, with its slots used and whether it is connected now.
  absl::StatusOr<wire::AgentList> List() ABSL_LOCKS_EXCLUDED(mu_);
  // Stored, and applied to the connected agent; the master is told (Events::OffersChanged).
  absl::Status SetEnabled(const std::string& agent_id, bool enabled) ABSL_LOCKS_EXCLUDED(mu_);
  // Long polls waiting now (tests wait for them to start).
  int WaitingPolls() const ABSL_LOCKS_EXCLUDED(mu_);

  // rm::ResourceManager.
  std::vector<AgentState> Offers() const override ABSL_LOCKS_EXCLUDED(mu_);
  // The gang scheduler (scheduler.h: Schedule, Feasible over Offers()).
  ScheduleResult Place(const ScheduleInput& input) const override;
  absl::Status Feasible(int slots, const std::string& pool) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  // OK for a pool agents may join; InvalidArgument naming the pools otherwise.
  absl::Status CheckPool(const std::string& pool) const;
  // Agents run what they are given at once: nullopt.
  std::optional<std::string> Waiting(const std::string& allocation) const override;
  // FailedPrecondition: agents receive their starts through their polls.
  absl::StatusOr<wire::StartAction> NodeStart(const std::string& allocation, int node_rank,
                                              const std::string& host) override;
  bool Fits(const Placement& placement, const std::set<std::string>& excluded) const override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Start(const Placement& placement, std::vector<wire::StartAction> starts) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Stop(const std::string& allocation, const std::string& where, wire::StopMode mode) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void Release(const std::string& allocation) override ABSL_LOCKS_EXCLUDED(mu_);
  void Restore(const std::string& allocation, int64_t trial_id,
               const std::vector<std::pair<std::string, int>>& nodes) override
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<rm::LostNode> ExpireLost() override ABSL_LOCKS_EXCLUDED(mu_);
  wire::SlotList Slots() const override ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The slots an allocation holds: from Start or Restore to Release.
  struct Held {
    int64_t trial_id = 0;
    std::vector<std::pair<std::string, int>> nodes;  // (agent, slots) in node order
  };
  // Slots the held allocations hold on `agent_id`.
  int HeldOnLocked(const std::string& agent_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Database& db_;
  rm::Events& events_;
  const std::set<std::string> pools_;
  mutable Mutex mu_;
  AgentRegistry registry_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Held> held_ ABSL_GUARDED_BY(mu_);  // by allocation id
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace cohort::master
