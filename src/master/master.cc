#include "master/master.h"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/logging.h"
#include "common/private_file.h"
#include "config/config_parser.h"
#include "config/creation_check.h"
#include "config/entrypoint.h"
#include "config/hparam_sampler.h"
#include "config/length.h"
#include "config/secrets.h"
#include "config/yaml_json.h"
#include "wire/limits.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;


MasterOptions WithDefaults(MasterOptions options) {
  if (options.clock == nullptr) options.clock = &RealClock();
  return options;
}

// A few random hex digits that differ between runs of the master (agents/allocations.h).
std::string BootTag() {
  std::random_device device;
  return absl::StrFormat("%04x", device() & 0xffff);
}

// Config errors, one per line, as InvalidArgument.
using templates::ConfigError;

// The path in the context of the entrypoint's program when it must be there: a relative path
// with a '/' ("./trial", "bin/train"), normalized as the archive lists it ("trial"). nullopt for
// an absolute path or a bare name (looked up in PATH when the context lacks it), as
// config::ResolveEntrypoint runs it.
std::optional<std::string> ContextProgram(const std::vector<std::string>& entrypoint) {
  const std::vector<std::string> argv = config::EntrypointArgv(entrypoint);
  if (argv.empty()) return std::nullopt;
  const std::string& program = argv[0];
  if (program[0] == '/' || program.find('/') == std::string::npos) return std::nullopt;
  std::string normal = fs::path(program).lexically_normal().string();
  while (absl::StartsWith(normal, "./")) normal = normal.substr(2);
  return normal;
}

// The description and labels of an experiment's effective config (YAML as stored), for its row
// in the list; neither when the stored text does not parse (it always did when created).
// Parsed per list: a config is at most kMaxYamlBytes and the list already reads every row.
void AddIdentity(const std::string& config_yaml, wire::ExperimentSummary* out) {
  absl::StatusOr<config::Json> tree = config::ParseYaml(config_yaml);
  if (!tree.ok() || !tree->is_object()) return;
  if (auto d = tree->find("description"); d != tree->end() && d->is_string()) {
    out->description = d->get<std::string>();
  }
  if (auto labels = tree->find("labels"); labels != tree->end() && labels->is_array()) {
    for (const config::Json& label : *labels) {
      if (label.is_string()) out->labels.push_back(label.get<std::string>());
    }
  }
}

}  // namespace

std::string TrialName(int64_t id) { return absl::StrCat("trial ", id); }

TrialQueue::Experiment QueueFacts(const ExperimentRow& row) {
  return {row.state,     row.slots_per_trial, row.priority,
          row.weight,    row.max_slots,       row.resource_pool,
          row.queue_position > 0 ? row.queue_position : static_cast<double>(row.id),
          row.name,      row.owner};
}

bool MayChange(const ExperimentRow& e, const Actor& actor) {
  return actor.admin || (!e.owner.empty() && e.owner == actor.user);
}

absl::Status CheckMayChange(const ExperimentRow& e, const Actor& actor, absl::string_view verb) {
  if (MayChange(e, actor)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "experiment ", e.id, " belongs to ",
      e.owner.empty() ? "no user (it predates users)" : absl::StrCat("'", e.owner, "'"),
      ": only its owner or an admin may ", verb, " it ('", actor.user, "' is neither)"));
}

absl::Status Master::MoveTrialLocked(TrialRow& trial, TrialState to) {
  COHORT_RETURN_IF_ERROR(Transition(trial.state, to, TrialName(trial.id)));
  COHORT_RETURN_IF_ERROR(db_->UpdateTrial(trial));
  TrialStoredLocked(trial);
  if (to != TrialState::kQueued) preempted_.erase(trial.id);  // running again, or ended
  return absl::OkStatus();
}

std::vector<DeliveryRow> Master::StateDeliveriesLocked(const ExperimentRow& experiment,
                                                      ExperimentState to) {
  // No webhook wanting it: nothing, at no database cost.
  return webhooks_.StateDeliveries({"EXPERIMENT_STATE_CHANGE", experiment.id, experiment.name,
                                    wire::Name(to), experiment.owner,
                                    absl::ToUnixMillis(options_.clock->Now())});
}

