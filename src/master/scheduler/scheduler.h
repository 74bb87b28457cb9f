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
//  * order: priority (lower number first), then the job queue's position (the experiment's
//    place, which `cohort job update --ahead-of` moves), then submission sequence (FIFO). A task that waits
//    for slots that are busy holds back every later task in that order (no overtaking, so big
//    tasks do not starve); a task that cannot run on the enabled agents however long it waits
//    (12 slots on 8-slot agents; 16 slots with a single 8-slot agent) holds nobody back;
//  * disabled agents take no new tasks and do not count towards what a task could ever get;
//  * a task never goes on an agent in its `excluded_agents` (log policies); when only those
//    could host it, it waits saying so and holds nobody back.
//
// Shared clusters (docs/design/0020-sharing-a-cluster.md; Schedule(ScheduleInput)):
//  * pools: every agent is in one resource pool and a task runs only on its pool's agents;
//    each pool is scheduled on its own, by its own policy (PoolSpec); a task whose pool has no
//    agents waits saying so;
//  * max_slots: a task whose experiment already holds (running, stopping included) more than
//    its max_slots minus the task's slots waits saying so and holds nobody back;
//  * priority policy: the rules above, per pool. With preemption on, the first task that waits
//    for busy slots (the blocker) may preempt running tasks of strictly lower priority (higher
//    number): first it counts the slots of tasks already stopping as free (if it fits then, it
//    waits for them and nothing more is preempted); else it takes the lowest priority first
//    and, within a priority, the most recently submitted first, until it would fit, then gives
//    back any it did not need. If even all of them would not make room, nothing is preempted.
//    The freed slots are reserved for it in the pass, and the tasks behind it in order may each
//    preempt for themselves the same way, until one finds no room even so. The preempted tasks
//    queue again behind them (no overtaking), so they start again only when they fit without
//    displacing them;
//  * fair_share policy: the pool's enabled slots are divided among the experiments with tasks
//    in the pool in proportion to their weights, no experiment getting more than it asks for
//    (the rest goes to the others); an experiment starts tasks while it holds less than its
//    share (lowest held/share first; within an experiment by sequence), then the slots left
//    idle go to anyone (work-conserving). No blocker: every waiting task says why. With
//    preemption on, an experiment below its share whose next task does not fit preempts tasks
//    of experiments above their share (the most over first, newest first) that stay at or
//    above their share, by the same fit-or-nothing rule.
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

inline constexpr char kDefaultPool[] = "default";

struct AgentState {
  std::string id;
  int slots = 0;  // slots the agent has
  int used = 0;   // slots held by running tasks
  bool enabled = true;
  std::string pool = kDefaultPool;  // the resource pool it joined
};

struct TaskRequest {
  std::string id;
  int slots = 1;
  int priority = 42;
  int64_t sequence = 0;  // submission order
  // Agents the task must not run on (its trial's exclude_node log policies matched there).
  // When only those could host it, it waits saying so and holds nobody back.
  std::set<std::string> excluded_agents;
  std::string pool = kDefaultPool;  // its experiment's resources.resource_pool
  int64_t experiment_id = 0;        // for max_slots, fair share and the words of a preemption
  // Its experiment's place in the job queue within the priority (`cohort job update
  // --ahead-of`): the order is priority, then position, then sequence.
  double position = 0;
};

// A task that holds slots now (Schedule(ScheduleInput) may preempt it).
struct RunningTask {
  std::string id;
  int64_t experiment_id = 0;
  std::string pool = kDefaultPool;
  int priority = 42;
  int64_t sequence = 0;
  // Where it runs: (agent, slots), as its Placement had them.
  std::vector<std::pair<std::string, int>> agents;
  // Already told to stop (preempted, paused, killed): its slots come free once it exits.
  bool stopping = false;
  int slots() const;
};

// What an experiment asks of a shared pool.
struct ExperimentShare {
  double weight = 1.0;  // resources.weight (fair share)
  int max_slots = 0;    // resources.max_slots; 0: no cap
};

enum class PoolPolicy { kPriority, kFairShare };
// "priority", "fair_share" (Determined's names).
const char* PoolPolicyName(PoolPolicy policy);

struct PoolSpec {
  PoolPolicy policy = PoolPolicy::kPriority;
  bool preemption = false;
};

// Everything one pass decides from; pools absent from `pools` are scheduled by PoolSpec{}.
struct ScheduleInput {
  std::vector<AgentState> agents;
  std::vector<TaskRequest> queue;
  std::vector<RunningTask> running;
  std::map<int64_t, ExperimentShare> experiments;  // absent: ExperimentShare{}
  std::map<std::string, PoolSpec> pools;
};

// A running task to stop so that a waiting one can start: it checkpoints, stops and queues
// again (not counted against its max_restarts).
struct Preemption {
  std::string task_id;
  std::string reason;  // "preempted by experiment 12 (priority 10)"
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
  std::string pool = kDefaultPool;
  double position = 0;
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
  // Schedule(ScheduleInput): the blocker of each priority pool that has one (`blocker` is then
  // the default pool's), and the tasks to preempt.
  std::map<std::string, Blocker> blockers;
  std::vector<Preemption> preemptions;
};

// Whether a task of `priority` and `sequence` comes after `blocker` in the scheduler's order
// (priority, then sequence).
bool IsBehind(const Blocker& blocker, int priority, int64_t sequence);
// The same with the job queue's position (priority, then position, then sequence).
bool IsBehind(const Blocker& blocker, int priority, double position, int64_t sequence);
// Why a task behind `blocker` waits: "queued behind task big (priority 42)".
std::string QueuedBehindReason(const Blocker& blocker);

// Places what can start now. `agents` includes disabled ones (they take no new tasks).
ScheduleResult Schedule(const std::vector<AgentState>& agents,
                        const std::vector<TaskRequest>& queue);
// The same per pool, with max_slots, the pools' policies and preemption (see the top).
ScheduleResult Schedule(const ScheduleInput& input);

// OK when `slots` is at most the cluster's slots in total (every agent counted, enabled or not,
// busy or not) or no agent has joined yet; otherwise FailedPrecondition with the reason ("needs
// 9 slots but the whole cluster has 8 (1 agent)"): the request is refused at creation. A request
// that fits in total but not in shape is accepted and waits (Schedule says why).
absl::Status Feasible(const std::vector<AgentState>& agents, int slots);

}  // namespace cohort::master
