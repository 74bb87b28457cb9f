#pragma once
// webhooks::Webhooks: webhooks and their durable delivery queue (docs/design/0023). It owns
// the rules (admins create, list, test and delete webhooks; a URL is http(s); a trigger is a
// known type with a known state; a template names known fields), a copy of the webhooks in
// memory (so that an event no webhook wants costs no database round trip), the queue's rows
// (through the Database) and the deliverer thread (deliverer.h) that sends them.
//
// Triggers (Determined's): EXPERIMENT_STATE_CHANGE {"state"}, METRIC_THRESHOLD_EXCEEDED
// {"metricName", "metricValue", "condition": ABOVE|BELOW} on a trial's validation metrics, and
// TASK_LOG {"regex"} on a trial's output lines; the last two fire once per trial and trigger.
//
// An event becomes one delivery row per matching webhook, stored before the master goes on (an
// experiment's state change in the state's own transaction: both or neither): from then on it
// survives a restart of the master, and the deliverer sends it at least once (receivers dedupe
// on X-Cohort-Delivery).
//
// Thread-safe: its lock (mu_) guards the copy of the webhooks only and is never held across a
// database call or a send; it may be called under the master's lock (OnExperimentState is).
//
// Example:
//   webhooks::Webhooks hooks(db, clock, {});
//   COHORT_RETURN_IF_ERROR(hooks.Load());
//   hooks.Start();                               // the deliverer
//   db.SetExperimentState(id, state, hooks.StateDeliveries({...}));  // the master
//   hooks.Queued();
//   hooks.Stop();                                // in seconds, an attempt in flight aborted

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/db/database.h"
#include "master/webhooks/message.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "wire/webhook_bodies.h"

namespace cohort::master::webhooks {

class Deliverer;

// How deliveries are retried (docs/design/0023: doubling from 1 s to 10 min, for 24 h, each
// attempt at most 10 s).
struct DeliveryPolicy {
  absl::Duration first_retry = absl::Seconds(1);
  absl::Duration max_retry = absl::Minutes(10);
  absl::Duration give_up_after = absl::Hours(24);
  absl::Duration attempt_timeout = absl::Seconds(10);
  absl::Duration poll = absl::Milliseconds(500);  // how often the queue is read when idle
};

class Webhooks {
 public:
  Webhooks(Database& db, const Clock& clock, DeliveryPolicy policy = {});
  ~Webhooks();  // Stop()

  // Reads the webhooks into memory (at the master's start).
  absl::Status Load();
  void Start();  // the deliverer thread
  void Stop();   // joins it; an attempt in flight is aborted

  // `admin`: whether the caller is an admin (PermissionDenied otherwise). Create returns the
  // webhook with its secret, the only time it is shown. InvalidArgument naming the field.
  absl::StatusOr<wire::Webhook> Create(bool admin, const std::string& user,
                                       const wire::NewWebhook& webhook);
  absl::StatusOr<wire::WebhookList> List(bool admin);
  absl::Status Delete(bool admin, int64_t id);  // NotFound
  // Queues a TEST delivery to webhook `id` and returns it.
  absl::StatusOr<wire::Delivery> Test(bool admin, int64_t id);
  absl::StatusOr<wire::DeliveryList> Deliveries(bool admin, int64_t id, int limit);

  // The deliveries of an experiment's state change: one to each webhook whose
  // EXPERIMENT_STATE_CHANGE trigger names `event.experiment_state` (none: no webhook wants it).
  // The master stores them with the state, in its transaction (Database::SetExperimentState),
  // then calls Queued() so that the deliverer looks at once.
  std::vector<DeliveryRow> StateDeliveries(const Event& event) ABSL_LOCKS_EXCLUDED(mu_);
  void Queued();
  // StateDeliveries queued in a transaction of their own (for a caller without one).
  absl::Status OnExperimentState(const Event& event) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether any webhook has a TASK_LOG (METRIC_THRESHOLD_EXCEEDED) trigger: without one, the
  // master skips OnTrialLogs (OnValidation) and the event it would build, on every batch it
  // stores. Lock-free.
  bool WatchesLogs() const { return watches_logs_.load(std::memory_order_relaxed); }
  bool WatchesMetrics() const { return watches_metrics_.load(std::memory_order_relaxed); }
  // A trial's validation metrics were stored: for each METRIC_THRESHOLD_EXCEEDED trigger whose
  // metric is among them and beyond its threshold (ABOVE: greater; BELOW: less), a delivery,
  // once per trial and trigger (also across restarts: the row's once_key). `experiment`: the
  // experiment's fields of the event.
  absl::Status OnValidation(const Event& experiment, int64_t trial_id,
                            const nlohmann::json& metrics) ABSL_LOCKS_EXCLUDED(mu_);
  // Lines of a trial's output were stored: for each TASK_LOG trigger whose regex matches one
  // (anywhere in it), a delivery naming the first such line, once per trial and trigger.
  absl::Status OnTrialLogs(const Event& experiment, int64_t trial_id,
                           const std::vector<absl::string_view>& lines) ABSL_LOCKS_EXCLUDED(mu_);
  // The trials are gone (their experiment was deleted): what was remembered of their firings
  // is dropped.
  void ForgetTrials(const std::vector<int64_t>& trials) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::StatusOr<WebhookRow> Find(int64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Queue(std::vector<DeliveryRow> rows);
  // Queue, forgetting the rows' once_keys in fired_[trial_id] when they could not be queued.
  absl::Status QueueOnce(int64_t trial_id, std::vector<DeliveryRow> rows) ABSL_LOCKS_EXCLUDED(mu_);
  static DeliveryRow RowFor(const WebhookRow& w, const Event& event, std::string once_key);

  Database& db_;
  const Clock& clock_;
  const DeliveryPolicy policy_;
  Mutex mu_;
  // A webhook's triggers, read from its row once: the experiment states they name, the metric
  // thresholds and the log patterns (`index`: the trigger's place in the row's list).
  struct MetricTrigger {
    size_t index = 0;
    std::string name;
    double threshold = 0;
    bool above = true;
  };
  struct LogTrigger {
    size_t index = 0;
    std::shared_ptr<const RE2> regex;
  };
  struct Known {
    WebhookRow row;
    std::set<std::string> states;
    std::vector<MetricTrigger> metrics;
    std::vector<LogTrigger> logs;
  };
  static Known KnownOf(WebhookRow row);
  std::vector<Known> webhooks_ ABSL_GUARDED_BY(mu_);
  // Per trial, (webhook, once_key) queued by this master: a trigger that fired for a trial is
  // not matched again (the database refuses a second one anyway). One small entry per firing,
  // dropped with the trial (ForgetTrials) or the webhook (Delete).
  std::map<int64_t, std::set<std::pair<int64_t, std::string>>> fired_ ABSL_GUARDED_BY(mu_);
  // What webhooks_ holds, kept by RecountLocked whenever it changes.
  void RecountLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::atomic<bool> watches_logs_{false};
  std::atomic<bool> watches_metrics_{false};
  std::unique_ptr<Deliverer> deliverer_;
};

}  // namespace cohort::master::webhooks
