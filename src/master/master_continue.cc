// Master: `cohort experiment continue` (Determined's ContinueExperiment). An ended experiment
// becomes ACTIVE again under its own id; its trials go back to the queue and resume from their
// latest checkpoints. The experiment's row, config and trials change in one transaction
// (Database::ReopenExperiment): a crash leaves it ended as it was, or continued.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "config/asha.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {
namespace {

// The fields a continue must leave as they are: changing them means another experiment.
struct Fixed {
  const char* pointer;
  const char* why;
};
constexpr Fixed kFixed[] = {
    {"/searcher/name", "its trials were created by this searcher"},
    {"/checkpoint_storage", "its trials resume from the checkpoints stored there"},
    {"/resources/resource_pool", "its place in the queue is in this pool"},
};

absl::Status CheckFixedFields(int64_t id, const config::Json& before, const config::Json& after) {
  for (const Fixed& f : kFixed) {
    const config::Json::json_pointer p(f.pointer);
    const config::Json old_value = before.contains(p) ? before.at(p) : config::Json();
    const config::Json new_value = after.contains(p) ? after.at(p) : config::Json();
    if (old_value == new_value) continue;
    std::string field = std::string(f.pointer + 1);
    std::replace(field.begin(), field.end(), '/', '.');
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": cannot change when experiment ", id, " continues (", f.why,
        "); fork it instead: cohort experiment fork ", id, " --config ", field, "=..."));
  }
  return absl::OkStatus();
}

absl::Status CheckContinuable(const ExperimentRow& e) {
  if (e.state == ExperimentState::kDeleting) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", e.id, " is being deleted: there is nothing to continue"));
  }
  if (!wire::IsTerminal(e.state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", e.id, " is ", wire::Name(e.state),
                     ": only an ended experiment (COMPLETED, CANCELED, ERROR) can be continued",
                     e.state == ExperimentState::kPaused
                         ? absl::StrCat("; resume it: cohort experiment activate ", e.id)
                         : ""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Master::SubmittedConfig> Master::ContinuedConfig(const ExperimentRow& e,
                                                                const config::Json& override_config,
                                                                size_t trial_count) {
  absl::StatusOr<config::Json> before = config::ParseYaml(e.config_yaml);
  if (!before.ok() || !before->is_object()) {
    return absl::DataLossError(
        absl::StrCat("experiment ", e.id, "'s stored config does not parse"));
  }
  config::Json after = *before;
  after.merge_patch(override_config);
  COHORT_RETURN_IF_ERROR(CheckFixedFields(e.id, *before, after));
  COHORT_ASSIGN_OR_RETURN(SubmittedConfig next,
                          ResolveConfig(config::ToYaml(after), /*template_name=*/""));
  if (config::HasRungs(next.config.searcher)) {  // its name is the experiment's (fixed above)
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", e.id, " is an ", next.config.searcher.name,
        " search: the rungs it decided cannot be decided again; fork it instead: cohort "
        "experiment fork ",
        e.id));
  }
  if (trial_count > 1 && after != *before) {
    return absl::FailedPreconditionError(absl::StrCat(
        "experiment ", e.id, " has ", trial_count,
        " trials: a continue changes the config only of a single-trial experiment (the trials "
        "of a search must stay comparable); continue it without --config, or fork it: cohort "
        "experiment fork ",
        e.id, " --config ..."));
  }
  return next;
}

absl::StatusOr<std::vector<TrialRow>> Master::ReopenedTrialsLocked(
    const config::ExperimentConfig& cfg, searcher::Searcher& fresh, std::vector<TrialRow> trials) {
  // A single trial takes the continued config's hyperparameters (its one sample); a search's
  // samples stay as drawn (its config cannot change).
  std::optional<config::Json> single_hparams;
  if (cfg.searcher.name == "single") {
    const std::vector<searcher::Operation> creates = fresh.Start();
    if (!creates.empty()) single_hparams = std::get<searcher::Create>(creates[0]).hparams;
  }
  std::vector<TrialRow> again;
  for (TrialRow& t : trials) {
    const bool rerun = single_hparams.has_value() || t.state == TrialState::kCanceled ||
                       t.state == TrialState::kError;
    if (!rerun) continue;
    COHORT_RETURN_IF_ERROR(Transition(t.state, TrialState::kQueued, TrialName(t.id)));
    if (single_hparams) t.hparams_json = single_hparams->dump();
    t.restarts = 0;
    t.error_lines.clear();
    t.kill_requested = false;
    t.sequence = next_sequence_++;
    t.total_batches = TotalBatches(cfg, Json::parse(t.hparams_json, nullptr, false));
    again.push_back(std::move(t));
  }
  return again;
}

