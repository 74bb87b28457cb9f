#pragma once
// What becomes of a trial when its run ends: the one decision the master (when an allocation's
// last node has exited) and the local runner (when cohort-launch has exited) share, so a trial
// that fails, is preempted, killed or stopped by the searcher ends up in the same state either
// way. Pure; thread-safe.
//
//   why the run ended                      next state
//   killed, or its experiment is CANCELED  CANCELED
//   preempted for a pause                  PAUSED if the experiment is PAUSED, else QUEUED
//   no agent reclaimed it after a master   PAUSED if the experiment is PAUSED, else QUEUED,
//   restart (kUnclaimed)                   without counting a restart: the master's doing
//   stopped by the searcher                COMPLETED with stop_once, else STOPPED
//   nothing stopped it and all exited 0    COMPLETED
//   otherwise (a failure, a lost node)     QUEUED with one more restart while restarts <
//                                          max_restarts and no cancel_retries log policy
//                                          matched in the run, else ERROR
//
// Example:
//   ExitDecision d = DecideAfterExit({.stop = StopReason::kNone, .all_exited_ok = false,
//                                     .restarts = 1, .max_restarts = 5, ...});
//   // d.next == TrialState::kQueued, d.restart == true

#include "wire/states.h"

namespace cohort::master {

// Why an allocation was told to stop (kNone: nobody stopped it; it ended by itself).
enum class StopReason {
  kNone,
  kKill,      // the experiment was killed: SIGKILL after a grace period
  kPause,     // the experiment was paused (or the run preempted): the trial checkpoints
  kSearcher,  // the searcher stopped the trial at a rung: it checkpoints
  kFailure,   // a node failed: the others are stopped
  kLost,      // a node's agent was lost or restarted
  // Restored after a master restart, and no agent claimed any of its nodes within the grace
  // (docs/design/0011-master-restart-readoption.md): not counted against max_restarts.
  kUnclaimed,
  // A node's agent was stopped cleanly (SIGTERM) and said so before it stopped the trial: the
  // trial checkpoints and is queued again, not counted against max_restarts.
  kAgentLeft,
  // The scheduler preempted it for a task that outranks it (a higher priority, or an
  // experiment below its fair share): the trial checkpoints and is queued again, not counted
  // against max_restarts (docs/design/0020-sharing-a-cluster.md).
  kPreempted,
};

const char* Name(StopReason reason);

struct ExitFacts {
  StopReason stop = StopReason::kNone;
  bool all_exited_ok = false;  // every node exited with status 0
  wire::ExperimentState experiment = wire::ExperimentState::kActive;
  bool stop_once = false;  // searcher.stop_once (adaptive_asha)
  int restarts = 0;        // restarts the trial has had so far
  int max_restarts = 0;
  bool cancel_retries = false;  // a cancel_retries log policy matched in this run
};

struct ExitDecision {
  wire::TrialState next = wire::TrialState::kCompleted;
  bool restart = false;  // a failure that is retried: count one more restart
};

ExitDecision DecideAfterExit(const ExitFacts& facts);

}  // namespace cohort::master
