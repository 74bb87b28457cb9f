// Master: each experiment's searcher (master/searcher/searcher.h) and how its operations are
// carried out here: trial rows, `searcher` metric rows, stopping allocations, log lines.
#include <cmath>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "config/config_parser.h"
#include "config/length.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {

int64_t TotalBatches(const config::ExperimentConfig& cfg, const config::Json& hparams) {
  if (!cfg.searcher.max_length) return 0;
  return config::LengthInBatches(*cfg.searcher.max_length, cfg,
                                 config::TrialGlobalBatchSize(cfg, hparams), "searcher.max_length")
      .value_or(0);
}

std::function<int64_t(const config::Json&)> TotalBatchesOf(const config::ExperimentConfig& cfg) {
  return [cfg](const config::Json& hparams) { return TotalBatches(cfg, hparams); };
}

absl::StatusOr<Master::ExperimentSearch*> Master::SearchLocked(int64_t experiment_id) {
  if (auto it = searchers_.find(experiment_id); it != searchers_.end()) return &it->second;
  COHORT_ASSIGN_OR_RETURN(ExperimentRow exp, db_->GetExperiment(experiment_id));
  absl::StatusOr<config::Json> tree = config::ParseYaml(exp.config_yaml);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (!cfg.ok()) {
    return absl::DataLossError(
        absl::StrCat("experiment ", experiment_id,
                     ": its stored config does not parse: ", cfg.status().message()));
  }
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<searcher::Searcher> s, searcher::NewSearcher(*cfg));
  ExperimentSearch search{cfg->searcher, std::move(s), {}, TotalBatchesOf(*cfg)};
  // After a restart of the master: the searcher is rebuilt from the trials and the rung metrics
  // it had asked to record, in the order they were recorded.
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(experiment_id));
  std::vector<wire::TrialState> states;
  std::vector<searcher::RungReport> reports;
  for (size_t i = 0; i < trials.size(); ++i) {
    search.trial_ids.push_back(trials[i].id);
    states.push_back(trials[i].state);
    COHORT_ASSIGN_OR_RETURN(
        std::vector<MetricRow> rows,
        db_->ListMetrics(trials[i].id, wire::Name(wire::MetricKind::kSearcher)));
    for (const MetricRow& row : rows) {
      Json m = Json::parse(row.metrics_json, nullptr, false);
      const double metric =
          m.is_object() && m.contains("searcher_metric") && m["searcher_metric"].is_number()
              ? m["searcher_metric"].get<double>()
              : std::nan("");
      reports.push_back({static_cast<int64_t>(i), row.steps_completed, metric});
    }
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<searcher::Operation> ops,
                          search.searcher->Restore(states, reports));
  ExperimentSearch& stored = searchers_.emplace(experiment_id, std::move(search)).first->second;
  COHORT_RETURN_IF_ERROR(ApplySearchLocked(experiment_id, stored, ops, /*reporting=*/""));
  return &stored;
}

absl::StatusOr<int64_t> Master::SearchIndexLocked(const ExperimentSearch& search,
                                                  int64_t trial_id) const {
  for (size_t i = 0; i < search.trial_ids.size(); ++i) {
    if (search.trial_ids[i] == trial_id) return static_cast<int64_t>(i);
  }
  return absl::InternalError(absl::StrCat(TrialName(trial_id), " is unknown to its searcher"));
}

absl::StatusOr<std::vector<int64_t>> Master::SearcherOpsLocked(const ExperimentRow& exp,
                                                               int64_t trial_id,
                                                               std::string* note) {
  COHORT_ASSIGN_OR_RETURN(ExperimentSearch * search, SearchLocked(exp.id));
  COHORT_ASSIGN_OR_RETURN(int64_t index, SearchIndexLocked(*search, trial_id));
  std::vector<int64_t> rungs = search->searcher->Rungs(index);
  if (!rungs.empty()) {
    *note = absl::StrCat(
        "; ", search->config.name, " rungs ", absl::StrJoin(rungs, ", "), " ",
        search->config.max_length ? config::UnitName(search->config.max_length->unit) : "");
  }
  return rungs;
}

absl::Status Master::RungReportedLocked(const TrialRow& trial, double length, double metric,
                                        const std::string& allocation) {
  COHORT_ASSIGN_OR_RETURN(ExperimentSearch * search, SearchLocked(trial.experiment_id));
  COHORT_ASSIGN_OR_RETURN(int64_t index, SearchIndexLocked(*search, trial.id));
  COHORT_ASSIGN_OR_RETURN(
      std::vector<searcher::Operation> ops,
      search->searcher->ValidationReported(index, std::llround(length), metric));
  return ApplySearchLocked(trial.experiment_id, *search, ops, allocation);
}