absl::Status Master::StoreStateLocked(
    const ExperimentRow& experiment, ExperimentState to,
    const std::function<absl::Status(const std::vector<DeliveryRow>&)>& store) {
  const std::vector<DeliveryRow> deliveries = StateDeliveriesLocked(experiment, to);
  absl::Status stored = store(deliveries);
  if (!stored.ok() && !deliveries.empty() && absl::IsNotFound(stored)) {
    // A webhook deleted meanwhile: the state matters more than the POSTs of the others.
    COHORT_LOG(WARNING) << "experiment " << experiment.id << ": " << stored
                        << "; storing its state without its webhooks' deliveries";
    return store({});
  }
  if (stored.ok() && !deliveries.empty()) webhooks_.Queued();
  return stored;
}

absl::Status Master::MoveExperimentLocked(ExperimentRow& experiment, ExperimentState to) {
  const bool ends = !wire::IsTerminal(experiment.state) && wire::IsTerminal(to);
  ExperimentState moved = experiment.state;
  COHORT_RETURN_IF_ERROR(Transition(moved, to, absl::StrCat("experiment ", experiment.id)));
  // The state and its webhooks' deliveries commit together.
  COHORT_RETURN_IF_ERROR(
      StoreStateLocked(experiment, to, [&](const std::vector<DeliveryRow>& deliveries) {
        return db_->SetExperimentState(experiment.id, to, deliveries);
      }));
  experiment.state = to;
  queue_.SetExperimentState(experiment.id, to);
  if (ends) {
    experiment.ended_ms = absl::ToUnixMillis(options_.clock->Now());
    COHORT_RETURN_IF_ERROR(db_->SetExperimentEnded(experiment.id, experiment.ended_ms));
    // The state has moved: a GC that cannot finish is logged, and retried by nobody (its
    // checkpoints stay, which loses nothing).
    if (absl::Status gc = CollectCheckpointsLocked(experiment, std::nullopt); !gc.ok()) {
      COHORT_LOG(ERROR) << "experiment " << experiment.id << ": checkpoint GC: " << gc;
    }
  }
  return absl::OkStatus();
}

Master::Master(std::unique_ptr<Database> db, MasterOptions options, storage::StorageRoots roots)
    : db_(std::move(db)),
      options_(WithDefaults(std::move(options))),
      agents_(*db_, *options_.clock, options_.agent_timeout, rm_events_,
              PoolNames(options_.resource_pools)),
      allocations_(BootTag()),
      users_(db_.get(), options_.clock),
      templates_(*db_),
      models_(*db_, *options_.clock),
      webhooks_(*db_, *options_.clock),
      follows_(options_.max_log_followers),
      series_(*db_, follows_),
      trial_logs_(*db_, follows_),
      started_(options_.clock->Now()),
      storage_roots_(std::move(roots)),
      policy_matches_(*db_, *options_.clock),
      checkpoints_(*db_, storage_roots_) {}

absl::StatusOr<std::unique_ptr<Master>> Master::Create(std::unique_ptr<Database> db,
                                                       MasterOptions options) {
  std::error_code ec;
  for (const char* sub : {"contexts", "checkpoints"}) {
    fs::create_directories(fs::path(options.data_dir) / sub, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("data directory ", options.data_dir, ": ", ec.message()));
    }
  }
  // Only its owner may enter the data directory: the database, the secrets, the contexts.
  fs::permissions(options.data_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("data directory ", options.data_dir, ": making it private: ", ec.message()));
  }
  COHORT_ASSIGN_OR_RETURN(
      storage::StorageRoots roots,
      storage::StorageRoots::Create(options.data_dir, options.checkpoint_storage_roots));
  std::unique_ptr<Master> master(
      new Master(std::move(db), std::move(options), std::move(roots)));
  if (master->options_.resource_manager) {
    COHORT_ASSIGN_OR_RETURN(master->own_rm_,
                            master->options_.resource_manager(master->rm_events_));
    master->rm_ = master->own_rm_.get();
  }
  COHORT_RETURN_IF_ERROR(master->LoadQueue());
  {
    // What ran when the master stopped waits for its agents (master_recovery.cc).
    MutexLock lock(&master->mu_);
    COHORT_RETURN_IF_ERROR(master->RecoverLocked());
    master->RestoreSearchersLocked();
    COHORT_RETURN_IF_ERROR(master->QueueDeletionsLocked());
    COHORT_RETURN_IF_ERROR(master->SweepLeftoversLocked());
    master->RequestPassLocked();
  }
  COHORT_RETURN_IF_ERROR(master->policy_matches_.Load());
  COHORT_RETURN_IF_ERROR(master->webhooks_.Load());
  master->webhooks_.Start();
  master->monitor_ = std::thread([m = master.get()] { m->MonitorAgents(); });
  if (master->options_.scheduling == SchedulingMode::kBackground) {
    master->scheduler_ = std::thread([m = master.get()] { m->RunScheduler(); });
  }
  master->log_retention_ =
      std::make_unique<LogRetention>(*master->db_, master->options_.log_retention);
  master->log_retention_->Start(master->options_.log_retention_period);
  return master;
}

