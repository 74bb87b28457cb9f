#include "master/series/series.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "wire/states.h"
#include "wire/step_profile.h"
#include "wire/system_metrics.h"
#include "wire/trace_events.h"
#include "wire/trial_bodies.h"

namespace cohort::master::series {
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

}  // namespace

bool InProfilingWindow(const config::Profiling& window, int64_t batch) {
  return window.enabled && batch >= window.begin_on_batch &&
         (!window.end_after_batch || batch <= *window.end_after_batch);
}

std::vector<PointRow> SystemPoints(const config::Profiling& window, int64_t batch,
                                   const std::vector<wire::SystemMetricsRecord>& records) {
  std::vector<PointRow> points;
  if (!InProfilingWindow(window, batch)) return points;
  for (const wire::SystemMetricsRecord& r : records) {
    for (const auto& [name, value] : r.metrics) {
      points.push_back({name, r.agent, batch, r.time, value});
    }
    for (const wire::GpuMetricsRecord& gpu : r.gpus) {
      const std::string label = absl::StrCat(r.agent, "/", gpu.uuid);
      points.push_back({"gpu_util", label, batch, r.time, gpu.gpu_util});
      points.push_back({"gpu_free_memory", label, batch, r.time, gpu.gpu_free_memory});
    }
  }
  return points;
}

StepProfiles SelectStepProfiles(const config::Profiling& window, int slots, int64_t stored,
                                const std::vector<wire::StepProfileRecord>& records) {
  StepProfiles out;
  Totals totals;
  for (const wire::StepProfileRecord& r : records) {
    // An agent's word is checked: a rank the trial does not have, or a batch outside the
    // window, is not kept.
    if (r.rank < 0 || r.rank >= slots || !InProfilingWindow(window, r.batch)) continue;
    AddTimings(r, totals);
    if (stored + static_cast<int64_t>(out.rows.size()) >= kMaxStepProfilesPerTrial) {
      ++out.dropped;
      continue;
    }
    out.rows.push_back({r.rank, r.batch, r.time, r.ToJson().dump()});
  }
  for (auto& [key, t] : totals) out.timings.push_back(std::move(t));
  return out;
}

absl::StatusOr<wire::MetricList> Series::TrialMetrics(int64_t id,
                                                      std::optional<wire::MetricKind> kind,
                                                      int64_t after, int limit) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(id).status());
  std::optional<std::string> kind_name;
  if (kind) kind_name = wire::Name(*kind);
  // One row more than asked says whether another page follows.
  COHORT_ASSIGN_OR_RETURN(std::vector<MetricRow> rows,
                          db_.ListMetricsPage(id, kind_name, after, limit + 1));
  wire::MetricList out;
  if (static_cast<int64_t>(rows.size()) > limit) {
    rows.pop_back();
    out.next_after = rows.empty() ? after : rows.back().id;
  }
  for (const MetricRow& m : rows) {
    absl::StatusOr<wire::MetricKind> row_kind = wire::ParseMetricKind(m.kind);
    if (!row_kind.ok()) {
      return absl::DataLossError(absl::StrCat(
          "trial ", id, ": a metric row in the database: ", row_kind.status().message()));
    }
    out.metrics.push_back({*row_kind, m.steps_completed,
                           nlohmann::json::parse(m.metrics_json, nullptr, false), m.time});
  }
  return out;
}

absl::StatusOr<wire::SeriesList> Series::TrialSeries(int64_t trial_id) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(trial_id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<SeriesRow> rows, db_.ListSeries(trial_id));
  wire::SeriesList out;
  for (const SeriesRow& s : rows) {
    out.series.push_back({s.name, s.label, s.points, s.first_batch, s.last_batch, s.last_time,
                          s.last_value, s.min_value, s.max_value, s.mean_value});
  }
  return out;
}

absl::StatusOr<std::vector<PointRow>> Series::PointsUnderEitherName(int64_t trial_id,
                                                                    const std::string& name,
                                                                    const SeriesRequest& request) {
  COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> rows,
                          db_.QueryPoints(QueryOf(trial_id, name, request)));
  const std::string old = wire::OldSeriesName(name);
  if (!rows.empty() || old.empty()) return rows;
  return db_.QueryPoints(QueryOf(trial_id, old, request));  // a trial stored before the rename
}

absl::StatusOr<wire::SeriesData> Series::ReadSeriesData(int64_t trial_id,
                                                        const SeriesRequest& request) {
  wire::SeriesData out;
  out.last_id = request.after;
  for (const std::string& name : request.names) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> rows,
                            PointsUnderEitherName(trial_id, name, request));
    for (const PointRow& p : rows) out.last_id = std::max(out.last_id, p.id);
    out.series.push_back({name, request.label, PointsOf(rows)});
  }
  return out;
}

