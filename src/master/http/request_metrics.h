#pragma once
// RequestMetrics: what the Router counts about the requests it serves, for the master's
// GET /metrics (docs/observability.md#prometheus):
//
//   cohort_http_requests_total{method, route, code}          counter
//   cohort_http_request_duration_seconds{method, route}      histogram
//   cohort_http_requests_waiting                              gauge (with an AdmissionGate:
//                                                             requests waiting for a handler)
//
// `route` is the pattern a route was registered with (e.g. "/api/v1/trials/(\d+)"), never the
// requested path, so the label takes as many values as there are routes; a request no route
// matched (a 404 for an unknown path, a request refused before routing) counts under
// route="unmatched" and is not timed. `code` is the HTTP status answered.
//
// Thread-safe: Record is called from every request thread at once. Its cost is one lock of the
// counter family (a map lookup by labels) and one of the route's histogram, well under a
// microsecond next to the request itself.
//
// Example:
//   auto metrics = std::make_shared<RequestMetrics>();
//   RouteTimer timer = metrics->ForRoute("GET", "/api/v1/trials/(\\d+)");
//   timer.Record(200, 0.004);
//   std::vector<prometheus::MetricFamily> families = metrics->Collect();

#include <memory>
#include <string>
#include <vector>

#include "master/http/admission_gate.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace cohort::master::http {

// The route label of requests that matched no route.
inline constexpr char kUnmatchedRoute[] = "unmatched";

// The histogram's bucket bounds in seconds: from a fast JSON answer (1 ms) to a long poll that
// waited its whole time (agents' action polls and log follows hold a request up to ~30 s).
const std::vector<double>& RequestDurationBuckets();

class RequestMetrics;

// The metrics of one registered route (one method and pattern), made once when the route is
// added so that serving it looks nothing up by pattern. Copyable; valid while its
// RequestMetrics lives.
class RouteTimer {
 public:
  // Counts a request of this route answered `code` after `seconds`.
  void Record(int code, double seconds) const;

 private:
  friend class RequestMetrics;
  RouteTimer(RequestMetrics* metrics, std::string method, std::string route,
             prometheus::Histogram* duration)
      : metrics_(metrics),
        method_(std::move(method)),
        route_(std::move(route)),
        duration_(duration) {}

  RequestMetrics* metrics_;
  std::string method_;
  std::string route_;
  prometheus::Histogram* duration_;
};

class RequestMetrics {
 public:
  RequestMetrics();
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  // The timer of the route `method` `pattern` (its histogram is created now, so a route shows
  // with zero requests from the start).
  RouteTimer ForRoute(const std::string& method, const std::string& pattern);
  // Counts a request no route answered (route="unmatched"; a method other than the standard
  // HTTP ones counts as "other"); not timed.
  void RecordUnmatched(const std::string& method, int code);
  // Reports how many requests wait at `gate` (read when collected).
  void WatchGate(std::shared_ptr<const AdmissionGate> gate);
  // Every family above, for a TextSerializer.
  std::vector<prometheus::MetricFamily> Collect() const;

 private:
  friend class RouteTimer;
  void Count(const std::string& method, const std::string& route, int code);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
  std::shared_ptr<const AdmissionGate> gate_;  // set before serving; null: no gauge
  prometheus::Gauge* waiting_ = nullptr;
};

}  // namespace cohort::master::http
