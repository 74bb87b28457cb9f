#include "master/scheduler/pool_pass.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "master/scheduler/placer.h"

namespace cohort::master::placing {
namespace {

const ExperimentShare& ShareOf(const PoolInput& pool, int64_t experiment) {
  static const ExperimentShare kNone;
  const auto it = pool.experiments->find(experiment);
  return it == pool.experiments->end() ? kNone : it->second;
}

std::string NoAgents(const std::string& pool) {
  if (pool == kDefaultPool) return "no agents are connected (or all are disabled)";
  return absl::StrCat("no agents of resource pool '", pool,
                      "' are connected (or all are disabled)");
}

// Slots each experiment holds in the pool now, stopping tasks included.
std::map<int64_t, int> Held(const PoolInput& pool) {
  std::map<int64_t, int> held;
  for (const RunningTask* t : pool.running) held[t->experiment_id] += t->slots();
  return held;
}

// Why `task` may not start now because of its experiment's max_slots; nullopt when it may.
std::optional<std::string> OverCap(const PoolInput& pool, const TaskRequest& task, int held) {
  const int cap = ShareOf(pool, task.experiment_id).max_slots;
  if (cap <= 0 || held + task.slots <= cap) return std::nullopt;
  return absl::StrCat("experiment ", task.experiment_id, " holds ", held,
                      held == 1 ? " slot" : " slots", ": its resources.max_slots is ", cap);
}

// The pool's agents as a pass sees them while it decides: this pass's placements taken, the
// slots of chosen (or stopping) tasks given back. A task that fits on one agent is checked
// directly (best fit, as the Placer does); only one that needs several agents builds a Placer.
class FreeView {
 public:
  explicit FreeView(std::vector<AgentState> agents) : agents_(std::move(agents)) {
    std::sort(agents_.begin(), agents_.end(),
              [](const AgentState& a, const AgentState& b) { return a.id < b.id; });
    for (size_t i = 0; i < agents_.size(); ++i) index_[agents_[i].id] = i;
  }
  void Take(const Placement& p) {
    for (const auto& [agent, slots] : p.agents) Add(agent, slots);
  }
  void Free(const RunningTask& t) {
    for (const auto& [agent, slots] : t.agents) Add(agent, -slots);
  }
  void Unfree(const RunningTask& t) {
    for (const auto& [agent, slots] : t.agents) Add(agent, slots);
  }
  bool Fits(const TaskRequest& task) const {
    if (BestFit(task) >= 0) return true;
    if (task.slots <= 1) return false;
    Placer placer(agents_);
    return placer.TryPlace(task).placement.has_value();
  }
  // Takes the slots `task` would get; false (nothing taken) when it does not fit.
  bool Reserve(const TaskRequest& task) {
    if (const int i = BestFit(task); i >= 0) {
      agents_[static_cast<size_t>(i)].used += task.slots;
      return true;
    }
    if (task.slots <= 1) return false;
    Placer placer(agents_);
    Attempt attempt = placer.TryPlace(task);
    if (attempt.placement) Take(*attempt.placement);
    return attempt.placement.has_value();
  }

 private:
  // The enabled agent with the fewest free slots that still hold `task` (the lowest id of
  // equally good ones), or -1.
  int BestFit(const TaskRequest& task) const {
    int best = -1, best_free = 0;
    for (size_t i = 0; i < agents_.size(); ++i) {
      const AgentState& a = agents_[i];
      const int free = FreeSlots(a);
      if (!a.enabled || a.slots < 1 || free < task.slots || (best >= 0 && free >= best_free) ||
          (!task.excluded_agents.empty() && task.excluded_agents.count(a.id) > 0)) {
        continue;
      }
      best = static_cast<int>(i);
      best_free = free;
    }
    return best;
  }
  void Add(const std::string& agent, int slots) {
    const auto it = index_.find(agent);
    if (it != index_.end()) agents_[it->second].used += slots;
  }
  std::vector<AgentState> agents_;  // by id
  std::map<std::string, size_t> index_;
};

// What ChooseVictims does with a candidate.
enum class Verdict { kSkip, kTake, kStop };

// The fewest of `ordered` from `first` on (those `verdict` takes, in order, until `task` fits,
// then each given back that it did not need, the last taken first) to stop so that `task`
// fits on `view`. On success their slots stay freed in `view`; otherwise `view` is unchanged
// and the result empty.
template <typename VerdictFn>
std::vector<const RunningTask*> ChooseVictims(FreeView& view, const TaskRequest& task,
                                              const std::vector<const RunningTask*>& ordered,
                                              size_t first, const VerdictFn& verdict) {
  std::vector<const RunningTask*> chosen;
  bool fits = false;
  for (size_t i = first; i < ordered.size() && !fits; ++i) {
    const Verdict v = verdict(ordered[i]);
    if (v == Verdict::kStop) break;
    if (v == Verdict::kSkip) continue;
    view.Free(*ordered[i]);
    chosen.push_back(ordered[i]);
    fits = view.Fits(task);
  }
  if (!fits) {
    for (const RunningTask* c : chosen) view.Unfree(*c);
    return {};
  }
  for (size_t i = chosen.size(); i-- > 0;) {
    view.Unfree(*chosen[i]);
    if (view.Fits(task)) {
      chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      view.Free(*chosen[i]);
    }
  }
  return chosen;
}

std::string Trials(size_t n) { return n == 1 ? "1 trial" : absl::StrCat(n, " trials"); }

// The state both policies keep while they decide one pool.
class Pass {
 public:
  Pass(const PoolInput& pool, ScheduleResult* out)
      : pool_(pool), out_(out), placer_(pool.agents), future_(pool.agents), held_(Held(pool)) {
    for (const RunningTask* t : pool.running) {
      if (t->stopping) future_.Free(*t);
    }
  }

