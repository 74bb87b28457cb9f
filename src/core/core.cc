#include "cohort/core.h"

#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/comm/topology.h"
#include "cohort/status.h"
#include "comm/rendezvous.h"
#include "common/logging.h"
#include "config/config_parser.h"
#include "config/hparam_sampler.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "core/local_reporter.h"
#include "core/progress_beacon.h"
#include "core/s3_checkpoint_remote.h"
#include "core/tensorboard_reporter.h"
#include "wire/worker_env.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;

struct World {
  std::shared_ptr<comm::Communicator> comm;
  std::shared_ptr<comm::Rendezvous> rendezvous;
};

absl::StatusOr<World> JoinWorld(const InitOptions& options) {
  if (options.communicator != nullptr) return World{options.communicator, nullptr};
  COHORT_ASSIGN_OR_RETURN(comm::Topology topology, comm::TopologyFromEnv());
  COHORT_ASSIGN_OR_RETURN(std::shared_ptr<comm::Rendezvous> rendezvous,
                          comm::Rendezvous::Join(topology));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> comm,
                          comm::CreateCommunicator(rendezvous, {}));
  return World{std::move(comm), std::move(rendezvous)};
}

// Config, seeds and hyperparameters, agreed by every worker.
absl::Status ReadRun(comm::Communicator& comm, const wire::WorkerEnv& env,
                     const std::optional<nlohmann::json>& given_hparams, ClusterInfo& info) {
  if (!info.config_path.empty()) {
    COHORT_ASSIGN_OR_RETURN(config::Json tree, config::LoadYamlFile(info.config_path));
    absl::StatusOr<config::ExperimentConfig> cfg = config::ParseExperimentConfig(tree);
    if (!cfg.ok()) return Annotate(cfg.status(), info.config_path);
    info.config = *std::move(cfg);
    info.experiment_seed = info.config->experiment_seed;
  }
  // A config without reproducibility.experiment_seed draws one per process: the chief's wins.
  uint64_t seed = info.experiment_seed;
  COHORT_RETURN_IF_ERROR(comm.Broadcast(&seed, sizeof(seed), 0));
  info.experiment_seed = static_cast<uint32_t>(seed);
  if (info.config) info.config->experiment_seed = info.experiment_seed;

  info.trial_seed =
      static_cast<uint64_t>(env.trial_seed.value_or(config::TrialSeed(info.experiment_seed, 0)));
  if (given_hparams) {
    info.hparams = *given_hparams;
  } else if (env.hparams) {
    info.hparams = *env.hparams;
  } else if (info.config) {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<config::Json> samples,
        config::SampleHyperparameters(info.config->hyperparameters, info.config->searcher,
                                      info.experiment_seed));
    if (!samples.empty()) info.hparams = samples.front();
  }
  // A searched global_batch_size: this trial's own is the config's from here on.
  if (info.config) {
    info.config->global_batch_size = config::TrialGlobalBatchSize(*info.config, info.hparams);
  }
  info.latest_checkpoint = env.latest_checkpoint;
  info.warm_start = env.warm_start;
  info.trial_id = env.trial_id ? absl::StrCat(*env.trial_id) : "";
  return absl::OkStatus();
}

// `reporter` that also writes TensorBoard event files under the checkpoint storage; without
// them (the directory cannot be made: logged) when they cannot be written.
std::unique_ptr<Reporter> WithTensorBoard(std::unique_ptr<Reporter> reporter,
                                          const std::string& storage_dir,
                                          const std::string& trial_id,
                                          std::shared_ptr<CheckpointRemote> remote) {
  const std::string dir = TensorBoardDir(storage_dir, trial_id);
  // With an object store, the event file is copied beside the checkpoints as it grows.
  TensorBoardReporter::Publisher publish;
  if (remote != nullptr) {
    publish = [remote, relative = wire::TensorBoardRelativeDir(trial_id)](const std::string& file) {
      return remote->PublishFile(file, relative + "/" + fs::path(file).filename().string());
    };
  }
  absl::StatusOr<std::unique_ptr<tensorboard::EventWriter>> writer =
      tensorboard::EventWriter::Open(dir);
  if (!writer.ok()) {
    COHORT_LOG(WARNING) << "no TensorBoard event files for this run: " << writer.status();
    return std::make_unique<TensorBoardReporter>(std::move(reporter), nullptr);
  }
  return std::make_unique<TensorBoardReporter>(std::move(reporter), *std::move(writer),
                                               std::move(publish));
}

}  // namespace

