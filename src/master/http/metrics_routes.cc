// GET /metrics: the master in Prometheus text format (docs/observability.md#prometheus). The
// cluster's gauges are read from the Master when scraped (Master::Stats); the request counts
// and latencies are what the Router recorded (RequestMetrics).
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "master/db/database.h"
#include "master/http/routes.h"
#include "prometheus/check_names.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "wire/states.h"

namespace cohort::master::http {
namespace {

// Prometheus's text exposition format, version 0.0.4.
constexpr char kTextFormat[] = "text/plain; version=0.0.4; charset=utf-8";

prometheus::Family<prometheus::Gauge>& Gauges(prometheus::Registry& registry, const char* name,
                                              const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

void AddAgentGauges(const ClusterStats& stats, prometheus::Registry& registry) {
  Gauges(registry, "cohort_agents_connected", "Agents connected to the master")
      .Add({})
      .Set(static_cast<double>(stats.agents.size()));
  auto& slots = Gauges(registry, "cohort_agent_slots", "Slots a connected agent has");
  auto& used = Gauges(registry, "cohort_agent_slots_used",
                      "Slots of a connected agent held by running trials");
  auto& enabled = Gauges(registry, "cohort_agent_enabled",
                         "1 when a connected agent takes new trials, 0 when it is disabled");
  for (const ClusterStats::AgentSlots& agent : stats.agents) {
    slots.Add({{"agent", agent.id}}).Set(agent.slots);
    used.Add({{"agent", agent.id}}).Set(agent.used);
    enabled.Add({{"agent", agent.id}}).Set(agent.enabled ? 1 : 0);
  }
}

void AddTrialGauges(const ClusterStats& stats, prometheus::Registry& registry) {
  auto& trials = Gauges(registry, "cohort_trials", "Trials in the database, by state");
  for (const auto& [state, count] : stats.trials) {
    trials.Add({{"state", wire::Name(state)}}).Set(static_cast<double>(count));
  }
  Gauges(registry, "cohort_queue_length", "Trials queued for slots (state QUEUED)")
      .Add({})
      .Set(static_cast<double>(stats.queued));
  Gauges(registry, "cohort_queue_longest_wait_seconds",
         "How long the longest-waiting queued trial has waited (0 when none is queued)")
      .Add({})
      .Set(absl::ToDoubleSeconds(stats.longest_queued_wait));
}

// What the database's backend reports about itself (Database::BackendMetrics), each as
// cohort_database_NAME (SQLite: cohort_database_wal_checkpoints_total). An entry Prometheus
// would refuse (a bad name or label, or another kind than an earlier entry of its name) is left
// out rather than failing the scrape.
void AddBackendMetrics(const std::vector<BackendMetric>& metrics, prometheus::Registry& registry) {
  std::map<std::string, BackendMetric::Kind> kinds;
  for (const BackendMetric& metric : metrics) {
    const std::string name = "cohort_database_" + metric.name;
    if (!prometheus::CheckMetricName(name)) continue;
    std::map<std::string, std::string> labels;
    bool labels_ok = true;
    for (const auto& [label, value] : metric.labels) {
      labels_ok = labels_ok && prometheus::CheckLabelName(label);
      labels[label] = value;
    }
    if (!labels_ok) continue;
    if (kinds.emplace(name, metric.kind).first->second != metric.kind) continue;
    if (metric.kind == BackendMetric::Kind::kCounter) {
      prometheus::BuildCounter()
          .Name(name)
          .Help(metric.help)
          .Register(registry)
          .Add(labels)
          .Increment(metric.value);
    } else {
      Gauges(registry, name.c_str(), metric.help.c_str()).Add(labels).Set(metric.value);
    }
  }
}

void AddStorageMetrics(const ClusterStats& stats, prometheus::Registry& registry) {
  Gauges(registry, "cohort_database_size_bytes", "Size of the master's database")
      .Add({})
      .Set(static_cast<double>(stats.database_bytes));
  AddBackendMetrics(stats.database_metrics, registry);
  prometheus::BuildCounter()
      .Name("cohort_log_lines_stored_total")
      .Help("Trial log lines from agents the master stored since it started")
      .Register(registry)
      .Add({})
      .Increment(static_cast<double>(stats.log_lines_stored));
  prometheus::BuildCounter()
      .Name("cohort_log_lines_dropped_total")
      .Help(
          "Trial log lines the master's log retention dropped since it started "
          "(--log-retention-lines-per-trial, --log-retention-total-bytes)")
      .Register(registry)
      .Add({})
      .Increment(static_cast<double>(stats.log_lines_dropped));
  prometheus::BuildCounter()
      .Name("cohort_metric_reports_stored_total")
      .Help(
          "Training and validation metric reports (one step each) the master stored since it "
          "started")
      .Register(registry)
      .Add({})
      .Increment(static_cast<double>(stats.metric_reports_stored));
}

void AddSchedulingMetrics(const ClusterStats& stats, prometheus::Registry& registry) {
  prometheus::BuildCounter()
      .Name("cohort_scheduling_passes_total")
      .Help("Scheduling passes the master made since it started")
      .Register(registry)
      .Add({})
      .Increment(static_cast<double>(stats.scheduling.passes));
  prometheus::BuildCounter()
      .Name("cohort_scheduling_seconds_total")
      .Help("Time the master spent in scheduling passes since it started")
      .Register(registry)
      .Add({})
      .Increment(stats.scheduling.total_seconds);
  auto& pass = Gauges(registry, "cohort_scheduling_pass_seconds",
                      "Scheduling pass time over the last 1000 passes, by quantile (1: the max)");
  pass.Add({{"quantile", "0.5"}}).Set(stats.scheduling.p50_seconds);
  pass.Add({{"quantile", "0.99"}}).Set(stats.scheduling.p99_seconds);
  pass.Add({{"quantile", "1"}}).Set(stats.scheduling.max_seconds);
  auto& lock =
      Gauges(registry, "cohort_scheduling_pass_lock_seconds",
             "The longest time a scheduling pass held the master's state lock at once "
             "(requests wait for it), over the last 1000 passes, by quantile (1: the max)");
  lock.Add({{"quantile", "0.5"}}).Set(stats.scheduling_lock.p50_seconds);
  lock.Add({{"quantile", "0.99"}}).Set(stats.scheduling_lock.p99_seconds);
  lock.Add({{"quantile", "1"}}).Set(stats.scheduling_lock.max_seconds);
}

// The exposition text of `stats` and the requests counted so far.
std::string MetricsText(const ClusterStats& stats, const RequestMetrics& requests) {
  // A registry per scrape: the gauges describe this moment, and agents that left disappear.
  prometheus::Registry registry;
  AddAgentGauges(stats, registry);
  AddTrialGauges(stats, registry);
  AddStorageMetrics(stats, registry);
  AddSchedulingMetrics(stats, registry);
  std::vector<prometheus::MetricFamily> families = registry.Collect();
  for (prometheus::MetricFamily& family : requests.Collect()) {
    families.push_back(std::move(family));
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  return text.str();
}

}  // namespace

void AddMetricsRoutes(Router& router, Master& master) {
  router.Get(
      "/metrics",
      [&master, requests = router.request_metrics()](const Request&) -> absl::StatusOr<Reply> {
        COHORT_ASSIGN_OR_RETURN(ClusterStats stats, master.Stats());
        return Reply::Bytes(MetricsText(stats, *requests), kTextFormat);
      },
      {.require = Require::kUser});
}

}  // namespace cohort::master::http