 protected:
  // Places `task` if it fits now; else records why it waits (returns false).
  bool TryPlace(const TaskRequest& task) {
    Attempt attempt = placer_.TryPlace(task);
    if (!attempt.placement) {
      out_->waiting[task.id] = std::move(attempt.reason);
      return false;
    }
    future_.Take(*attempt.placement);
    held_[task.experiment_id] += task.slots;
    out_->placements.push_back(*std::move(attempt.placement));
    return true;
  }

  // Makes room for `task` once tasks stop: the slots of those already stopping, else the
  // fewest of `ordered` (preference order, from index `first`; `verdict` says which qualify)
  // that let it fit, preempted with `why`. The slots are then reserved for it in this pass
  // (true); false when even all would not make room.
  template <typename VerdictFn>
  bool Preempt(const TaskRequest& task, const std::vector<const RunningTask*>& ordered,
               size_t first, const VerdictFn& verdict, const std::string& why,
               const char* whose) {
    if (future_.Reserve(task)) {
      out_->waiting[task.id] = "waiting for trials that are stopping to free their slots";
      return true;
    }
    std::vector<const RunningTask*> victims =
        ChooseVictims(future_, task, ordered, first, verdict);
    if (victims.empty()) return false;
    for (const RunningTask* v : victims) {
      out_->preemptions.push_back({v->id, why});
      preempted_.insert(v);
      given_up_[v->experiment_id] += v->slots();
    }
    future_.Reserve(task);
    out_->waiting[task.id] = absl::StrCat("waiting for ", Trials(victims.size()), " of ", whose,
                                          " to checkpoint and stop (preempted for it)");
    return true;
  }

  // The running tasks that are not stopping, ordered by `before`.
  template <typename Before>
  std::vector<const RunningTask*> RunningBy(const Before& before) const {
    std::vector<const RunningTask*> out;
    for (const RunningTask* t : pool_.running) {
      if (!t->stopping) out.push_back(t);
    }
    std::sort(out.begin(), out.end(), before);
    return out;
  }

  // Running tasks that may still be chosen (not stopping, not chosen in this pass).
  bool Choosable(const RunningTask* t) const { return !t->stopping && preempted_.count(t) == 0; }

  const PoolInput& pool_;
  ScheduleResult* out_;
  Placer placer_;
  // The pool once what is stopping has stopped: this pass's placements and reservations taken,
  // the slots of stopping and preempted tasks free.
  FreeView future_;
  std::map<int64_t, int> held_;
  std::set<const RunningTask*> preempted_;
  std::map<int64_t, int> given_up_;  // slots of each experiment preempted in this pass
};

class PriorityPass : public Pass {
 public:
  using Pass::Pass;

  void Run() {
    std::vector<const TaskRequest*> order = pool_.queue;
    std::stable_sort(order.begin(), order.end(), [](const TaskRequest* a, const TaskRequest* b) {
      return std::make_tuple(a->priority, a->position, a->sequence) <
             std::make_tuple(b->priority, b->position, b->sequence);
    });
    std::optional<Blocker> blocker;
    bool preempting = pool_.spec.preemption;  // until a task finds no room even so
    for (const TaskRequest* task : order) {
      // A task that can never run, or may not now because of its experiment's cap, says so
      // even behind a blocker and holds nobody back.
      if (std::optional<std::string> never = placer_.WhyNever(*task)) {
        out_->waiting[task->id] = *std::move(never);
        continue;
      }
      if (auto capped = OverCap(pool_, *task, held_[task->experiment_id])) {
        out_->waiting[task->id] = *std::move(capped);
        continue;
      }
      if (!blocker) {
        if (TryPlace(*task)) continue;
        blocker = Blocker{task->id, task->priority, task->sequence, pool_.name, task->position};
      }
      // The blocker, and the tasks behind it in order, may each have room made by preemption
      // (reserved for them in this pass, so none takes another's) until one finds none.
      if (preempting) preempting = PreemptLower(*task);
    }
    if (blocker) out_->blockers[pool_.name] = *blocker;
  }

