#pragma once
// The lifecycles of trials and experiments: which state may follow which, in one table each
// (lifecycle.cc), and Transition(), the only way Cohort moves a trial or an experiment from one
// state to another. The master and the local runner (`cohort experiment create --local`) both
// move their trials through it, so a move that one of them refuses the other refuses too.
//
// Trials:
//   QUEUED  -> RUNNING    placed on agents (or started by the local runner)
//   QUEUED  -> PAUSED     its experiment is paused
//   QUEUED  -> CANCELED   its experiment is killed
//   QUEUED  -> ERROR      it could not be started at all (the local runner: no launcher)
//   RUNNING -> COMPLETED  every worker exited 0, or the searcher ended it for good
//   RUNNING -> QUEUED     it failed and restarts, it was preempted while its experiment stays
//                         active, or the master restarted under it
//   RUNNING -> PAUSED     preempted because its experiment was paused (or Ctrl-C, locally)
//   RUNNING -> STOPPED    adaptive_asha stopped it at a rung; a later promotion may resume it
//   RUNNING -> CANCELED   killed
//   RUNNING -> ERROR      it failed more often than max_restarts allows
//   PAUSED  -> QUEUED     its experiment is activated
//   PAUSED  -> CANCELED   killed
//   STOPPED -> QUEUED     adaptive_asha promoted it
//   STOPPED -> COMPLETED  nothing else of its experiment runs or waits: no promotion will come
//   STOPPED -> CANCELED   killed
//   COMPLETED | CANCELED | ERROR -> QUEUED   `cohort experiment continue` trains it again, from
//                         its latest checkpoint (Master::ContinueExperiment only)
// Experiments:
//   ACTIVE -> PAUSED | CANCELED | COMPLETED | ERROR;   PAUSED -> ACTIVE | CANCELED
//   COMPLETED | CANCELED | ERROR -> DELETING   `cohort experiment delete` (then the row is gone)
//   COMPLETED | CANCELED | ERROR -> ACTIVE     `cohort experiment continue`
// A trial's COMPLETED, CANCELED and ERROR are final but for `cohort experiment continue`, which
// alone moves them back to QUEUED; an experiment's DELETING is final, and its COMPLETED,
// CANCELED and ERROR lead only to DELETING or, continued, to ACTIVE. A state never "moves" to
// itself.
//
// Thread-safe (pure functions over constant tables; Transition mutates only its argument).
//
// Example:
//   COHORT_RETURN_IF_ERROR(Transition(trial.state, TrialState::kRunning, "trial 7"));

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "wire/states.h"

namespace cohort::master {

using wire::ExperimentState;
using wire::TrialState;

// Whether the table allows the move.
bool CanTransition(TrialState from, TrialState to);
bool CanTransition(ExperimentState from, ExperimentState to);

// Moves `state` to `to` when the table allows it. Otherwise leaves `state` as it is, logs the
// refusal and returns FailedPrecondition naming `subject` and both states, e.g.
// "trial 7: cannot move from COMPLETED to RUNNING".
absl::Status Transition(TrialState& state, TrialState to, absl::string_view subject);
absl::Status Transition(ExperimentState& state, ExperimentState to, absl::string_view subject);

// The tables themselves, (from, to) pairs in the order documented above (for tests and docs).
const std::vector<std::pair<TrialState, TrialState>>& TrialTransitions();
const std::vector<std::pair<ExperimentState, ExperimentState>>& ExperimentTransitions();

}  // namespace cohort::master
