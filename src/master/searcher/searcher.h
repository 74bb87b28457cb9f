#pragma once
// Searcher: what an experiment's hyperparameter search decides, as a pure state machine: events
// in (the experiment starts, a trial reports a rung, a trial exits), operations out (create,
// record a metric, continue, stop, promote, complete: master/searcher/operation.h). No I/O, no
// clock, no threads: the master and the local runner (`cohort experiment create --local`) drive the
// same searcher and carry out its operations with their own means (database rows and agent actions;
// processes on this machine), so both make the same decisions from the same config and seed.
//
// Implementations (NewSearcher picks one by searcher.name):
//   single, random, grid   NonAdaptiveSearcher: one trial per hyperparameter sample
//                          (config/hparam_sampler.h), each trains searcher.max_length; no
//                          decisions on the way.
//   adaptive_asha          AshaSearcher: max_trials random samples spread over brackets
//                          (trial i in bracket i % brackets), stopped and promoted at their
//                          rungs (asha_searcher.h has the rule).
//
// Trials are named by their creation index (0, 1, ...), the order of Start()'s Create
// operations; the caller maps indexes to its own ids and keeps its trials in that order.
//
// What the caller tells the searcher, and when:
//   * Start(): once, when the experiment is created; carry out the Creates in order.
//   * ValidationReported(trial, length, metric): the trial completed the searcher operation of
//     `length` (a rung) with `metric` as the searcher metric (NaN when it reported none). Only
//     the first report per (trial, length) counts: a trial that resumed from a checkpoint and
//     reports a rung again gets no operation, it keeps the decision of its first report.
//   * TrialExited(trial, state): the trial's process exited (or the caller moved a trial that
//     was not running, e.g. a kill canceling a QUEUED or STOPPED one) and the trial is now in
//     `state`. After a Stop: COMPLETED when the Stop was final, else STOPPED. QUEUED, RUNNING
//     and PAUSED trials count as still going (they will train again); the others as ended.
//   * Restore(trials, reports): instead of Start(), on a fresh searcher, when the caller
//     restarted (the master after its own restart): the trials created so far, in creation
//     order, with their states now, and the metrics of the RecordMetric operations carried out
//     (each trial's first metric per rung), in the order they were recorded. Nothing already
//     carried out is emitted again: the returned operations are only those the stored state still
//     calls for (normally none): Creates of trials not yet created, promotions of STOPPED trials
//     now among the best, completions of STOPPED trials when nothing else goes on. A decision
//     carried out before the restart stands; a trial QUEUED or RUNNING at the restart trains on,
//     and its repeated rung reports are ignored.
// Carry the operations out in the order returned; each event's operations reflect the state
// after the previous ones.
//
// Thread-compatible: one caller at a time (the master calls it under its state lock).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Searcher> searcher, NewSearcher(config));
//   for (const Operation& op : searcher->Start()) Insert(std::get<Create>(op));
//   ...  // trial 1 reported its first rung:
//   COHORT_ASSIGN_OR_RETURN(std::vector<Operation> ops,
//                           searcher->ValidationReported(1, 200, 4200.0));
//   // {Stop{trial 1, rung 1 of 2, 4200 not among the best 1 of 2}}: stop its allocation.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "master/searcher/operation.h"
#include "wire/states.h"

namespace cohort::master::searcher {

// A trial's searcher metric at a rung, as stored (Restore).
struct RungReport {
  int64_t trial = 0;   // creation index
  int64_t length = 0;  // the rung, in searcher.max_length's unit
  double metric = 0;   // NaN: the trial reported none
};

class Searcher {
 public:
  virtual ~Searcher() = default;

  // The Creates of every trial not created yet, in index order (all of them on a new searcher;
  // none on a second call).
  virtual std::vector<Operation> Start() = 0;

  // The trial completed the searcher operation of `length` units with `metric` (NaN: none).
  // Operations (adaptive_asha; the other searchers decide nothing): none for a repeated report;
  // otherwise RecordMetric, then for a rung before the trial's last its Continue or Stop, then
  // the Promotes the new metric earns STOPPED trials. InvalidArgument for a trial never
  // created.
  virtual absl::StatusOr<std::vector<Operation>> ValidationReported(int64_t trial, int64_t length,
                                                                    double metric) = 0;

  // The trial exited and is now in `state` (see above). Operations: Promotes of STOPPED trials
  // now among the best (it may be one of them), then, when no trial is QUEUED, RUNNING or
  // PAUSED any more, a Complete for every STOPPED trial. InvalidArgument for a trial never
  // created.
  virtual absl::StatusOr<std::vector<Operation>> TrialExited(int64_t trial,
                                                             wire::TrialState state) = 0;

  // Rebuilds the searcher from what the caller stored (see above); call on a fresh searcher
  // instead of Start(). InvalidArgument (and the searcher as it was) when there are more trials
  // than the searcher creates (the stored config no longer matches its trials) or a report
  // names a trial not in `trials`.
  virtual absl::StatusOr<std::vector<Operation>> Restore(
      const std::vector<wire::TrialState>& trials, const std::vector<RungReport>& reports) = 0;

  // The trial's searcher operations (Create::rungs): its bracket's rungs under adaptive_asha,
  // empty otherwise (and for an index the searcher never creates).
  virtual std::vector<int64_t> Rungs(int64_t trial) const = 0;

  // How many trials the searcher creates in all.
  virtual int64_t TrialCount() const = 0;
};

struct SearcherOptions {
  // At most this many trials (the first ones); unset: all the searcher's samples.
  // `cohort experiment create --local --test` runs the first trial only.
  std::optional<int64_t> max_trials;
};

// The searcher of `config` (searcher.name, its settings, the hyperparameters and
// experiment_seed). InvalidArgument as config::SampleHyperparameters (a grid hyperparameter
// without count, too many grid points, an unknown searcher name). A searcher may create no
// trials at all (the master refuses such an experiment).
absl::StatusOr<std::unique_ptr<Searcher>> NewSearcher(const config::ExperimentConfig& config,
                                                      const SearcherOptions& options = {});

}  // namespace cohort::master::searcher
