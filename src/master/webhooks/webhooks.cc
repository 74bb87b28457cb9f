#include "master/webhooks/webhooks.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/webhooks/deliverer.h"
#include "master/webhooks/signing.h"
#include "master/webhooks/target.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "wire/states.h"

namespace cohort::master::webhooks {
namespace {

using Json = nlohmann::json;

constexpr char kStateChange[] = "EXPERIMENT_STATE_CHANGE";
constexpr char kMetricThreshold[] = "METRIC_THRESHOLD_EXCEEDED";
constexpr char kTaskLog[] = "TASK_LOG";
constexpr int kMaxListedDeliveries = 1000;
constexpr size_t kMaxRegexBytes = 4096;
constexpr size_t kMaxMetricNameBytes = 255;

absl::Status AdminsOnly(bool admin) {
  if (admin) return absl::OkStatus();
  return absl::PermissionDeniedError("webhooks are for admins: ask an admin to set one up");
}

absl::Status CheckStateCondition(const Json& c, const std::string& where) {
  if (!c.contains("state") || !c["state"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".condition: needs \"state\", an experiment state such as COMPLETED or ERROR"));
  }
  const std::string state = c["state"].get<std::string>();
  if (!wire::ParseExperimentState(state).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".condition.state: '", state,
        "' is not an experiment state (ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR, DELETING)"));
  }
  return absl::OkStatus();
}

// Determined's {"metricName", "metricValue"}, with "condition" ABOVE (its default: exceeded)
// or BELOW (a loss under a target).
absl::Status CheckMetricCondition(const Json& c, const std::string& where) {
  const Json name = c.value("metricName", Json());
  if (!name.is_string() || name.get<std::string>().empty() ||
      name.get<std::string>().size() > kMaxMetricNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        ".condition.metricName: needs the name of a validation metric the trial reports "
        "(1 to 255 bytes)"));
  }
  const Json value = c.value("metricValue", Json());
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".condition.metricValue: needs a finite number, the threshold"));
  }
  const Json condition = c.value("condition", Json("ABOVE"));
  if (condition != "ABOVE" && condition != "BELOW") {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".condition.condition: must be ABOVE or BELOW, got ", condition.dump()));
  }
  return absl::OkStatus();
}

// Determined's {"regex"}: RE2 (Go's syntax), matched anywhere in a line; compiled once, both to
// check it and to keep it.
absl::StatusOr<std::shared_ptr<const RE2>> CompileLogCondition(const Json& c,
                                                               const std::string& where) {
  const Json regex = c.value("regex", Json());
  if (!regex.is_string() || regex.get<std::string>().empty() ||
      regex.get<std::string>().size() > kMaxRegexBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".condition.regex: needs a regular expression (RE2, 1 to 4096 bytes)"));
  }
  auto compiled = std::make_shared<const RE2>(regex.get<std::string>(), RE2::Quiet);
  if (!compiled->ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".condition.regex: ", compiled->error()));
  }
  return compiled;
}

absl::Status CheckTrigger(const wire::WebhookTrigger& t, size_t i) {
  const std::string where = absl::StrCat("triggers[", i, "]");
  if (t.trigger_type == kStateChange) return CheckStateCondition(t.condition, where);
  if (t.trigger_type == kMetricThreshold) return CheckMetricCondition(t.condition, where);
  if (t.trigger_type == kTaskLog) return CompileLogCondition(t.condition, where).status();
  return absl::InvalidArgumentError(absl::StrCat(where, ".trigger_type: '", t.trigger_type,
                                                 "' is not one of ", kStateChange, ", ",
                                                 kMetricThreshold, ", ", kTaskLog));
}

absl::Status CheckNew(const wire::NewWebhook& w) {
  COHORT_RETURN_IF_ERROR(CheckUrl(w.url));
  if (w.webhook_type != "DEFAULT" && w.webhook_type != "SLACK") {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook_type: must be DEFAULT or SLACK, got '", w.webhook_type, "'"));
  }
  if (w.triggers.empty()) {
    return absl::InvalidArgumentError("triggers: give at least one (e.g. --trigger COMPLETED)");
  }
  for (size_t i = 0; i < w.triggers.size(); ++i) {
    COHORT_RETURN_IF_ERROR(CheckTrigger(w.triggers[i], i));
  }
  return CheckTemplate(w.message_template);
}

