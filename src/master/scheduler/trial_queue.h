#pragma once
// TrialQueue: what the scheduler needs to know of the trials it may place, kept in memory so a
// scheduling pass reads no database row (docs/design/0012-scheduling-off-the-request-path.md).
// It holds the QUEUED and RUNNING trials (id, experiment, submission sequence, state) and, for
// every experiment that has one, its state, slots per trial and priority. The database stays
// the source of truth: the Master loads the queue from it at start and mirrors every change it
// stores (a trial's or an experiment's state) here right after storing it.
//
// Pure and thread-compatible: no I/O, no clock, no lock of its own; the Master touches it only
// under its state lock.
//
// Example:
//   queue.SetExperiment(1, {ExperimentState::kActive, /*slots=*/1, /*priority=*/42});
//   queue.SetTrial(7, /*experiment_id=*/1, TrialState::kQueued, /*sequence=*/3);
//   for (const auto& [id, t] : queue.trials()) if (t.state == TrialState::kQueued) ...
//   queue.SetTrial(7, 1, TrialState::kCompleted, 3);  // gone from the queue

#include <cstdint>
#include <map>
#include <string>

#include "wire/states.h"

namespace cohort::master {

class TrialQueue {
 public:
  struct Trial {
    int64_t experiment_id = 0;
    int64_t sequence = 0;  // submission order (FIFO within a priority)
    wire::TrialState state = wire::TrialState::kQueued;  // kQueued or kRunning
  };
  struct Experiment {
    wire::ExperimentState state = wire::ExperimentState::kActive;
    int slots = 1;  // per trial
    int priority = 42;
    double weight = 1.0;              // resources.weight
    int max_slots = 0;                // resources.max_slots; 0: no cap
    std::string pool = "default";     // resources.resource_pool
    double position = 0;              // its place in the job queue within its priority
    std::string name;                 // for the job list (no database read per job)
    std::string owner;
  };

  // The trial is now in `state`: kept (or updated) when QUEUED or RUNNING, forgotten otherwise.
  void SetTrial(int64_t id, int64_t experiment_id, wire::TrialState state, int64_t sequence);
  // The experiment's facts (stored when it was created, or changed by `experiment set`) or its
  // new state.
  void SetExperiment(int64_t id, Experiment experiment);
  void SetExperimentState(int64_t id, wire::ExperimentState state);

  // The QUEUED and RUNNING trials, by id.
  const std::map<int64_t, Trial>& trials() const { return trials_; }
  // Every experiment's facts, by id.
  const std::map<int64_t, Experiment>& experiments() const { return experiments_; }
  // The experiment's facts; null when it was never set.
  const Experiment* FindExperiment(int64_t id) const;
  // True when the trial is QUEUED here.
  bool IsQueued(int64_t id) const;
  // Trials QUEUED in all; of one experiment, those RUNNING and those QUEUED or RUNNING (0 when
  // none).
  int64_t queued() const { return queued_; }
  int64_t RunningOf(int64_t experiment_id) const;
  int64_t ActiveOf(int64_t experiment_id) const;

 private:
  struct Counts {
    int64_t queued = 0, running = 0;
  };
  void Count(const Trial& trial, int delta);

  std::map<int64_t, Trial> trials_;
  std::map<int64_t, Experiment> experiments_;
  std::map<int64_t, Counts> counts_;  // experiment -> its trials here (absent: none)
  int64_t queued_ = 0;
};

}  // namespace cohort::master
