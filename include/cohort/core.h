#pragma once
// The Core API (Determined's det.core): the pieces a training program needs to run as a
// Cohort trial, without handing its loop to the runtime. Init() returns a Context with
//   distributed()  ranks and the object collectives (Allgather, Gather, Broadcast, *Local)
//   train()        report training and validation metrics
//   checkpoint()   StorePath / RestorePath with metadata; only the chief stores
//   preempt()      ShouldPreempt: decided for all workers at once, so all stop at one step
//   searcher()     the length to train
//   info()         the trial's hyperparameters, seed, config and the checkpoint to resume
// Without a master everything is local: metrics.jsonl and progress.json in the run directory,
// checkpoints in the config's checkpoint storage (see LocalReporter, CheckpointContext).
// This library does not depend on LibTorch.
//
// Every worker of a trial calls Init (it is collective: it forms the communicator from the
// launcher's environment, agrees on the seed and creates the run directory). A Context is used
// from one thread. Errors are Statuses naming the variable, file or rank involved.
//
// Example (under `cohort-launch --slots 2 -- ./my_program`):
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx, cohort::core::Init());
//   int64_t steps = 0;
//   if (!ctx->info().latest_checkpoint.empty()) { ...restore, set steps... }
//   COHORT_ASSIGN_OR_RETURN(auto op, ctx->searcher().Next());
//   for (; steps < op->length(); ++steps) {
//     double loss = TrainOneStep();
//     if (ctx->distributed().is_chief()) {
//       COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(steps + 1, {{"loss", loss}}));
//       COHORT_RETURN_IF_ERROR(op->ReportProgress(steps + 1));
//     }
//     COHORT_ASSIGN_OR_RETURN(bool stop, ctx->preempt().ShouldPreempt());
//     if (stop) { ...checkpoint...; return absl::OkStatus(); }
//   }

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "cohort/config/experiment_config.h"
#include "cohort/core/checkpoint_context.h"
#include "cohort/core/distributed_context.h"
#include "cohort/core/preempt_context.h"
#include "cohort/core/reporter.h"
#include "cohort/core/searcher_context.h"
#include "cohort/core/train_context.h"
#include "nlohmann/json.hpp"

namespace cohort::comm {
class Rendezvous;  // internal to Cohort; Init forms it
}  // namespace cohort::comm

namespace cohort::core {

struct InitOptions {
  // The experiment config. Empty: $COHORT_CONFIG; unset too: no config (then the searcher has
  // no length and the hyperparameters are those of $COHORT_HPARAMS, else empty).
  std::string config_path;
  // Where local metrics, progress and (without checkpoint_storage) checkpoints go. Empty:
  // $COHORT_RUN_DIR, else ./cohort-run.
  std::string run_dir;
  // The trial's communicator. Null: formed from the launcher's environment (a single worker
  // when there is none).
  std::shared_ptr<comm::Communicator> communicator;
  // Install the SIGTERM handler that requests preemption (instead of dying at once).
  bool handle_sigterm = true;
  // The trial's hyperparameters (a JSON object), given by hand (the Trial API's --hparams):
  // they win over $COHORT_HPARAMS and the searcher's sample, a searched global_batch_size too.
  std::optional<nlohmann::json> hparams;
};

// What the launcher (or master) said about this run.
struct ClusterInfo {
  std::string trial_id;  // $COHORT_TRIAL_ID; empty when run by hand
  std::string run_dir;
  std::string config_path;  // empty: no config
  std::optional<config::ExperimentConfig> config;
  uint32_t experiment_seed = 0;  // the chief's, agreed by every worker
  uint64_t trial_seed = 0;       // $COHORT_TRIAL_SEED, else derived from experiment_seed
  // InitOptions::hparams, else $COHORT_HPARAMS, else the searcher's first sample.
  nlohmann::json hparams = nlohmann::json::object();
  // The checkpoint to resume from: $COHORT_LATEST_CHECKPOINT (a storage id or a directory);
  // empty when starting fresh.
  std::string latest_checkpoint;
  // A checkpoint directory whose weights a fresh run starts from (a warm start:
  // searcher.source_trial_id / source_checkpoint_uuid on a cluster); empty: none. Programs that
  // support warm starts load their weights from it when latest_checkpoint is empty.
  std::string warm_start;
};

class Context {
 public:
  Context(ClusterInfo info, std::shared_ptr<comm::Communicator> world,
          std::shared_ptr<comm::Rendezvous> rendezvous, std::unique_ptr<Reporter> reporter,
          std::string storage_dir, std::shared_ptr<CheckpointRemote> remote,
          std::vector<int64_t> searcher_lengths, std::string searcher_unit);

  DistributedContext& distributed() { return distributed_; }
  TrainContext& train() { return train_; }
  CheckpointContext& checkpoint() { return checkpoint_; }
  PreemptContext& preempt() { return preempt_; }
  SearcherContext& searcher() { return searcher_; }
  const ClusterInfo& info() const { return info_; }
  // The chief's reporter (null on other ranks), for the Trial API's loop.
  Reporter* reporter() { return reporter_.get(); }

 private:
  ClusterInfo info_;
  std::unique_ptr<Reporter> reporter_;
  std::shared_ptr<ProgressBeacon> beacon_;  // RUN_DIR/progress/rank-<R>.json, for the agent
  DistributedContext distributed_;
  TrainContext train_;
  CheckpointContext checkpoint_;
  PreemptContext preempt_;
  SearcherContext searcher_;
};

absl::StatusOr<std::unique_ptr<Context>> Init(InitOptions options = {});

// Where a config's checkpoints go: checkpoint_storage (shared_fs: host_path joined with
// storage_path; directory: container_path), else <run_dir>/checkpoints.
std::string CheckpointStorageDir(const std::optional<config::ExperimentConfig>& config,
                                 const std::string& run_dir);

}  // namespace cohort::core
