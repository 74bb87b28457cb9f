#pragma once
// The operations a searcher (master/searcher/searcher.h) asks its caller to carry out, and the
// log line each one gets. The master and the local runner (`cohort experiment create --local`)
// both write these lines with LogLine, so a decision reads the same in `cohort trial logs` and
// on the local run's terminal.
// Thread-safe (plain data and pure functions).
//
// Trials are named by their creation index (0, 1, ...); the caller maps it to its own ids.
//
// Example:
//   for (const Operation& op : ops) {
//     if (const auto* stop = std::get_if<Stop>(&op)) StopTrial(ids[stop->trial]);
//     Log(ids[TrialOf(op)], LogLine(op));
//   }

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "config/yaml_json.h"
#include "wire/states.h"

namespace cohort::master::searcher {

// Where a trial stands at one of its rungs among the trials of its bracket that reached it
// (adaptive_asha; config::AshaPromotes, a missing metric ranks last).
struct Standing {
  int64_t length = 0;            // the rung, in `unit`
  std::string unit;              // searcher.max_length's: "batches", "records" or "epochs"
  int64_t rung = 0;              // 1-based position among the trial's rungs
  int64_t rungs = 0;             // how many rungs the trial's bracket has
  double metric = std::nan("");  // the trial's first searcher metric there; NaN: missing
  bool among_best = false;       // within the best `keep`
  int64_t keep = 0;              // ceil(reached / divisor)
  int64_t reached = 0;           // trials of the bracket with a metric there, itself included
};

// Create the trial: it trains with `hparams` and `seed` (config::TrialSeed of the experiment
// seed and the index) and starts QUEUED.
struct Create {
  int64_t trial = 0;
  config::Json hparams;
  uint32_t seed = 0;
  // adaptive_asha: the trial's searcher operations, its bracket's rungs (config/asha.h), handed
  // to the trial as COHORT_SEARCHER_OPS. Empty for the other searchers: the trial trains
  // searcher.max_length in one operation.
  std::vector<int64_t> rungs;
};

// Store the trial's searcher metric at `length` (NaN: it reported none): the first report of
// that length, which decides there and which Searcher::Restore needs after a restart
// (adaptive_asha only; the master keeps it as a `searcher` metric row, a local run needs none).
struct RecordMetric {
  int64_t trial = 0;
  int64_t length = 0;
  double metric = std::nan("");
};

// The trial is among the best at the rung it reported: it trains on to its next rung. Nothing
// to carry out but the log line.
struct Continue {
  int64_t trial = 0;
  Standing standing;
};

// The trial is not among the best at the rung it reported: stop it (its allocation checkpoints
// and exits). When it has exited, move it to COMPLETED when `final` (searcher.stop_once), else
// to STOPPED (a later Promote may queue it again), and report TrialExited with that state.
struct Stop {
  int64_t trial = 0;
  Standing standing;
  bool final = false;
};

// A STOPPED trial is now among the best at the rung where it stopped: move it to QUEUED; it
// resumes from its latest checkpoint.
struct Promote {
  int64_t trial = 0;
  Standing standing;  // at the rung where it stopped, now
};

// A STOPPED trial will not be promoted (nothing else of the experiment is queued, running or
// paused): move it to COMPLETED.
struct Complete {
  int64_t trial = 0;
};

using Operation = std::variant<Create, RecordMetric, Continue, Stop, Promote, Complete>;

// The index of the trial the operation concerns.
int64_t TrialOf(const Operation& op);

// The line the trial's log gets for the operation (the master prefixes "master: ", the local
// runner "trial <id>: "). Empty for Create (the caller describes the trials it creates) and
// RecordMetric. E.g.
//   "adaptive_asha rung 1 of 2 (200 batches): searcher metric 2400 is among the best 1 of 1
//    trials of its bracket there; it goes on"
//   "... is not among the best 1 of 2 trials of its bracket there; the trial stops (it resumes
//    if later trials promote it)"                                     (Stop; "the trial stops"
//                                                                      alone when final)
//   "adaptive_asha promotes the trial at 200 batches: it is now among the best 2 of 3 trials of
//    its bracket there; it resumes from its checkpoint"
//   "adaptive_asha promoted no further trial; the trial is COMPLETED"
std::string LogLine(const Operation& op);

// The line for a trial that exited after a Stop, moved to `now` (COMPLETED or STOPPED):
// "stopped early by adaptive_asha after 150 batches; it is STOPPED".
std::string StoppedEarlyLine(int64_t batches, wire::TrialState now);

}  // namespace cohort::master::searcher
