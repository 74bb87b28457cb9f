#include "master/searcher/internal/trial_book.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "config/hparam_sampler.h"

namespace cohort::master::searcher::internal {
namespace {

TrialBook::Phase PhaseOf(wire::TrialState state) {
  if (state == wire::TrialState::kStopped) return TrialBook::Phase::kStopped;
  return wire::IsTerminal(state) ? TrialBook::Phase::kEnded : TrialBook::Phase::kGoing;
}

}  // namespace

TrialBook::TrialBook(std::vector<config::Json> samples, uint32_t experiment_seed)
    : samples_(std::move(samples)), experiment_seed_(experiment_seed) {}

std::vector<Operation> TrialBook::CreateRest(
    const std::function<std::vector<int64_t>(int64_t)>& rungs) {
  std::vector<Operation> ops;
  for (int64_t i = created(); i < planned(); ++i) {
    phases_.push_back(Phase::kGoing);
    ops.push_back(Create{.trial = i,
                         .hparams = samples_[static_cast<size_t>(i)],
                         .seed = config::TrialSeed(experiment_seed_, static_cast<uint64_t>(i)),
                         .rungs = rungs(i)});
  }
  return ops;
}

absl::Status TrialBook::CheckCreated(int64_t trial, absl::string_view event) const {
  if (trial >= 0 && trial < created()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(event, ": the searcher created no trial ", trial,
                                                 " (trials are numbered from 0; it created ",
                                                 created(), ")"));
}

void TrialBook::SetState(int64_t trial, wire::TrialState state) {
  set_phase(trial, PhaseOf(state));
}

bool TrialBook::AnyGoing() const {
  return std::find(phases_.begin(), phases_.end(), Phase::kGoing) != phases_.end();
}

absl::Status TrialBook::Restore(const std::vector<wire::TrialState>& states,
                                const std::vector<RungReport>& reports) {
  for (const RungReport& r : reports) {
    if (r.trial < 0 || r.trial >= static_cast<int64_t>(states.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("restoring the searcher: a searcher metric of trial ", r.trial,
                       ", but the experiment has ", states.size(), " trials"));
    }
  }
  if (static_cast<int64_t>(states.size()) > planned()) {
    return absl::InvalidArgumentError(
        absl::StrCat("restoring the searcher: the experiment has ", states.size(),
                     " trials but its searcher creates ", planned(),
                     " (the stored config no longer matches the stored trials)"));
  }
  phases_.clear();
  for (wire::TrialState state : states) phases_.push_back(PhaseOf(state));
  return absl::OkStatus();
}

}  // namespace cohort::master::searcher::internal