Master::~Master() {
  BeginShutdown();
  webhooks_.Stop();  // an attempt in flight is aborted; what is queued waits in the database
  if (log_retention_ != nullptr) log_retention_->Stop();
  if (monitor_.joinable()) monitor_.join();
  if (scheduler_.joinable()) scheduler_.join();
  // Its thread calls back into the master (rm::Events): it goes while every member still lives.
  own_rm_.reset();
  DeleteCheckpoints(doomed_checkpoints_);  // the threads are gone: no lock needed
}

void Master::BeginShutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  rm_->Shutdown();  // every agent's long poll answers now
  follows_.Shutdown();
  monitor_cv_.SignalAll();
  pass_cv_.SignalAll();
  idle_cv_.SignalAll();
}

absl::Status Master::LoadQueue() {
  COHORT_ASSIGN_OR_RETURN(std::vector<ExperimentRow> experiments, db_->ListExperiments());
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialScheduleRow> trials, db_->ListTrialsToSchedule());
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> all, db_->ListTrials(std::nullopt));
  MutexLock lock(&mu_);
  for (const TrialRow& t : all) next_sequence_ = std::max(next_sequence_, t.sequence + 1);
  for (const ExperimentRow& e : experiments) queue_.SetExperiment(e.id, QueueFacts(e));
  for (const TrialScheduleRow& t : trials) {
    queue_.SetTrial(t.id, t.experiment_id, t.state, t.sequence);
  }
  return absl::OkStatus();
}

// Part 1: experiments, trials, templates (part 2, master_cluster.cc: agents, scheduling,
// allocations).

// --- experiments ----------------------------------------------------------------------------

absl::StatusOr<Master::SubmittedConfig> Master::ResolveConfig(const std::string& config_yaml,
                                                              const std::string& template_name) {
  absl::StatusOr<config::Json> tree = config::ParseYaml(config_yaml);
  if (!tree.ok()) return ConfigError(tree.status(), "the config is not valid YAML");
  COHORT_ASSIGN_OR_RETURN(templates::Merged merged,
                          templates_.Merge(*std::move(tree), template_name));
  SubmittedConfig out;
  out.template_name = merged.template_name;
  absl::StatusOr<config::ExperimentConfig> cfg = config::ParseExperimentConfig(merged.tree);
  if (!cfg.ok()) return ConfigError(cfg.status(), "invalid experiment config");
  if (absl::Status runnable = config::CheckRunnable(*cfg); !runnable.ok()) {
    return ConfigError(runnable, "experiment config not supported by Cohort");
  }
  COHORT_RETURN_IF_ERROR(WarmStartPath(cfg->searcher).status());
  out.config = *std::move(cfg);
  out.effective = out.config.effective;
  if (out.config.checkpoint_storage && !out.config.checkpoint_storage->type.empty()) {
    COHORT_RETURN_IF_ERROR(CheckStorageAllowed(*out.config.checkpoint_storage));
  } else {
    // Without one (or with only its save_* counts) the trials' checkpoints go where every agent
    // of this machine sees them.
    auto& storage = out.effective["checkpoint_storage"];
    storage["type"] = "shared_fs";
    storage["host_path"] =
        (fs::absolute(options_.data_dir) / "checkpoints").lexically_normal().string();
  }
  return out;
}

