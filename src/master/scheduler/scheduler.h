#pragma once
// Scheduler: the master's gang scheduler, as a pure function of the cluster's state (no I/O, no
// clock), so every rule is unit-tested (docs/design/0006-cluster.md, seed "Scheduling
// Behavior"). Thread-compatible; the master calls it under its state lock.
//
// Rules:
//  * gang: a task gets all of its slots at once or none;
//  * slots <= an agent's size: one agent, best fit (the enabled agent with the fewest free slots
//    that still fit; ties: the lower agent id);
//  * more than an agent's size: only whole idle enabled agents, and only when slots is a
//    multiple of the agent size;
//  * order: priority (lower number first), then submission sequence (FIFO). A task that waits
//    for slots that are busy holds back every later task in that order (no overtaking, so big
//    tasks do not starve); a task that cannot run on the cluster as it is (for example 12 slots
//    on 8-slot agents) holds nobody back.
//
// Example:
//   ScheduleResult r = Schedule(agents, queue);
//   for (const Placement& p : r.placements) Start(p);
//   for (const auto& [task, reason] : r.waiting) Describe(task, reason);

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace cohort::master {

struct AgentState {
  std::string id;
  int slots = 0;       // slots the agent has
  int used = 0;        // slots held by running tasks
  bool enabled = true;
};

struct TaskRequest {
  std::string id;
  int slots = 1;
  int priority = 42;
  int64_t sequence = 0;  // submission order
};

struct Placement {
  std::string task_id;
  // Agents in node order (node 0 hosts the trial's rendezvous) and the slots taken on each.
  std::vector<std::pair<std::string, int>> agents;
};

struct ScheduleResult {
  std::vector<Placement> placements;
  // Task id -> why it waits, in plain words ("waiting for 8 free slots: 4 of 16 are free",
  // "needs 12 slots: not a multiple of the 8 slots per agent").
  std::map<std::string, std::string> waiting;
};

// Places what can start now. `agents` includes disabled ones (they take no new tasks).
ScheduleResult Schedule(const std::vector<AgentState>& agents,
                        const std::vector<TaskRequest>& queue);

// OK when `slots` is at most the cluster's slots in total (every agent counted, enabled or not,
// busy or not) or no agent has joined yet; otherwise FailedPrecondition with the reason ("needs
// 9 slots but the whole cluster has 8 (1 agent)"): the request is refused at creation. A request
// that fits in total but not in shape is accepted and waits (Schedule says why).
absl::Status Feasible(const std::vector<AgentState>& agents, int slots);

}  // namespace cohort::master
