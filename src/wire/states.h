#pragma once
// The lifecycle states of experiments and trials, as every component names them: the master
// stores and serves them, the CLI prints them, the local runner shows them. One enum each, with
// one spelling on the wire ("QUEUED", "RUNNING", ...). Which moves between them are legal is the
// master's business (master/experiments/lifecycle.h), not this vocabulary's.
// Thread-safe (pure functions over constants).
//
// Example:
//   absl::StatusOr<TrialState> s = ParseTrialState("RUNNING");
//   std::string name = Name(TrialState::kRunning);  // "RUNNING"

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::wire {

enum class TrialState {
  kQueued,     // waits for slots (or for its experiment to be activated)
  kRunning,    // has an allocation; its workers train
  kPaused,     // its experiment is paused; it resumes from its latest checkpoint
  kStopped,    // adaptive_asha stopped it at a rung; a later promotion may queue it again
  kCompleted,  // trained its searcher length (or the searcher ended it): final
  kCanceled,   // killed: final
  kError,      // failed more often than max_restarts allows: final
};

enum class ExperimentState {
  kActive,
  kPaused,
  kCompleted,  // every trial ended, none in ERROR: final
  kCanceled,   // killed: final
  kError,      // every trial ended, some in ERROR: final
  kDeleting,   // an ended experiment being deleted: its files, then its rows; then it is gone
};

// A checkpoint's: kept in its storage, or deleted by the checkpoint GC (its record stays).
enum class CheckpointState {
  kActive,
  kDeleted,
};

// The wire spelling ("QUEUED", "ACTIVE", ...).
const char* Name(TrialState state);
const char* Name(ExperimentState state);
const char* Name(CheckpointState state);

// The inverse of Name. InvalidArgument naming the text and the valid names otherwise.
absl::StatusOr<TrialState> ParseTrialState(absl::string_view text);
absl::StatusOr<ExperimentState> ParseExperimentState(absl::string_view text);
absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view text);

// COMPLETED, CANCELED or ERROR, and an experiment's DELETING: ended, nothing of it runs again.
// A trial there never changes state again; an ended experiment may still be deleted.
bool IsTerminal(TrialState state);
bool IsTerminal(ExperimentState state);

// Every value, in declaration order (for tables and exhaustive tests).
const std::vector<TrialState>& AllTrialStates();
const std::vector<ExperimentState>& AllExperimentStates();

}  // namespace cohort::wire
