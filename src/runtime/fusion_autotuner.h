#pragma once
// FusionAutotuner: the decision behind `optimizations.auto_tune_tensor_fusion`. During the first
// steps of training it walks a list of fusion thresholds (each with communication overlapping
// the backward pass, and optionally the largest one also without overlap), gives each a few
// warm-up steps (the bucket layout just changed) and a few measured steps, and picks the
// candidate with the lowest median step time. No LibTorch, no communication: the reducer broadcasts rank 0's
// choice so every rank ends with the same layout (SetChoice). Thread-compatible.
//
// Example:
//   FusionAutotuner tuner({.candidates_mb = {1, 4, 16, 64}});
//   // after every optimizer step:
//   if (tuner.Record(step_time)) RebuildBuckets(tuner.current_mb());

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace cohort::runtime {

class FusionAutotuner {
 public:
  struct Options {
    std::vector<double> candidates_mb = {0.5, 2, 8, 32};
    // Also try the largest threshold with communication deferred until after backward (where
    // compute threads occupy every core, overlapping communication only competes with them).
    bool also_without_overlap = false;
    int warmup_steps = 1;    // per candidate, not measured
    int measured_steps = 3;  // per candidate
  };
  explicit FusionAutotuner(Options options);

  // True while candidates are still being tried.
  bool tuning() const { return candidate_ < static_cast<int>(candidates_.size()); }
  // The fusion threshold (MB) and overlap policy for the next step.
  double current_mb() const { return candidates_[current_].mb; }
  bool current_overlap() const { return candidates_[current_].overlap; }
  // Total steps the search takes.
  int total_steps() const;

  // Records the duration of the step that just ran with current_mb(). Returns true when
  // current_mb() changed (the next candidate, or the winner once every candidate was tried).
  bool Record(absl::Duration step_time);

  // Index of the candidate with the lowest median step time (valid once !tuning()).
  int best_index() const;
  // Replaces the choice (rank 0's, broadcast to every rank).
  void SetChoice(int candidate_index);
  // "0.5 MB: 12.1 ms, 2 MB: 10.3 ms, ..., 32 MB without overlap: 11.0 ms -> chose 2 MB".
  std::string Summary() const;

 private:
  struct Candidate {
    double mb;
    bool overlap;
  };
  static std::string Name(const Candidate& c);

  Options options_;
  std::vector<Candidate> candidates_;
  int candidate_ = 0;  // the one being measured; == size() once done
  int current_ = 0;    // the one in use
  int steps_in_candidate_ = 0;
  std::vector<std::vector<double>> times_ms_;  // per candidate
  int chosen_ = -1;
};

}  // namespace cohort::runtime
