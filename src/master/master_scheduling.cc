// Master: scheduling passes (docs/design/0012-scheduling-off-the-request-path.md). Requests
// only mark a pass pending; the scheduler thread reads the agents and the in-memory queue under
// the lock, computes Schedule() (a pure function) without it, and starts the placements under
// it again, in batches, checking each against what changed meanwhile.
#include <algorithm>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// Placements started per hold of the lock (one batch: a read and three writes to the database
// whatever its size, master_starts.cc), so a burst of hundreds of starts (a cluster's agents
// registering at once) lets waiting requests in between batches.
constexpr size_t kStartsPerHold = 16;

// After a pass that took d, the scheduler thread starts the next no sooner than
// kPassCoolDownFactor * d later (at most kMaxPassCoolDown): passes take at most a tenth of a
// core however often requests ask for them. A pass reads the whole queue (thousands of trials
// under load), and at 200 agents exits asked for 110 passes a second, a third of the master's
// CPU; a small cluster's passes take microseconds, so there it changes nothing.
constexpr int kPassCoolDownFactor = 9;
constexpr absl::Duration kMaxPassCoolDown = absl::Milliseconds(100);

}  // namespace

void Master::RequestPassLocked() {
  pass_pending_ = true;
  if (options_.scheduling != SchedulingMode::kInline) {
    pass_cv_.SignalAll();
    return;
  }
  if (inline_pass_) return;  // a pass on this stack runs again when it ends
  inline_pass_ = true;
  while (pass_pending_ && !stopping_) {
    pass_pending_ = false;
    RunPassLocked();
  }
  inline_pass_ = false;
}

Master::Offer Master::OfferLocked(int64_t experiment_id) {
  Offer offer;
  absl::StatusOr<ExperimentSearch*> search = SearchLocked(experiment_id);
  if (!search.ok()) {
    offer.held = absl::StrCat("its experiment's searcher cannot run: ", search.status().message(),
                              " (kill the experiment and create it again from a config that "
                              "`cohort experiment validate` accepts)");
    return offer;
  }
  offer.active = queue_.RunningOf(experiment_id);
  offer.limit = (*search)->config.max_concurrent_trials;
  return offer;
}

Master::PassInput Master::SnapshotLocked() {
  PassInput in;
  ScheduleInput& schedule = in.schedule;
  schedule.agents = rm_->Offers();
  schedule.queue.reserve(static_cast<size_t>(queue_.queued()));
  for (const auto& [name, pool] : options_.resource_pools) schedule.pools[name] = pool.spec;
  std::map<int64_t, Offer> offers;  // experiment -> what it offers this pass
  const std::map<int64_t, std::set<std::string>> excluded = policy_matches_.AllExcludedAgents();
  for (const auto& [id, t] : queue_.trials()) {
    const TrialQueue::Experiment* e = queue_.FindExperiment(t.experiment_id);
    if (e == nullptr) continue;
    schedule.experiments.try_emplace(t.experiment_id, ExperimentShare{e->weight, e->max_slots});
    if (t.state != TrialState::kQueued || e->state != ExperimentState::kActive) continue;
    auto [it, first] = offers.try_emplace(t.experiment_id);
    Offer& offer = it->second;
    if (first) offer = OfferLocked(t.experiment_id);
    if (!offer.held.empty()) {
      in.held[id] = offer.held;
      continue;
    }
    if (offer.limit > 0 && offer.active >= offer.limit) {
      in.held[id] = absl::StrCat("the experiment already runs searcher.max_concurrent_trials (",
                                 offer.limit, ") trials");
      continue;
    }
    ++offer.active;
    const auto avoid = excluded.find(id);
    TaskRequest task{std::to_string(id), e->slots, e->priority, t.sequence,
                     avoid != excluded.end() ? avoid->second : std::set<std::string>{}};
    task.pool = e->pool;
    task.experiment_id = t.experiment_id;
    task.position = e->position;
    schedule.queue.push_back(std::move(task));
  }
  schedule.running = RunningTasksLocked();
  return in;
}

std::vector<RunningTask> Master::RunningTasksLocked() const {
  std::vector<RunningTask> running;
  running.reserve(allocations_.running().size());
  for (const auto& [id, a] : allocations_.running()) {
    const auto t = queue_.trials().find(a.trial_id);
    if (t == queue_.trials().end()) continue;
    const TrialQueue::Experiment* e = queue_.FindExperiment(t->second.experiment_id);
    if (e == nullptr) continue;
    RunningTask task;
    task.id = std::to_string(a.trial_id);
    task.experiment_id = t->second.experiment_id;
    task.pool = e->pool;
    task.priority = e->priority;
    task.sequence = t->second.sequence;
    task.agents = a.agents;
    task.stopping = a.stop != StopReason::kNone;
    running.push_back(std::move(task));
  }
  return running;
}

