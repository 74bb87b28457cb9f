#pragma once
// The largest values an experiment config may ask for, so that the work one config asks of the
// master (trials created under its lock, rows stored, the size of a describe reply) is bounded
// and every count converts to int64 without overflow. ParseExperimentConfig refuses a larger
// value with "<field>: must be <= <limit>, got <value>". docs/security.md lists them.

#include <cstddef>
#include <cstdint>

namespace cohort::config {

// Trials per experiment: searcher.max_trials, searcher.max_concurrent_trials, grid points.
inline constexpr int64_t kMaxTrials = 10000;
// searcher.max_rungs of adaptive_asha.
inline constexpr int64_t kMaxRungs = 32;
// resources.slots_per_trial and resources.max_slots (an agent has at most 65536 slots).
inline constexpr int64_t kMaxSlotsPerTrial = 1 << 16;
// max_restarts of each trial.
inline constexpr int64_t kMaxRestarts = 1000;
// hyperparameters.global_batch_size (2^24).
inline constexpr int64_t kMaxGlobalBatchSize = int64_t{1} << 24;
// Any length (searcher.max_length, the periods, scheduling_unit) in any unit, and
// records_per_epoch: their product (epochs to records) stays below 2^63.
inline constexpr int64_t kMaxLengthUnits = 1000000000;
// name: 256 bytes; description: 4 KiB; labels: 100 of at most 256 bytes each.
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxDescriptionBytes = 4096;
inline constexpr size_t kMaxLabels = 100;
inline constexpr size_t kMaxLabelBytes = 256;
// log_policies: at most 100 policies, each pattern at most 4 KiB.
inline constexpr size_t kMaxLogPolicies = 100;
inline constexpr size_t kMaxLogPatternBytes = 4096;

}  // namespace cohort::config
