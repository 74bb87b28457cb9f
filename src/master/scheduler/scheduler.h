#pragma once
// Scheduler: the master's gang scheduler, as a pure function of the cluster's state (no I/O, no
// clock), so every rule is unit-tested (docs/design/0006-cluster.md, seed "Scheduling
// Behavior"). Thread-compatible; the master calls it under its state lock.
//
// Rules:
//  * gang: a task gets all of its slots at once or none;
//  * one agent first: a task that fits in one enabled agent's free slots now goes on the one with
//    the fewest free slots that still fit (best fit; ties: the lower agent id), so that large
//    agents stay free for large tasks;
//  * otherwise whole agents of one size: a group of n = slots / S idle enabled agents that all
//    have S slots, for any agent size S < slots that divides slots (12 slots: three 4-slot
//    agents; 16: two 8s or four 4s). Sizes are never mixed (12 is not 8 + 4: every node of a
//    trial runs the same number of workers). This also serves a task of at most an agent's size
//    when no single agent has room now (8 slots on two idle 4-slot agents while the 8-slot agent
//    is busy), as Determined does;
//  * the group that leaves the most capacity: among the groups that qualify, the one after which
//    the largest task that could still start at once is largest. That task's size is the larger
//    of the most free slots on any one remaining agent and, over the sizes S, S times the
//    remaining idle agents of size S. Ties: fewer agents (the larger size); within a size, the
//    idle agents with the lowest ids. Example: with idle agents of 8, 8, 8, 4, 4, 4 and 4 slots a
//    16-slot task takes the four 4s (24 slots stay placeable, on the three 8s; two 8s would leave
//    16); with 8, 8, 4, 4, 4 and 4 it takes the two 8s (16 either way; fewer agents);
//  * order: priority (lower number first), then submission sequence (FIFO). A task that waits
//    for slots that are busy holds back every later task in that order (no overtaking, so big
//    tasks do not starve); a task that cannot run on the enabled agents however long it waits
//    (12 slots on 8-slot agents; 16 slots with a single 8-slot agent) holds nobody back;
//  * disabled agents take no new tasks and do not count towards what a task could ever get;
//  * a task never goes on an agent in its `excluded_agents` (log policies); when only those
//    could host it, it waits saying so and holds nobody back.
//
// Example:
//   ScheduleResult r = Schedule(agents, queue);
//   for (const Placement& p : r.placements) Start(p);
//   for (const auto& [task, reason] : r.waiting) Describe(task, reason);
//   if (r.blocker) DescribeTheRest(QueuedBehindReason(*r.blocker));

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace cohort::master {

struct AgentState {
  std::string id;
  int slots = 0;  // slots the agent has
  int used = 0;   // slots held by running tasks
  bool enabled = true;
};

struct TaskRequest {
  std::string id;
  int slots = 1;
  int priority = 42;
  int64_t sequence = 0;  // submission order
  // Agents the task must not run on (its trial's exclude_node log policies matched there).
  // When only those could host it, it waits saying so and holds nobody back.
  std::set<std::string> excluded_agents;
};

struct Placement {
  std::string task_id;
  // Agents in node order (node 0 hosts the trial's rendezvous) and the slots taken on each.
  std::vector<std::pair<std::string, int>> agents;
};

// The first task in the scheduler's order that waits for busy slots.
struct Blocker {
  std::string id;
  int priority = 42;
  int64_t sequence = 0;
};

struct ScheduleResult {
  std::vector<Placement> placements;
  // Task id -> why it waits, in plain words; every task that waits is here except those queued
  // behind `blocker` (see there). Waiting for busy slots: "waiting for 8 free slots on
  // one agent: the most free on any agent is 4", "waiting for 3 idle agents of 4 slots: 1 is
  // idle" (several ways: "waiting for A (...) or B (...)"). Never runs as the agents are: "needs
  // 12 slots: not a multiple of the 8 slots per agent", "needs 12 slots: no agent size divides
  // it: agents have 8 or 5 slots", "needs 24 slots: 3 agents of 8, the cluster has 2".
  std::map<std::string, std::string> waiting;
  // Set when a task waits for busy slots: every later task in order that could run otherwise
  // waits behind it (no overtaking) and is left out of `waiting`, which would otherwise hold one
  // sentence per queued task, thousands per pass in a long queue. IsBehind and
  // QueuedBehindReason describe those tasks.
  std::optional<Blocker> blocker;
};

// Whether a task of `priority` and `sequence` comes after `blocker` in the scheduler's order
// (priority, then sequence).
bool IsBehind(const Blocker& blocker, int priority, int64_t sequence);
// Why a task behind `blocker` waits: "queued behind task big (priority 42)".
std::string QueuedBehindReason(const Blocker& blocker);

// Places what can start now. `agents` includes disabled ones (they take no new tasks).
ScheduleResult Schedule(const std::vector<AgentState>& agents,
                        const std::vector<TaskRequest>& queue);

// OK when `slots` is at most the cluster's slots in total (every agent counted, enabled or not,
// busy or not) or no agent has joined yet; otherwise FailedPrecondition with the reason ("needs
// 9 slots but the whole cluster has 8 (1 agent)"): the request is refused at creation. A request
// that fits in total but not in shape is accepted and waits (Schedule says why).
absl::Status Feasible(const std::vector<AgentState>& agents, int slots);

}  // namespace cohort::master