std::vector<wire::WebhookTrigger> Triggers(const std::string& json) {
  std::vector<wire::WebhookTrigger> out;
  Json list = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return out;
  for (const Json& t : list) {
    if (t.is_object() && t.value("trigger_type", Json()).is_string()) {
      out.push_back({t["trigger_type"].get<std::string>(), t.value("condition", Json::object())});
    }
  }
  return out;
}

wire::Webhook ToWire(const WebhookRow& row) {
  return wire::Webhook{row.id,
                       row.url,
                       row.type,
                       Triggers(row.triggers_json),
                       row.template_text,
                       row.allow_local,
                       row.created_by,
                       row.created_ms,
                       ""};
}

wire::Delivery ToWire(const DeliveryRow& d) {
  return wire::Delivery{d.id,         d.webhook_id, d.event,           d.state,      d.attempts,
                        d.last_error, d.created_ms, d.next_attempt_ms, d.finished_ms};
}

}  // namespace

Webhooks::Known Webhooks::KnownOf(WebhookRow row) {
  Known known{std::move(row), {}, {}, {}};
  const std::vector<wire::WebhookTrigger> triggers = Triggers(known.row.triggers_json);
  for (size_t i = 0; i < triggers.size(); ++i) {
    const wire::WebhookTrigger& t = triggers[i];
    // Each was checked at creation; a row that no longer reads so is skipped, not trusted.
    if (t.trigger_type == kTaskLog) {
      absl::StatusOr<std::shared_ptr<const RE2>> regex =
          CompileLogCondition(t.condition, absl::StrCat("triggers[", i, "]"));
      if (regex.ok()) known.logs.push_back({i, *std::move(regex)});
      continue;
    }
    if (!CheckTrigger(t, i).ok()) continue;
    if (t.trigger_type == kStateChange) {
      known.states.insert(t.condition["state"].get<std::string>());
    } else if (t.trigger_type == kMetricThreshold) {
      known.metrics.push_back({i, t.condition["metricName"].get<std::string>(),
                               t.condition["metricValue"].get<double>(),
                               t.condition.value("condition", "ABOVE") == "ABOVE"});
    }
  }
  return known;
}

void Webhooks::RecountLocked() {
  bool logs = false, metrics = false;
  for (const Known& k : webhooks_) {
    logs |= !k.logs.empty();
    metrics |= !k.metrics.empty();
  }
  watches_logs_.store(logs);
  watches_metrics_.store(metrics);
}

Webhooks::Webhooks(Database& db, const Clock& clock, DeliveryPolicy policy)
    : db_(db), clock_(clock), policy_(policy) {
  deliverer_ =
      std::make_unique<Deliverer>(db_, clock_, policy_, [this](int64_t id) { return Find(id); });
}

Webhooks::~Webhooks() { Stop(); }

absl::Status Webhooks::Load() {
  COHORT_ASSIGN_OR_RETURN(std::vector<WebhookRow> rows, db_.ListWebhooks());
  std::vector<Known> known;
  for (WebhookRow& row : rows) known.push_back(KnownOf(std::move(row)));
  MutexLock lock(&mu_);
  webhooks_ = std::move(known);
  RecountLocked();
  return absl::OkStatus();
}

void Webhooks::Start() { deliverer_->Start(); }
void Webhooks::Stop() { deliverer_->Stop(); }

absl::StatusOr<wire::Webhook> Webhooks::Create(bool admin, const std::string& user,
                                               const wire::NewWebhook& webhook) {
  COHORT_RETURN_IF_ERROR(AdminsOnly(admin));
  COHORT_RETURN_IF_ERROR(CheckNew(webhook));
  Json triggers = Json::array();
  for (const wire::WebhookTrigger& t : webhook.triggers) triggers.push_back(t.ToJson());
  WebhookRow row{0,
                 webhook.url,
                 webhook.webhook_type,
                 triggers.dump(),
                 webhook.message_template,
                 NewSecret(),
                 webhook.allow_local,
                 user,
                 absl::ToUnixMillis(clock_.Now())};
  COHORT_ASSIGN_OR_RETURN(row.id, db_.InsertWebhook(row));
  {
    MutexLock lock(&mu_);
    webhooks_.push_back(KnownOf(row));
    RecountLocked();
  }
  wire::Webhook created = ToWire(row);
  created.secret = row.secret;
  return created;
}

