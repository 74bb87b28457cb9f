#include "master/webhooks/webhooks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/webhooks/deliverer.h"
#include "master/webhooks/signing.h"
#include "master/webhooks/target.h"
#include "nlohmann/json.hpp"
#include "wire/states.h"

namespace cohort::master::webhooks {
namespace {

using Json = nlohmann::json;

constexpr char kStateChange[] = "EXPERIMENT_STATE_CHANGE";
constexpr int kMaxListedDeliveries = 1000;

absl::Status AdminsOnly(bool admin) {
  if (admin) return absl::OkStatus();
  return absl::PermissionDeniedError("webhooks are for admins: ask an admin to set one up");
}

absl::Status CheckTrigger(const wire::WebhookTrigger& t, size_t i) {
  const std::string where = absl::StrCat("triggers[", i, "]");
  if (t.trigger_type != kStateChange) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".trigger_type: '", t.trigger_type, "' is not supported (",
                     kStateChange, " is; metric thresholds and log patterns are planned)"));
  }
  if (!t.condition.contains("state") || !t.condition["state"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".condition: needs \"state\", an experiment state such as COMPLETED or ERROR"));
  }
  const std::string state = t.condition["state"].get<std::string>();
  if (!wire::ParseExperimentState(state).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".condition.state: '", state,
        "' is not an experiment state (ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR, DELETING)"));
  }
  return absl::OkStatus();
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
  Known known{std::move(row), {}};
  for (const wire::WebhookTrigger& t : Triggers(known.row.triggers_json)) {
    if (t.trigger_type == kStateChange && t.condition.value("state", Json()).is_string()) {
      known.states.insert(t.condition["state"].get<std::string>());
    }
  }
  return known;
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

absl::Status Webhooks::OnExperimentState(const Event& event) {
  std::vector<DeliveryRow> rows;
  {
    MutexLock lock(&mu_);
    for (const Known& k : webhooks_) {
      if (k.states.count(event.experiment_state) == 0) continue;
      const WebhookRow& w = k.row;
      rows.push_back({.webhook_id = w.id,
                      .event = event.type,
                      .body = Body(w.type, w.template_text, event),
                      .next_attempt_ms = event.time_ms,
                      .created_ms = event.time_ms});
    }
  }
  return Queue(std::move(rows));
}

absl::Status Webhooks::Queue(std::vector<DeliveryRow> rows) {
  if (rows.empty()) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(db_.InsertDeliveries(rows));
  deliverer_->Wake();
  return absl::OkStatus();
}

}  // namespace cohort::master::webhooks