 private:
  // Lower priorities (higher numbers) first; within one, the most recently submitted first.
  // False when even that would not make room.
  bool PreemptLower(const TaskRequest& task) {
    if (!ordered_) {
      ordered_ = RunningBy([](const RunningTask* a, const RunningTask* b) {
        return std::make_pair(a->priority, a->sequence) > std::make_pair(b->priority, b->sequence);
      });
    }
    while (cursor_ < ordered_->size() && !Choosable((*ordered_)[cursor_])) ++cursor_;
    auto verdict = [&](const RunningTask* t) {
      if (t->priority <= task.priority) return Verdict::kStop;  // the rest outrank it too
      return Choosable(t) ? Verdict::kTake : Verdict::kSkip;
    };
    return Preempt(task, *ordered_, cursor_, verdict,
                   absl::StrCat("preempted by experiment ", task.experiment_id, " (priority ",
                                task.priority, ")"),
                   "lower priority");
  }

  std::optional<std::vector<const RunningTask*>> ordered_;  // candidates, best victim first
  size_t cursor_ = 0;  // ordered_[0, cursor_) are all chosen already
};

class FairSharePass : public Pass {
 public:
  using Pass::Pass;

  void Run() {
    ComputeShares();
    std::map<int64_t, std::vector<const TaskRequest*>> tasks;  // by experiment, by sequence
    for (const TaskRequest* t : pool_.queue) tasks[t->experiment_id].push_back(t);
    for (auto& [e, list] : tasks) {
      std::stable_sort(list.begin(), list.end(), [](const TaskRequest* a, const TaskRequest* b) {
        return a->sequence < b->sequence;
      });
    }
    for (const TaskRequest* task : UpToShares(tasks)) Backfill(*task);
  }

 private:
  double Share(int64_t e) const {
    const auto it = shares_.find(e);
    return it == shares_.end() ? 0.0 : it->second;
  }
  double Ratio(int64_t e) const {
    const double share = Share(e);
    return share > 0 ? held_.at(e) / share : 1e300;
  }

  void ComputeShares() {
    std::map<int64_t, double> weights;
    std::map<int64_t, int> demand;
    for (const RunningTask* t : pool_.running) {
      if (!t->stopping) demand[t->experiment_id] += t->slots();
    }
    for (const TaskRequest* t : pool_.queue) demand[t->experiment_id] += t->slots;
    int capacity = 0;
    for (const AgentState& a : pool_.agents) capacity += a.enabled ? std::max(a.slots, 0) : 0;
    for (auto& [e, d] : demand) {
      const ExperimentShare& s = ShareOf(pool_, e);
      if (s.max_slots > 0) d = std::min(d, s.max_slots);
      weights[e] = s.weight;
      held_[e] += 0;  // every experiment has an entry
    }
    shares_ = FairShares(capacity, weights, demand);
  }

  // The same words for every waiting task of an experiment: made once per pass.
  const std::string& AtShare(int64_t e) {
    auto [it, added] = at_share_.try_emplace(e);
    if (!added) return it->second;
    it->second = absl::StrFormat(
        "fair share: experiment %d holds %d slots, its share of pool '%s' is %.3g (weight %g); "
        "it gets more when other experiments leave slots idle",
        e, held_.at(e), pool_.name, Share(e), ShareOf(pool_, e).weight);
    return it->second;
  }

  // Starts tasks of the experiments below their shares, the furthest below first; returns the
  // tasks left for the work-conserving round, in the order they should get idle slots.
  std::vector<const TaskRequest*> UpToShares(
      std::map<int64_t, std::vector<const TaskRequest*>>& tasks) {
    std::map<int64_t, size_t> next;  // experiment -> its first task not yet decided
    std::set<std::pair<double, int64_t>> below;  // (held / share, experiment)
    for (const auto& [e, list] : tasks) below.insert({Ratio(e), e});
    std::vector<const TaskRequest*> rest;
    while (!below.empty()) {
      const int64_t e = below.begin()->second;
      below.erase(below.begin());
      std::vector<const TaskRequest*>& list = tasks[e];
      size_t& i = next[e];
      if (i < list.size() && Decide(*list[i])) {
        ++i;
        if (i < list.size()) below.insert({Ratio(e), e});
        continue;
      }
      rest.insert(rest.end(), list.begin() + static_cast<std::ptrdiff_t>(i), list.end());
    }
    return rest;
  }

