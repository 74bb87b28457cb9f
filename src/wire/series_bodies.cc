#include "wire/series_bodies.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxSeriesNameBytes = 512;
constexpr size_t kMaxSeries = 1 << 16;
constexpr size_t kMaxPoints = 1 << 20;
constexpr size_t kMaxTrials = 1 << 16;

Json PointsJson(const std::vector<SeriesPoint>& points) {
  Json list = Json::array();
  for (const SeriesPoint& p : points) list.push_back(Json::array({p.batch, p.time, p.value}));
  return list;
}

absl::StatusOr<SeriesPoint> ParsePoint(const Json& json, const std::string& where) {
  if (!json.is_array() || json.size() != 3 || !json[0].is_number_integer() ||
      !json[1].is_number() || !json[2].is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": must be [batch, time, value], got ", internal::Shown(json)));
  }
  return SeriesPoint{json[0].get<int64_t>(), json[1].get<double>(), json[2].get<double>()};
}

absl::StatusOr<SeriesSummary> ParseSummaryAt(const Json& json, const std::string& where) {
  FieldReader r(json, where);
  SeriesSummary s;
  r.Required("name", &s.name, kMaxSeriesNameBytes);
  r.Optional("label", &s.label, kMaxSeriesNameBytes);
  r.Required("points", &s.points, {.min = 0});
  r.Required("first_batch", &s.first_batch);
  r.Required("last_batch", &s.last_batch);
  r.Optional("last_time", &s.last_time);
  r.Optional("last_value", &s.last_value);
  r.Optional("min_value", &s.min_value);
  r.Optional("max_value", &s.max_value);
  r.Optional("mean_value", &s.mean_value);
  COHORT_RETURN_IF_ERROR(r.status());
  return s;
}

absl::StatusOr<SeriesPoints> ParsePointsAt(const Json& json, const std::string& where) {
  FieldReader r(json, where);
  SeriesPoints s;
  r.Required("name", &s.name, kMaxSeriesNameBytes);
  r.Optional("label", &s.label, kMaxSeriesNameBytes);
  r.Array("points", &s.points, kMaxPoints, FieldReader::kRequired, ParsePoint);
  COHORT_RETURN_IF_ERROR(r.status());
  return s;
}

absl::StatusOr<TrialSeries> ParseTrialSeriesAt(const Json& json, const std::string& where) {
  FieldReader r(json, where);
  TrialSeries t;
  r.RequiredId("trial_id", &t.trial_id);
  r.Array("points", &t.points, kMaxPoints, FieldReader::kRequired, ParsePoint);
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

}  // namespace

Json SeriesList::ToJson() const {
  Json list = Json::array();
  for (const SeriesSummary& s : series) {
    list.push_back({{"name", s.name},
                    {"label", s.label},
                    {"points", s.points},
                    {"first_batch", s.first_batch},
                    {"last_batch", s.last_batch},
                    {"last_time", s.last_time},
                    {"last_value", s.last_value},
                    {"min_value", s.min_value},
                    {"max_value", s.max_value},
                    {"mean_value", s.mean_value}});
  }
  return {{"series", list}};
}

absl::StatusOr<SeriesList> ParseSeriesList(const Json& json) {
  FieldReader r(json, "series list");
  SeriesList out;
  r.Array("series", &out.series, kMaxSeries, FieldReader::kRequired, ParseSummaryAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json SeriesData::ToJson() const {
  Json list = Json::array();
  for (const SeriesPoints& s : series) {
    list.push_back({{"name", s.name}, {"label", s.label}, {"points", PointsJson(s.points)}});
  }
  return {{"series", list}, {"last_id", last_id}};
}

absl::StatusOr<SeriesData> ParseSeriesData(const Json& json) {
  FieldReader r(json, "series data");
  SeriesData out;
  r.Array("series", &out.series, kMaxSeries, FieldReader::kRequired, ParsePointsAt);
  r.Required("last_id", &out.last_id, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json ExperimentSeriesData::ToJson() const {
  Json list = Json::array();
  for (const TrialSeries& t : trials) {
    list.push_back({{"trial_id", t.trial_id}, {"points", PointsJson(t.points)}});
  }
  return {{"name", name}, {"label", label}, {"trials", list}};
}

absl::StatusOr<ExperimentSeriesData> ParseExperimentSeriesData(const Json& json) {
  FieldReader r(json, "experiment series data");
  ExperimentSeriesData out;
  r.Required("name", &out.name, kMaxSeriesNameBytes);
  r.Optional("label", &out.label, kMaxSeriesNameBytes);
  r.Array("trials", &out.trials, kMaxTrials, FieldReader::kRequired, ParseTrialSeriesAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

}  // namespace cohort::wire