absl::StatusOr<std::string> Master::SaveContext(const std::string& context) {
  // Named by its content: identical uploads (forks, re-submissions of one build) are one file,
  // which every experiment that sent it names (design 0024).
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(context.data(), context.size(), digest, &digest_size, EVP_sha256(), nullptr) !=
      1) {
    return absl::InternalError("hashing the context (SHA-256) failed");
  }
  const std::string hex =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), digest_size));
  const std::string path =
      (fs::path(options_.data_dir) / "contexts" / absl::StrCat("sha256-", hex, ".tar.gz")).string();
  MutexLock lock(&contexts_mu_);
  std::error_code ec;
  if (fs::exists(path, ec) && fs::file_size(path, ec) == context.size()) return path;
  // Written whole or not at all (a .tmp-PID file while it is written, which a restarted master
  // sweeps: SweepOrphanContexts); a full disk says so, naming the directory.
  if (absl::Status saved = WritePrivateFile(path, context); !saved.ok()) {
    // 503 either way (the request was fine; the master cannot take it now), saying which.
    return absl::UnavailableError(absl::StrCat(absl::IsResourceExhausted(saved)
                                                   ? "the master's disk is full: "
                                                   : "saving the context: ",
                                               saved.message()));
  }
  return path;
}

absl::Status Master::CheckContextArchive(const std::string& context,
                                         const std::vector<std::string>& entrypoint) {
  std::vector<std::string> paths;
  if (!context.empty()) {
    if (context.size() < 2 || static_cast<unsigned char>(context[0]) != 0x1f ||
        static_cast<unsigned char>(context[1]) != 0x8b) {
      return absl::InvalidArgumentError(absl::StrCat(
          "context: not a gzip'd tar archive (its ", context.size(),
          " bytes do not begin with the gzip magic 1f 8b); upload the context directory as "
          "tar.gz"));
    }
    COHORT_RETURN_IF_ERROR(CheckContext(context, {}, &paths));
  }
  const std::optional<std::string> program = ContextProgram(entrypoint);
  if (!program || std::find(paths.begin(), paths.end(), *program) != paths.end()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "entrypoint: the program ", *program, " is not in the context",
      context.empty() ? " (none was uploaded)" : "",
      ": upload the directory that holds it (cohort experiment create CONFIG DIR), or fix the "
      "path"));
}

