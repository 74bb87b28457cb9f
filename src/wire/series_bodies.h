#pragma once
// The master's REST bodies about metric time series (docs/observability.md), written by the
// master and read by the CLI and the web interface:
//
//   GET /api/v1/trials/{id}/series                 SeriesList: the trial's series
//   GET /api/v1/trials/{id}/series/data?name=N[&name=N2...][&label=L][&min_batch=&max_batch=]
//       [&min_time=&max_time=][&max_datapoints=M][&after=ID][&follow=1&timeout=S]
//                                                  SeriesData: points of those series
//   GET /api/v1/experiments/{id}/series/data?name=N[&label=L][&max_datapoints=M]
//                                                  ExperimentSeriesData: N for every trial
//
// A series is (name, label): the training and validation metrics are "training/<metric>" and
// "validation/<metric>" (wire::MetricSeries) with an empty label; the profiler's system metrics
// are named as Determined's (cpu_util_simple, gpu_util, ...) and labelled with the agent (and
// "<agent>/<GPU UUID>" for a GPU's). Points travel as [batch, time, value] arrays. Downsampled
// answers keep, per bucket of batches, the first, last, lowest and highest points.
// Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

struct SeriesSummary {
  std::string name;
  std::string label;
  int64_t points = 0;
  int64_t first_batch = 0;
  int64_t last_batch = 0;
  double last_time = 0;   // unix seconds of the newest point
  double last_value = 0;  // the value at last_batch
  double min_value = 0, max_value = 0, mean_value = 0;
};

struct SeriesList {
  std::vector<SeriesSummary> series;
  Json ToJson() const;
};
absl::StatusOr<SeriesList> ParseSeriesList(const Json& json);

struct SeriesPoint {
  int64_t batch = 0;
  double time = 0;
  double value = 0;
};

struct SeriesPoints {
  std::string name;
  std::string label;
  std::vector<SeriesPoint> points;  // by batch
};

struct SeriesData {
  std::vector<SeriesPoints> series;
  // The newest point returned (or the request's `after`): ask again with ?after=ID to follow.
  int64_t last_id = 0;
  Json ToJson() const;
};
absl::StatusOr<SeriesData> ParseSeriesData(const Json& json);

struct TrialSeries {
  int64_t trial_id = 0;
  std::vector<SeriesPoint> points;
};

struct ExperimentSeriesData {
  std::string name;
  std::string label;
  std::vector<TrialSeries> trials;  // by trial id
  Json ToJson() const;
};
absl::StatusOr<ExperimentSeriesData> ParseExperimentSeriesData(const Json& json);

}  // namespace cohort::wire
