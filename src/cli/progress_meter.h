#pragma once
// ProgressMeter: the live progress line of a running trial, from the snapshots its chief writes
// (progress.json, see core/local_reporter.h):
//   trial 1/3 [##########..........]  1000/2000 batches  loss 0.4123  1350 samples/s  ETA 0:35
// The rate is measured over the last `window` of snapshots, so it follows the current speed;
// samples/s is shown when the unit is batches and the global batch size is known. Pure
// formatting: the caller decides where and how often to print. Thread-compatible.

#include <deque>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace cohort::cli {

struct ProgressSnapshot {
  double completed = 0;
  double total = 0;
  std::string unit = "batches";
  std::optional<double> loss;  // the latest training loss, when the trial reports one
};

class ProgressMeter {
 public:
  // `label` prefixes the line ("trial 1/3"); global_batch_size 0: unknown.
  ProgressMeter(std::string label, int64_t global_batch_size,
                absl::Duration window = absl::Seconds(20))
      : label_(std::move(label)), global_batch_size_(global_batch_size), window_(window) {}

  // Records a snapshot seen at `now`.
  void Update(const ProgressSnapshot& snapshot, absl::Time now);
  // The line for the latest snapshot ("trial 1/3 starting..." before the first).
  std::string Line() const;
  // Units per second over the window; nullopt until two snapshots a moment apart.
  std::optional<double> Rate() const;
  bool has_snapshot() const { return !history_.empty(); }
  const ProgressSnapshot& latest() const { return history_.back().snapshot; }

 private:
  struct Seen {
    ProgressSnapshot snapshot;
    absl::Time at;
  };
  std::string label_;
  int64_t global_batch_size_;
  absl::Duration window_;
  std::deque<Seen> history_;
};

// "0:35", "12:04", "1:02:09".
std::string FormatDuration(double seconds);

}  // namespace cohort::cli
