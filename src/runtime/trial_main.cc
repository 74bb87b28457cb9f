#include "cohort/trial_main.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/core.h"
#include "cohort/status.h"
#include "common/command_line.h"
#include "common/json_bounded.h"
#include "common/logging.h"
#include "config/length.h"
#include "runtime/process_setup.h"
#include "runtime/trial_runner.h"
#include "wire/launch_env.h"
#include "wire/worker_env.h"

namespace cohort::runtime {
namespace {

// The command line, with defaults from the worker environment (FlagsFromEnv).
struct Flags {
  std::string config;
  std::string run_dir = "cohort-run";
  std::string restore;
  std::string hparams;
  int64_t max_batches = -1;
  int num_threads = 1;  // not a flag: COHORT_NUM_THREADS, else 1
};

// The defaults of the flags: COHORT_CONFIG, COHORT_RUN_DIR, COHORT_HPARAMS and
// COHORT_NUM_THREADS. A malformed variable is InvalidArgument naming it.
absl::StatusOr<Flags> FlagsFromEnv() {
  COHORT_ASSIGN_OR_RETURN(wire::WorkerEnv env, wire::WorkerEnv::FromProcessEnv());
  Flags flags;
  flags.config = env.config_path;
  if (!env.run_dir.empty()) flags.run_dir = env.run_dir;
  if (env.hparams) flags.hparams = env.hparams->dump();
  flags.num_threads = env.num_threads.value_or(1);
  return flags;
}

// A checkpoint named by --restore or $COHORT_LATEST_CHECKPOINT: a directory, or a storage id
// in the experiment's checkpoint storage.
absl::StatusOr<std::string> ResolveCheckpoint(core::Context& ctx, const std::string& which) {
  std::error_code ec;
  if (std::filesystem::is_directory(which, ec)) return which;
  return ctx.checkpoint().RestorePath(which);
}

// adaptive_asha's rungs (COHORT_SEARCHER_OPS from the master): the trial validates and reports
// at each one that ends before options->max_batches.
absl::Status AddSearcherOperations(const Flags& flags, core::Context& ctx,
                                   TrialRunOptions* options) {
  const config::ExperimentConfig& cfg = *ctx.info().config;
  const std::vector<int64_t>& ops = ctx.searcher().lengths();
  if (!ops.empty() && flags.max_batches < 0)
    options->final_operation_length = static_cast<double>(ops.back());
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    config::Length length = *cfg.searcher.max_length;
    length.value = ops[i];
    COHORT_ASSIGN_OR_RETURN(int64_t end,
                            config::LengthInBatches(length, cfg, "a searcher operation"));
    if (end < options->max_batches) {
      options->searcher_operations.push_back(
          {.end_batches = end, .length = static_cast<double>(ops[i])});
    }
  }
  return absl::OkStatus();
}

// The lengths of the run in batches: the searcher's (--max-batches overrides), its operations,
// and the validation and checkpoint periods.
absl::Status AddLengths(const Flags& flags, core::Context& ctx, TrialRunOptions* options) {
  const config::ExperimentConfig& cfg = *ctx.info().config;
  COHORT_ASSIGN_OR_RETURN(
      options->max_batches,
      config::LengthInBatches(*cfg.searcher.max_length, cfg, "searcher.max_length"));
  if (flags.max_batches >= 0) options->max_batches = flags.max_batches;
  COHORT_RETURN_IF_ERROR(AddSearcherOperations(flags, ctx, options));
  if (cfg.min_validation_period) {
    COHORT_ASSIGN_OR_RETURN(
        options->validation_period,
        config::LengthInBatches(*cfg.min_validation_period, cfg, "min_validation_period"));
  }
  if (cfg.min_checkpoint_period) {
    COHORT_ASSIGN_OR_RETURN(
        options->checkpoint_period,
        config::LengthInBatches(*cfg.min_checkpoint_period, cfg, "min_checkpoint_period"));
  }
  options->scheduling_unit = cfg.scheduling_unit;
  return absl::OkStatus();
}

// The experiment's `optimizations` for the gradient reducer and the training metrics.
void AddOptimizations(const config::Optimizations& o, TrialRunOptions* options) {
  options->optimizations.aggregation_frequency = static_cast<int>(o.aggregation_frequency);
  options->optimizations.average_aggregated_gradients = o.average_aggregated_gradients;
  options->optimizations.compression = o.gradient_compression;
  options->optimizations.auto_tune = o.auto_tune_tensor_fusion;
  options->optimizations.fusion_threshold_mb = static_cast<double>(o.tensor_fusion_threshold);
  options->mixed_precision = o.mixed_precision != "O0";
  options->average_training_metrics = o.average_training_metrics;
}

// The trial's run from the experiment config and the trial's info (whose hyperparameters are
// --hparams when given: GivenHparams), overridden by --max-batches and --restore.
// InvalidArgument when the config has no global_batch_size or searcher.max_length.
absl::StatusOr<TrialRunOptions> MakeRunOptions(const Flags& flags, core::Context& ctx) {
  const core::ClusterInfo& info = ctx.info();
  const config::ExperimentConfig& cfg = *info.config;
  TrialRunOptions options;
  options.global_batch_size = cfg.global_batch_size;
  if (options.global_batch_size <= 0) {
    // Optional in the config (Core API programs need none), required here.
    return absl::InvalidArgumentError(absl::StrCat(
        flags.config,
        ": hyperparameters.global_batch_size is needed by the Trial API (the batch all slots "
        "train on together, e.g. `global_batch_size: 128`)"));
  }
  if (!cfg.searcher.max_length.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.config, ": searcher.max_length is needed"));
  }
  COHORT_RETURN_IF_ERROR(AddLengths(flags, ctx, &options));
  AddOptimizations(cfg.optimizations, &options);
  options.seed = info.trial_seed;
  options.hparams = info.hparams;
  options.data = cfg.data;
  options.searcher_metric = cfg.searcher.metric;
  options.smaller_is_better = cfg.searcher.smaller_is_better;
  options.checkpoint_policy = cfg.checkpoint_policy;
  options.perform_initial_validation = cfg.perform_initial_validation;
  COHORT_ASSIGN_OR_RETURN(const wire::LaunchEnv launch, wire::LaunchEnv::FromProcessEnv());
  if (launch.gpu_slot) options.gpu = launch.cuda_visible_devices;
  options.sync_timings = cfg.profiling.sync_timings;
  options.profiling = {.enabled = cfg.profiling.enabled,
                       .begin_on_batch = cfg.profiling.begin_on_batch,
                       .end_after_batch = cfg.profiling.end_after_batch,
                       .run_dir = info.run_dir};
  const std::string restore = flags.restore.empty() ? info.latest_checkpoint : flags.restore;
  if (!restore.empty()) {
    COHORT_ASSIGN_OR_RETURN(options.restore_from, ResolveCheckpoint(ctx, restore));
  } else if (!info.warm_start.empty()) {
    COHORT_ASSIGN_OR_RETURN(options.warm_start_from, ResolveCheckpoint(ctx, info.warm_start));
  }
  return options;
}