absl::StatusOr<int64_t> Master::CreateExperiment(const std::string& config_yaml,
                                                 const std::string& template_name,
                                                 std::string context, const Actor& owner) {
  COHORT_ASSIGN_OR_RETURN(SubmittedConfig submitted, ResolveConfig(config_yaml, template_name));
  const config::ExperimentConfig& cfg = submitted.config;
  absl::StatusOr<std::unique_ptr<searcher::Searcher>> search = searcher::NewSearcher(cfg);
  if (!search.ok()) return ConfigError(search.status(), "invalid experiment config");
  std::vector<searcher::Operation> creates = (*search)->Start();
  if (creates.empty()) return absl::InvalidArgumentError("the searcher creates no trials");
  const int slots = static_cast<int>(cfg.resources.slots_per_trial);
  const std::string pool = cfg.resources.resource_pool.value_or(kDefaultPool);
  if (absl::Status feasible = rm_->Feasible(slots, pool); !feasible.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::IsInvalidArgument(feasible) ? "resources.resource_pool: " : "resources.slots_per_trial: ",
        feasible.message()));
  }
  COHORT_RETURN_IF_ERROR(CheckContextArchive(context, cfg.entrypoint));
  // Up to 96 MB: written before taking the state lock, so agents and other requests go on.
  COHORT_ASSIGN_OR_RETURN(std::string context_path, SaveContext(context));
  MutexLock lock(&mu_);
  // An identical context (one file) whose last experiment was deleted meanwhile is gone: again.
  if (std::error_code ec; !fs::exists(context_path, ec)) {
    COHORT_ASSIGN_OR_RETURN(context_path, SaveContext(context));
  }
  ExperimentRow row;
  row.name = cfg.name.value_or("experiment");
  row.config_yaml = config::ToYaml(submitted.effective);
  row.original_yaml = config_yaml;
  row.template_name = submitted.template_name;
  row.context_path = context_path;
  row.slots_per_trial = slots;
  row.priority = static_cast<int>(cfg.resources.priority.value_or(42));
  row.max_restarts = static_cast<int>(cfg.max_restarts);
  row.created_ms = absl::ToUnixMillis(options_.clock->Now());
  row.owner = owner.user;
  row.weight = cfg.resources.weight;
  row.max_slots = static_cast<int>(cfg.resources.max_slots.value_or(0));
  row.resource_pool = pool;
  COHORT_ASSIGN_OR_RETURN(int64_t id, db_->InsertExperiment(row));
  row.id = id;
  row.queue_position = static_cast<double>(id);  // as InsertExperiment stored it
  queue_.SetExperiment(id, QueueFacts(row));
  ExperimentSearch& stored =
      searchers_
          .emplace(id, ExperimentSearch{cfg.searcher, *std::move(search), {}, TotalBatchesOf(cfg)})
          .first->second;
  for (const searcher::Operation& op : creates) {
    COHORT_RETURN_IF_ERROR(InsertTrialLocked(id, stored, std::get<searcher::Create>(op)));
  }
  RequestPassLocked();
  return id;
}

absl::StatusOr<wire::ExperimentList> Master::ListExperiments() {
  COHORT_ASSIGN_OR_RETURN(std::vector<ExperimentRow> rows, db_->ListExperiments());
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(std::nullopt));
  wire::ExperimentList out;
  for (const ExperimentRow& e : rows) {
    int total = 0, done = 0;
    for (const TrialRow& t : trials) {
      if (t.experiment_id != e.id) continue;
      ++total;
      if (wire::IsTerminal(t.state)) ++done;
    }
    out.experiments.push_back({.id = e.id,
                               .name = e.name,
                               .state = e.state,
                               .trials = total,
                               .trials_done = done,
                               .slots_per_trial = e.slots_per_trial,
                               .priority = e.priority,
                               .template_name = e.template_name,
                               .created_ms = e.created_ms,
                               .owner = e.owner,
                               .ended_ms = e.ended_ms,
                               .archived = e.archived});
    AddIdentity(e.config_yaml, &out.experiments.back());
  }
  return out;
}

absl::Status Master::PatchExperiment(int64_t id, const wire::ExperimentPatch& patch,
                                     const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "change"));
  absl::StatusOr<config::Json> tree = config::ParseYaml(e.config_yaml);
  if (!tree.ok() || !tree->is_object()) {
    return absl::DataLossError(absl::StrCat("experiment ", id, "'s stored config does not parse"));
  }
  if (patch.name) {
    e.name = *patch.name;
    (*tree)["name"] = *patch.name;
  }
  if (patch.description) (*tree)["description"] = *patch.description;
  if (patch.labels) (*tree)["labels"] = *patch.labels;
  return db_->SetExperimentMetadata(id, e.name, config::ToYaml(*tree));
}

wire::TrialDescription Master::TrialBodyLocked(const TrialRow& t) const {
  wire::TrialDescription d;
  d.id = t.id;
  d.experiment_id = t.experiment_id;
  d.state = t.state;
  d.hparams = Json::parse(t.hparams_json, nullptr, false);
  d.seed = t.seed;
  d.batches = t.batches;
  d.total_batches = t.total_batches;
  d.restarts = t.restarts;
  d.latest_checkpoint = t.latest_checkpoint;
  d.searcher_metric = t.searcher_metric;
  if (std::optional<std::string> reason = WaitingReasonLocked(t)) d.waiting_reason = *reason;
  if (auto stall = stalled_.find(t.id); stall != stalled_.end()) d.waiting_reason = stall->second;
  if (const Allocation* a = allocations_.OfTrial(t.id)) {
    d.allocation = a->id;
    for (const auto& [agent, slots] : a->agents) d.agents.push_back({agent, slots});
  }
  if (!t.error_lines.empty()) d.error_lines = t.error_lines;
  d.log_policy_matches = policy_matches_.Of(t.id);
  return d;
}

