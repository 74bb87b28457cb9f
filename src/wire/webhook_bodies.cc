#include "wire/webhook_bodies.h"

#include <utility>

#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxListed = 1 << 20;
constexpr size_t kMaxErrorBytes = 4096;

absl::StatusOr<WebhookTrigger> ParseTriggerAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  WebhookTrigger t;
  r.Required("trigger_type", &t.trigger_type, 64);
  r.Object("condition", &t.condition, FieldReader::kOptional);
  if (r.ok() && t.condition.dump().size() > 4096) r.Fail("condition", "is over 4096 bytes");
  COHORT_RETURN_IF_ERROR(r.status());
  return t;
}

void ReadCommon(FieldReader& r, std::string* url, std::string* type,
                std::vector<WebhookTrigger>* triggers, std::string* message_template,
                bool* allow_local) {
  r.Required("url", url, kMaxWebhookUrlBytes);
  r.Optional("webhook_type", type, 16);
  r.Array("triggers", triggers, kMaxTriggers, FieldReader::kRequired, ParseTriggerAt);
  r.Optional("template", message_template, kMaxWebhookTemplateBytes);
  r.Optional("allow_local", allow_local);
}

Json TriggersJson(const std::vector<WebhookTrigger>& triggers) {
  Json list = Json::array();
  for (const WebhookTrigger& t : triggers) list.push_back(t.ToJson());
  return list;
}

absl::StatusOr<Webhook> ParseWebhookAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  Webhook w;
  r.Required("id", &w.id, {.min = 1});
  ReadCommon(r, &w.url, &w.webhook_type, &w.triggers, &w.message_template, &w.allow_local);
  r.Optional("created_by", &w.created_by, kMaxSafeNameBytes);
  r.Required("created_ms", &w.created_ms, {.min = 0});
  r.Optional("secret", &w.secret, 256);
  COHORT_RETURN_IF_ERROR(r.status());
  return w;
}

absl::StatusOr<Delivery> ParseDeliveryAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  Delivery d;
  r.Required("id", &d.id, {.min = 1});
  r.Required("webhook_id", &d.webhook_id, {.min = 1});
  r.Required("event", &d.event, 64);
  r.Required("state", &d.state, 16);
  r.Required("attempts", &d.attempts, {.min = 0});
  r.Optional("last_error", &d.last_error, kMaxErrorBytes);
  r.Required("created_ms", &d.created_ms, {.min = 0});
  r.Optional("next_attempt_ms", &d.next_attempt_ms, {.min = 0});
  r.Optional("finished_ms", &d.finished_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return d;
}

}  // namespace

Json WebhookTrigger::ToJson() const {
  return {{"trigger_type", trigger_type}, {"condition", condition}};
}

Json Webhook::ToJson() const {
  Json json = {{"id", id},
               {"url", url},
               {"webhook_type", webhook_type},
               {"triggers", TriggersJson(triggers)},
               {"template", message_template},
               {"allow_local", allow_local},
               {"created_by", created_by},
               {"created_ms", created_ms}};
  if (!secret.empty()) json["secret"] = secret;
  return json;
}

absl::StatusOr<Webhook> ParseWebhook(const Json& json) { return ParseWebhookAt(json, "webhook"); }

Json WebhookList::ToJson() const {
  Json list = Json::array();
  for (const Webhook& w : webhooks) list.push_back(w.ToJson());
  return {{"webhooks", std::move(list)}};
}

absl::StatusOr<WebhookList> ParseWebhookList(const Json& json) {
  FieldReader r(json, "webhook list");
  WebhookList list;
  r.Array("webhooks", &list.webhooks, kMaxListed, FieldReader::kRequired, ParseWebhookAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return list;
}

Json NewWebhook::ToJson() const {
  return {{"url", url},
          {"webhook_type", webhook_type},
          {"triggers", TriggersJson(triggers)},
          {"template", message_template},
          {"allow_local", allow_local}};
}

absl::StatusOr<NewWebhook> ParseNewWebhook(const Json& json) {
  FieldReader r(json, "new webhook");
  NewWebhook w;
  ReadCommon(r, &w.url, &w.webhook_type, &w.triggers, &w.message_template, &w.allow_local);
  COHORT_RETURN_IF_ERROR(r.status());
  return w;
}

Json Delivery::ToJson() const {
  return {{"id", id},
          {"webhook_id", webhook_id},
          {"event", event},
          {"state", state},
          {"attempts", attempts},
          {"last_error", last_error},
          {"created_ms", created_ms},
          {"next_attempt_ms", next_attempt_ms},
          {"finished_ms", finished_ms}};
}

absl::StatusOr<Delivery> ParseDelivery(const Json& json) {
  return ParseDeliveryAt(json, "delivery");
}

Json DeliveryList::ToJson() const {
  Json list = Json::array();
  for (const Delivery& d : deliveries) list.push_back(d.ToJson());
  return {{"deliveries", std::move(list)}};
}

absl::StatusOr<DeliveryList> ParseDeliveryList(const Json& json) {
  FieldReader r(json, "delivery list");
  DeliveryList list;
  r.Array("deliveries", &list.deliveries, kMaxListed, FieldReader::kRequired, ParseDeliveryAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return list;
}

}  // namespace cohort::wire
