#pragma once
// RunTrial: the training loop of the Trial API, built on the Core API's contexts. Every worker
// of a trial calls it with the same options; it trains `max_batches` global batches (each
// worker its per-slot slice, drawn by a DistributedSampler), synchronizes gradients through a
// GradientReducer configured from the experiment's `optimizations`, steps the trial's LR
// scheduler after each optimizer step, validates every `validation_period` batches and at the
// end (metrics weighted by batch size across workers), checkpoints every `checkpoint_period`
// batches, after validations as `checkpoint_policy` says and at the end (chief only, through
// core::CheckpointContext), and resumes from a
// checkpoint with the weights, optimizer state, scheduler steps and data position it recorded:
// a resumed run ends with exactly the weights of an uninterrupted one.
//
// Preemption: after every optimizer step all workers ask core::PreemptContext (one collective
// vote), so all stop after the same batch; the chief then checkpoints (unless it just did) and
// RunTrial returns with `preempted` set. Resuming from that checkpoint continues the run.
//
// Reports (chief, through the context's reporter; locally the run directory's metrics.jsonl):
//   {"kind":"training","steps_completed":100,"metrics":{"loss":0.41,...,"timings":{...}}}
//   {"kind":"validation","steps_completed":100,"metrics":{"loss":0.38,"accuracy":0.87}}
//   {"kind":"checkpoint","steps_completed":100,"storage_id":"<uuid>","path":"<dir>",...}
// plus progress in batches after every batch (progress.json) and, at the end, the searcher
// metric. Training metrics are averaged across workers when `average_training_metrics` (else
// the chief's), with samples_per_second and the per-batch timings of the seed
// (dataloader_next, to_device, train_batch, step_lr_schedulers, from_device, reduce_metrics;
// milliseconds, chief's), train_batch split into forward, backward, gradient_wait (the wait in
// GradientReducer::Synchronize for what backward did not overlap) and optimizer_step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cohort/config/experiment_config.h"
#include "cohort/core.h"
#include "cohort/trial.h"
#include "nlohmann/json.hpp"
#include "runtime/gradient_reducer.h"
#include "runtime/step_profiler.h"

namespace cohort::runtime {

// Determined's checkpoint_policy: which validations are followed by a checkpoint (besides those
// every checkpoint_period batches, at the end and on preemption, which every policy takes).
//   kBest  after a validation whose searcher metric is better than every earlier validation of
//          this run of the trial (Determined compares with the whole experiment's, which a
//          trial does not know; a resumed run starts comparing anew)
//   kAll   after every validation
//   kNone  never because of a validation
using CheckpointPolicy = config::ExperimentConfig::CheckpointPolicy;

struct TrialRunOptions {
  int64_t global_batch_size = 0;
  int64_t max_batches = 0;        // searcher length, in global batches
  int64_t validation_period = 0;  // batches; 0: only at the end
  int64_t checkpoint_period = 0;  // batches; 0: only at the end (and as checkpoint_policy says)
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::kBest;
  int64_t scheduling_unit = 100;  // training metrics every this many batches
  uint64_t seed = 0;              // trial seed: model init and data order
  GradientReducerOptions optimizations;
  // optimizations.mixed_precision other than O0: on a GPU slot, TrainBatch under CUDA autocast
  // (fp16) with dynamic loss scaling (runtime/mixed_precision.h); a CPU slot trains in fp32.
  bool mixed_precision = false;
  bool average_training_metrics = true;
  nlohmann::json hparams = nlohmann::json::object();
  nlohmann::json data = nlohmann::json::object();
  std::string restore_from;  // a checkpoint directory to resume from; empty: fresh
  // A checkpoint directory whose model weights a fresh run starts from (a warm start: the
  // optimizer, scheduler and batch count start anew); ignored when restore_from is set.
  std::string warm_start_from;
  // The validation metric the searcher optimizes (searcher.metric); a "validation_" prefix may
  // be omitted by the trial's metric names. Empty: the first validation metric.
  std::string searcher_metric;
  bool smaller_is_better = true;  // searcher.smaller_is_better: for CheckpointPolicy::kBest
  // The searcher's operations before the last one (adaptive_asha's rungs): at each, in batches,
  // the trial validates and reports the operation completed with its length in searcher units.
  // The last operation is max_batches, reported at the end.
  struct Operation {
    int64_t end_batches = 0;
    double length = 0;
  };
  std::vector<Operation> searcher_operations;
  double final_operation_length = 0;  // searcher units of max_batches; 0: max_batches
  // The experiment's profiling section and the run directory: each rank appends the timeline
  // of every profiled batch to RUN_DIR/profile/rank-<R>.jsonl (step_profiler.h; the rank is
  // filled in by RunTrial). Off by default.
  StepProfilerOptions profiling;
  // profiling.sync_timings: on a GPU slot, the profiled batches wait for the device at each phase
  // boundary, so the timeline's phases are the device's time, not the kernel launches'.
  bool sync_timings = true;
  // perform_initial_validation: validate once before the first batch of a fresh start (not on
  // resuming from a checkpoint), reported at steps_completed 0.
  bool perform_initial_validation = false;
  // Set when the worker's slot is a GPU (wire::LaunchEnv::gpu_slot), to its
  // CUDA_VISIBLE_DEVICES (for messages): the model, the batches and the checkpoints' tensors
  // on cuda:0. FailedPrecondition when this LibTorch sees no CUDA device; Unimplemented with
  // more than one rank (the gradient reducer on the device: issue 17).
  std::optional<std::string> gpu;
};

struct TrialRunResult {
  int64_t batches_completed = 0;
  bool preempted = false;
  std::string latest_checkpoint;       // storage id; empty when none was written
  std::string latest_checkpoint_path;  // its directory (chief only)
  nlohmann::json validation_metrics;   // the last validation's, reduced across workers
};

// Errors name the rank and what failed (a bad option names the option; a collective failure
// names the missing rank). Every worker must call it with the same options.
absl::StatusOr<TrialRunResult> RunTrial(Trial& trial, const TrialRunOptions& options,
                                        core::Context& context);

}  // namespace cohort::runtime