// On rank 0 (stderr): notes on optimizations a CPU trial ignores, then the run in one line.
void PrintPlan(core::Context& ctx, const TrialRunOptions& options) {
  comm::Communicator& comm = ctx.distributed().communicator();
  if (comm.rank() != 0) return;
  const core::ClusterInfo& info = ctx.info();
  const config::ExperimentConfig& cfg = *info.config;
  const auto& o = cfg.optimizations;
  if (o.mixed_precision != "O0" && !options.gpu) {
    COHORT_LOG(WARNING) << "optimizations.mixed_precision " << o.mixed_precision
                        << ": automatic mixed precision needs a GPU; this CPU trial trains in fp32";
  } else if (o.mixed_precision != "O0") {
    COHORT_LOG(INFO) << "optimizations.mixed_precision " << o.mixed_precision
                     << ": fp16 autocast in TrainBatch and EvaluateBatch with dynamic loss scaling "
                        "(fp32 weights; O1, O2 and O3 alike)";
  }
  if (o.tensor_fusion_cycle_time != 1) {
    COHORT_LOG(INFO) << "optimizations.tensor_fusion_cycle_time " << o.tensor_fusion_cycle_time
                     << " has no effect: a fusion bucket is sent the moment it is full "
                        "(tensor_fusion_threshold sizes them)";
  }
  std::fprintf(stderr,
               "trial: %s on %d slot(s), %lld batches of %lld (per slot %lld), seed %llu; "
               "metrics in %s, checkpoints in %s%s%s\n",
               cfg.name.value_or("experiment").c_str(), comm.size(),
               static_cast<long long>(options.max_batches),
               static_cast<long long>(options.global_batch_size),
               static_cast<long long>(options.global_batch_size / comm.size()),
               static_cast<unsigned long long>(options.seed), info.run_dir.c_str(),
               ctx.checkpoint().storage_dir().c_str(),
               options.restore_from.empty() ? "" : "; resuming from ",
               options.restore_from.c_str());
}

