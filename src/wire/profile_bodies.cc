#include "wire/profile_bodies.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

// A step series' points at most (the route's max_points is clamped below it).
constexpr size_t kMaxStepSeriesPoints = 100000;

absl::StatusOr<PhaseTiming> ParsePhaseTiming(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  PhaseTiming p;
  r.Required("name", &p.name, kMaxMetricNameBytes);
  r.Required("count", &p.count, {.min = 0});
  r.Required("mean_ms", &p.mean_ms, {.min = 0});
  r.Required("min_ms", &p.min_ms, {.min = 0});
  r.Required("max_ms", &p.max_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return p;
}

absl::StatusOr<RankTimings> ParseRankTimings(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  RankTimings rank;
  r.Required("rank", &rank.rank, {.min = 0, .max = 1 << 20});
  r.Array("phases", &rank.phases, kMaxMetrics, FieldReader::kRequired, ParsePhaseTiming);
  COHORT_RETURN_IF_ERROR(r.status());
  return rank;
}

absl::StatusOr<PhaseSeries> ParsePhaseSeries(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  PhaseSeries p;
  r.Required("name", &p.name, kMaxMetricNameBytes);
  r.Array("ms", &p.ms, kMaxStepSeriesPoints, FieldReader::kRequired,
          [](const Json& j, const std::string& where) -> absl::StatusOr<std::optional<double>> {
            if (j.is_null()) return std::nullopt;
            if (!j.is_number() || j.get<double>() < 0) {
              return absl::InvalidArgumentError(where + ": expected a number >= 0 or null");
            }
            return j.get<double>();
          });
  COHORT_RETURN_IF_ERROR(r.status());
  return p;
}

}  // namespace

Json StepTimings::ToJson() const {
  Json rank_array = Json::array();
  for (const RankTimings& r : ranks) {
    Json phase_array = Json::array();
    for (const PhaseTiming& p : r.phases) {
      phase_array.push_back({{"name", p.name},
                             {"count", p.count},
                             {"mean_ms", p.mean_ms},
                             {"min_ms", p.min_ms},
                             {"max_ms", p.max_ms}});
    }
    rank_array.push_back({{"rank", r.rank}, {"phases", phase_array}});
  }
  return {{"trial_id", trial_id}, {"profiled_steps", profiled_steps}, {"ranks", rank_array}};
}

absl::StatusOr<StepTimings> ParseStepTimings(const Json& json) {
  FieldReader r(json, "step timings");
  StepTimings t;
  r.RequiredId("trial_id", &t.trial_id);
  r.Required("profiled_steps", &t.profiled_steps, {.min = 0});
  r.Array("ranks", &t.ranks, 1 << 16, FieldReader::kRequired, ParseRankTimings);
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

Json StepSeries::ToJson() const {
  Json phase_array = Json::array();
  for (const PhaseSeries& p : phases) {
    Json ms = Json::array();
    for (const std::optional<double>& v : p.ms) ms.push_back(v ? Json(*v) : Json(nullptr));
    phase_array.push_back({{"name", p.name}, {"ms", ms}});
  }
  return {{"trial_id", trial_id},
          {"rank", rank},
          {"stride", stride},
          {"batches", batches},
          {"phases", phase_array}};
}

absl::StatusOr<StepSeries> ParseStepSeries(const Json& json) {
  FieldReader r(json, "step series");
  StepSeries s;
  r.RequiredId("trial_id", &s.trial_id);
  r.Required("rank", &s.rank, {.min = 0, .max = 1 << 20});
  r.Required("stride", &s.stride, {.min = 1});
  r.Array("batches", &s.batches, kMaxStepSeriesPoints, FieldReader::kRequired,
          [](const Json& j, const std::string& where) -> absl::StatusOr<int64_t> {
            if (!j.is_number_integer())
              return absl::InvalidArgumentError(where + ": expected an integer");
            return j.get<int64_t>();
          });
  r.Array("phases", &s.phases, kMaxMetrics, FieldReader::kRequired, ParsePhaseSeries);
  COHORT_RETURN_IF_ERROR(r.status());
  for (const PhaseSeries& p : s.phases) {
    if (p.ms.size() != s.batches.size()) {
      return absl::InvalidArgumentError(absl::StrCat("step series: phase \"", p.name, "\" has ",
                                                     p.ms.size(), " values for ", s.batches.size(),
                                                     " batches"));
    }
  }
  return s;
}

}  // namespace cohort::wire