void Master::PreemptLocked(const std::vector<Preemption>& preemptions) {
  for (const Preemption& p : preemptions) {
    const int64_t trial_id = std::stoll(p.task_id);
    Allocation* a = allocations_.OfTrial(trial_id);
    if (a == nullptr || a->stop != StopReason::kNone) continue;  // ended or stopping meanwhile
    COHORT_LOG(INFO) << TrialName(trial_id) << ": " << p.reason;
    AppendLogLocked(trial_id, absl::StrCat("master: ", p.reason,
                                           ": checkpointing and stopping; it will resume from "
                                           "that checkpoint when it can run again"));
    preempted_[trial_id] = p.reason;
    preempt_deadlines_[a->id] = options_.clock->Now() + options_.preemption_timeout;
    StopAllocationLocked(*a, StopReason::kPreempted);
  }
}

void Master::EscalatePreemptions() {
  MutexLock lock(&mu_);
  EscalatePreemptionsLocked();
}

void Master::EscalatePreemptionsLocked() {
  const absl::Time now = options_.clock->Now();
  for (auto it = preempt_deadlines_.begin(); it != preempt_deadlines_.end();) {
    Allocation* a = allocations_.Find(it->first);
    if (a != nullptr && now < it->second) {
      ++it;
      continue;
    }
    if (a != nullptr) {  // still running past its deadline: killed, its stop reason kept
      AppendLogLocked(a->trial_id,
                      absl::StrCat("master: did not checkpoint and stop within ",
                                   absl::FormatDuration(options_.preemption_timeout),
                                   " of its preemption: killed; it resumes from its latest "
                                   "checkpoint"));
      for (size_t node = 0; node < a->agents.size(); ++node) {
        if (!a->exits[node]) rm_->Stop(a->id, a->agents[node].first, wire::StopMode::kKill);
      }
    }
    it = preempt_deadlines_.erase(it);
  }
}

void Master::RestoreSearchersLocked() {
  std::set<int64_t> experiments;
  for (const auto& [id, t] : queue_.trials()) experiments.insert(t.experiment_id);
  for (int64_t experiment_id : experiments) {
    // A searcher that cannot be restored holds its trials back; the passes say why.
    if (absl::StatusOr<ExperimentSearch*> search = SearchLocked(experiment_id); !search.ok()) {
      COHORT_LOG(WARNING) << "experiment " << experiment_id << ": " << search.status();
    }
  }
}

void Master::SetWaitingLocked(PassInput& input, const ScheduleResult& result) {
  waiting_ = std::move(input.held);
  for (const auto& [task, reason] : result.waiting) {
    const int64_t id = std::stoll(task);
    if (!queue_.IsQueued(id)) continue;
    // A trial preempted earlier says so until it runs again.
    const auto preempted = preempted_.find(id);
    waiting_[id] = preempted == preempted_.end()
                       ? reason
                       : absl::StrCat(reason, " (", preempted->second, ")");
  }
  blockers_ = result.blockers;
}

std::optional<std::string> Master::WaitingReasonLocked(const TrialRow& trial) const {
  if (trial.state == TrialState::kRunning) {
    // Started, but its resource manager may still hold it back (a Slurm job pending).
    const Allocation* a = allocations_.OfTrial(trial.id);
    return a != nullptr ? rm_->Waiting(a->id) : std::nullopt;
  }
  if (trial.state != TrialState::kQueued) return std::nullopt;
  if (auto w = waiting_.find(trial.id); w != waiting_.end()) return w->second;
  const auto t = queue_.trials().find(trial.id);
  if (t == queue_.trials().end() || t->second.state != TrialState::kQueued) return std::nullopt;
  const TrialQueue::Experiment* e = queue_.FindExperiment(t->second.experiment_id);
  if (e == nullptr) return std::nullopt;
  const auto blocker = blockers_.find(e->pool);
  if (blocker == blockers_.end() || e->state != ExperimentState::kActive ||
      !IsBehind(blocker->second, e->priority, e->position, t->second.sequence)) {
    return std::nullopt;  // not in the last pass: the next one says
  }
  return QueuedBehindReason(blocker->second);
}

bool Master::PlacementFitsLocked(const Placement& placement, int64_t trial_id) {
  return rm_->Fits(placement, policy_matches_.ExcludedAgents(trial_id));
}