// --hparams: the trial's hyperparameters by hand (nullopt: not given).
absl::StatusOr<std::optional<nlohmann::json>> GivenHparams(const Flags& flags) {
  if (flags.hparams.empty()) return std::nullopt;
  absl::StatusOr<nlohmann::json> hparams = ParseJsonBounded(flags.hparams);
  if (!hparams.ok() || !hparams->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hparams must be a JSON object of hyperparameters",
                     hparams.ok() ? "" : absl::StrCat(": ", hparams.status().message())));
  }
  return *std::move(hparams);
}

absl::Status Run(const Flags& flags, Trial& trial) {
  if (flags.config.empty()) {
    return absl::InvalidArgumentError(
        "no experiment config: pass --config FILE or set COHORT_CONFIG");
  }
  PrepareTrainingProcess();
  torch::set_num_threads(flags.num_threads);
  COHORT_ASSIGN_OR_RETURN(std::optional<nlohmann::json> hparams, GivenHparams(flags));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<core::Context> ctx,
                          core::Init({.config_path = flags.config,
                                      .run_dir = flags.run_dir,
                                      .hparams = std::move(hparams)}));
  COHORT_ASSIGN_OR_RETURN(TrialRunOptions options, MakeRunOptions(flags, *ctx));
  PrintPlan(*ctx, options);
  COHORT_ASSIGN_OR_RETURN(TrialRunResult result, RunTrial(trial, options, *ctx));
  if (result.preempted && ctx->distributed().communicator().rank() == 0) {
    std::fprintf(stderr, "trial: preempted after %lld of %lld batches; resume with --restore %s\n",
                 static_cast<long long>(result.batches_completed),
                 static_cast<long long>(options.max_batches), result.latest_checkpoint.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int TrialMain(int argc, char** argv, Trial& trial) {
  absl::StatusOr<Flags> from_env = FlagsFromEnv();
  if (!from_env.ok()) {
    std::fprintf(stderr, "trial: %s\n", from_env.status().ToString().c_str());
    return 1;
  }
  Flags flags = *std::move(from_env);
  CLI::App app{
      "A Cohort trial: trains the experiment's model with synchronous data "
      "parallelism. Start one per slot with cohort-launch."};
  app.add_option("--config", flags.config, "Experiment config (default: $COHORT_CONFIG)");
  app.add_option("--run-dir", flags.run_dir,
                 "Where the chief writes metrics.jsonl and checkpoints/ (default: "
                 "$COHORT_RUN_DIR or ./cohort-run)");
  app.add_option("--restore", flags.restore,
                 "Resume from this checkpoint: a storage id or a directory (default: "
                 "$COHORT_LATEST_CHECKPOINT)");
  app.add_option("--hparams", flags.hparams,
                 "Hyperparameters as JSON (default: $COHORT_HPARAMS, else the searcher's first "
                 "sample)");
  app.add_option("--max-batches", flags.max_batches,
                 "Train this many batches instead of searcher.max_length (a smoke test)");
  app.footer(
      "Example:\n  cohort-launch --slots 2 -- fashion_mnist_trial --config "
      "examples/fashion_mnist/distributed.yaml");
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  if (std::optional<int> exit = ParseCommandLine(app, program, argc, argv)) return *exit;
  absl::Status status = Run(flags, trial);
  if (!status.ok()) {
    std::fprintf(stderr, "trial: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::runtime
