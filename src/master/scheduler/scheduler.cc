#include "master/scheduler/scheduler.h"

#include "master/scheduler/placer.h"

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

using placing::Attempt;
using placing::Placer;

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
