#pragma once
// Allocations: the runs this master has placed and not yet seen end. An allocation is one run
// of one trial on one or more agents (node 0 hosts the rendezvous); it ends when every node has
// exited (or its agent was lost). Ids are "<trial>.<boot>.<n>": `boot` differs between runs of
// the master, so an agent still running an allocation of an earlier run is never mistaken for
// a new one, and the trial an id names can be checked without a lookup.
//
// Not thread-safe: the Master owns it and calls it under its state lock.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "master/experiments/exit_policy.h"
#include "master/scheduler/scheduler.h"

namespace cohort::master {

struct Allocation {
  std::string id;
  int64_t trial_id = 0;
  std::vector<std::pair<std::string, int>> agents;  // (agent, slots) in node order
  std::vector<std::optional<int>> exits;            // per node, once it exited (-1: lost)
  StopReason stop = StopReason::kNone;              // kNone: nobody asked it to stop
  std::string token;  // its credential (random, 256 bits): only its own reports carry it

  bool AllExited() const;
  bool AllExitedOk() const;
};

class Allocations {
 public:
  // `boot`: this master run's tag (a few random hex digits).
  explicit Allocations(std::string boot) : boot_(std::move(boot)) {}

  // A new allocation of `trial_id` on the placement's agents, with `token` as its credential;
  // it becomes the trial's latest.
  Allocation& Add(int64_t trial_id, const Placement& placement, std::string token);
  // The allocation, or null when it is not running (ended, or of another master run).
  Allocation* Find(const std::string& id);
  const Allocation* Find(const std::string& id) const;
  // The trial's running allocation, or null.
  Allocation* OfTrial(int64_t trial_id);
  const Allocation* OfTrial(int64_t trial_id) const;
  // OK when `token` is the credential of the running allocation `id` (compared in constant
  // time); NotFound when it does not run; Unauthenticated otherwise.
  absl::Status CheckToken(const std::string& id, const std::string& token) const;
  // Forgets an allocation that has ended (its trial keeps it as its latest).
  void Remove(const std::string& id);

  // Logs and reports name their allocation and trial: the allocation must be one of the
  // trial's (InvalidArgument otherwise), and with `latest` the trial's latest of this master
  // run, so a superseded run cannot move the trial's progress or checkpoint back
  // (FailedPrecondition).
  absl::Status CheckBelongs(const std::string& allocation, int64_t trial_id, bool latest) const;

  // Every running allocation with a node on `agent` that has not exited yet: marks those nodes
  // as lost (exit -1) and returns the allocations' ids.
  std::vector<std::string> MarkAgentLost(const std::string& agent);
  // Per slot used on `agent`: the (allocation, trial) holding it, in allocation id order.
  std::vector<std::pair<std::string, int64_t>> SlotOwners(const std::string& agent) const;
  const std::map<std::string, Allocation>& running() const { return running_; }

 private:
  std::string boot_;
  int64_t next_ = 1;
  std::map<std::string, Allocation> running_;
  std::map<int64_t, std::string> of_trial_;  // running trial -> its allocation
  std::map<int64_t, std::string> latest_;    // trial -> its latest allocation (this run)
};

}  // namespace cohort::master
