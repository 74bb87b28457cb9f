#include "master/http/request_metrics.h"

#include <set>
#include <string>
#include <utility>

namespace cohort::master::http {

const std::vector<double>& RequestDurationBuckets() {
  static const auto* buckets =
      new std::vector<double>{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, 60};
  return *buckets;
}

void RouteTimer::Record(int code, double seconds) const {
  metrics_->Count(method_, route_, code);
  duration_->Observe(seconds);
}

RequestMetrics::RequestMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("cohort_http_requests_total")
                    .Help("HTTP requests the master answered, by method, route pattern and "
                          "status code")
                    .Register(*registry_)),
      durations_(prometheus::BuildHistogram()
                     .Name("cohort_http_request_duration_seconds")
                     .Help("Time the master took to answer a request of a route, from its "
                           "routing to its answer (long polls included)")
                     .Register(*registry_)) {}

RouteTimer RequestMetrics::ForRoute(const std::string& method, const std::string& pattern) {
  prometheus::Histogram& duration =
      durations_.Add({{"method", method}, {"route", pattern}}, RequestDurationBuckets());
  return RouteTimer(this, method, pattern, &duration);
}

void RequestMetrics::RecordUnmatched(const std::string& method, int code) {
  // Anyone may send any method name to an unknown path: only the standard ones become labels.
  static const auto* known =
      new std::set<std::string>{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
  Count(known->count(method) ? method : "other", kUnmatchedRoute, code);
}

void RequestMetrics::Count(const std::string& method, const std::string& route, int code) {
  requests_.Add({{"method", method}, {"route", route}, {"code", std::to_string(code)}}).Increment();
}

void RequestMetrics::WatchGate(std::shared_ptr<const AdmissionGate> gate) {
  gate_ = std::move(gate);
  waiting_ = &prometheus::BuildGauge()
                  .Name("cohort_http_requests_waiting")
                  .Help("Requests waiting for one of the master's handler slots "
                        "(cohort-master --concurrent-handlers)")
                  .Register(*registry_)
                  .Add({});
}

std::vector<prometheus::MetricFamily> RequestMetrics::Collect() const {
  if (gate_ != nullptr) waiting_->Set(static_cast<double>(gate_->waiting()));
  return registry_->Collect();
}

}  // namespace cohort::master::http
