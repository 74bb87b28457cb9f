#include "wire/profile_bodies.h"

#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

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

}  // namespace cohort::wire
