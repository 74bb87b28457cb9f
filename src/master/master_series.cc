// Master: metric time series (master.h, "Time series"): what a trial has, its points by range
// and downsampled, followed as they arrive, and one series across an experiment's trials.

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cohort/status.h"
#include "config/config_parser.h"
#include "config/yaml_json.h"
#include "master/master.h"

namespace cohort::master {
namespace {

PointQuery QueryOf(int64_t trial_id, const std::string& name, const SeriesRequest& r) {
  return PointQuery{.trial_id = trial_id,
                    .name = name,
                    .label = r.label,
                    .min_batch = r.min_batch,
                    .max_batch = r.max_batch,
                    .min_time = r.min_time,
                    .max_time = r.max_time,
                    .after_id = r.after,
                    .max_points = r.max_points};
}

std::vector<wire::SeriesPoint> PointsOf(const std::vector<PointRow>& rows) {
  std::vector<wire::SeriesPoint> points;
  points.reserve(rows.size());
  for (const PointRow& p : rows) points.push_back({p.batch, p.time, p.value});
  return points;
}

absl::Status CheckRequest(const SeriesRequest& request) {
  if (request.names.empty()) {
    return absl::InvalidArgumentError("name a series: ?name=validation/loss (see .../series)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PointRow>> Master::SystemPointsLocked(
    const TrialRow& trial, const std::vector<wire::SystemMetricsRecord>& records) {
  COHORT_ASSIGN_OR_RETURN(const ConfigFacts profiling, ConfigFactsLocked(trial.experiment_id));
  const config::Profiling& window = profiling.window;
  std::vector<PointRow> points;
  if (!window.enabled || trial.batches < window.begin_on_batch ||
      (window.end_after_batch && trial.batches > *window.end_after_batch)) {
    return points;
  }
  for (const wire::SystemMetricsRecord& r : records) {
    for (const auto& [name, value] : r.metrics) {
      points.push_back({name, r.agent, trial.batches, r.time, value});
    }
    for (const wire::GpuMetricsRecord& gpu : r.gpus) {
      const std::string label = absl::StrCat(r.agent, "/", gpu.uuid);
      points.push_back({"gpu_util", label, trial.batches, r.time, gpu.gpu_util});
      points.push_back({"gpu_free_memory", label, trial.batches, r.time, gpu.gpu_free_memory});
    }
  }
  return points;
}

absl::StatusOr<wire::SeriesList> Master::TrialSeries(int64_t id) {
  COHORT_RETURN_IF_ERROR(db_->GetTrial(id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<SeriesRow> rows, db_->ListSeries(id));
  wire::SeriesList out;
  for (const SeriesRow& s : rows) {
    out.series.push_back({s.name, s.label, s.points, s.first_batch, s.last_batch, s.last_time,
                          s.last_value, s.min_value, s.max_value, s.mean_value});
  }
  return out;
}

absl::StatusOr<wire::SeriesData> Master::ReadSeriesData(int64_t id, const SeriesRequest& request) {
  wire::SeriesData out;
  out.last_id = request.after;
  for (const std::string& name : request.names) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> rows,
                            db_->QueryPoints(QueryOf(id, name, request)));
    for (const PointRow& p : rows) out.last_id = std::max(out.last_id, p.id);
    out.series.push_back({name, request.label, PointsOf(rows)});
  }
  return out;
}

absl::StatusOr<wire::SeriesData> Master::TrialSeriesData(int64_t id, const SeriesRequest& request,
                                                         absl::Duration wait) {
  COHORT_RETURN_IF_ERROR(CheckRequest(request));
  wire::SeriesData data;
  COHORT_RETURN_IF_ERROR(FollowUntil(wait, [&](bool last) -> absl::StatusOr<bool> {
    COHORT_ASSIGN_OR_RETURN(TrialRow t, db_->GetTrial(id));
    COHORT_ASSIGN_OR_RETURN(data, ReadSeriesData(id, request));
    return data.last_id > request.after || wire::IsTerminal(t.state) || last;
  }));
  return data;
}

absl::StatusOr<wire::ExperimentSeriesData> Master::ExperimentSeries(int64_t id,
                                                                    const SeriesRequest& request) {
  COHORT_RETURN_IF_ERROR(CheckRequest(request));
  COHORT_RETURN_IF_ERROR(db_->GetExperiment(id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_->ListTrials(id));
  wire::ExperimentSeriesData out{request.names[0], request.label, {}};
  for (const TrialRow& t : trials) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> rows,
                            db_->QueryPoints(QueryOf(t.id, request.names[0], request)));
    out.trials.push_back({t.id, PointsOf(rows)});
  }
  return out;
}

}  // namespace cohort::master
