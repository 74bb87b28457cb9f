#pragma once
// The master's REST bodies of webhooks (docs/design/0023; master/webhooks/), written by the
// master and read by the CLI, and what the CLI sends. Every route is an admin's:
//
//   GET    /api/v1/webhooks                                 WebhookList (no secrets)
//   POST   /api/v1/webhooks                 NewWebhook   -> Webhook    (its secret, this once)
//   DELETE /api/v1/webhooks/{id}                         -> OkBody
//   POST   /api/v1/webhooks/{id}/test                    -> Delivery   (a TEST delivery queued)
//   GET    /api/v1/webhooks/{id}/deliveries?limit=N         DeliveryList (newest first)
//
// Triggers follow Determined's webhook API: {"trigger_type": "EXPERIMENT_STATE_CHANGE",
// "condition": {"state": "COMPLETED"}}, {"trigger_type": "METRIC_THRESHOLD_EXCEEDED",
// "condition": {"metricName": "validation_loss", "metricValue": 0.2, "condition": "BELOW"}}
// ("condition" ABOVE by default), {"trigger_type": "TASK_LOG", "condition": {"regex": "..."}}. Parsers check shapes and bounds and name the field;
// the webhooks component checks the rules (URLs, trigger types, states). Thread-compatible
// value types; the functions are thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

inline constexpr size_t kMaxWebhookUrlBytes = 2048;
inline constexpr size_t kMaxWebhookTemplateBytes = 8 << 10;
inline constexpr size_t kMaxTriggers = 32;

struct WebhookTrigger {
  std::string trigger_type;  // EXPERIMENT_STATE_CHANGE, METRIC_THRESHOLD_EXCEEDED, TASK_LOG
  Json condition = Json::object();
  Json ToJson() const;
};

struct Webhook {
  int64_t id = 0;
  std::string url;
  std::string webhook_type;  // DEFAULT or SLACK
  std::vector<WebhookTrigger> triggers;
  std::string message_template;  // empty: the default wording
  bool allow_local = false;
  std::string created_by;
  int64_t created_ms = 0;
  std::string secret;  // only in the answer to its creation; empty elsewhere
  Json ToJson() const;
};
absl::StatusOr<Webhook> ParseWebhook(const Json& json);

struct WebhookList {
  std::vector<Webhook> webhooks;  // by id
  Json ToJson() const;
};
absl::StatusOr<WebhookList> ParseWebhookList(const Json& json);

struct NewWebhook {
  std::string url;
  std::string webhook_type = "DEFAULT";
  std::vector<WebhookTrigger> triggers;
  std::string message_template;
  bool allow_local = false;
  Json ToJson() const;
};
absl::StatusOr<NewWebhook> ParseNewWebhook(const Json& json);

struct Delivery {
  int64_t id = 0;
  int64_t webhook_id = 0;
  std::string event;
  std::string state;  // PENDING, DELIVERED, FAILED
  int64_t attempts = 0;
  std::string last_error;
  int64_t created_ms = 0;
  int64_t next_attempt_ms = 0;
  int64_t finished_ms = 0;
  Json ToJson() const;
};
absl::StatusOr<Delivery> ParseDelivery(const Json& json);

struct DeliveryList {
  std::vector<Delivery> deliveries;  // newest first
  Json ToJson() const;
};
absl::StatusOr<DeliveryList> ParseDeliveryList(const Json& json);

}  // namespace cohort::wire
