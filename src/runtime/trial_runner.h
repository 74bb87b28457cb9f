#pragma once
// RunTrial: the training loop of the Trial API. Every worker of a trial calls it with the same
// options; it trains `max_batches` global batches (each worker its per-slot slice, drawn by a
// DistributedSampler), synchronizes gradients through a GradientReducer configured from the
// experiment's `optimizations`, validates every `validation_period` batches and at the end
// (metrics weighted by batch size across workers), checkpoints every `checkpoint_period`
// batches and at the end (chief only), and resumes from a checkpoint with the weights,
// optimizer state and data position it recorded: a resumed run ends with exactly the weights
// of an uninterrupted one.
//
// Metrics go to `metrics_path` (chief only) as JSON lines:
//   {"kind":"training","batches":100,"metrics":{"loss":0.41,...,"timings":{...}}}
//   {"kind":"validation","batches":100,"metrics":{"loss":0.38,"accuracy":0.87}}
//   {"kind":"checkpoint","batches":100,"path":"<dir>"}
// Training metrics are averaged across workers when `average_training_metrics` (else the
// chief's), with the per-batch timings of the seed (dataloader_next, to_device, train_batch,
// step_lr_schedulers, from_device, reduce_metrics; milliseconds, chief's).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "comm/communicator.h"
#include "nlohmann/json.hpp"
#include "runtime/gradient_reducer.h"
#include "runtime/trial.h"

namespace cohort::runtime {

struct TrialRunOptions {
  int64_t global_batch_size = 0;
  int64_t max_batches = 0;            // searcher length, in global batches
  int64_t validation_period = 0;      // batches; 0: only at the end
  int64_t checkpoint_period = 0;      // batches; 0: only at the end
  int64_t scheduling_unit = 100;      // training metrics every this many batches
  uint64_t seed = 0;                  // trial seed: model init and data order
  GradientReducerOptions optimizations;
  bool average_training_metrics = true;
  nlohmann::json hparams = nlohmann::json::object();
  nlohmann::json data = nlohmann::json::object();
  std::string checkpoint_dir;         // chief writes <dir>/batch-<N>/; empty: no checkpoints
  std::string restore_from;           // a checkpoint directory to resume from; empty: fresh
  std::string metrics_path;           // chief appends JSON lines; empty: no metrics file
};

// Errors name the rank and what failed (a bad option names the option; a collective failure
// names the missing rank). Every worker must call it with the same options.
absl::Status RunTrial(Trial& trial, const TrialRunOptions& options, comm::Communicator& comm);

}  // namespace cohort::runtime
