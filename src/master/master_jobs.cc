// Master: the shared cluster's queue as users see and change it (docs/scheduling.md): the
// resource pools, the jobs (experiments with queued or running trials) in the order the
// scheduler serves them, and a job's priority, weight, max_slots and place changed.
#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// A job's order in its pool: priority, then position, then id.
std::tuple<int, double, int64_t> OrderOf(int64_t id, const TrialQueue::Experiment& e) {
  return {e.priority, e.position, id};
}

}  // namespace

wire::ResourcePoolList Master::ListResourcePools() {
  MutexLock lock(&mu_);
  std::map<std::string, wire::ResourcePoolSummary> by_name;
  for (const auto& [name, pool] : options_.resource_pools) {
    wire::ResourcePoolSummary& p = by_name[name];
    p.name = name;
    p.description = pool.description;
    p.scheduler = PoolPolicyName(pool.spec.policy);
    p.preemption = pool.spec.preemption;
  }
  for (const AgentState& a : rm_->Offers()) {
    auto it = by_name.find(a.pool);
    if (it == by_name.end()) continue;
    ++it->second.agents;
    if (a.enabled) it->second.slots += a.slots;
    it->second.used += a.used;
  }
  for (const auto& [id, t] : queue_.trials()) {
    const TrialQueue::Experiment* e = queue_.FindExperiment(t.experiment_id);
    auto it = e == nullptr ? by_name.end() : by_name.find(e->pool);
    if (it == by_name.end()) continue;
    (t.state == TrialState::kRunning ? it->second.trials_running : it->second.trials_queued)++;
  }
  wire::ResourcePoolList out;
  for (auto& [name, p] : by_name) out.pools.push_back(std::move(p));
  return out;
}

absl::StatusOr<wire::JobList> Master::ListJobs(const std::string& pool) {
  MutexLock lock(&mu_);
  if (!pool.empty() && options_.resource_pools.count(pool) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("no resource pool '", pool, "': the pools are ",
                                                   absl::StrJoin(PoolNames(options_.resource_pools), ", ")));
  }
  std::map<int64_t, wire::JobEntry> jobs;
  for (const auto& [id, t] : queue_.trials()) {
    const TrialQueue::Experiment* e = queue_.FindExperiment(t.experiment_id);
    if (e == nullptr || (!pool.empty() && e->pool != pool)) continue;
    wire::JobEntry& j = jobs[t.experiment_id];
    if (t.state == TrialState::kRunning) {
      ++j.trials_running;
      j.slots_held += e->slots;
    } else if (++j.trials_queued == 1) {
      TrialRow row;
      row.id = id;
      row.state = TrialState::kQueued;
      j.waiting = WaitingReasonLocked(row).value_or("");
    }
  }
  std::vector<std::pair<std::tuple<std::string, int, double, int64_t>, wire::JobEntry>> order;
  for (auto& [id, j] : jobs) {
    const TrialQueue::Experiment& e = *queue_.FindExperiment(id);
    j.experiment_id = id;
    j.name = e.name;
    j.owner = e.owner;
    j.pool = e.pool;
    j.state = wire::Name(e.state);
    j.priority = e.priority;
    j.weight = e.weight;
    j.max_slots = e.max_slots;
    j.slots_per_trial = e.slots;
    order.push_back({{e.pool, e.priority, e.position, id}, std::move(j)});
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  wire::JobList out;
  std::map<std::string, int> position;  // per pool
  for (auto& [key, j] : order) {
    j.position = ++position[j.pool];
    out.jobs.push_back(std::move(j));
  }
  return out;
}

absl::StatusOr<std::pair<int, double>> Master::QueuePlaceLocked(int64_t id,
                                                               const wire::JobUpdate& update) {
  const TrialQueue::Experiment& self = *queue_.FindExperiment(id);
  if (!update.ahead_of && !update.behind_of) {
    return std::make_pair(update.priority.value_or(self.priority), self.position);
  }
  const int64_t target = update.ahead_of ? *update.ahead_of : *update.behind_of;
  const TrialQueue::Experiment* other = queue_.FindExperiment(target);
  if (other == nullptr || target == id) {
    return absl::InvalidArgumentError(absl::StrCat("no other experiment ", target, " to queue against"));
  }
  if (other->pool != self.pool) {
    return absl::InvalidArgumentError(absl::StrCat("experiment ", target, " is in resource pool '",
                                                   other->pool, "', experiment ", id, " in '",
                                                   self.pool, "': the queue is per pool"));
  }
  // The neighbour on the side we go: the job just before (ahead_of) or after (behind_of) the
  // target among the pool's others of the target's priority.
  std::optional<double> neighbour;
  for (const auto& [eid, e] : queue_.experiments()) {
    if (eid == id || eid == target || e.pool != self.pool || e.priority != other->priority ||
        wire::IsTerminal(e.state)) {
      continue;
    }
    const bool before = OrderOf(eid, e) < OrderOf(target, *other);
    if (update.ahead_of && before && (!neighbour || e.position > *neighbour)) neighbour = e.position;
    if (update.behind_of && !before && (!neighbour || e.position < *neighbour)) neighbour = e.position;
  }
  const double step = update.ahead_of ? -1.0 : 1.0;
  const double position =
      neighbour ? (*neighbour + other->position) / 2 : other->position + step;
  return std::make_pair(other->priority, position);
}

absl::Status Master::UpdateJob(int64_t id, const wire::JobUpdate& update, const Actor& actor) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow row, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(row, actor, "change the scheduling of"));
  const int max_slots = update.max_slots.value_or(row.max_slots);
  if (max_slots != 0 && max_slots < row.slots_per_trial) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_slots: must be 0 (no cap) or at least the ", row.slots_per_trial,
                     " slots of one trial, got ", max_slots));
  }
  MutexLock lock(&mu_);
  if (queue_.FindExperiment(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " not found"));
  }
  COHORT_ASSIGN_OR_RETURN(auto place, QueuePlaceLocked(id, update));
  ExperimentScheduling scheduling{place.first, update.weight.value_or(row.weight), max_slots,
                                  place.second};
  COHORT_RETURN_IF_ERROR(db_->SetExperimentScheduling(id, scheduling));
  row.priority = scheduling.priority;
  row.weight = scheduling.weight;
  row.max_slots = scheduling.max_slots;
  row.queue_position = scheduling.queue_position;
  row.state = queue_.FindExperiment(id)->state;
  queue_.SetExperiment(id, QueueFacts(row));
  COHORT_LOG(INFO) << "experiment " << id << ": '" << actor.user << "' set priority "
                   << row.priority << ", weight " << row.weight << ", max_slots " << row.max_slots
                   << ", queue position " << row.queue_position;
  RequestPassLocked();
  return absl::OkStatus();
}

}  // namespace cohort::master
