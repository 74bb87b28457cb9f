#include "master/scheduler/trial_queue.h"

#include <utility>

namespace cohort::master {

using wire::ExperimentState;
using wire::TrialState;

void TrialQueue::Count(const Trial& trial, int delta) {
  Counts& counts = counts_[trial.experiment_id];
  if (trial.state == TrialState::kQueued) {
    queued_ += delta;
    counts.queued += delta;
  } else {
    counts.running += delta;
  }
  if (counts.queued == 0 && counts.running == 0) counts_.erase(trial.experiment_id);
}

void TrialQueue::SetTrial(int64_t id, int64_t experiment_id, TrialState state, int64_t sequence) {
  if (auto it = trials_.find(id); it != trials_.end()) {
    Count(it->second, -1);
    trials_.erase(it);
  }
  if (state != TrialState::kQueued && state != TrialState::kRunning) return;
  const Trial& trial = trials_[id] = Trial{experiment_id, sequence, state};
  Count(trial, +1);
}

void TrialQueue::SetExperiment(int64_t id, Experiment experiment) {
  experiments_[id] = std::move(experiment);
}

void TrialQueue::SetExperimentState(int64_t id, ExperimentState state) {
  if (auto it = experiments_.find(id); it != experiments_.end()) it->second.state = state;
}

const TrialQueue::Experiment* TrialQueue::FindExperiment(int64_t id) const {
  auto it = experiments_.find(id);
  return it == experiments_.end() ? nullptr : &it->second;
}

bool TrialQueue::IsQueued(int64_t id) const {
  auto it = trials_.find(id);
  return it != trials_.end() && it->second.state == TrialState::kQueued;
}

int64_t TrialQueue::RunningOf(int64_t experiment_id) const {
  auto it = counts_.find(experiment_id);
  return it == counts_.end() ? 0 : it->second.running;
}

int64_t TrialQueue::ActiveOf(int64_t experiment_id) const {
  auto it = counts_.find(experiment_id);
  return it == counts_.end() ? 0 : it->second.queued + it->second.running;
}

}  // namespace cohort::master