std::string CheckpointStorageDir(const std::optional<config::ExperimentConfig>& config,
                                 const std::string& run_dir) {
  if (config && config->checkpoint_storage) {
    const config::CheckpointStorage& s = *config->checkpoint_storage;
    if (s.type == "shared_fs") {
      return s.storage_path ? (fs::path(s.host_path) / *s.storage_path).string() : s.host_path;
    }
    if (s.type == "directory") return s.container_path;
  }
  return (fs::path(run_dir) / "checkpoints").string();
}

Context::Context(ClusterInfo info, std::shared_ptr<comm::Communicator> world,
                 std::shared_ptr<comm::Rendezvous> rendezvous, std::unique_ptr<Reporter> reporter,
                 std::string storage_dir, std::shared_ptr<CheckpointRemote> remote,
                 std::vector<int64_t> searcher_lengths, std::string searcher_unit)
    : info_(std::move(info)),
      reporter_(std::move(reporter)),
      beacon_(std::make_shared<ProgressBeacon>(info_.run_dir, world->rank())),
      distributed_(world, std::move(rendezvous), beacon_),
      train_(world->rank(), reporter_.get(), beacon_.get()),
      checkpoint_(world->rank(), std::move(storage_dir), reporter_.get(), std::move(remote)),
      preempt_(
          *world,
          [reporter = reporter_.get()] {
            return reporter != nullptr ? reporter->PreemptionRequested() : PreemptionSignaled();
          },
          reporter_.get()),
      searcher_(world->rank(), std::move(searcher_lengths), std::move(searcher_unit),
                reporter_.get()) {}

absl::StatusOr<std::unique_ptr<Context>> Init(InitOptions options) {
  // Every worker reads the same variables, so a malformed one stops them all here, before any
  // waits for the others.
  absl::StatusOr<wire::WorkerEnv> env = wire::WorkerEnv::FromProcessEnv();
  if (!env.ok()) return Annotate(env.status(), "core::Init: the worker environment");
  if (options.config_path.empty()) options.config_path = env->config_path;
  if (options.run_dir.empty()) options.run_dir = env->run_dir.empty() ? "cohort-run" : env->run_dir;
  absl::StatusOr<World> world = JoinWorld(options);
  if (!world.ok()) return Annotate(world.status(), "core::Init: joining the trial's workers");
  comm::Communicator& comm = *world->comm;

  ClusterInfo info;
  info.run_dir = options.run_dir;
  info.config_path = options.config_path;
  if (absl::Status s = ReadRun(comm, *env, options.hparams, info); !s.ok()) {
    return Annotate(s, absl::StrCat("core::Init (rank ", comm.rank(), ")"));
  }
  const std::string storage_dir = CheckpointStorageDir(info.config, info.run_dir);
  std::shared_ptr<CheckpointRemote> remote;
  if (info.config && info.config->checkpoint_storage) {
    absl::StatusOr<std::shared_ptr<CheckpointRemote>> made =
        MakeCheckpointRemote(*info.config->checkpoint_storage);
    if (!made.ok()) return Annotate(made.status(), "core::Init: checkpoint_storage");
    remote = *std::move(made);
  }
  std::vector<int64_t> lengths;
  std::string unit = "batches";
  if (info.config && info.config->searcher.max_length) {
    lengths = {info.config->searcher.max_length->value};
    unit = config::UnitName(info.config->searcher.max_length->unit);
  }
  // The master's plan for this trial (adaptive_asha: one operation per rung).
  if (!env->searcher_ops.empty()) lengths = env->searcher_ops;

  std::unique_ptr<Reporter> reporter;
  if (comm.rank() == 0) {
    COHORT_ASSIGN_OR_RETURN(reporter, LocalReporter::Create(info.run_dir, options.handle_sigterm));
    reporter = WithTensorBoard(std::move(reporter), storage_dir, info.trial_id, remote);
    std::error_code ec;
    fs::create_directories(storage_dir, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("core::Init: checkpoint storage ", storage_dir,
                                                 ": cannot create it: ", ec.message()));
    }
  } else if (options.handle_sigterm) {
    InstallPreemptionSignalHandler();  // workers other than the chief vote too (PreemptContext)
  }
  // The run directory and checkpoint storage exist for everyone from here on.
  COHORT_RETURN_IF_ERROR(comm.Barrier());
  return std::make_unique<Context>(std::move(info), world->comm, world->rendezvous,
                                   std::move(reporter), storage_dir, std::move(remote),
                                   std::move(lengths), std::move(unit));
}

}  // namespace cohort::core
