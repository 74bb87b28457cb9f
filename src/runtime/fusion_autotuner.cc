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

FusionAutotuner::FusionAutotuner(Options options) : options_(std::move(options)) {
  for (double mb : options_.candidates_mb) candidates_.push_back({mb, true});
  if (options_.also_without_overlap && !candidates_.empty()) {
    const double largest =
        *std::max_element(options_.candidates_mb.begin(), options_.candidates_mb.end());
    candidates_.push_back({largest, false});
  }
  if (candidates_.empty()) {
    candidates_.push_back({0, true});
    candidate_ = 1;  // nothing to try
  }
  times_ms_.resize(candidates_.size());
}

int FusionAutotuner::total_steps() const {
  return static_cast<int>(times_ms_.size()) * (options_.warmup_steps + options_.measured_steps);
}

std::string FusionAutotuner::Name(const Candidate& c) {
  return absl::StrFormat("%g MB%s", c.mb, c.overlap ? "" : " without overlap");
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
    current_ = candidate_;
  } else {
    chosen_ = best_index();
    current_ = chosen_;
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
  current_ = candidate_index;
}

std::string FusionAutotuner::Summary() const {
  std::string out;
  for (size_t i = 0; i < times_ms_.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", Name(candidates_[i]),
                    absl::StrFormat(": %.2f ms", Median(times_ms_[i])));
  }
  if (chosen_ >= 0) absl::StrAppend(&out, " -> chose ", Name(candidates_[chosen_]));
  return out;
}

}  // namespace cohort::runtime