absl::StatusOr<std::vector<std::string>> Master::ContinueExperiment(
    int64_t id, const config::Json& override_config, const Actor& actor) {
  // The config is resolved before the state lock (as CreateExperiment's); the experiment is
  // read again under it and must not have changed meanwhile.
  COHORT_ASSIGN_OR_RETURN(ExperimentRow seen, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckMayChange(seen, actor, "continue"));
  COHORT_RETURN_IF_ERROR(CheckContinuable(seen));
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> listed, db_->ListTrials(id));
  COHORT_ASSIGN_OR_RETURN(SubmittedConfig next,
                          ContinuedConfig(seen, override_config, listed.size()));
  const int slots = static_cast<int>(next.config.resources.slots_per_trial);
  if (absl::Status feasible = rm_->Feasible(slots, seen.resource_pool); !feasible.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("resources.slots_per_trial: ", feasible.message()));
  }
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(id));
  COHORT_RETURN_IF_ERROR(CheckContinuable(e));
  if (e.config_yaml != seen.config_yaml) {
    return absl::AbortedError(absl::StrCat("experiment ", id, " changed meanwhile; try again"));
  }
  COHORT_RETURN_IF_ERROR(ReopenLocked(e, next, actor));
  return next.config.warnings;
}

absl::Status Master::ReopenLocked(ExperimentRow& e, const SubmittedConfig& next,
                                  const Actor& actor) {
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(e.id));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<searcher::Searcher> fresh,
                          searcher::NewSearcher(next.config));
  const int64_t planned = fresh->TrialCount();
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> again,
                          ReopenedTrialsLocked(next.config, *fresh, trials));
  if (again.empty() && static_cast<int64_t>(trials.size()) >= planned) {
    return absl::FailedPreconditionError(
        absl::StrCat("every trial of experiment ", e.id,
                     " COMPLETED: there is nothing to continue (fork it to search again: cohort "
                     "experiment fork ",
                     e.id, ")"));
  }
  COHORT_RETURN_IF_ERROR(
      Transition(e.state, ExperimentState::kActive, absl::StrCat("experiment ", e.id)));
  e.name = next.config.name.value_or(e.name);
  e.config_yaml = config::ToYaml(next.effective);
  e.slots_per_trial = static_cast<int>(next.config.resources.slots_per_trial);
  e.max_restarts = static_cast<int>(next.config.max_restarts);
  e.ended_ms = 0;
  COHORT_RETURN_IF_ERROR(StoreStateLocked(e, ExperimentState::kActive,
                                          [&](const std::vector<DeliveryRow>& deliveries) {
                                            return db_->ReopenExperiment(e, again, deliveries);
                                          }));
  // Stored: what the master keeps of it follows.
  queue_.SetExperiment(e.id, QueueFacts(e));
  searchers_.erase(e.id);  // rebuilt from its trials as they are now: it creates any missing
  config_facts_.erase(e.id);
  for (const TrialRow& t : again) {
    TrialStoredLocked(t);
    AppendLogLocked(t.id,
                    absl::StrCat("master: experiment ", e.id, " continued by '", actor.user, "': ",
                                 t.latest_checkpoint.empty()
                                     ? "no checkpoint to resume from: it starts over"
                                     : "resumes from checkpoint " + t.latest_checkpoint));
  }
  COHORT_RETURN_IF_ERROR(SearchLocked(e.id).status());
  RequestPassLocked();
  follows_.Notify();
  return absl::OkStatus();
}

}  // namespace cohort::master
