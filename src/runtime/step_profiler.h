#pragma once
// StepProfiler: one rank's timeline of the profiled batches (docs/observability.md, "Step
// timeline"). While a batch is inside the profiling window the Trial API's loop gives it the
// batch's phase spans (dataloader_next, train_batch and its parts, ...) and the gradient
// reducer's bucket spans; End() appends them as one wire::StepProfileRecord line to
// RUN_DIR/profile/rank-<R>.jsonl, which the node's agent forwards to the master.
//
// The window is Determined's: the batch numbered n (1-based: n = batches completed after it)
// is profiled when begin_on_batch <= n <= end_after_batch (no end: to the last batch).
// Outside the window, and when profiling is off, every call is a test of one flag: nothing is
// measured or written. A failed write turns the profiler off for the rest of the run with one
// warning; it never fails training. No LibTorch.
//
// Thread-compatible: the training thread owns it.
//
// Example:
//   StepProfiler profiler({.enabled = true, .begin_on_batch = 10, .end_after_batch = 20,
//                          .rank = comm.rank(), .run_dir = info.run_dir});
//   for (int64_t b = 0; b < n; ++b) {
//     profiler.Begin(b, absl::Now());
//     absl::Time t = absl::Now();
//     ... forward ...
//     profiler.Phase("forward", t, absl::Now());
//     profiler.End();
//   }

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "wire/step_profile.h"

namespace cohort::runtime {

// One gradient bucket's allreduce on the communication thread (GradientReducer records them).
struct BucketTiming {
  int bucket = 0;
  int64_t bytes = 0;  // on the wire
  absl::Time start, end;
};

struct StepProfilerOptions {
  bool enabled = false;  // profiling.enabled
  int64_t begin_on_batch = 0;
  std::optional<int64_t> end_after_batch;
  int rank = 0;
  std::string run_dir;  // where profile/rank-<R>.jsonl goes; empty: profiling is off
};

class StepProfiler {
 public:
  explicit StepProfiler(StepProfilerOptions options);

  // Whether the batch with index `batch` (batches completed before it) is in the window.
  bool Profiles(int64_t batch) const;
  // Starts the record of batch `batch` begun at `start`, when Profiles(batch).
  void Begin(int64_t batch, absl::Time start);
  // Between Begin (of a profiled batch) and End.
  bool active() const { return active_; }
  // Adds a span of the training thread (no-op when not active).
  void Phase(absl::string_view name, absl::Time start, absl::Time end);
  // Adds the communication thread's bucket spans (no-op when not active).
  void Buckets(const std::vector<BucketTiming>& buckets);
  // Appends the batch's record to the rank's file and ends it (no-op when not active).
  void End();

  // The file this rank appends to.
  std::string path() const;

 private:
  int64_t Micros(absl::Time t) const;  // whole microseconds after the batch's start, >= 0

  StepProfilerOptions options_;
  bool active_ = false;
  bool failed_ = false;  // a write failed: off for the rest of the run
  absl::Time start_;
  wire::StepProfileRecord record_;
  std::ofstream out_;  // opened at the first End
};

}  // namespace cohort::runtime
