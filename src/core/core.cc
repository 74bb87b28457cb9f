#include "cohort/core.h"

#include <filesystem>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/comm/topology.h"
#include "cohort/status.h"
#include "comm/rendezvous.h"
#include "common/env.h"
#include "config/config_parser.h"
#include "config/hparam_sampler.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "core/local_reporter.h"

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
absl::Status ReadRun(comm::Communicator& comm, ClusterInfo& info) {
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

  COHORT_ASSIGN_OR_RETURN(
      int64_t trial_seed,
      env::GetIntOr("COHORT_TRIAL_SEED", config::TrialSeed(info.experiment_seed, 0)));
  info.trial_seed = static_cast<uint64_t>(trial_seed);

  const std::string hparams = env::GetOr("COHORT_HPARAMS", "");
  if (!hparams.empty()) {
    info.hparams = nlohmann::json::parse(hparams, nullptr, /*allow_exceptions=*/false);
    if (info.hparams.is_discarded() || !info.hparams.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("COHORT_HPARAMS must be a JSON object of hyperparameters, got '",
                       hparams.substr(0, 200), "'"));
    }
  } else if (info.config) {
    COHORT_ASSIGN_OR_RETURN(
        std::vector<config::Json> samples,
        config::SampleHyperparameters(info.config->hyperparameters, info.config->searcher,
                                      info.experiment_seed));
    if (!samples.empty()) info.hparams = samples.front();
  }
  info.latest_checkpoint = env::GetOr("COHORT_LATEST_CHECKPOINT", "");
  info.trial_id = env::GetOr("COHORT_TRIAL_ID", "");
  return absl::OkStatus();
}

// COHORT_SEARCHER_OPS: "L1,L2,...", ascending positive lengths; unset or empty: none.
absl::StatusOr<std::vector<int64_t>> SearcherOpsFromEnv() {
  const std::string text = env::GetOr("COHORT_SEARCHER_OPS", "");
  std::vector<int64_t> out;
  if (text.empty()) return out;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(piece, &v) || v <= 0 || (!out.empty() && v <= out.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_SEARCHER_OPS must be ascending positive lengths separated by commas, got '",
          text.substr(0, 200), "'"));
    }
    out.push_back(v);
  }
  return out;
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
                 std::string storage_dir, std::vector<int64_t> searcher_lengths,
                 std::string searcher_unit)
    : info_(std::move(info)),
      reporter_(std::move(reporter)),
      distributed_(world, std::move(rendezvous)),
      train_(world->rank(), reporter_.get()),
      checkpoint_(world->rank(), std::move(storage_dir), reporter_.get()),
      preempt_(
          *world,
          [reporter = reporter_.get()] {
            return reporter != nullptr ? reporter->PreemptionRequested() : PreemptionSignaled();
          },
          reporter_.get()),
      searcher_(world->rank(), std::move(searcher_lengths), std::move(searcher_unit),
                reporter_.get()) {}

absl::StatusOr<std::unique_ptr<Context>> Init(InitOptions options) {
  if (options.config_path.empty()) options.config_path = env::GetOr("COHORT_CONFIG", "");
  if (options.run_dir.empty()) options.run_dir = env::GetOr("COHORT_RUN_DIR", "cohort-run");
  absl::StatusOr<World> world = JoinWorld(options);
  if (!world.ok()) return Annotate(world.status(), "core::Init: joining the trial's workers");
  comm::Communicator& comm = *world->comm;

  ClusterInfo info;
  info.run_dir = options.run_dir;
  info.config_path = options.config_path;
  if (absl::Status s = ReadRun(comm, info); !s.ok()) {
    return Annotate(s, absl::StrCat("core::Init (rank ", comm.rank(), ")"));
  }
  const std::string storage_dir = CheckpointStorageDir(info.config, info.run_dir);
  std::vector<int64_t> lengths;
  std::string unit = "batches";
  if (info.config && info.config->searcher.max_length) {
    lengths = {info.config->searcher.max_length->value};
    unit = config::UnitName(info.config->searcher.max_length->unit);
  }
  // The master's plan for this trial (adaptive_asha: one operation per rung).
  if (absl::StatusOr<std::vector<int64_t>> ops = SearcherOpsFromEnv(); !ops.ok()) {
    return Annotate(ops.status(), absl::StrCat("core::Init (rank ", comm.rank(), ")"));
  } else if (!ops->empty()) {
    lengths = *std::move(ops);
  }

  std::unique_ptr<Reporter> reporter;
  if (comm.rank() == 0) {
    COHORT_ASSIGN_OR_RETURN(reporter, LocalReporter::Create(info.run_dir, options.handle_sigterm));
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
                                   std::move(reporter), storage_dir, std::move(lengths),
                                   std::move(unit));
}

}  // namespace cohort::core
