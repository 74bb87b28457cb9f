#include "wire/trial_table.h"

#include <utility>

#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

// Trials one table may hold (a search of this many trials is far beyond any seen).
constexpr size_t kMaxTableTrials = 100000;

Json PointJson(const std::optional<ValidationPoint>& p) {
  if (!p) return nullptr;
  return {{"batches", p->batches}, {"metrics", p->metrics}};
}

absl::StatusOr<std::optional<ValidationPoint>> ParsePoint(FieldReader& r, const char* key,
                                                          const std::string& where) {
  if (!r.Has(key)) return std::nullopt;
  Json raw;
  r.Value(key, &raw, FieldReader::kOptional);
  if (raw.is_null()) return std::nullopt;
  FieldReader p(raw, where + "." + key);
  ValidationPoint point;
  p.Required("batches", &point.batches, {.min = 0});
  p.Object("metrics", &point.metrics, FieldReader::kRequired);
  COHORT_RETURN_IF_ERROR(p.status());
  return point;
}

absl::StatusOr<TrialTableRow> ParseRow(const Json& json, const std::string& where) {
  FieldReader r(json, where);
  TrialTableRow row;
  r.Required("trial_id", &row.trial_id, {.min = 1});
  r.Enum("state", &row.state, ParseTrialState, FieldReader::kRequired);
  r.Object("hparams", &row.hparams, FieldReader::kRequired);
  r.Required("batches", &row.batches, {.min = 0});
  r.Required("restarts", &row.restarts, {.min = 0});
  r.Optional("checkpoints", &row.checkpoints, {.min = 0});
  COHORT_ASSIGN_OR_RETURN(row.best_validation, ParsePoint(r, "best_validation", where));
  COHORT_ASSIGN_OR_RETURN(row.latest_validation, ParsePoint(r, "latest_validation", where));
  COHORT_RETURN_IF_ERROR(r.status());
  return row;
}

void Flatten(const std::string& prefix, const Json& node,
             std::vector<std::pair<std::string, Json>>* out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      Flatten(name, *it, out);
    } else {
      out->emplace_back(name, *it);
    }
  }
}

}  // namespace

Json TrialTable::ToJson() const {
  Json rows = Json::array();
  for (const TrialTableRow& t : trials) {
    rows.push_back({{"trial_id", t.trial_id},
                    {"state", Name(t.state)},
                    {"hparams", t.hparams},
                    {"batches", t.batches},
                    {"restarts", t.restarts},
                    {"checkpoints", t.checkpoints},
                    {"best_validation", PointJson(t.best_validation)},
                    {"latest_validation", PointJson(t.latest_validation)}});
  }
  Json out = {{"metric", metric}, {"smaller_is_better", smaller_is_better}, {"trials", rows}};
  out["best_trial"] = best_trial ? Json(*best_trial) : Json(nullptr);
  return out;
}

absl::StatusOr<TrialTable> ParseTrialTable(const Json& json) {
  FieldReader r(json, "trial table");
  TrialTable table;
  r.Required("metric", &table.metric, kMaxMetricNameBytes);
  r.Required("smaller_is_better", &table.smaller_is_better);
  if (r.Has("best_trial")) {
    Json best;
    r.Value("best_trial", &best, FieldReader::kOptional);
    if (!best.is_null()) r.RequiredId("best_trial", &table.best_trial.emplace());
  }
  r.Array("trials", &table.trials, kMaxTableTrials, FieldReader::kRequired, ParseRow);
  COHORT_RETURN_IF_ERROR(r.status());
  return table;
}

std::vector<std::pair<std::string, Json>> FlattenHparams(const Json& hparams) {
  std::vector<std::pair<std::string, Json>> out;
  if (hparams.is_object()) Flatten("", hparams, &out);
  return out;
}

}  // namespace cohort::wire
