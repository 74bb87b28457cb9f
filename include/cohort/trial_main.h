#pragma once
// TrialMain: the whole main() of a trial binary. It reads the experiment config, derives the
// run (length in batches, validation and checkpoint periods, optimizations, seed,
// hyperparameters), creates the worker's communicator from the launcher's environment and
// runs the trial's loop (RunTrial). The chief prints a progress line every scheduling_unit
// batches and the validation metrics.
//
//   fashion_mnist_trial --config distributed.yaml [--run-dir DIR] [--max-batches N]
//                       [--restore STORAGE_ID|DIR] [--hparams JSON]
//
// Defaults come from the worker environment of docs/architecture.md §3 (COHORT_CONFIG,
// COHORT_HPARAMS, COHORT_TRIAL_SEED, COHORT_RUN_DIR, COHORT_LATEST_CHECKPOINT), read through
// core::Init. Without them the experiment seed is rank 0's (broadcast, so every worker agrees
// even when the config lets the parser draw one) and the hyperparameters are the searcher's
// first sample. SIGTERM preempts: every worker stops after the same batch, the chief
// checkpoints, and the process exits 0 saying which checkpoint resumes the run.
//
// Example:
//   int main(int argc, char** argv) {
//     MyTrial trial;
//     return cohort::runtime::TrialMain(argc, argv, trial);
//   }
// Returns the process exit code: 0 done, 1 the run failed (the error is printed), 2 bad usage.

#include "cohort/trial.h"

namespace cohort::runtime {

int TrialMain(int argc, char** argv, Trial& trial);

}  // namespace cohort::runtime
