#include "master/views/trial_table.h"

#include <cmath>
#include <map>
#include <utility>

#include "cohort/status.h"
#include "config/yaml_json.h"

namespace cohort::master::views {
namespace {

// The metric's value in `metrics`, when it is a finite number.
std::optional<double> ValueOf(const wire::Json& metrics, const std::string& metric) {
  if (!metrics.is_object()) return std::nullopt;
  const auto it = metrics.find(metric);
  if (it == metrics.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// A trial's validation reports, in report order; rows whose JSON does not parse are skipped.
absl::StatusOr<std::vector<wire::ValidationPoint>> Validations(Database& db, int64_t trial_id) {
  COHORT_ASSIGN_OR_RETURN(std::vector<MetricRow> rows, db.ListMetrics(trial_id, "validation"));
  std::vector<wire::ValidationPoint> out;
  out.reserve(rows.size());
  for (const MetricRow& row : rows) {
    wire::Json metrics = wire::Json::parse(row.metrics_json, nullptr, false);
    if (!metrics.is_object()) continue;
    out.push_back({row.steps_completed, std::move(metrics)});
  }
  return out;
}

// Whether `a` is better than `b` in the table's direction.
bool Better(double a, double b, bool smaller_is_better) {
  return smaller_is_better ? a < b : a > b;
}

}  // namespace

BestAndLatest PickValidations(const std::vector<wire::ValidationPoint>& validations,
                              const std::string& metric, bool smaller_is_better) {
  BestAndLatest out;
  std::optional<double> best;
  for (const wire::ValidationPoint& v : validations) {
    if (!v.metrics.is_object()) continue;
    out.latest = v;
    const std::optional<double> value = ValueOf(v.metrics, metric);
    if (value && (!best || Better(*value, *best, smaller_is_better))) {
      best = value;
      out.best = v;
    }
  }
  return out;
}

std::pair<std::string, bool> SearcherMetric(const std::string& config_yaml) {
  absl::StatusOr<config::Json> tree = config::ParseYaml(config_yaml);
  if (!tree.ok() || !tree->is_object()) return {"", true};
  const auto searcher = tree->find("searcher");
  if (searcher == tree->end() || !searcher->is_object()) return {"", true};
  std::string metric;
  bool smaller = true;
  if (auto m = searcher->find("metric"); m != searcher->end() && m->is_string()) {
    metric = m->get<std::string>();
  }
  if (auto s = searcher->find("smaller_is_better"); s != searcher->end() && s->is_boolean()) {
    smaller = s->get<bool>();
  }
  return {metric, smaller};
}

absl::StatusOr<wire::TrialTable> BuildTrialTable(Database& db, int64_t experiment_id) {
  COHORT_ASSIGN_OR_RETURN(ExperimentRow experiment, db.GetExperiment(experiment_id));
  COHORT_ASSIGN_OR_RETURN(std::vector<TrialRow> trials, db.ListTrials(experiment_id));
  // The ACTIVE checkpoints of all its trials in one indexed query.
  COHORT_ASSIGN_OR_RETURN(std::vector<GcCheckpointRow> kept, db.ListActiveCheckpoints(experiment_id));
  std::map<int64_t, int64_t> active;  // trial -> its ACTIVE checkpoints
  for (const GcCheckpointRow& c : kept) ++active[c.checkpoint.trial_id];
  wire::TrialTable table;
  std::tie(table.metric, table.smaller_is_better) = SearcherMetric(experiment.config_yaml);
  std::optional<double> best;
  for (const TrialRow& t : trials) {
    wire::TrialTableRow row{.trial_id = t.id,
                            .state = t.state,
                            .hparams = wire::Json::parse(t.hparams_json, nullptr, false),
                            .batches = t.batches,
                            .restarts = t.restarts};
    if (!row.hparams.is_object()) row.hparams = wire::Json::object();
    row.checkpoints = active[t.id];
    COHORT_ASSIGN_OR_RETURN(std::vector<wire::ValidationPoint> validations, Validations(db, t.id));
    BestAndLatest picked = PickValidations(validations, table.metric, table.smaller_is_better);
    row.best_validation = std::move(picked.best);
    row.latest_validation = std::move(picked.latest);
    if (row.best_validation) {
      const std::optional<double> v = ValueOf(row.best_validation->metrics, table.metric);
      if (v && (!best || Better(*v, *best, table.smaller_is_better))) {
        best = v;
        table.best_trial = t.id;
      }
    }
    table.trials.push_back(std::move(row));
  }
  return table;
}

}  // namespace cohort::master::views
