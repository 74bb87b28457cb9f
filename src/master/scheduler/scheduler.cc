#include "master/scheduler/scheduler.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort::master {
namespace {

constexpr char kNoAgents[] = "no agents are connected (or all are disabled)";

// An agent's free slots, clamped to [0, slots] so a stale `used` (a task that outlived a shrunk
// agent, say) cannot make an agent look bigger than it is or negative.
int FreeSlots(const AgentState& agent) {
  return std::clamp(agent.slots - agent.used, 0, std::max(agent.slots, 0));
}

std::string CountOf(int n, const char* singular, const char* plural) {
  return absl::StrCat(n, " ", n == 1 ? singular : plural);
}

// Appended to reasons about tasks larger than one agent when the agents differ in size, so that
// a user with 8- and 4-slot agents learns why 12 slots do not become 8 + 4.
std::string LargestOnlyNote(bool mixed_sizes, int size) {
  if (!mixed_sizes) return "";
  return absl::StrCat(" (a task larger than one agent runs only on the largest agents, of ", size,
                      " slots)");
}

std::string NeedsAgentsReason(int slots, int needed, int size, int have) {
  return absl::StrCat("needs ", slots, " slots: ", needed, " agents of ", size,
                      ", the cluster has ", have);
}

// One enabled agent as this call sees it: `free` drops as the call places tasks, so a task
// placed earlier in the call is visible to the tasks after it.
struct Candidate {
  const AgentState* agent;
  int free;
};

// The outcome of trying to place one task whose shape fits the cluster.
struct Attempt {
  std::optional<Placement> placement;
  std::string reason;  // why it waits, when `placement` is empty
};

// Places tasks one at a time on a working copy of the enabled agents' free slots.
//
// Heterogeneous clusters: a task of at most the largest enabled agent's size goes on any one
// agent (best fit). A larger task runs only on whole idle agents of that largest size S and
// only when slots is a multiple of S. Mixing sizes (12 = 8 + 4) would give a trial nodes with
// different local world sizes, which the launcher does not support, and choosing among mixed
// combinations is a packing problem; one size keeps the rule predictable and easy to explain.
class Placer {
 public:
  explicit Placer(const std::vector<AgentState>& agents) {
    for (const AgentState& agent : agents) {
      // An agent with no slots can host nothing; treating it as absent keeps S > 0 below.
      if (agent.enabled && agent.slots > 0) candidates_.push_back({&agent, FreeSlots(agent)});
    }
    // Id order makes ties (best fit) and node order (whole agents) follow the lower id.
    std::sort(candidates_.begin(), candidates_.end(),
              [](const Candidate& a, const Candidate& b) { return a.agent->id < b.agent->id; });
    for (const Candidate& c : candidates_) largest_ = std::max(largest_, c.agent->slots);
    for (const Candidate& c : candidates_) {
      if (c.agent->slots == largest_) {
        ++largest_count_;
      } else {
        mixed_sizes_ = true;
      }
    }
    for (const AgentState& agent : agents) {
      if (!agent.enabled && agent.slots == largest_) ++disabled_of_largest_;
    }
  }

  bool HasAgents() const { return !candidates_.empty(); }

  // Why `task` cannot run on the enabled agents as they are, however long it waits; nullopt
  // when it could run once enough slots are free. Such a task holds nobody back.
  std::optional<std::string> WhyNever(const TaskRequest& task) const {
    if (task.slots < 1) {
      return absl::StrCat("needs at least 1 slot, asked for ", task.slots);
    }
    if (task.slots <= largest_) return std::nullopt;
    if (task.slots % largest_ != 0) {
      return absl::StrCat("needs ", task.slots, " slots: not a multiple of the ", largest_,
                          " slots per agent", LargestOnlyNote(mixed_sizes_, largest_));
    }
    const int needed = task.slots / largest_;
    if (largest_count_ < needed) {
      // Disabled agents do not count: waiting for an operator to re-enable one would stall
      // every task behind this one for an unbounded time.
      std::string disabled;
      if (disabled_of_largest_ > 0) {
        disabled = absl::StrCat(" enabled (", disabled_of_largest_, " more disabled)");
      }
      return absl::StrCat(NeedsAgentsReason(task.slots, needed, largest_, largest_count_), disabled,
                          LargestOnlyNote(mixed_sizes_, largest_));
    }
    return std::nullopt;
  }

  // Places a task that WhyNever accepted, or says what it waits for.
  Attempt TryPlace(const TaskRequest& task) {
    return task.slots <= largest_ ? OnOneAgent(task) : OnWholeAgents(task);
  }

