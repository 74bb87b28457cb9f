// Master: the profiler's step timelines (master.h, "step timelines"): taking a node's records
// inside the profiling window, each rank's timings per phase, and the trace of a batch range.

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "master/master.h"
#include "wire/trace_events.h"

namespace cohort::master {
namespace {

using Totals = std::map<std::pair<int, std::string>, StepTimingRow>;

void Add(Totals& totals, int rank, const std::string& phase, int64_t us) {
  StepTimingRow& t = totals[{rank, phase}];
  if (t.count == 0) {
    t = {rank, phase, 0, 0, us, us};
  }
  ++t.count;
  t.total_us += us;
  t.min_us = std::min(t.min_us, us);
  t.max_us = std::max(t.max_us, us);
}

// The record's phases, and its bucket spans' total as gradient_communication.
void AddTimings(const wire::StepProfileRecord& r, Totals& totals) {
  for (const wire::PhaseSpan& p : r.phases) Add(totals, r.rank, p.name, p.duration_us);
  if (r.buckets.empty()) return;
  int64_t communication = 0;
  for (const wire::BucketSpan& b : r.buckets) communication += b.duration_us;
  Add(totals, r.rank, wire::kGradientCommunicationPhase, communication);
}

bool InWindow(const config::Profiling& window, int64_t batch) {
  return window.enabled && batch >= window.begin_on_batch &&
         (!window.end_after_batch || batch <= *window.end_after_batch);
}

}  // namespace

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
  absl::MutexLock lock(&mu_);
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts facts, ConfigFactsLocked(id));
  return facts.warnings;
}

absl::Status Master::StoreStepProfilesLocked(const TrialRow& trial,
                                             const std::vector<wire::StepProfileRecord>& records) {
  if (records.empty()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts profiling, ConfigFactsLocked(trial.experiment_id));
  if (!profiling.window.enabled) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(const int64_t stored, db_->CountStepProfiles(trial.id));
  std::vector<StepProfileRow> rows;
  Totals totals;
  int64_t dropped = 0;
  for (const wire::StepProfileRecord& r : records) {
    // An agent's word is checked: a rank the trial does not have, or a batch outside the
    // window, is not kept.
    if (r.rank >= profiling.slots || !InWindow(profiling.window, r.batch)) continue;
    AddTimings(r, totals);
    if (stored + static_cast<int64_t>(rows.size()) >= kMaxStepProfilesPerTrial) {
      ++dropped;
      continue;
    }
    rows.push_back({r.rank, r.batch, r.time, r.ToJson().dump()});
  }
  if (dropped > 0 && stored < kMaxStepProfilesPerTrial) {
    AppendLogLocked(trial.id,
                    absl::StrCat("master: the trace keeps the first ", kMaxStepProfilesPerTrial,
                                 " step timelines of a trial; later profiled batches "
                                 "count in the timings only (narrow "
                                 "profiling.begin_on_batch..end_after_batch to trace "
                                 "a later part)"));
  }
  std::vector<StepTimingRow> timings;
  for (auto& [key, t] : totals) timings.push_back(std::move(t));
  return db_->InsertStepProfiles(trial.id, rows, timings);
}

absl::StatusOr<wire::StepTimings> Master::TrialStepTimings(int64_t id) {
  COHORT_RETURN_IF_ERROR(db_->GetTrial(id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<StepTimingRow> rows, db_->ListStepTimings(id));
  wire::StepTimings out{.trial_id = id, .profiled_steps = 0, .ranks = {}};
  COHORT_ASSIGN_OR_RETURN(out.profiled_steps, db_->CountStepProfiles(id));
  for (const StepTimingRow& t : rows) {
    if (out.ranks.empty() || out.ranks.back().rank != t.rank) out.ranks.push_back({t.rank, {}});
    const double count = static_cast<double>(std::max<int64_t>(1, t.count));
    out.ranks.back().phases.push_back(
        {t.phase, t.count, static_cast<double>(t.total_us) / count / 1000.0,
         static_cast<double>(t.min_us) / 1000.0, static_cast<double>(t.max_us) / 1000.0});
  }
  return out;
}

absl::StatusOr<nlohmann::json> Master::TrialTrace(int64_t id, std::optional<int64_t> min_batch,
                                                  std::optional<int64_t> max_batch) {
  COHORT_RETURN_IF_ERROR(db_->GetTrial(id).status());
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  if (!min_batch) {
    COHORT_ASSIGN_OR_RETURN(std::vector<StepProfileRow> first,
                            db_->ListStepProfiles(id, 0, max_batch.value_or(kLast), 1));
    min_batch = first.empty() ? 0 : first[0].batch;
  }
  if (!max_batch) {
    max_batch = *min_batch > kLast - kTraceBatches ? kLast : *min_batch + kTraceBatches - 1;
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<StepProfileRow> rows,
                          db_->ListStepProfiles(id, *min_batch, *max_batch, kMaxTraceSteps + 1));
  const bool truncated = rows.size() > static_cast<size_t>(kMaxTraceSteps);
  if (truncated) rows.pop_back();
  std::vector<wire::StepProfileRecord> records;
  records.reserve(rows.size());
  for (const StepProfileRow& row : rows) {
    // Stored by this master after parsing; one that no longer parses is skipped, not fatal.
    absl::StatusOr<nlohmann::json> json = ParseJsonBounded(row.record_json);
    if (!json.ok()) continue;
    absl::StatusOr<wire::StepProfileRecord> r = wire::ParseStepProfileRecord(*json);
    if (r.ok()) records.push_back(*std::move(r));
  }
  return wire::TraceEvents(id, records, truncated);
}

}  // namespace cohort::master