absl::Status Master::TrialEndedLocked(const TrialRow& trial) {
  COHORT_ASSIGN_OR_RETURN(ExperimentSearch * search, SearchLocked(trial.experiment_id));
  COHORT_ASSIGN_OR_RETURN(int64_t index, SearchIndexLocked(*search, trial.id));
  COHORT_ASSIGN_OR_RETURN(std::vector<searcher::Operation> ops,
                          search->searcher->TrialExited(index, trial.state));
  return ApplySearchLocked(trial.experiment_id, *search, ops, /*reporting=*/"");
}

absl::Status Master::ApplySearchLocked(int64_t experiment_id, ExperimentSearch& search,
                                       const std::vector<searcher::Operation>& ops,
                                       const std::string& reporting) {
  // An ended experiment's searcher has no say (the runs of a killed one exit after the kill):
  // the rung metrics its trials still report are recorded, nothing is created, stopped,
  // promoted or completed.
  const TrialQueue::Experiment* experiment = queue_.FindExperiment(experiment_id);
  const bool ended = experiment != nullptr && wire::IsTerminal(experiment->state);
  bool schedule = false;
  for (const searcher::Operation& op : ops) {
    if (ended && !std::holds_alternative<searcher::RecordMetric>(op)) continue;
    if (const auto* create = std::get_if<searcher::Create>(&op)) {
      COHORT_RETURN_IF_ERROR(InsertTrialLocked(experiment_id, search, *create));
      schedule = true;
      continue;
    }
    const int64_t index = searcher::TrialOf(op);
    if (index < 0 || index >= static_cast<int64_t>(search.trial_ids.size())) {
      return absl::InternalError(
          absl::StrCat("experiment ", experiment_id, ": the searcher named trial index ", index));
    }
    const int64_t trial_id = search.trial_ids[index];
    COHORT_ASSIGN_OR_RETURN(bool queued, ApplyOneLocked(trial_id, op, reporting));
    schedule = schedule || queued;
  }
  if (!ops.empty()) follows_.Notify();
  if (schedule) RequestPassLocked();
  return absl::OkStatus();
}

absl::StatusOr<bool> Master::ApplyOneLocked(int64_t trial_id, const searcher::Operation& op,
                                            const std::string& reporting) {
  if (const auto* record = std::get_if<searcher::RecordMetric>(&op)) {
    Json stored = {
        {"searcher_metric", std::isfinite(record->metric) ? Json(record->metric) : Json(nullptr)}};
    COHORT_RETURN_IF_ERROR(
        db_->InsertMetrics({{trial_id, wire::Name(wire::MetricKind::kSearcher), record->length,
                             stored.dump(), absl::ToUnixMillis(NowLocked()) / 1e3}}));
    return false;
  }
  const std::string line = searcher::LogLine(op);
  if (!line.empty()) AppendLogLocked(trial_id, absl::StrCat("master: ", line));
  if (std::holds_alternative<searcher::Stop>(op)) {
    Allocation* running = allocations_.OfTrial(trial_id);
    if (running != nullptr && running->id == reporting) {
      StopAllocationLocked(*running, StopReason::kSearcher);
    }
    return false;
  }
  const bool promote = std::holds_alternative<searcher::Promote>(op);
  if (!promote && !std::holds_alternative<searcher::Complete>(op)) return false;  // Continue
  COHORT_ASSIGN_OR_RETURN(TrialRow trial, db_->GetTrial(trial_id));
  COHORT_RETURN_IF_ERROR(
      MoveTrialLocked(trial, promote ? TrialState::kQueued : TrialState::kCompleted));
  if (!promote) COHORT_RETURN_IF_ERROR(UpdateExperimentStateLocked(trial.experiment_id));
  return promote;
}

absl::Status Master::InsertTrialLocked(int64_t experiment_id, ExperimentSearch& search,
                                       const searcher::Create& create) {
  if (create.trial != static_cast<int64_t>(search.trial_ids.size())) {
    return absl::InternalError(absl::StrCat("experiment ", experiment_id,
                                            ": the searcher created trial index ", create.trial,
                                            " out of order"));
  }
  TrialRow trial;
  trial.experiment_id = experiment_id;
  trial.hparams_json = create.hparams.dump();
  trial.seed = create.seed;
  trial.total_batches = search.total_batches(create.hparams);
  trial.sequence = next_sequence_++;
  COHORT_ASSIGN_OR_RETURN(int64_t id, db_->InsertTrial(trial));
  search.trial_ids.push_back(id);
  trial.id = id;
  TrialStoredLocked(trial);
  return absl::OkStatus();
}

}  // namespace cohort::master
