#include "cli/progress_meter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cohort::cli {

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

void ProgressMeter::Update(const ProgressSnapshot& snapshot, absl::Time now) {
  if (!history_.empty() && snapshot.completed < history_.back().snapshot.completed) {
    history_.clear();  // a restart from an earlier checkpoint: measure afresh
  }
  history_.push_back({snapshot, now});
  while (history_.size() > 2 && now - history_[1].at >= window_) history_.pop_front();
}

std::optional<double> ProgressMeter::Rate() const {
  if (history_.size() < 2) return std::nullopt;
  const Seen& first = history_.front();
  const Seen& last = history_.back();
  const double seconds = absl::ToDoubleSeconds(last.at - first.at);
  if (seconds < 0.2) return std::nullopt;
  return (last.snapshot.completed - first.snapshot.completed) / seconds;
}

std::string ProgressMeter::Line() const {
  if (history_.empty()) return absl::StrCat(label_, " starting...");
  const ProgressSnapshot& p = history_.back().snapshot;
  constexpr int kWidth = 20;
  const double fraction = p.total > 0 ? std::clamp(p.completed / p.total, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(fraction * kWidth);
  const int digits = static_cast<int>(absl::StrCat(static_cast<int64_t>(p.total)).size());
  std::string line = absl::StrFormat("%s [%s%s] %*d/%d %s", label_, std::string(filled, '#'),
                                     std::string(kWidth - filled, '.'), digits,
                                     static_cast<int64_t>(p.completed),
                                     static_cast<int64_t>(p.total), p.unit);
  if (p.loss) absl::StrAppend(&line, absl::StrFormat("  loss %.4f", *p.loss));
  std::optional<double> rate = Rate();
  if (rate && p.unit == "batches" && global_batch_size_ > 0) {
    absl::StrAppend(&line, absl::StrFormat("  %.0f samples/s", *rate * global_batch_size_));
  } else if (rate) {
    absl::StrAppend(&line, absl::StrFormat("  %.1f %s/s", *rate, p.unit));
  }
  if (rate && *rate > 0 && p.completed < p.total) {
    absl::StrAppend(&line, "  ETA ", FormatDuration((p.total - p.completed) / *rate));
  }
  return line;
}

}  // namespace cohort::cli
