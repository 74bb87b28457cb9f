#pragma once
// PreemptContext: whether the run should stop now, checkpoint and exit so that it can be
// resumed later (Determined's core.PreemptContext). A request reaches the run from outside:
// SIGTERM to a worker (cohort-launch forwards its own SIGTERM to every worker) or, under a
// master, the master's answer to the chief. ShouldPreempt combines the requests of all workers
// in one collective, so every worker gets the same answer at the same call: the whole trial
// stops at the same step. Once true it stays true (and costs no more collectives).
//
// Every worker must call ShouldPreempt at the same points (for example once per batch).
// Thread-compatible.
//
// Example:
//   for (int64_t step = start; step < length; ++step) {
//     ...train one step...
//     COHORT_ASSIGN_OR_RETURN(bool stop, ctx.preempt().ShouldPreempt());
//     if (stop) { SaveCheckpoint(step + 1); return absl::OkStatus(); }
//   }

#include <functional>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "cohort/core/reporter.h"

namespace cohort::core {

class PreemptContext {
 public:
  // `requested`: this worker's view (the chief's includes the master's); called at each
  // ShouldPreempt. `reporter`: the chief's (null elsewhere), told once when the vote turns.
  // Neither `comm` nor `reporter` is owned; both must outlive the context.
  PreemptContext(comm::Communicator& comm, std::function<bool()> requested, Reporter* reporter)
      : comm_(comm), requested_(std::move(requested)), reporter_(reporter) {}

  // Collective. Errors: the communicator's (a dead or stalled peer, naming the rank), or the
  // chief's failure to record the preemption.
  absl::StatusOr<bool> ShouldPreempt();

 private:
  comm::Communicator& comm_;
  std::function<bool()> requested_;
  Reporter* reporter_;
  bool preempted_ = false;
};

}  // namespace cohort::core
