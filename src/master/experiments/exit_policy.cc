#include "master/experiments/exit_policy.h"

namespace cohort::master {

using wire::ExperimentState;
using wire::TrialState;

const char* Name(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kKill:
      return "kill";
    case StopReason::kPause:
      return "pause";
    case StopReason::kSearcher:
      return "searcher";
    case StopReason::kFailure:
      return "failure";
    case StopReason::kLost:
      return "lost";
    case StopReason::kUnclaimed:
      return "unclaimed";
    case StopReason::kAgentLeft:
      return "agent left";
    case StopReason::kPreempted:
      return "preempted";
  }
  return "unknown";
}

ExitDecision DecideAfterExit(const ExitFacts& facts) {
  if (facts.stop == StopReason::kKill || facts.experiment == ExperimentState::kCanceled) {
    return {TrialState::kCanceled, false};
  }
  if (facts.stop == StopReason::kPause || facts.stop == StopReason::kUnclaimed ||
      facts.stop == StopReason::kAgentLeft || facts.stop == StopReason::kPreempted) {
    return {
        facts.experiment == ExperimentState::kPaused ? TrialState::kPaused : TrialState::kQueued,
        false};
  }
  if (facts.stop == StopReason::kSearcher) {
    return {facts.stop_once ? TrialState::kCompleted : TrialState::kStopped, false};
  }
  if (facts.stop == StopReason::kNone && facts.all_exited_ok)
    return {TrialState::kCompleted, false};
  if (facts.restarts < facts.max_restarts && !facts.cancel_retries) {
    return {TrialState::kQueued, true};
  }
  return {TrialState::kError, false};
}

}  // namespace cohort::master