 private:
  Attempt OnOneAgent(const TaskRequest& task) {
    Candidate* best = nullptr;
    int most_free = 0;
    for (Candidate& c : candidates_) {
      most_free = std::max(most_free, c.free);
      // Strict `<` keeps the first (lowest id) of equally good agents.
      if (c.free >= task.slots && (best == nullptr || c.free < best->free)) best = &c;
    }
    if (best == nullptr) {
      return {std::nullopt,
              absl::StrCat("waiting for ", CountOf(task.slots, "free slot", "free slots"),
                           " on one agent: the most free on any agent is ", most_free)};
    }
    best->free -= task.slots;
    return {Placement{task.id, {{best->agent->id, task.slots}}}, ""};
  }

  Attempt OnWholeAgents(const TaskRequest& task) {
    const int needed = task.slots / largest_;
    std::vector<Candidate*> idle;
    for (Candidate& c : candidates_) {
      if (c.agent->slots == largest_ && c.free == largest_) idle.push_back(&c);
    }
    if (static_cast<int>(idle.size()) < needed) {
      const int n = static_cast<int>(idle.size());
      return {std::nullopt, absl::StrCat("waiting for ", needed, " idle agents of ", largest_,
                                         " slots: ", n, n == 1 ? " is idle" : " are idle")};
    }
    Placement placement{task.id, {}};
    for (int i = 0; i < needed; ++i) {
      idle[i]->free = 0;
      placement.agents.emplace_back(idle[i]->agent->id, largest_);
    }
    return {std::move(placement), ""};
  }

  std::vector<Candidate> candidates_;  // enabled agents with slots, by id
  int largest_ = 0;                    // S: the largest enabled agent's size
  int largest_count_ = 0;              // enabled agents of size S, busy or not
  int disabled_of_largest_ = 0;        // disabled agents of size S (for reasons only)
  bool mixed_sizes_ = false;           // some enabled agent is smaller than S
};

}  // namespace

ScheduleResult Schedule(const std::vector<AgentState>& agents,
                        const std::vector<TaskRequest>& queue) {
  ScheduleResult result;
  std::vector<const TaskRequest*> order;
  order.reserve(queue.size());
  for (const TaskRequest& task : queue) order.push_back(&task);
  // Stable, so tasks equal in both keys keep the caller's order.
  std::stable_sort(order.begin(), order.end(), [](const TaskRequest* a, const TaskRequest* b) {
    return std::make_pair(a->priority, a->sequence) < std::make_pair(b->priority, b->sequence);
  });

  Placer placer(agents);
  if (!placer.HasAgents()) {
    for (const TaskRequest* task : order) result.waiting[task->id] = kNoAgents;
    return result;
  }

  // The first task that waits for busy slots; every later task queues behind it, so a big task
  // is not starved by a stream of small ones that fit into the gaps. The cost is idle slots
  // while it waits (no backfilling: it would need task durations, which we do not know).
  const TaskRequest* blocker = nullptr;
  for (const TaskRequest* task : order) {
    // A task that can never run says so even behind a blocker: "queued behind" would suggest
    // that waiting helps.
    if (std::optional<std::string> never = placer.WhyNever(*task)) {
      result.waiting[task->id] = *std::move(never);
      continue;
    }
    if (blocker != nullptr) {
      result.waiting[task->id] =
          absl::StrCat("queued behind task ", blocker->id, " (priority ", blocker->priority, ")");
      continue;
    }
    Attempt attempt = placer.TryPlace(*task);
    if (attempt.placement) {
      result.placements.push_back(*std::move(attempt.placement));
    } else {
      result.waiting[task->id] = std::move(attempt.reason);
      blocker = task;
    }
  }
  return result;
}

absl::Status Feasible(const std::vector<AgentState>& agents, int slots) {
  if (slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("slots must be at least 1, got ", slots));
  }
  // Every agent counts, enabled or not, busy or not: the question is whether the request could
  // ever fit in the cluster, and a disabled agent may be enabled again. A request that fits in
  // total but not in shape (12 slots on 8-slot agents) is accepted and waits, saying why
  // (Schedule), since agents of another size may join.
  int total = 0, count = 0;
  for (const AgentState& agent : agents) {
    if (agent.slots < 1) continue;
    total += agent.slots;
    ++count;
  }
  if (count == 0 || slots <= total) return absl::OkStatus();  // no agents yet: they may join
  return absl::FailedPreconditionError(absl::StrCat(
      "needs ", slots, " slots but the whole cluster has ", total, " (", count,
      count == 1 ? " agent" : " agents", ")"));
}

}  // namespace cohort::master
