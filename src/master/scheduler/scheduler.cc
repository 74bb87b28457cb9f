#include "master/scheduler/scheduler.h"

#include <map>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "master/scheduler/placer.h"
#include "master/scheduler/pool_pass.h"

namespace cohort::master {

ScheduleResult Schedule(const std::vector<AgentState>& agents,
                        const std::vector<TaskRequest>& queue) {
  ScheduleInput input;
  input.agents = agents;
  input.queue = queue;
  return Schedule(input);
}

ScheduleResult Schedule(const ScheduleInput& input) {
  std::map<std::string, placing::PoolInput> pools;
  auto pool = [&](const std::string& name) -> placing::PoolInput& {
    auto [it, added] = pools.try_emplace(name);
    if (added) {
      it->second.name = name;
      const auto spec = input.pools.find(name);
      if (spec != input.pools.end()) it->second.spec = spec->second;
      it->second.experiments = &input.experiments;
    }
    return it->second;
  };
  for (const AgentState& a : input.agents) pool(a.pool).agents.push_back(a);
  for (const TaskRequest& t : input.queue) pool(t.pool).queue.push_back(&t);
  for (const RunningTask& t : input.running) pool(t.pool).running.push_back(&t);
  ScheduleResult result;
  for (const auto& [name, p] : pools) {
    if (!p.queue.empty()) placing::RunPoolPass(p, &result);
  }
  if (auto it = result.blockers.find(kDefaultPool); it != result.blockers.end()) {
    result.blocker = it->second;
  }
  return result;
}

int RunningTask::slots() const {
  int n = 0;
  for (const auto& [agent, slots] : agents) n += slots;
  return n;
}

const char* PoolPolicyName(PoolPolicy policy) {
  return policy == PoolPolicy::kFairShare ? "fair_share" : "priority";
}

bool IsBehind(const Blocker& blocker, int priority, int64_t sequence) {
  return IsBehind(blocker, priority, 0.0, sequence);
}

bool IsBehind(const Blocker& blocker, int priority, double position, int64_t sequence) {
  return std::make_tuple(priority, position, sequence) >
         std::make_tuple(blocker.priority, blocker.position, blocker.sequence);
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
