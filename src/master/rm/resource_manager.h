#pragma once
// ResourceManager: the seam between the master and whatever runs its allocations
// (docs/design/0016-components-and-locks.md, "The resource-manager seam"). Today's
// implementation is the agents' (agents/agent_manager.h: agents register, long-poll for actions
// and post their nodes' output); a second one (Slurm: jobs on a partition) implements the same
// calls, and the tests in resource_manager_conformance.h run unchanged against each.
//
// What the master asks of it, always from the scheduling pass or a request holding the master's
// state lock (so an implementation's own lock is taken after the master's, never before):
//   * Offers: the nodes a pass may place on, with their slots and what is used.
//   * Fits / Start: start an allocation's nodes on a placement a pass computed (one start per
//     node, in node order); the slots are held from Start until Release.
//   * Stop: tell one node of an allocation to stop (preempt: checkpoint first; kill).
//   * Release: the allocation ended (every node exited or was lost): its slots are free.
//   * Restore: after a master restart, an allocation the database says ran holds its slots until
//     its nodes are claimed back (Events::NodeJoined) or it ends (Release).
//   * ExpireLost: the nodes that stopped answering, each removed with the reason.
// What it tells the master (Events), never while holding its own lock: a node joined (again)
// and what it says it runs, a node is leaving, the offers changed. Exits and output do not pass
// through here: every node posts them with its allocation's token to the master's one output
// path (master_outputs.cc), whoever started the node.
//
// Thread-safe: every call may come from any thread.

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "master/scheduler/scheduler.h"
#include "wire/agent_protocol.h"
#include "wire/cluster_bodies.h"

namespace cohort::master::rm {

// A node that stopped answering (ExpireLost): what the master logs to the trials it ran.
struct LostNode {
  std::string where;  // the node (an agent's id)
  std::string why;    // "agent a1 lost (no contact for 30s)"
};

// What a resource manager tells the master. Called without the resource manager's lock held,
// from the thread of the request (or the manager's own thread) that learnt it.
class Events {
 public:
  virtual ~Events() = default;
  // Node `where` joined, or joined again after its own restart or the master's: `claims` are
  // the allocations' nodes it says it runs (re-adopted, or told to stop through Stop), `running`
  // the ids of what it runs when it sends only ids. Any node the master placed on `where` that
  // it does not claim is gone.
  virtual void NodeJoined(const std::string& where,
                          const std::vector<wire::RunningAllocation>& claims,
                          const std::vector<std::string>& running) = 0;
  // Node `where` is going away cleanly: the master stops what runs on it (through Stop); true
  // while a node of an allocation still runs there.
  virtual bool NodeLeaving(const std::string& where) = 0;
  // Slots appeared, were freed, enabled or disabled: a scheduling pass may place more.
  virtual void OffersChanged() = 0;
};

class ResourceManager {
 public:
  virtual ~ResourceManager() = default;

  // Every node a pass may consider, enabled or not (a leaving one as disabled), by id.
  virtual std::vector<AgentState> Offers() const = 0;
  // What of `input.queue` starts now on `input.agents` (this manager's Offers(), read with the
  // master's lock), what running task to preempt for it, and why the rest waits. Called
  // without any lock: a pure function of its argument and the manager's fixed options. Agents:
  // the gang scheduler with the pools' policies (scheduler.h); Slurm: every task whose shape
  // fits the partition, Slurm queueing what has no room (and preempting, if it is set up to).
  virtual ScheduleResult Place(const ScheduleInput& input) const = 0;
  // Whether a task of `slots` can ever run here in `pool` (its experiment's
  // resources.resource_pool; for Slurm a partition), checked when an experiment is created:
  // FailedPrecondition with the reason ("needs 9 slots but the whole cluster has 8"),
  // InvalidArgument for a pool that does not exist here.
  virtual absl::Status Feasible(int slots, const std::string& pool) const = 0;
  // Why `allocation`, started, does not run yet (Slurm: its job is pending, with Slurm's
  // reason); nullopt when it runs, or when this manager's starts run at once.
  virtual std::optional<std::string> Waiting(const std::string& allocation) const = 0;
  // A node this manager launched itself (Slurm: the job's process on each of its nodes) asks
  // for its part of `allocation`, from `host`: its start action. NotFound for an allocation or
  // node this run of the manager does not hold; FailedPrecondition where nodes receive their
  // starts otherwise (agents poll for them).
  virtual absl::StatusOr<wire::StartAction> NodeStart(const std::string& allocation,
                                                      int node_rank,
                                                      const std::string& host) = 0;
  // Whether every node of `placement` is still there, enabled, not in `excluded` and has the
  // slots free (a pass computes placements without the locks; they may be stale).
  virtual bool Fits(const Placement& placement, const std::set<std::string>& excluded) const = 0;
  // Starts allocation `starts[0].allocation` on `placement`: `starts[i]` goes to node i, with
  // chief_addr (node 0's rendezvous) filled in here. FailedPrecondition, with nothing started
  // and nothing held, when a node of the placement is gone.
  virtual absl::Status Start(const Placement& placement, std::vector<wire::StartAction> starts) = 0;
  // Tells node `where` to stop its part of `allocation` (whether or not this run started it:
  // a node may claim an allocation the master does not know). Nothing when `where` is gone.
  virtual void Stop(const std::string& allocation, const std::string& where,
                    wire::StopMode mode) = 0;
  // The allocation ended: the slots it held are free. Nothing for an unknown allocation.
  virtual void Release(const std::string& allocation) = 0;
  // After a master restart: `allocation` of `trial_id` ran on `nodes` ((node, slots) in node
  // order) and holds those slots until Release.
  virtual void Restore(const std::string& allocation, int64_t trial_id,
                       const std::vector<std::pair<std::string, int>>& nodes) = 0;
  // The nodes that stopped answering, removed (their allocations' slots stay held until the
  // master releases them).
  virtual std::vector<LostNode> ExpireLost() = 0;
  // Every slot with the allocation (and trial) holding it, by node and slot.
  virtual wire::SlotList Slots() const = 0;
  // The master stops: what waits (long polls) returns now, and nothing waits again.
  virtual void Shutdown() = 0;
};

}  // namespace cohort::master::rm
