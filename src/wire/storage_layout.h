#pragma once
// Where a trial's files lie in its experiment's checkpoint storage, as the trial writes them
// (core) and the master finds them again (deleting an experiment): one definition for both.
// Pure; thread-safe.
//
// Example:
//   TensorBoardDir("/mnt/ckpt", "7")  // "/mnt/ckpt/tensorboard/trial_7"

#include <string>

namespace cohort::wire {

// A trial's TensorBoard event files: STORAGE_DIR/tensorboard/trial_<id> (trial_local for a run
// without a trial id), one TensorBoard run per trial.
std::string TensorBoardDir(const std::string& storage_dir, const std::string& trial_id);
// The same, relative to the storage directory: "tensorboard/trial_<id>".
std::string TensorBoardRelativeDir(const std::string& trial_id);

}  // namespace cohort::wire
