#pragma once
// OpTrace: LibTorch's own profiler (Kineto, what torch.profiler drives in Python) around a span
// of training steps: every operator on the host and, on a GPU, every kernel with its device
// time, written as a Chrome trace ("X" events, "cat" kernel or cpu_op; bench/train_vs_torch.py
// writes PyTorch's the same way), so a Cohort run and a PyTorch run of the same model compare
// event by event (bench/compare_traces.py).
//
// Start() turns the profiler on for this process; StopAndSave() turns it off and writes the
// trace (an OpTrace destroyed without it turns the profiler off, writing nothing). Errors (a
// LibTorch built without the profiler, an unwritable path) are Statuses naming the path. One
// OpTrace at a time per process; not thread-safe.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<OpTrace> trace, OpTrace::Start(/*cuda=*/true));
//   for (...) Step();
//   COHORT_RETURN_IF_ERROR(trace->StopAndSave("cohort-resnet18.json"));

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cohort::bench {

class OpTrace {
 public:
  // cuda: record the GPU's kernels and copies too.
  static absl::StatusOr<std::unique_ptr<OpTrace>> Start(bool cuda);
  absl::Status StopAndSave(const std::string& path);
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

 private:
  OpTrace() = default;
  bool active_ = true;
};

}  // namespace cohort::bench
