#include "master/scheduler/scheduler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// "a", "a or b", "a, b or c".
std::string JoinOr(const std::vector<std::string>& items) {
  if (items.size() < 2) return items.empty() ? "" : items[0];
  return absl::StrCat(absl::StrJoin(items.begin(), items.end() - 1, ", "), " or ", items.back());
}

// One enabled agent as this call sees it: `free` drops as the call places tasks, so a task
// placed earlier in the call is visible to the tasks after it.
struct Candidate {
  const AgentState* agent;
  int free;
  bool idle() const { return free == agent->slots; }
};

// Whether `task` may run on `c` (its log policies do not exclude the agent).
bool Usable(const Candidate& c, const TaskRequest& task) {
  return task.excluded_agents.empty() || task.excluded_agents.count(c.agent->id) == 0;
}

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
  explicit Placer(const std::vector<AgentState>& agents) {
    for (const AgentState& agent : agents) {
      // An agent with no slots can host nothing; treating it as absent keeps sizes > 0 below.
      if (agent.slots < 1) continue;
      if (agent.enabled) {
        candidates_.push_back({&agent, FreeSlots(agent)});
        ++enabled_by_size_[agent.slots];
      } else {
        ++disabled_by_size_[agent.slots];
      }
    }
    // Id order makes ties (best fit) and node order (whole agents) follow the lower id.
    std::sort(candidates_.begin(), candidates_.end(),
              [](const Candidate& a, const Candidate& b) { return a.agent->id < b.agent->id; });
    if (!enabled_by_size_.empty()) largest_ = enabled_by_size_.begin()->first;
  }

  bool HasAgents() const { return !candidates_.empty(); }

  // Why `task` cannot run on the enabled agents as they are, however long it waits; nullopt
  // when it could run once enough slots are free. Such a task holds nobody back.
  std::optional<std::string> WhyNever(const TaskRequest& task) const {
    if (task.slots < 1) {
      return absl::StrCat("needs at least 1 slot, asked for ", task.slots);
    }
    const std::vector<int> sizes = GroupSizes(task.slots);
    bool fits = task.slots <= largest_;  // the largest agent, once it is free
    for (int size : sizes) {
      // Disabled agents do not count: waiting for an operator to re-enable one would stall
      // every task behind this one for an unbounded time.
      fits = fits || Enabled(size) >= task.slots / size;
    }
    if (!fits) return NeverOnWholeAgents(task.slots, sizes);
    if (task.excluded_agents.empty() || FitsOnUsable(task, sizes)) return std::nullopt;
    return absl::StrCat("waiting for agents its log policies do not exclude (excluded: ",
                        absl::StrJoin(task.excluded_agents, ", "), ")");
  }

  // Places a task that WhyNever accepted, or says what it waits for.
  Attempt TryPlace(const TaskRequest& task) {
    if (task.slots <= largest_) {
      if (Candidate* best = BestFit(task)) {
        best->free -= task.slots;
        return {Placement{task.id, {{best->agent->id, task.slots}}}, ""};
      }
    }
    if (std::optional<Placement> placement = OnWholeAgents(task)) {
      return {std::move(placement), ""};
    }
    return {std::nullopt, WaitReason(task)};
  }

 private:
  int Enabled(int size) const {
    auto it = enabled_by_size_.find(size);
    return it == enabled_by_size_.end() ? 0 : it->second;
  }

  int Disabled(int size) const {
    auto it = disabled_by_size_.find(size);
    return it == disabled_by_size_.end() ? 0 : it->second;
  }

  // Idle enabled agents of `size` that `task` may use.
  int Idle(int size, const TaskRequest& task) const {
    return static_cast<int>(
        std::count_if(candidates_.begin(), candidates_.end(), [size, &task](const Candidate& c) {
          return c.agent->slots == size && c.idle() && Usable(c, task);
        }));
  }

  // Whether a task with excluded agents could run on the others once they are free: on one
  // agent, or on whole agents of one of `sizes` (its GroupSizes).
  bool FitsOnUsable(const TaskRequest& task, const std::vector<int>& sizes) const {
    std::map<int, int> usable;  // size -> enabled agents the task may use
    for (const Candidate& c : candidates_) {
      if (!Usable(c, task)) continue;
      if (c.agent->slots >= task.slots) return true;
      ++usable[c.agent->slots];
    }
    for (int size : sizes) {
      if (usable[size] >= task.slots / size) return true;
    }
    return false;
  }

  // The enabled agent sizes S < slots that divide slots, largest first: the groups (slots / S
  // whole agents of size S) a task of `slots` may run on.
  std::vector<int> GroupSizes(int slots) const {
    std::vector<int> sizes;
    for (const auto& [size, count] : enabled_by_size_) {
      if (size < slots && slots % size == 0) sizes.push_back(size);
    }
    return sizes;
  }

  // The reason for a task larger than every enabled agent that no group of `sizes` (its
  // GroupSizes) can ever host: no size divides it, or no size has enough enabled agents.
  std::string NeverOnWholeAgents(int slots, const std::vector<int>& sizes) const {
    const std::string needs = absl::StrCat("needs ", slots, " slots: ");
    std::vector<std::string> others;  // enabled sizes that do not divide slots
    for (const auto& [size, count] : enabled_by_size_) {
      if (slots % size != 0) others.push_back(absl::StrCat(size));
    }
    if (sizes.empty() && others.size() == 1) {
      return absl::StrCat(needs, "not a multiple of the ", largest_, " slots per agent");
    }
    if (sizes.empty()) {
      return absl::StrCat(needs, "no agent size divides it: agents have ", JoinOr(others),
                          " slots");
    }
    const bool one = sizes.size() == 1;
    std::vector<std::string> groups, have, disabled;
    for (int size : sizes) {
      groups.push_back(absl::StrCat(slots / size, " agents of ", size));
      have.push_back(one ? absl::StrCat(Enabled(size)) : absl::StrCat(Enabled(size), " of ", size));
      if (const int d = Disabled(size); d > 0) {
        disabled.push_back(one ? absl::StrCat(d, " more") : absl::StrCat(d, " more of ", size));
      }
    }
    std::string reason =
        absl::StrCat(needs, JoinOr(groups), ", the cluster has ", absl::StrJoin(have, " and "));
    if (!disabled.empty()) {
      absl::StrAppend(&reason, " enabled (", absl::StrJoin(disabled, " and "), " disabled)");
    }
    if (!others.empty()) {
      absl::StrAppend(&reason, " (agents of ", JoinOr(others), " slots do not divide ", slots, ")");
    }
    return reason;
  }

  // The enabled agent with the fewest free slots that still fit `slots` (the first, lowest id,
  // of equally good ones), or null when none has room now.
  Candidate* BestFit(const TaskRequest& task) {
    Candidate* best = nullptr;
    for (Candidate& c : candidates_) {
      if (c.free >= task.slots && Usable(c, task) && (best == nullptr || c.free < best->free)) {
        best = &c;
      }
    }
    return best;
  }

  // The largest task that could start at once if the `taken` lowest-id idle agents of `size`
  // that `task` may use were given to it: the most free slots on one remaining agent, or S
  // times the remaining idle agents of a size S, whichever is larger.
  int CapacityAfter(int size, int taken, const TaskRequest& task) const {
    int most_free = 0;
    std::map<int, int> idle_slots;  // size -> slots on the remaining idle agents of that size
    for (const Candidate& c : candidates_) {
      if (taken > 0 && c.agent->slots == size && c.idle() && Usable(c, task)) {
        --taken;
        continue;
      }
      most_free = std::max(most_free, c.free);
      if (c.idle()) idle_slots[c.agent->slots] += c.free;
    }
    for (const auto& [s, slots] : idle_slots) most_free = std::max(most_free, slots);
    return most_free;
  }

  // A group of whole idle agents of one size for `task`, chosen to leave the most capacity
  // (ties: the larger size, so fewer agents), or nullopt when no group is idle now.
  std::optional<Placement> OnWholeAgents(const TaskRequest& task) {
    int best_size = 0;
    int best_capacity = -1;
    for (int size : GroupSizes(task.slots)) {  // largest first: strict `>` keeps it on ties
      const int needed = task.slots / size;
      if (Idle(size, task) < needed) continue;
      const int capacity = CapacityAfter(size, needed, task);
      if (capacity > best_capacity) {
        best_capacity = capacity;
        best_size = size;
      }
    }
    if (best_size == 0) return std::nullopt;
    Placement placement{task.id, {}};
    int needed = task.slots / best_size;
    for (Candidate& c : candidates_) {
      if (needed == 0) break;
      if (c.agent->slots != best_size || !c.idle() || !Usable(c, task)) continue;
      c.free = 0;
      placement.agents.emplace_back(c.agent->id, best_size);
      --needed;
    }
    return placement;
  }

  // What a task that WhyNever accepted waits for: every way it could start ("8 free slots on
  // one agent", "2 idle agents of 4 slots") with how far the cluster is from it now.
  std::string WaitReason(const TaskRequest& task) const {
    std::vector<std::pair<std::string, std::string>> ways;  // (what it needs, what there is)
    if (task.slots <= largest_) {
      int most_free = 0;
      for (const Candidate& c : candidates_) {
        if (Usable(c, task)) most_free = std::max(most_free, c.free);
      }
      ways.emplace_back(
          absl::StrCat(CountOf(task.slots, "free slot", "free slots"), " on one agent"),
          absl::StrCat("the most free on any agent is ", most_free));
    }
    for (int size : GroupSizes(task.slots)) {
      if (Enabled(size) < task.slots / size) continue;
      const int idle = Idle(size, task);
      ways.emplace_back(absl::StrCat(task.slots / size, " idle agents of ", size, " slots"),
                        absl::StrCat(idle, idle == 1 ? " is idle" : " are idle"));
    }
    if (ways.size() == 1) return absl::StrCat("waiting for ", ways[0].first, ": ", ways[0].second);
    std::vector<std::string> parts;
    for (const auto& [what, now] : ways) parts.push_back(absl::StrCat(what, " (", now, ")"));
    return absl::StrCat("waiting for ", JoinOr(parts));
  }

  std::vector<Candidate> candidates_;                      // enabled agents with slots, by id
  std::map<int, int, std::greater<int>> enabled_by_size_;  // size -> enabled agents, largest first
  std::map<int, int> disabled_by_size_;                    // size -> disabled agents (reasons only)
  int largest_ = 0;                                        // the largest enabled agent's size
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
  for (const TaskRequest* task : order) {
    // A task that can never run says so even behind a blocker: "queued behind" would suggest
    // that waiting helps.
    if (std::optional<std::string> never = placer.WhyNever(*task)) {
      result.waiting[task->id] = *std::move(never);
      continue;
    }
    if (result.blocker) continue;  // queued behind it: result.blocker says so
    Attempt attempt = placer.TryPlace(*task);
    if (attempt.placement) {
      result.placements.push_back(*std::move(attempt.placement));
    } else {
      result.waiting[task->id] = std::move(attempt.reason);
      result.blocker = Blocker{task->id, task->priority, task->sequence};
    }
  }
  return result;
}

bool IsBehind(const Blocker& blocker, int priority, int64_t sequence) {
  return std::make_pair(priority, sequence) > std::make_pair(blocker.priority, blocker.sequence);
}

std::string QueuedBehindReason(const Blocker& blocker) {
  return absl::StrCat("queued behind task ", blocker.id, " (priority ", blocker.priority, ")");
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
  return absl::FailedPreconditionError(
      absl::StrCat("needs ", slots, " slots but the whole cluster has ", total, " (", count,
                   count == 1 ? " agent" : " agents", ")"));
}

}  // namespace cohort::master