absl::StatusOr<wire::SeriesData> Series::TrialSeriesData(int64_t trial_id,
                                                         const SeriesRequest& request,
                                                         absl::Duration wait) {
  COHORT_RETURN_IF_ERROR(CheckRequest(request));
  wire::SeriesData data;
  COHORT_RETURN_IF_ERROR(follows_.FollowUntil(wait, [&](bool last) -> absl::StatusOr<bool> {
    COHORT_ASSIGN_OR_RETURN(TrialRow t, db_.GetTrial(trial_id));
    COHORT_ASSIGN_OR_RETURN(data, ReadSeriesData(trial_id, request));
    return data.last_id > request.after || wire::IsTerminal(t.state) || last;
  }));
  return data;
}

absl::StatusOr<wire::ExperimentSeriesData> Series::ExperimentSeries(int64_t experiment_id,
                                                                    const SeriesRequest& request) {
  COHORT_RETURN_IF_ERROR(CheckRequest(request));
  COHORT_RETURN_IF_ERROR(db_.GetExperiment(experiment_id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db_.ListTrials(experiment_id));
  wire::ExperimentSeriesData out{request.names[0], request.label, {}};
  for (const TrialRow& t : trials) {
    COHORT_ASSIGN_OR_RETURN(std::vector<PointRow> rows,
                            PointsUnderEitherName(t.id, request.names[0], request));
    out.trials.push_back({t.id, PointsOf(rows)});
  }
  return out;
}

absl::StatusOr<wire::StepTimings> Series::TrialStepTimings(int64_t trial_id) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(trial_id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<StepTimingRow> rows, db_.ListStepTimings(trial_id));
  wire::StepTimings out{.trial_id = trial_id, .profiled_steps = 0, .ranks = {}};
  COHORT_ASSIGN_OR_RETURN(out.profiled_steps, db_.CountStepProfiles(trial_id));
  for (const StepTimingRow& t : rows) {
    if (out.ranks.empty() || out.ranks.back().rank != t.rank) out.ranks.push_back({t.rank, {}});
    const double count = static_cast<double>(std::max<int64_t>(1, t.count));
    out.ranks.back().phases.push_back(
        {t.phase, t.count, static_cast<double>(t.total_us) / count / 1000.0,
         static_cast<double>(t.min_us) / 1000.0, static_cast<double>(t.max_us) / 1000.0});
  }
  return out;
}

absl::StatusOr<wire::StepSeries> Series::TrialStepSeries(int64_t trial_id, int rank,
                                                         int max_points) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(trial_id).status());
  max_points = std::max(1, max_points);
  COHORT_ASSIGN_OR_RETURN(std::vector<StepTimingRow> timings, db_.ListStepTimings(trial_id));
  // The rank's profiled batches: its most counted phase ("step" where the Trial API writes it).
  // Batches past kMaxStepProfilesPerTrial count there too, so the sample may be sparser than
  // needed, never larger than max_points.
  int64_t batches = 0;
  for (const StepTimingRow& t : timings) {
    if (t.rank == rank) batches = std::max(batches, t.count);
  }
  wire::StepSeries out;
  out.trial_id = trial_id;
  out.rank = rank;
  out.stride = std::max<int64_t>(1, (batches + max_points - 1) / max_points);
  COHORT_ASSIGN_OR_RETURN(std::vector<StepProfileRow> rows,
                          db_.ListRankStepProfiles(trial_id, rank, out.stride, max_points));
  std::map<std::string, size_t> index;  // phase -> its place in out.phases
  for (const StepProfileRow& row : rows) {
    absl::StatusOr<nlohmann::json> json = ParseJsonBounded(row.record_json);
    if (!json.ok()) continue;
    absl::StatusOr<wire::StepProfileRecord> record = wire::ParseStepProfileRecord(*json);
    if (!record.ok()) continue;
    const size_t at = out.batches.size();
    out.batches.push_back(record->batch);
    for (const wire::PhaseSpan& span : record->phases) {
      auto [it, added] = index.emplace(span.name, out.phases.size());
      if (added) out.phases.push_back({span.name, {}});
      std::vector<std::optional<double>>& ms = out.phases[it->second].ms;
      ms.resize(at + 1);
      ms[at] = ms[at].value_or(0) + static_cast<double>(span.duration_us) / 1000.0;
    }
  }
  for (wire::PhaseSeries& phase : out.phases) phase.ms.resize(out.batches.size());
  return out;
}

absl::StatusOr<nlohmann::json> Series::TrialTrace(int64_t trial_id,
                                                  std::optional<int64_t> min_batch,
                                                  std::optional<int64_t> max_batch) {
  COHORT_RETURN_IF_ERROR(db_.GetTrial(trial_id).status());
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  if (!min_batch) {
    COHORT_ASSIGN_OR_RETURN(std::vector<StepProfileRow> first,
                            db_.ListStepProfiles(trial_id, 0, max_batch.value_or(kLast), 1));
    min_batch = first.empty() ? 0 : first[0].batch;
  }
  if (!max_batch) {
    max_batch = *min_batch > kLast - kTraceBatches ? kLast : *min_batch + kTraceBatches - 1;
  }
  COHORT_ASSIGN_OR_RETURN(
      std::vector<StepProfileRow> rows,
      db_.ListStepProfiles(trial_id, *min_batch, *max_batch, kMaxTraceSteps + 1));
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
  return wire::TraceEvents(trial_id, records, truncated);
}

}  // namespace cohort::master::series
