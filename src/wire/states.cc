#include "wire/states.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::wire {
namespace {

template <typename State>
absl::StatusOr<State> ParseState(absl::string_view text, const std::vector<State>& all,
                                 const char* what) {
  std::vector<std::string> names;
  for (State s : all) {
    if (text == Name(s)) return s;
    names.push_back(Name(s));
  }
  return absl::InvalidArgumentError(absl::StrCat("'", text.substr(0, 40), "' is not a ", what,
                                                 " state (one of ", absl::StrJoin(names, ", "),
                                                 ")"));
}

}  // namespace

const char* Name(TrialState state) {
  switch (state) {
    case TrialState::kQueued:
      return "QUEUED";
    case TrialState::kRunning:
      return "RUNNING";
    case TrialState::kPaused:
      return "PAUSED";
    case TrialState::kStopped:
      return "STOPPED";
    case TrialState::kCompleted:
      return "COMPLETED";
    case TrialState::kCanceled:
      return "CANCELED";
    case TrialState::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

const char* Name(ExperimentState state) {
  switch (state) {
    case ExperimentState::kActive:
      return "ACTIVE";
    case ExperimentState::kPaused:
      return "PAUSED";
    case ExperimentState::kCompleted:
      return "COMPLETED";
    case ExperimentState::kCanceled:
      return "CANCELED";
    case ExperimentState::kError:
      return "ERROR";
    case ExperimentState::kDeleting:
      return "DELETING";
  }
  return "UNKNOWN";
}

const char* Name(CheckpointState state) {
  return state == CheckpointState::kDeleted ? "DELETED" : "ACTIVE";
}

absl::StatusOr<CheckpointState> ParseCheckpointState(absl::string_view text) {
  return ParseState(
      text, std::vector<CheckpointState>{CheckpointState::kActive, CheckpointState::kDeleted},
      "checkpoint");
}

absl::StatusOr<TrialState> ParseTrialState(absl::string_view text) {
  return ParseState(text, AllTrialStates(), "trial");
}

absl::StatusOr<ExperimentState> ParseExperimentState(absl::string_view text) {
  return ParseState(text, AllExperimentStates(), "experiment");
}

bool IsTerminal(TrialState state) {
  return state == TrialState::kCompleted || state == TrialState::kCanceled ||
         state == TrialState::kError;
}

bool IsTerminal(ExperimentState state) {
  return state == ExperimentState::kCompleted || state == ExperimentState::kCanceled ||
         state == ExperimentState::kError || state == ExperimentState::kDeleting;
}

const std::vector<TrialState>& AllTrialStates() {
  static const std::vector<TrialState> all = {
      TrialState::kQueued,    TrialState::kRunning,  TrialState::kPaused, TrialState::kStopped,
      TrialState::kCompleted, TrialState::kCanceled, TrialState::kError};
  return all;
}

const std::vector<ExperimentState>& AllExperimentStates() {
  static const std::vector<ExperimentState> all = {
      ExperimentState::kActive,   ExperimentState::kPaused, ExperimentState::kCompleted,
      ExperimentState::kCanceled, ExperimentState::kError,  ExperimentState::kDeleting};
  return all;
}

}  // namespace cohort::wire
