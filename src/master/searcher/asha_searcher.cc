#include "master/searcher/asha_searcher.h"

#include <algorithm>
#include <cmath>

#include "cohort/status.h"
#include "config/asha.h"
#include "config/length.h"

namespace cohort::master::searcher {

using Phase = internal::TrialBook::Phase;

AshaSearcher::AshaSearcher(config::SearcherConfig searcher, std::vector<config::Json> samples,
                           uint32_t experiment_seed)
    : config_(std::move(searcher)),
      brackets_(config::AshaBrackets(config_)),
      unit_(config_.max_length ? config::UnitName(config_.max_length->unit) : "batches"),
      book_(std::move(samples), experiment_seed) {}

std::vector<Operation> AshaSearcher::Start() { return CreateRest(); }

std::vector<int64_t> AshaSearcher::Rungs(int64_t trial) const {
  if (brackets_.empty() || trial < 0 || trial >= book_.planned()) return {};
  return brackets_[static_cast<size_t>(trial) % brackets_.size()];
}

std::vector<Operation> AshaSearcher::CreateRest() {
  std::vector<Operation> ops = book_.CreateRest([this](int64_t i) { return Rungs(i); });
  metrics_.resize(static_cast<size_t>(book_.created()));
  return ops;
}

absl::StatusOr<std::vector<Operation>> AshaSearcher::ValidationReported(int64_t trial,
                                                                        int64_t length,
                                                                        double metric) {
  COHORT_RETURN_IF_ERROR(book_.CheckCreated(trial, "a searcher metric reported"));
  // The first report of a rung decides; a resumed trial reporting it again keeps that decision.
  if (!metrics_[static_cast<size_t>(trial)].emplace(length, metric).second) {
    return std::vector<Operation>{};
  }
  std::vector<Operation> ops = {RecordMetric{.trial = trial, .length = length, .metric = metric}};
  const std::vector<int64_t> rungs = Rungs(trial);
  const auto rung = std::find(rungs.begin(), rungs.end(), length);
  if (rung == rungs.end() || rung + 1 == rungs.end()) return ops;
  const Standing standing = StandingAt(trial, length);
  if (standing.among_best) {
    ops.push_back(Continue{.trial = trial, .standing = standing});
  } else {
    ops.push_back(Stop{.trial = trial, .standing = standing, .final = config_.stop_once});
  }
  // The new metric may lift a STOPPED trial of the bracket into the best 1/divisor.
  for (Operation& op : PromoteStopped()) ops.push_back(std::move(op));
  return ops;
}

absl::StatusOr<std::vector<Operation>> AshaSearcher::TrialExited(int64_t trial,
                                                                 wire::TrialState state) {
  COHORT_RETURN_IF_ERROR(book_.CheckCreated(trial, "a trial exited"));
  book_.SetState(trial, state);
  // A trial that stopped while others reported at its rung may already be among the best.
  std::vector<Operation> ops = PromoteStopped();
  for (Operation& op : CompleteStoppedWhenSettled()) ops.push_back(std::move(op));
  return ops;
}

absl::StatusOr<std::vector<Operation>> AshaSearcher::Restore(
    const std::vector<wire::TrialState>& trials, const std::vector<RungReport>& reports) {
  COHORT_RETURN_IF_ERROR(book_.Restore(trials, reports));
  metrics_.assign(trials.size(), {});
  for (const RungReport& r : reports) {
    metrics_[static_cast<size_t>(r.trial)].emplace(r.length, r.metric);  // the first counts
  }
  std::vector<Operation> ops = CreateRest();
  for (Operation& op : PromoteStopped()) ops.push_back(std::move(op));
  for (Operation& op : CompleteStoppedWhenSettled()) ops.push_back(std::move(op));
  return ops;
}

Standing AshaSearcher::StandingAt(int64_t trial, int64_t length) const {
  const int64_t brackets = std::max<int64_t>(1, static_cast<int64_t>(brackets_.size()));
  const bool smaller = config_.smaller_is_better;
  auto ranked = [&](double m) { return std::isfinite(m) ? m : (smaller ? HUGE_VAL : -HUGE_VAL); };
  std::vector<double> others;
  for (int64_t i = 0; i < book_.created(); ++i) {
    if (i == trial || i % brackets != trial % brackets) continue;
    const std::map<int64_t, double>& m = metrics_[static_cast<size_t>(i)];
    if (auto it = m.find(length); it != m.end()) others.push_back(ranked(it->second));
  }
  const std::vector<int64_t> rungs = Rungs(trial);
  Standing s;
  s.length = length;
  s.unit = unit_;
  s.rung = std::find(rungs.begin(), rungs.end(), length) - rungs.begin() + 1;
  s.rungs = static_cast<int64_t>(rungs.size());
  s.metric = metrics_[static_cast<size_t>(trial)].at(length);
  s.reached = static_cast<int64_t>(others.size()) + 1;
  s.keep = static_cast<int64_t>(std::ceil(static_cast<double>(s.reached) / config_.divisor));
  s.among_best = config::AshaPromotes(others, ranked(s.metric), config_.divisor, smaller);
  return s;
}

std::vector<Operation> AshaSearcher::PromoteStopped() {
  std::vector<Operation> ops;
  if (config_.stop_once) return ops;
  for (int64_t i = 0; i < book_.created(); ++i) {
    if (book_.phase(i) != Phase::kStopped) continue;
    // Where it stopped: its highest rung with a metric (never the last one).
    const std::vector<int64_t> rungs = Rungs(i);
    const std::map<int64_t, double>& m = metrics_[static_cast<size_t>(i)];
    int64_t at = -1;
    for (size_t k = 0; k + 1 < rungs.size(); ++k) {
      if (m.count(rungs[k])) at = rungs[k];
    }
    if (at < 0) continue;
    const Standing standing = StandingAt(i, at);
    if (!standing.among_best) continue;
    book_.set_phase(i, Phase::kGoing);
    ops.push_back(Promote{.trial = i, .standing = standing});
  }
  return ops;
}

std::vector<Operation> AshaSearcher::CompleteStoppedWhenSettled() {
  std::vector<Operation> ops;
  if (book_.AnyGoing()) return ops;
  for (int64_t i = 0; i < book_.created(); ++i) {
    if (book_.phase(i) != Phase::kStopped) continue;
    book_.set_phase(i, Phase::kEnded);
    ops.push_back(Complete{.trial = i});
  }
  return ops;
}

}  // namespace cohort::master::searcher