absl::StatusOr<wire::ExperimentDescription> Master::DescribeExperiment(int64_t id,
                                                                       const Actor& viewer) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  if (!MayChange(e, viewer)) e.config_yaml = config::MaskSecretsInYaml(e.config_yaml);
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(id));
  MutexLock lock(&mu_);
  wire::ExperimentDescription out{.id = e.id,
                                  .name = e.name,
                                  .state = e.state,
                                  .config = e.config_yaml,
                                  .template_name = e.template_name,
                                  .slots_per_trial = e.slots_per_trial,
                                  .priority = e.priority,
                                  .max_restarts = e.max_restarts,
                                  .created_ms = e.created_ms,
                                  .owner = e.owner,
                                  .ended_ms = e.ended_ms,
                                  .archived = e.archived};
  for (const TrialRow& t : trials) out.trials.push_back(TrialBodyLocked(t));
  return out;
}

absl::Status Master::PauseExperiment(int64_t id, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "pause"));
  if (e.state == ExperimentState::kPaused) return absl::OkStatus();  // already: nothing to do
  COHORT_RETURN_IF_ERROR(MoveExperimentLocked(e, ExperimentState::kPaused));
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(id));
  for (TrialRow& t : trials) {
    if (t.state == TrialState::kQueued) {
      COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kPaused));
    } else if (Allocation* a = allocations_.OfTrial(t.id)) {
      StopAllocationLocked(*a, StopReason::kPause);
    }
  }
  return absl::OkStatus();
}

absl::Status Master::ActivateExperiment(int64_t id, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "activate"));
  if (e.state == ExperimentState::kActive) return absl::OkStatus();  // already: nothing to do
  COHORT_RETURN_IF_ERROR(MoveExperimentLocked(e, ExperimentState::kActive));
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(id));
  for (TrialRow& t : trials) {
    if (t.state == TrialState::kPaused)
      COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kQueued));
  }
  RequestPassLocked();
  return absl::OkStatus();
}

absl::Status Master::KillExperiment(int64_t id, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "kill"));
  if (wire::IsTerminal(e.state)) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(MoveExperimentLocked(e, ExperimentState::kCanceled));
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(id));
  for (TrialRow& t : trials) {
    if (Allocation* a = allocations_.OfTrial(t.id)) {
      StopAllocationLocked(*a, StopReason::kKill);
    } else if (!wire::IsTerminal(t.state)) {
      COHORT_RETURN_IF_ERROR(MoveTrialLocked(t, TrialState::kCanceled));
    }
  }
  searchers_.erase(id);  // nothing of the experiment runs again: its searcher has no say
  waiting_.clear();
  blockers_.clear();
  RequestPassLocked();
  follows_.Notify();
  return absl::OkStatus();
}

absl::Status Master::ArchiveExperiment(int64_t id, bool archived, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  const char* verb = archived ? "archive" : "unarchive";
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, verb));
  if (e.archived == archived) return absl::OkStatus();  // already: nothing to do
  if (archived && e.state == ExperimentState::kDeleting) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " is being deleted: there is nothing left to archive"));
  }
  if (archived && !wire::IsTerminal(e.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " is ", wire::Name(e.state),
                     ": only an ended experiment can be archived (kill it first, or wait for "
                     "it to end)"));
  }
  return db_->SetExperimentArchived(id, archived);
}

absl::Status Master::KillTrial(int64_t id, const Actor& actor) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(TrialRow t, db_->GetTrial(id));
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(t.experiment_id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, absl::StrCat("kill ", TrialName(id), " of")));
  if (wire::IsTerminal(t.state)) return absl::OkStatus();  // already ended: nothing to do
  AppendLogLocked(id, absl::StrCat("master: ", TrialName(id), " killed by ", actor.user));
  if (Allocation* a = allocations_.OfTrial(id)) {
    // Stored first, so a master restarted before the exit still kills it (RecoverLocked); the
    // exit (FinishAllocationLocked) makes it CANCELED and tells the searcher.
    t.kill_requested = true;
    COHORT_RETURN_IF_ERROR(db_->UpdateTrial(t));
    StopAllocationLocked(*a, StopReason::kKill);
    return absl::OkStatus();
  }
  return CancelTrialLocked(e, t);
}