  // One experiment's next task in the first round: true when it was decided (placed, never,
  // capped); false when its experiment stops here (at its share, or no room now).
  bool Decide(const TaskRequest& task) {
    const int64_t e = task.experiment_id;
    if (std::optional<std::string> never = placer_.WhyNever(task)) {
      out_->waiting[task.id] = *std::move(never);
      return true;
    }
    if (auto capped = OverCap(pool_, task, held_[e])) {
      out_->waiting[task.id] = *std::move(capped);
      return true;
    }
    if (held_[e] >= Share(e)) return false;
    if (TryPlace(task)) return true;
    if (!pool_.spec.preemption || !PreemptOverShare(task)) return false;
    held_[e] += task.slots;  // the slots freed for it are its
    return true;
  }

  // The second round: the slots left idle go to anyone. Free slots only shrink during it, so
  // once a task of some size found none, larger and equal ones without excluded agents do not
  // try again (10,000 queued trials would otherwise each scan every agent).
  void Backfill(const TaskRequest& task) {
    const int64_t e = task.experiment_id;
    if (std::optional<std::string> never = placer_.WhyNever(task)) {
      out_->waiting[task.id] = *std::move(never);
      return;
    }
    if (auto capped = OverCap(pool_, task, held_[e])) {
      out_->waiting[task.id] = *std::move(capped);
      return;
    }
    const bool plain = task.excluded_agents.empty();
    if (!plain || task.slots < smallest_failed_) {
      if (TryPlace(task)) return;
      if (plain) {
        smallest_failed_ = task.slots;
        failed_reason_ = out_->waiting[task.id];
      }
    } else {
      out_->waiting[task.id] = failed_reason_;
    }
    if (held_[e] >= Share(e)) out_->waiting[task.id] = AtShare(e);
  }

  // Tasks of experiments above their shares that stay at or above them without the task: the
  // most over first (as the pass began), the most recently submitted first.
  bool PreemptOverShare(const TaskRequest& task) {
    if (!ordered_) {
      ordered_ = RunningBy([this](const RunningTask* a, const RunningTask* b) {
        return std::make_pair(Ratio(a->experiment_id), a->sequence) >
               std::make_pair(Ratio(b->experiment_id), b->sequence);
      });
    }
    auto verdict = [&](const RunningTask* t) {
      const int64_t v = t->experiment_id;
      if (Ratio(v) <= 1.0 + 1e-9) return Verdict::kStop;  // the rest are at or below their shares
      const bool surplus = held_[v] - given_up_[v] - t->slots() >= Share(v) - 1e-9;
      return v != task.experiment_id && Choosable(t) && surplus ? Verdict::kTake : Verdict::kSkip;
    };
    return Preempt(task, *ordered_, 0, verdict,
                   absl::StrFormat("preempted for fair share: experiment %d is below its share",
                                   task.experiment_id),
                   "experiments above their fair share");
  }

  std::optional<std::vector<const RunningTask*>> ordered_;  // candidates, most over share first
  std::map<int64_t, std::string> at_share_;                 // AtShare's words by experiment
  int smallest_failed_ = std::numeric_limits<int>::max();   // Backfill: no room for this many
  std::string failed_reason_;                               // and why
  std::map<int64_t, double> shares_;
};

}  // namespace

std::map<int64_t, double> FairShares(int capacity, const std::map<int64_t, double>& weights,
                                     const std::map<int64_t, int>& demand) {
  std::map<int64_t, double> share;
  std::set<int64_t> open;
  for (const auto& [e, d] : demand) {
    share[e] = 0;
    if (d > 0) open.insert(e);
  }
  double left = std::max(capacity, 0);
  while (!open.empty() && left > 1e-9) {
    double total = 0;
    for (int64_t e : open) total += std::max(weights.count(e) ? weights.at(e) : 1.0, 1e-9);
    // Those whose demand is met by their part of what is left take only their demand; what
    // they leave is divided again among the others.
    std::vector<int64_t> met;
    for (int64_t e : open) {
      const double part = left * std::max(weights.count(e) ? weights.at(e) : 1.0, 1e-9) / total;
      if (share[e] + part >= demand.at(e)) met.push_back(e);
    }
    if (met.empty()) {
      for (int64_t e : open) {
        share[e] += left * std::max(weights.count(e) ? weights.at(e) : 1.0, 1e-9) / total;
      }
      break;
    }
    for (int64_t e : met) {
      left -= demand.at(e) - share[e];
      share[e] = demand.at(e);
      open.erase(e);
    }
  }
  return share;
}

void RunPoolPass(const PoolInput& pool, ScheduleResult* out) {
  if (!Placer(pool.agents).HasAgents()) {
    for (const TaskRequest* t : pool.queue) out->waiting[t->id] = NoAgents(pool.name);
    return;
  }
  if (pool.spec.policy == PoolPolicy::kFairShare) {
    FairSharePass(pool, out).Run();
  } else {
    PriorityPass(pool, out).Run();
  }
}

}  // namespace cohort::master::placing
