#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/http/routes.h"
#include "wire/system_metrics.h"

namespace cohort::master::http {
namespace {

constexpr size_t kMaxSeriesPerRequest = 16;
constexpr int64_t kMaxDatapoints = 100000;
constexpr int64_t kDefaultDatapoints = 1000;

// Query parameter `name` as a number of seconds since the epoch; absent: nullopt.
absl::StatusOr<std::optional<double>> QueryTime(const Request& req, const char* name) {
  if (!req.raw().has_param(name)) return std::nullopt;
  double value = 0;
  if (!absl::SimpleAtod(req.raw().get_param_value(name), &value) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter ", name, " must be unix seconds, got '",
                     req.raw().get_param_value(name).substr(0, 40), "'"));
  }
  return value;
}

absl::StatusOr<series::SeriesRequest> SeriesRequestOf(const Request& req) {
  series::SeriesRequest r;
  const size_t names = req.raw().get_param_value_count("name");
  if (names > kMaxSeriesPerRequest) {
    return absl::InvalidArgumentError(
        absl::StrCat("at most ", kMaxSeriesPerRequest, " series per request, got ", names));
  }
  for (size_t i = 0; i < names; ++i) {
    r.names.push_back(wire::CurrentSeriesName(req.raw().get_param_value("name", i)));
  }
  r.label = req.raw().get_param_value("label");
  COHORT_ASSIGN_OR_RETURN(r.min_batch, req.QueryInt("min_batch"));
  COHORT_ASSIGN_OR_RETURN(r.max_batch, req.QueryInt("max_batch"));
  COHORT_ASSIGN_OR_RETURN(r.min_time, QueryTime(req, "min_time"));
  COHORT_ASSIGN_OR_RETURN(r.max_time, QueryTime(req, "max_time"));
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> max_points, req.QueryInt("max_datapoints"));
  r.max_points = static_cast<int>(
      std::clamp<int64_t>(max_points.value_or(kDefaultDatapoints), 4, kMaxDatapoints));
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> after, req.QueryInt("after"));
  r.after = after.value_or(0);
  return r;
}

absl::StatusOr<Reply> TrialSeriesData(series::Series& series, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
  COHORT_ASSIGN_OR_RETURN(series::SeriesRequest request, SeriesRequestOf(req));
  const bool follow = req.raw().has_param("follow") && req.raw().get_param_value("follow") != "0";
  COHORT_ASSIGN_OR_RETURN(absl::Duration wait, req.QuerySeconds("timeout", 20, 60));
  COHORT_ASSIGN_OR_RETURN(
      wire::SeriesData data,
      series.TrialSeriesData(id, request, follow ? wait : absl::ZeroDuration()));
  return Reply::Ok(data.ToJson());
}

}  // namespace

void AddSeriesRoutes(Router& router, series::Series& series) {
  router.Get(R"(/api/v1/trials/(\d+)/series)", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(wire::SeriesList list, series.TrialSeries(id));
    return Reply::Ok(list.ToJson());
  });
  router.Get(R"(/api/v1/trials/(\d+)/series/data)",
             [&](const Request& req) { return TrialSeriesData(series, req); },
             {.waits = true});  // with ?follow
  router.Get(R"(/api/v1/trials/(\d+)/profile/timings)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
               COHORT_ASSIGN_OR_RETURN(wire::StepTimings timings, series.TrialStepTimings(id));
               return Reply::Ok(timings.ToJson());
             });
  router.Get(
      R"(/api/v1/trials/(\d+)/profile/steps)", [&](const Request& req) -> absl::StatusOr<Reply> {
        COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
        COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> rank, req.QueryInt("rank"));
        COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> points, req.QueryInt("max_points"));
        if (rank.value_or(0) < 0 || rank.value_or(0) > (1 << 20)) {
          return absl::InvalidArgumentError(
              absl::StrCat("query parameter rank must be in [0, 1048576], got ", *rank));
        }
        const int64_t max_points = std::clamp<int64_t>(
            points.value_or(series::kDefaultStepSeriesPoints), 1, series::kMaxStepSeriesPoints);
        COHORT_ASSIGN_OR_RETURN(wire::StepSeries steps,
                                series.TrialStepSeries(id, static_cast<int>(rank.value_or(0)),
                                                       static_cast<int>(max_points)));
        return Reply::Ok(steps.ToJson());
      });
  router.Get(R"(/api/v1/trials/(\d+)/trace)", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> min_batch, req.QueryInt("min_batch"));
    COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> max_batch, req.QueryInt("max_batch"));
    COHORT_ASSIGN_OR_RETURN(nlohmann::json trace, series.TrialTrace(id, min_batch, max_batch));
    return Reply::Ok(trace);
  });
  router.Get(R"(/api/v1/experiments/(\d+)/series/data)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
               COHORT_ASSIGN_OR_RETURN(series::SeriesRequest request, SeriesRequestOf(req));
               COHORT_ASSIGN_OR_RETURN(wire::ExperimentSeriesData data,
                                       series.ExperimentSeries(id, request));
               return Reply::Ok(data.ToJson());
             });
}

}  // namespace cohort::master::http