absl::Status Master::CancelTrialLocked(const ExperimentRow& experiment, TrialRow& trial) {
  // The searcher first: one rebuilt from the database after the move would count the trial as
  // ended twice (FinishAllocationLocked orders it so too).
  COHORT_RETURN_IF_ERROR(SearchLocked(trial.experiment_id).status());
  COHORT_RETURN_IF_ERROR(MoveTrialLocked(trial, TrialState::kCanceled));
  return TrialRunEndedLocked(experiment, trial);
}

absl::StatusOr<std::string> Master::ContextPath(int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(experiment_id));
  return e.context_path;
}

absl::StatusOr<std::string> Master::ContextArchive(int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(std::string path, ContextPath(experiment_id));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::UnavailableError(absl::StrCat("experiment ", experiment_id,
                                               ": its context archive ", path, " cannot be read"));
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::StatusOr<Master::ForkSource> Master::ForkSourceOf(int64_t parent, const Actor& actor) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(parent));
  COHORT_RETURN_IF_ERROR(CheckMayChange(e, actor, "fork"));
  if (e.state == ExperimentState::kDeleting) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", parent, " is being deleted: it cannot be forked"));
  }
  COHORT_ASSIGN_OR_RETURN(std::string context, ContextArchive(parent));
  return ForkSource{.config_yaml = e.config_yaml, .context = std::move(context)};
}

// --- trials -----------------------------------------------------------------------------------

absl::StatusOr<wire::TrialDescription> Master::DescribeTrial(int64_t id) {
  COHORT_ASSIGN_OR_RETURN(TrialRow t, db_->GetTrial(id));
  MutexLock lock(&mu_);
  return TrialBodyLocked(t);
}

absl::StatusOr<std::string> Master::WarmStartPath(const config::SearcherConfig& searcher) {
  std::string storage_id;
  if (searcher.source_checkpoint_uuid) {
    storage_id = *searcher.source_checkpoint_uuid;
  } else if (searcher.source_trial_id) {
    const int64_t source = *searcher.source_trial_id;
    absl::StatusOr<TrialRow> trial = db_->GetTrial(source);
    if (!trial.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("searcher.source_trial_id: trial ", source, " does not exist"));
    }
    if (trial->latest_checkpoint.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "searcher.source_trial_id: trial ", source,
          " has no checkpoint to start from yet (`cohort trial describe ", source, "`)"));
    }
    storage_id = trial->latest_checkpoint;
  } else {
    return std::string();
  }
  absl::StatusOr<CheckpointRow> row = db_->GetCheckpoint(storage_id);
  if (row.ok() && row->state == wire::CheckpointState::kDeleted) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", storage_id,
                     " was deleted by the checkpoint GC (raise checkpoint_storage's "
                     "save_* counts in the source experiment to keep more)"));
  }
  if (!row.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(searcher.source_checkpoint_uuid ? "searcher.source_checkpoint_uuid"
                                                     : "searcher.source_trial_id",
                     ": no checkpoint ", storage_id,
                     " is known to this master (`cohort trial describe ID` "
                     "lists a trial's checkpoints)"));
  }
  // A checkpoint of an experiment being deleted is about to go (DeleteExperiment refuses while
  // an experiment that has not ended starts from it; this refuses one created after).
  COHORT_ASSIGN_OR_RETURN(const TrialRow source, db_->GetTrial(row->trial_id));
  COHORT_ASSIGN_OR_RETURN(const ExperimentRow owner, db_->GetExperiment(source.experiment_id));
  if (owner.state == ExperimentState::kDeleting) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", storage_id, " belongs to experiment ", owner.id,
                     ", which is being deleted: warm-start from another experiment's checkpoint"));
  }
  return row->path;
}

}  // namespace cohort::master
