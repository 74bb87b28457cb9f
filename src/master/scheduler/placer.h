#pragma once
// Placer: how the gang scheduler (scheduler.h) fits tasks onto agents, one pool's agents at a
// time: best fit on one agent, else whole idle agents of one size leaving the most capacity,
// and the words for why a task waits or can never run. Internal to src/master/scheduler (the
// rules are stated and tested through Schedule); the policies (priority, fair share,
// preemption) decide the order and what to free, the Placer where a task goes.
// Thread-compatible: one Placer per pass (it keeps a working copy of the free slots).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "master/scheduler/scheduler.h"

namespace cohort::master::placing {

// An agent's free slots, clamped to [0, slots] (a stale `used` cannot make an agent look bigger
// than it is or negative).
int FreeSlots(const AgentState& agent);
// "1 free slot", "3 free slots".
std::string CountOf(int n, const char* singular, const char* plural);
// "a", "a or b", "a, b or c".
std::string JoinOr(const std::vector<std::string>& items);

// One enabled agent as this call sees it: `free` drops as the call places tasks, so a task
// placed earlier in the call is visible to the tasks after it.
struct Candidate {
  const AgentState* agent;
  int free;
  bool idle() const { return free == agent->slots; }
};

// The outcome of trying to place one task whose shape fits the cluster.
struct Attempt {
  std::optional<Placement> placement;
  std::string reason;  // why it waits, when `placement` is empty
};
// Places tasks one at a time on a working copy of the enabled agents' free slots, by the rules
// in scheduler.h: one agent (best fit) when one has room, else whole idle agents of one size.
//
// One size per task: mixing sizes (12 = 8 + 4) would give a trial nodes with different local
// world sizes, which the launcher does not support, and choosing among mixed combinations is a
// packing problem. Among the sizes that qualify, "the most capacity left" is computed exactly:
// the number of distinct sizes is small, so trying each is cheap.
class Placer {
 public:
  // `agents` must outlive the Placer.
  explicit Placer(const std::vector<AgentState>& agents);

  bool HasAgents() const { return !candidates_.empty(); }

  // Why `task` cannot run on the enabled agents as they are, however long it waits; nullopt
  // when it could run once enough slots are free. Such a task holds nobody back.
  std::optional<std::string> WhyNever(const TaskRequest& task) const;

  // Places a task that WhyNever accepted, or says what it waits for.
  Attempt TryPlace(const TaskRequest& task);

 private:
  int Enabled(int size) const;

  int Disabled(int size) const;

  // Idle enabled agents of `size` that `task` may use.
  int Idle(int size, const TaskRequest& task) const;

  // Whether a task with excluded agents could run on the others once they are free: on one
  // agent, or on whole agents of one of `sizes` (its GroupSizes).
  bool FitsOnUsable(const TaskRequest& task, const std::vector<int>& sizes) const;

  // The enabled agent sizes S < slots that divide slots, largest first: the groups (slots / S
  // whole agents of size S) a task of `slots` may run on.
  std::vector<int> GroupSizes(int slots) const;

  // The reason for a task larger than every enabled agent that no group of `sizes` (its
  // GroupSizes) can ever host: no size divides it, or no size has enough enabled agents.
  std::string NeverOnWholeAgents(int slots, const std::vector<int>& sizes) const;

  // The enabled agent with the fewest free slots that still fit `slots` (the first, lowest id,
  // of equally good ones), or null when none has room now.
  Candidate* BestFit(const TaskRequest& task);

  // The largest task that could start at once if the `taken` lowest-id idle agents of `size`
  // that `task` may use were given to it: the most free slots on one remaining agent, or S
  // times the remaining idle agents of a size S, whichever is larger.
  int CapacityAfter(int size, int taken, const TaskRequest& task) const;

  // A group of whole idle agents of one size for `task`, chosen to leave the most capacity
  // (ties: the larger size, so fewer agents), or nullopt when no group is idle now.
  std::optional<Placement> OnWholeAgents(const TaskRequest& task);

  // What a task that WhyNever accepted waits for: every way it could start ("8 free slots on
  // one agent", "2 idle agents of 4 slots") with how far the cluster is from it now.
  std::string WaitReason(const TaskRequest& task) const;

  std::vector<Candidate> candidates_;                      // enabled agents with slots, by id
  std::map<int, int, std::greater<int>> enabled_by_size_;  // size -> enabled agents, largest first
  std::map<int, int> disabled_by_size_;                    // size -> disabled agents (reasons only)
  int largest_ = 0;                                        // the largest enabled agent's size
};

}  // namespace cohort::master::placing
