#include "master/scheduler/placer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::master::placing {
namespace {

// Whether `task` may run on `c` (its log policies do not exclude the agent).
bool Usable(const Candidate& c, const TaskRequest& task) {
  return task.excluded_agents.empty() || task.excluded_agents.count(c.agent->id) == 0;
}

}  // namespace

int FreeSlots(const AgentState& agent) {
  return std::clamp(agent.slots - agent.used, 0, std::max(agent.slots, 0));
}

std::string CountOf(int n, const char* singular, const char* plural) {
  return absl::StrCat(n, " ", n == 1 ? singular : plural);
}

std::string JoinOr(const std::vector<std::string>& items) {
  if (items.size() < 2) return items.empty() ? "" : items[0];
  return absl::StrCat(absl::StrJoin(items.begin(), items.end() - 1, ", "), " or ", items.back());
}

Placer::Placer(const std::vector<AgentState>& agents) {
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

std::optional<std::string> Placer::WhyNever(const TaskRequest& task) const {
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

Attempt Placer::TryPlace(const TaskRequest& task) {
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

int Placer::Enabled(int size) const {
  auto it = enabled_by_size_.find(size);
  return it == enabled_by_size_.end() ? 0 : it->second;
}

int Placer::Disabled(int size) const {
  auto it = disabled_by_size_.find(size);
  return it == disabled_by_size_.end() ? 0 : it->second;
}

int Placer::Idle(int size, const TaskRequest& task) const {
  return static_cast<int>(
      std::count_if(candidates_.begin(), candidates_.end(), [size, &task](const Candidate& c) {
        return c.agent->slots == size && c.idle() && Usable(c, task);
      }));
}

bool Placer::FitsOnUsable(const TaskRequest& task, const std::vector<int>& sizes) const {
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

std::vector<int> Placer::GroupSizes(int slots) const {
  std::vector<int> sizes;
  for (const auto& [size, count] : enabled_by_size_) {
    if (size < slots && slots % size == 0) sizes.push_back(size);
  }
  return sizes;
}

std::string Placer::NeverOnWholeAgents(int slots, const std::vector<int>& sizes) const {
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

Candidate* Placer::BestFit(const TaskRequest& task) {
  Candidate* best = nullptr;
  for (Candidate& c : candidates_) {
    if (c.free >= task.slots && Usable(c, task) && (best == nullptr || c.free < best->free)) {
      best = &c;
    }
  }
  return best;
}

int Placer::CapacityAfter(int size, int taken, const TaskRequest& task) const {
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

std::optional<Placement> Placer::OnWholeAgents(const TaskRequest& task) {
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

std::string Placer::WaitReason(const TaskRequest& task) const {
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

}  // namespace cohort::master::placing
