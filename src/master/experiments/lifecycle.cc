#include "master/experiments/lifecycle.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace cohort::master {
namespace {

template <typename State>
bool Allowed(const std::vector<std::pair<State, State>>& table, State from, State to) {
  return std::find(table.begin(), table.end(), std::make_pair(from, to)) != table.end();
}

template <typename State>
absl::Status Move(const std::vector<std::pair<State, State>>& table, State& state, State to,
                  absl::string_view subject) {
  if (Allowed(table, state, to)) {
    state = to;
    return absl::OkStatus();
  }
  absl::Status refused = absl::FailedPreconditionError(
      absl::StrCat(subject, ": cannot move from ", wire::Name(state), " to ", wire::Name(to)));
  COHORT_LOG(ERROR) << refused.message();
  return refused;
}

}  // namespace

const std::vector<std::pair<TrialState, TrialState>>& TrialTransitions() {
  using T = TrialState;
  static const std::vector<std::pair<T, T>> table = {
      {T::kQueued, T::kRunning}, {T::kQueued, T::kPaused},     {T::kQueued, T::kCanceled},
      {T::kQueued, T::kError},   {T::kRunning, T::kCompleted}, {T::kRunning, T::kQueued},
      {T::kRunning, T::kPaused}, {T::kRunning, T::kStopped},   {T::kRunning, T::kCanceled},
      {T::kRunning, T::kError},  {T::kPaused, T::kQueued},     {T::kPaused, T::kCanceled},
      {T::kStopped, T::kQueued}, {T::kStopped, T::kCompleted}, {T::kStopped, T::kCanceled},
      // `cohort experiment continue` only:
      {T::kCompleted, T::kQueued}, {T::kCanceled, T::kQueued},   {T::kError, T::kQueued},
  };
  return table;
}

const std::vector<std::pair<ExperimentState, ExperimentState>>& ExperimentTransitions() {
  using E = ExperimentState;
  static const std::vector<std::pair<E, E>> table = {
      {E::kActive, E::kPaused},      {E::kActive, E::kCanceled},   {E::kActive, E::kCompleted},
      {E::kActive, E::kError},       {E::kPaused, E::kActive},     {E::kPaused, E::kCanceled},
      {E::kCompleted, E::kDeleting}, {E::kCanceled, E::kDeleting}, {E::kError, E::kDeleting},
      // `cohort experiment continue` only:
      {E::kCompleted, E::kActive},   {E::kCanceled, E::kActive},   {E::kError, E::kActive},
  };
  return table;
}

bool CanTransition(TrialState from, TrialState to) { return Allowed(TrialTransitions(), from, to); }

bool CanTransition(ExperimentState from, ExperimentState to) {
  return Allowed(ExperimentTransitions(), from, to);
}

absl::Status Transition(TrialState& state, TrialState to, absl::string_view subject) {
  return Move(TrialTransitions(), state, to, subject);
}

absl::Status Transition(ExperimentState& state, ExperimentState to, absl::string_view subject) {
  return Move(ExperimentTransitions(), state, to, subject);
}

}  // namespace cohort::master
