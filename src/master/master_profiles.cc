// Master: what the output path keeps of a node's profiling records (master.h,
// SystemPointsLocked and StoreStepProfilesLocked), by the rules of series/series.h, and the
// cache of what the master needs of an experiment's config (ConfigFactsLocked).

#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {

absl::StatusOr<Master::ConfigFacts> Master::ConfigFactsLocked(int64_t experiment_id) {
  auto cached = config_facts_.find(experiment_id);
  if (cached != config_facts_.end()) return cached->second;
  COHORT_ASSIGN_OR_RETURN(ExperimentRow e, db_->GetExperiment(experiment_id));
  absl::StatusOr<config::Json> tree = config::ParseYaml(e.config_yaml);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (!cfg.ok()) return cfg.status();
  COHORT_ASSIGN_OR_RETURN(std::shared_ptr<const LogPolicyMatcher> log_policies,
                          LogPolicyMatcher::Create(cfg->log_policies));
  return config_facts_
      .emplace(experiment_id,
               ConfigFacts{cfg->profiling, e.slots_per_trial, cfg->searcher,
                           cfg->checkpoint_storage, std::move(log_policies), cfg->warnings})
      .first->second;
}

absl::StatusOr<std::vector<std::string>> Master::ExperimentWarnings(int64_t id) {
  MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(id));
  return facts.warnings;
}

absl::StatusOr<std::vector<PointRow>> Master::SystemPointsLocked(
    const TrialRow& trial, const std::vector<wire::SystemMetricsRecord>& records) {
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(trial.experiment_id));
  return series::SystemPoints(facts.window, trial.batches, records);
}

absl::Status Master::StoreStepProfilesLocked(const TrialRow& trial,
                                             const std::vector<wire::StepProfileRecord>& records) {
  if (records.empty()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(trial.experiment_id));
  if (!facts.window.enabled) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(const int64_t stored, db_->CountStepProfiles(trial.id));
  series::StepProfiles kept =
      series::SelectStepProfiles(facts.window, facts.slots, stored, records);
  if (kept.dropped > 0 && stored < series::kMaxStepProfilesPerTrial) {
    AppendLogLocked(trial.id, absl::StrCat("master: the trace keeps the first ",
                                           series::kMaxStepProfilesPerTrial,
                                           " step timelines of a trial; later profiled batches "
                                           "count in the timings only (narrow "
                                           "profiling.begin_on_batch..end_after_batch to trace "
                                           "a later part)"));
  }
  return db_->InsertStepProfiles(trial.id, kept.rows, kept.timings);
}

}  // namespace cohort::master
