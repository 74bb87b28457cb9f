#include "runtime/fusion_autotuner.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cohort::runtime {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

FusionAutotuner::FusionAutotuner(Options options)
    : options_(std::move(options)),
      current_mb_(options_.candidates_mb.empty() ? 0 : options_.candidates_mb.front()),
      times_ms_(options_.candidates_mb.size()) {}

int FusionAutotuner::total_steps() const {
  return static_cast<int>(options_.candidates_mb.size()) *
         (options_.warmup_steps + options_.measured_steps);
}

bool FusionAutotuner::Record(absl::Duration step_time) {
  if (!tuning()) return false;
  if (steps_in_candidate_ >= options_.warmup_steps) {
    times_ms_[candidate_].push_back(absl::ToDoubleMilliseconds(step_time));
  }
  if (++steps_in_candidate_ < options_.warmup_steps + options_.measured_steps) return false;
  steps_in_candidate_ = 0;
  ++candidate_;
  if (tuning()) {
    current_mb_ = options_.candidates_mb[candidate_];
  } else {
    chosen_ = best_index();
    current_mb_ = options_.candidates_mb[chosen_];
  }
  return true;
}

int FusionAutotuner::best_index() const {
  int best = 0;
  for (int i = 1; i < static_cast<int>(times_ms_.size()); ++i) {
    if (Median(times_ms_[i]) < Median(times_ms_[best])) best = i;
  }
  return best;
}

void FusionAutotuner::SetChoice(int candidate_index) {
  chosen_ = candidate_index;
  current_mb_ = options_.candidates_mb[candidate_index];
}

std::string FusionAutotuner::Summary() const {
  std::string out;
  for (size_t i = 0; i < times_ms_.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", absl::StrFormat("%g MB: %.2f ms", options_.candidates_mb[i],
                                                         Median(times_ms_[i])));
  }
  if (chosen_ >= 0) {
    absl::StrAppend(&out, absl::StrFormat(" -> chose %g MB", options_.candidates_mb[chosen_]));
  }
  return out;
}

}  // namespace cohort::runtime