bool Master::StartPlacementsLocked(const std::vector<Placement>& placements, size_t* next,
                                   size_t count) {
  const size_t end = std::min(placements.size(), *next + count);
  std::vector<const Placement*> batch;  // checked, started together (master_starts.cc)
  for (; *next < end; ++*next) {
    const Placement& p = placements[*next];
    const int64_t trial_id = std::stoll(p.task_id);
    const TrialQueue::Trial* queued = nullptr;
    if (auto it = queue_.trials().find(trial_id); it != queue_.trials().end()) queued = &it->second;
    const TrialQueue::Experiment* e =
        queued != nullptr ? queue_.FindExperiment(queued->experiment_id) : nullptr;
    if (queued == nullptr || queued->state != TrialState::kQueued || e == nullptr ||
        e->state != ExperimentState::kActive) {
      pass_pending_ = true;  // paused, killed or placed meanwhile: its slots may serve another
      continue;
    }
    if (!PlacementFitsLocked(p, trial_id)) {
      // The agents changed while the pass computed: what follows was placed on a cluster that
      // is gone, so the next pass places it again (in order, without overtaking). The pass's
      // placements do not overlap, so those before it fit without it.
      pass_pending_ = true;
      *next = placements.size();
      break;
    }
    batch.push_back(&p);
  }
  StartBatchLocked(batch);
  return *next < placements.size();
}

void Master::RunPassLocked() {
  const absl::Time start = absl::Now();  // wall clock whatever the master's clock is
  PassInput in = SnapshotLocked();
  const ScheduleResult result = rm_->Place(in.schedule);
  SetWaitingLocked(in, result);
  PreemptLocked(result.preemptions);
  size_t next = 0;
  StartPlacementsLocked(result.placements, &next, result.placements.size());
  scheduling_.Add(absl::Now() - start);
  scheduling_lock_.Add(absl::Now() - start);
}

absl::Duration Master::RunPass() {
  absl::Time held_from = absl::Now();
  PassInput in = SnapshotLocked();
  absl::Duration spent = absl::Now() - held_from;
  absl::Duration longest_hold = spent;
  mu_.Unlock();
  const absl::Time computing = absl::Now();
  if (options_.during_schedule) options_.during_schedule();
  const ScheduleResult result = rm_->Place(in.schedule);
  spent += absl::Now() - computing;
  mu_.Lock();
  size_t next = 0;
  for (bool first = true;; first = false) {
    held_from = absl::Now();
    if (first) {
      SetWaitingLocked(in, result);
      PreemptLocked(result.preemptions);
    }
    const bool more = !stopping_ && StartPlacementsLocked(result.placements, &next, kStartsPerHold);
    const absl::Duration held = absl::Now() - held_from;
    spent += held;
    longest_hold = std::max(longest_hold, held);
    if (!more) break;
    mu_.Unlock();
    std::this_thread::yield();  // the requests that waited go first
    mu_.Lock();
  }
  scheduling_.Add(spent);
  scheduling_lock_.Add(longest_hold);
  return spent;
}

void Master::RunScheduler() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (!pass_pending_ || pass_running_) {
      // Woken by a request or shutdown; the deadline only bounds a wait nobody ends.
      pass_cv_.WaitWithTimeout(&mu_, absl::Seconds(1));
      continue;
    }
    pass_pending_ = false;
    pass_running_ = true;
    const absl::Duration spent = RunPass();
    pass_running_ = false;
    idle_cv_.SignalAll();
    const absl::Time next = absl::Now() + std::min(kPassCoolDownFactor * spent, kMaxPassCoolDown);
    bool cooled = false;  // only shutdown ends the cool-down early
    while (!stopping_ && !cooled) cooled = pass_cv_.WaitWithDeadline(&mu_, next);
  }
  idle_cv_.SignalAll();
}

bool Master::RunPendingPass() {
  MutexLock lock(&mu_);
  if (!pass_pending_ || pass_running_ || stopping_) return false;
  pass_pending_ = false;
  pass_running_ = true;
  RunPass();
  pass_running_ = false;
  idle_cv_.SignalAll();
  pass_cv_.SignalAll();  // another request may have marked a pass meanwhile
  return true;
}

bool Master::WaitForScheduling(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&mu_);
  const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (!pass_pending_ && !pass_running_);
  };
  bool timed_out = false;
  while (!idle() && !timed_out) timed_out = idle_cv_.WaitWithDeadline(&mu_, deadline);
  return idle();
}

void Master::TrialStoredLocked(const TrialRow& trial) {
  if (trial.state == TrialState::kQueued) {
    if (!queue_.IsQueued(trial.id)) queued_since_[trial.id] = NowLocked();
  } else {
    queued_since_.erase(trial.id);
  }
  queue_.SetTrial(trial.id, trial.experiment_id, trial.state, trial.sequence);
}

}  // namespace cohort::master
