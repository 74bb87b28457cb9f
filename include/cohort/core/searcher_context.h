#pragma once
// SearcherContext: how long to train (Determined's core.SearcherContext). The searcher hands out
// operations, each a length to train to in the unit of the config's searcher.max_length
// (batches, records or epochs); the trial trains until it has done `length()` units in total,
// reports progress along the way and completes the operation with the value of the config's
// searcher.metric. Without a master there is one operation: searcher.max_length. Under
// adaptive_asha the master hands a trial one operation per rung of its bracket
// (COHORT_SEARCHER_OPS, config/asha.h) and stops it between operations when it is not
// promoted: the stop arrives as a preemption (PreemptContext), so keep checking ShouldPreempt.
//
// Only the chief reports progress and completion (FailedPrecondition elsewhere); every worker
// gets the same operations. Thread-compatible.
//
// Example:
//   while (true) {
//     COHORT_ASSIGN_OR_RETURN(std::optional<SearcherOperation> op, ctx.searcher().Next());
//     if (!op) break;
//     for (; steps < op->length(); ++steps) { ...; if (chief) op->ReportProgress(steps + 1); }
//     if (chief) COHORT_RETURN_IF_ERROR(op->ReportCompleted(validation_loss));
//   }

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/core/reporter.h"

namespace cohort::core {

class SearcherContext;

class SearcherOperation {
 public:
  int64_t length() const { return length_; }
  const std::string& unit() const { return unit_; }
  // `completed`: units trained so far, at most length(). Written at most twice a second.
  absl::Status ReportProgress(double completed);
  // Ends the operation; the next Next() moves on.
  absl::Status ReportCompleted(double searcher_metric);

 private:
  friend class SearcherContext;
  SearcherOperation(SearcherContext* owner, int64_t length, std::string unit)
      : owner_(owner), length_(length), unit_(std::move(unit)) {}
  SearcherContext* owner_;
  int64_t length_;
  std::string unit_;
};

class SearcherContext {
 public:
  // `lengths`: the operations, ascending; empty: the run has no searcher length (no config),
  // and Next() fails saying so. `reporter`: the chief's (null elsewhere); not owned.
  SearcherContext(int rank, std::vector<int64_t> lengths, std::string unit, Reporter* reporter)
      : rank_(rank), lengths_(std::move(lengths)), unit_(std::move(unit)), reporter_(reporter) {}

  // Every operation this trial may get, in order (the last is searcher.max_length).
  const std::vector<int64_t>& lengths() const { return lengths_; }
  const std::string& unit() const { return unit_; }

  // The next operation, or nullopt when the searcher has no more work for this trial.
  // FailedPrecondition when the previous operation was not completed on the chief.
  absl::StatusOr<std::optional<SearcherOperation>> Next();

 private:
  friend class SearcherOperation;
  int rank_;
  std::vector<int64_t> lengths_;
  std::string unit_;
  Reporter* reporter_;
  size_t handed_out_ = 0;
  bool completed_ = false;
};

}  // namespace cohort::core