absl::StatusOr<wire::WebhookList> Webhooks::List(bool admin) {
  COHORT_RETURN_IF_ERROR(AdminsOnly(admin));
  wire::WebhookList list;
  MutexLock lock(&mu_);
  for (const Known& w : webhooks_) list.webhooks.push_back(ToWire(w.row));
  return list;
}

absl::Status Webhooks::Delete(bool admin, int64_t id) {
  COHORT_RETURN_IF_ERROR(AdminsOnly(admin));
  absl::Status deleted = db_.DeleteWebhook(id);
  if (absl::IsNotFound(deleted)) {
    return absl::NotFoundError(absl::StrCat("no webhook ", id, " (`cohort webhook list`)"));
  }
  COHORT_RETURN_IF_ERROR(deleted);
  MutexLock lock(&mu_);
  webhooks_.erase(std::remove_if(webhooks_.begin(), webhooks_.end(),
                                 [&](const Known& w) { return w.row.id == id; }),
                  webhooks_.end());
  for (auto it = fired_.begin(); it != fired_.end();) {
    auto& keys = it->second;
    keys.erase(keys.lower_bound({id, ""}), keys.lower_bound({id + 1, ""}));
    it = keys.empty() ? fired_.erase(it) : std::next(it);
  }
  RecountLocked();
  return absl::OkStatus();
}

absl::StatusOr<WebhookRow> Webhooks::Find(int64_t id) {
  MutexLock lock(&mu_);
  for (const Known& w : webhooks_) {
    if (w.row.id == id) return w.row;
  }
  return absl::NotFoundError(absl::StrCat("no webhook ", id, " (`cohort webhook list`)"));
}

absl::StatusOr<wire::Delivery> Webhooks::Test(bool admin, int64_t id) {
  COHORT_RETURN_IF_ERROR(AdminsOnly(admin));
  COHORT_ASSIGN_OR_RETURN(WebhookRow w, Find(id));
  const int64_t now = absl::ToUnixMillis(clock_.Now());
  Event event{"TEST", 0, "a test of webhook " + std::to_string(id), "COMPLETED", "", now};
  DeliveryRow row{.webhook_id = id,
                  .event = "TEST",
                  .body = Body(w.type, w.template_text, event),
                  .next_attempt_ms = now,
                  .created_ms = now};
  COHORT_RETURN_IF_ERROR(Queue({row}));
  // The row's id is the database's: the newest of this webhook's deliveries.
  COHORT_ASSIGN_OR_RETURN(std::vector<DeliveryRow> latest, db_.ListDeliveries(id, 1));
  if (latest.empty()) return absl::NotFoundError(absl::StrCat("webhook ", id, " was deleted"));
  return ToWire(latest[0]);
}

absl::StatusOr<wire::DeliveryList> Webhooks::Deliveries(bool admin, int64_t id, int limit) {
  COHORT_RETURN_IF_ERROR(AdminsOnly(admin));
  COHORT_RETURN_IF_ERROR(Find(id).status());
  COHORT_ASSIGN_OR_RETURN(std::vector<DeliveryRow> rows,
                          db_.ListDeliveries(id, std::clamp(limit, 1, kMaxListedDeliveries)));
  wire::DeliveryList list;
  for (const DeliveryRow& d : rows) list.deliveries.push_back(ToWire(d));
  return list;
}

DeliveryRow Webhooks::RowFor(const WebhookRow& w, const Event& event, std::string once_key) {
  return {.webhook_id = w.id,
          .event = event.type,
          .body = Body(w.type, w.template_text, event),
          .next_attempt_ms = event.time_ms,
          .created_ms = event.time_ms,
          .once_key = std::move(once_key)};
}

