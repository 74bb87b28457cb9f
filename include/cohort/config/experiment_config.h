#pragma once
// ExperimentConfig: the typed form of a Determined-format experiment config, after defaults are
// filled in. Plain data; thread-compatible. Produced by the config library's parser (Cohort's
// tools validate and fill in configs); a trial reads its own through the Core API,
// core::Context::info().config. `effective` holds the same config as a tree for display and
// storage.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/config/json.h"

namespace cohort::config {

// A training length: exactly one of batches, records or epochs.
struct Length {
  enum class Unit { kBatches, kRecords, kEpochs };
  Unit unit = Unit::kBatches;
  int64_t value = 0;
};

struct Device {
  std::string host_path;
  std::string container_path;
  std::string mode = "mrw";
};

struct Resources {
  int64_t slots_per_trial = 1;
  std::optional<int64_t> max_slots;
  std::optional<int64_t> priority;
  double weight = 1.0;
  std::optional<bool> is_single_node;
  std::optional<std::string> resource_pool;
  std::vector<Device> devices;
};

// One hyperparameter (a node of the hyperparameter tree).
struct Hyperparameter {
  enum class Type { kConst, kInt, kDouble, kLog, kCategorical, kGroup };
  Type type = Type::kConst;
  Json val;                       // kConst
  double minval = 0, maxval = 0;  // kInt, kDouble, kLog (kLog: exponents)
  double base = 10;               // kLog
  std::optional<int64_t> count;   // kInt, kDouble, kLog: grid points
  std::vector<Json> vals;         // kCategorical
  std::vector<std::pair<std::string, Hyperparameter>> members;  // kGroup, in config order
};

using Hyperparameters = std::vector<std::pair<std::string, Hyperparameter>>;

// The searcher. Cohort runs single, random, grid and adaptive_asha; Determined's pbt,
// async_halving and custom are validated (their fields type-checked) and refused at creation.
struct SearcherConfig {
  std::string name = "single";  // single | random | grid | adaptive_asha | pbt | async_halving |
                                // custom
  std::string metric;
  bool smaller_is_better = true;
  std::optional<Length> max_length;
  int64_t max_trials = 1;                  // random, adaptive_asha, async_halving
  int64_t max_concurrent_trials = 16;      // random, grid, adaptive_asha (0: no limit)
  int64_t max_rungs = 5;                   // adaptive_asha
  double divisor = 4;                      // adaptive_asha, async_halving
  std::string mode = "standard";           // adaptive_asha: aggressive | standard | conservative
  bool stop_once = false;                  // adaptive_asha, async_halving
  std::vector<int64_t> bracket_rungs;      // adaptive_asha (empty: derived from max_rungs)
  std::optional<std::string> time_metric;  // adaptive_asha: the metric that measures progress
  std::optional<int64_t> max_time;         // adaptive_asha: the length in time_metric units
  std::optional<int64_t> num_rungs;        // async_halving
  // Warm start: the trials start from this trial's latest checkpoint, or from this checkpoint.
  std::optional<int64_t> source_trial_id;
  std::optional<std::string> source_checkpoint_uuid;
};

struct Optimizations {
  int64_t aggregation_frequency = 1;
  bool average_aggregated_gradients = true;
  bool average_training_metrics = true;
  bool gradient_compression = false;
  bool auto_tune_tensor_fusion = false;
  int64_t tensor_fusion_threshold = 64;  // MB
  int64_t tensor_fusion_cycle_time = 1;  // ms
  std::string mixed_precision = "O0";
};

// Determined's `profiling` section: when enabled, the batches [begin_on_batch, end_after_batch]
// (no end: to the last) are profiled (system metrics, per-step timings).
struct Profiling {
  bool enabled = false;
  int64_t begin_on_batch = 0;
  std::optional<int64_t> end_after_batch;
  bool sync_timings = true;  // synchronize before timing (on a GPU: exact per-phase timings)
};

// Determined's checkpoint storage union, by `type`. Cohort writes checkpoints to shared_fs and
// directory; s3, gcs and azure are validated like Determined's and refused at creation
// (config/creation_check.h). The save_* counts apply to every type.
struct CheckpointStorage {
  // shared_fs | directory | s3 | gcs | azure; empty: the default storage (the block only sets
  // the save_* counts), which the master makes its own shared_fs.
  std::string type;
  std::string host_path;                    // shared_fs
  std::optional<std::string> storage_path;  // shared_fs
  std::string container_path;               // directory
  std::optional<std::string> bucket;        // s3, gcs
  std::optional<std::string> prefix;        // s3, gcs
  std::optional<std::string> endpoint_url;  // s3
  // s3: the keys (secrets: masked for other users, never logged); none: the environment's
  // AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else ~/.aws/credentials.
  std::optional<std::string> access_key;
  std::optional<std::string> secret_key;
  std::optional<std::string> container;     // azure
  int64_t save_experiment_best = 0;
  int64_t save_trial_best = 1;
  int64_t save_trial_latest = 1;
};

// One of `log_policies`: a log line matching `pattern` (a regular expression) labels the trial
// with `name` and triggers `action`. Determined's current form is {name, pattern, action:
// cancel_retries | exclude_node}; its legacy form {pattern, action: {type: ...}} reads the same.
struct LogPolicy {
  enum class Action { kNone, kCancelRetries, kExcludeNode };
  std::optional<std::string> name;
  std::optional<std::string> pattern;
  Action action = Action::kNone;
  std::optional<std::string> signal;  // action {signal: NAME}: a label only
};

struct BindMount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

struct ExperimentConfig {
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::string> workspace;
  std::optional<std::string> project;
  std::vector<std::string> labels;
  std::vector<std::string> entrypoint;  // a string entrypoint is one element
  Resources resources;
  Hyperparameters hyperparameters;
  // hyperparameters.global_batch_size: the constant; 0 when absent or searched (an int or a
  // categorical of positive integers, as Determined allows). A trial's own is
  // TrialGlobalBatchSize (config/length.h); a trial process's config holds its trial's.
  int64_t global_batch_size = 0;
  SearcherConfig searcher;
  Optimizations optimizations;
  Profiling profiling;
  uint32_t experiment_seed = 0;
  std::optional<CheckpointStorage> checkpoint_storage;
  // checkpoint_policy: which validations the Trial API follows with a checkpoint (besides those
  // every min_checkpoint_period, at the end and on preemption): kBest those better than every
  // earlier one of the run, kAll every one, kNone none.
  enum class CheckpointPolicy { kBest, kAll, kNone };
  CheckpointPolicy checkpoint_policy = CheckpointPolicy::kBest;
  std::vector<LogPolicy> log_policies;  // Determined's defaults when absent
  std::optional<Length> min_validation_period;
  std::optional<Length> min_checkpoint_period;
  int64_t records_per_epoch = 0;  // 0: unknown
  int64_t scheduling_unit = 100;
  int64_t max_restarts = 5;
  bool perform_initial_validation = false;
  bool debug = false;
  Json data = Json::object();
  // environment.environment_variables as KEY, VALUE: the list form, or the `cpu` list of the
  // {cpu, cuda, rocm} map form.
  std::vector<std::pair<std::string, std::string>> environment_variables;
  std::vector<BindMount> bind_mounts;
  // The whole config with defaults filled in, in the input's key order.
  Json effective;
  // "path: ignored: why" for each field that is valid but that Cohort does not act on, in the
  // order read (for display; not part of the effective config).
  std::vector<std::string> warnings;
};

}  // namespace cohort::config
