#pragma once
// Allocations: the runs this master has placed and not yet seen end. An allocation is one run
// of one trial on one or more agents (node 0 hosts the rendezvous); it ends when every node has
// exited (or its agent was lost). Ids are "<trial>.<boot>.<n>": `boot` differs between runs of
// the master, so an agent still running an allocation of an earlier run is never mistaken for
// a new one, and the trial an id names can be checked without a lookup.
//
// A restarted master restores the allocations that ran when it stopped (Restore, from the
// database) as kRecovering: their agents claim their nodes when they register again (Claim), and
// a node claimed is re-adopted, so the trial's processes run on under the same id. What no agent
// claims by the allocation's deadline the master ends (docs/design/0011-...).
//
// Not thread-safe: the Master owns it and calls it under its state lock.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "master/experiments/exit_policy.h"
#include "master/scheduler/scheduler.h"
#include "wire/agent_protocol.h"

namespace cohort::master {

// Where an allocation is on this master run. The only move is kRecovering -> kRunning, when the
// last of its nodes that has not exited is claimed; a kRecovering allocation past its deadline is
// ended by the master (nodes not claimed count as lost).
enum class AllocationState {
  kRunning,     // placed by this master run, or re-adopted from an earlier one
  kRecovering,  // restored after a master restart: waiting for its agents to claim its nodes
};
const char* Name(AllocationState state);

struct Allocation {
  std::string id;
  int64_t trial_id = 0;
  std::vector<std::pair<std::string, int>> agents;  // (agent, slots) in node order
  std::vector<std::optional<int>> exits;            // per node, once it exited (-1: lost)
  StopReason stop = StopReason::kNone;              // kNone: nobody asked it to stop
  std::string token;  // its credential (random, 256 bits); empty when restored from the database
  std::string token_hash;  // the credential's SHA-256 (what is stored and compared)
  AllocationState state = AllocationState::kRunning;
  std::vector<bool> claimed;  // kRecovering: per node, whether its agent claimed it
  absl::Time recover_by = absl::InfiniteFuture();  // kRecovering: the deadline for claims

  bool AllExited() const;
  bool AllExitedOk() const;
  // kRecovering: whether any node was claimed or reported its exit on this master run.
  bool HeardFrom() const;
};

// What becomes of a node an agent says it runs (Allocations::Claim).
enum class ClaimOutcome {
  kAdopted,   // a restored allocation's node: re-adopted, it runs on
  kKept,      // a node this master run already knew on this agent: nothing changes
  kUnknown,   // no such allocation runs here: the agent must stop it
  kMismatch,  // the allocation runs, but not this trial's or this node on this agent, or the
              // node already ended: the agent must stop it
};
const char* Name(ClaimOutcome outcome);

class Allocations {
 public:
  // `boot`: this master run's tag (a few random hex digits).
  explicit Allocations(std::string boot) : boot_(std::move(boot)) {}

  // A new allocation of `trial_id` on the placement's agents, with `token` as its credential;
  // it becomes the trial's latest.
  Allocation& Add(int64_t trial_id, const Placement& placement, std::string token,
                  std::string token_hash);
  // An allocation of an earlier master run, restored from its database row as kRecovering
  // with `recover_by` as the deadline for its agents' claims; it becomes the trial's latest.
  Allocation& Restore(int64_t trial_id, const std::string& id, std::string token_hash,
                      const std::vector<std::pair<std::string, int>>& nodes, absl::Time recover_by);
  // Matches a node `agent` says it runs with what runs here (see ClaimOutcome). kAdopted marks
  // the node claimed, and the allocation kRunning once every node that has not exited is.
  ClaimOutcome Claim(const std::string& agent, const wire::RunningAllocation& node);
  // The kRecovering allocations whose deadline is at or before `now`, by id.
  std::vector<std::string> RecoveryExpired(absl::Time now) const;
  // Ends the recovery of kRecovering allocation `id`: the nodes neither claimed nor exited are
  // marked lost (exit -1), and it is kRunning (what is left of it runs, re-adopted).
  void EndRecovery(const std::string& id);
  // The allocation, or null when it is not running (ended, or of another master run).
  Allocation* Find(const std::string& id);
  const Allocation* Find(const std::string& id) const;
  // The trial's running allocation, or null.
  Allocation* OfTrial(int64_t trial_id);
  const Allocation* OfTrial(int64_t trial_id) const;
  // OK when `token_hash` is the hash of the credential of the running (or recovering)
  // allocation `id` (compared in constant time); NotFound when it does not run;
  // Unauthenticated otherwise.
  absl::Status CheckToken(const std::string& id, const std::string& token_hash) const;
  // Forgets an allocation that has ended (its trial keeps it as its latest).
  void Remove(const std::string& id);

  // Logs and reports name their allocation and trial: the allocation must be one of the
  // trial's (InvalidArgument otherwise), and with `latest` the trial's latest of this master
  // run, so a superseded run cannot move the trial's progress or checkpoint back
  // (FailedPrecondition).
  absl::Status CheckBelongs(const std::string& allocation, int64_t trial_id, bool latest) const;

  // Every running allocation with a node on `agent` that has not exited yet: marks those nodes
  // as lost (exit -1) and returns the allocations' ids. Nodes in `keep` ((allocation, node)
  // pairs the agent has just claimed) are left alone.
  std::vector<std::string> MarkAgentLost(const std::string& agent,
                                         const std::vector<std::pair<std::string, int>>& keep = {});
  const std::map<std::string, Allocation>& running() const { return running_; }

 private:
  std::string boot_;
  int64_t next_ = 1;
  std::map<std::string, Allocation> running_;
  std::map<int64_t, std::string> of_trial_;  // running trial -> its allocation
  std::map<int64_t, std::string> latest_;    // trial -> its latest allocation (this run)
};

}  // namespace cohort::master