std::vector<DeliveryRow> Webhooks::StateDeliveries(const Event& event) {
  std::vector<DeliveryRow> rows;
  MutexLock lock(&mu_);
  for (const Known& k : webhooks_) {
    if (k.states.count(event.experiment_state) > 0) rows.push_back(RowFor(k.row, event, ""));
  }
  return rows;
}

void Webhooks::Queued() { deliverer_->Wake(); }

absl::Status Webhooks::OnExperimentState(const Event& event) {
  return Queue(StateDeliveries(event));
}

absl::Status Webhooks::OnValidation(const Event& experiment, int64_t trial_id,
                                    const nlohmann::json& metrics) {
  if (!metrics.is_object()) return absl::OkStatus();
  std::vector<DeliveryRow> rows;
  {
    MutexLock lock(&mu_);
    for (const Known& k : webhooks_) {
      for (const MetricTrigger& t : k.metrics) {
        const auto it = metrics.find(t.name);
        if (it == metrics.end() || !it->is_number()) continue;
        const double v = it->get<double>();
        if (!(t.above ? v > t.threshold : v < t.threshold)) continue;  // NaN: neither
        std::string key = absl::StrCat(kMetricThreshold, ":", trial_id, ":", t.index);
        if (!fired_[trial_id].insert({k.row.id, key}).second) continue;
        Event e = experiment;
        e.type = kMetricThreshold;
        e.trial_id = trial_id;
        e.metric_name = t.name;
        e.metric_value = v;
        e.condition = t.above ? "ABOVE" : "BELOW";
        e.threshold = t.threshold;
        rows.push_back(RowFor(k.row, e, std::move(key)));
      }
    }
  }
  return QueueOnce(trial_id, std::move(rows));
}

absl::Status Webhooks::OnTrialLogs(const Event& experiment, int64_t trial_id,
                                   const std::vector<absl::string_view>& lines) {
  std::vector<DeliveryRow> rows;
  {
    // RE2 matches in linear time; a batch is at most the agent's (a few thousand lines).
    MutexLock lock(&mu_);
    for (const Known& k : webhooks_) {
      for (const LogTrigger& t : k.logs) {
        std::string key = absl::StrCat(kTaskLog, ":", trial_id, ":", t.index);
        const auto fired = fired_.find(trial_id);
        if (fired != fired_.end() && fired->second.count({k.row.id, key}) > 0) continue;
        const auto hit = std::find_if(lines.begin(), lines.end(), [&](absl::string_view line) {
          return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *t.regex);
        });
        if (hit == lines.end()) continue;
        fired_[trial_id].insert({k.row.id, key});
        Event e = experiment;
        e.type = kTaskLog;
        e.trial_id = trial_id;
        e.log_line = std::string(hit->substr(0, kMaxLogLineBytes));
        e.log_regex = t.regex->pattern();
        rows.push_back(RowFor(k.row, e, std::move(key)));
      }
    }
  }
  return QueueOnce(trial_id, std::move(rows));
}

absl::Status Webhooks::QueueOnce(int64_t trial_id, std::vector<DeliveryRow> rows) {
  std::vector<std::pair<int64_t, std::string>> keys;
  for (const DeliveryRow& r : rows) keys.emplace_back(r.webhook_id, r.once_key);
  absl::Status queued = Queue(std::move(rows));
  if (!queued.ok()) {  // not queued: a later match may try again
    MutexLock lock(&mu_);
    auto fired = fired_.find(trial_id);
    if (fired != fired_.end()) {
      for (const auto& key : keys) fired->second.erase(key);
      if (fired->second.empty()) fired_.erase(fired);
    }
  }
  return queued;
}

void Webhooks::ForgetTrials(const std::vector<int64_t>& trials) {
  MutexLock lock(&mu_);
  for (int64_t trial : trials) fired_.erase(trial);
}

absl::Status Webhooks::Queue(std::vector<DeliveryRow> rows) {
  if (rows.empty()) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(db_.InsertDeliveries(rows));
  deliverer_->Wake();
  return absl::OkStatus();
}

}  // namespace cohort::master::webhooks
