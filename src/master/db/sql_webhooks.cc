// SqlDatabase's webhooks and their delivery queue (database.h: WebhookRow, DeliveryRow;
// docs/design/0023).

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;

constexpr absl::string_view kWebhookColumns =
    "id, url, type, triggers_json, template, secret, allow_local, created_by, created_ms";

WebhookRow ReadWebhook(const Query& s) {
  return WebhookRow{s.Int64(0), s.Text(1),       s.Text(2), s.Text(3), s.Text(4),
                    s.Text(5),  s.Int64(6) != 0, s.Text(7), s.Int64(8)};
}

constexpr absl::string_view kDeliveryColumns =
    "id, webhook_id, event, body, state, attempts, next_attempt_ms, last_error, created_ms, "
    "finished_ms";

DeliveryRow ReadDelivery(const Query& s) {
  return DeliveryRow{s.Int64(0), s.Int64(1), s.Text(2), s.Text(3),  s.Text(4),
                     s.Int64(5), s.Int64(6), s.Text(7), s.Int64(8), s.Int64(9)};
}

}  // namespace

absl::StatusOr<int64_t> SqlDatabase::InsertWebhook(const WebhookRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert webhook",
          "INSERT INTO webhooks (url, type, triggers_json, template, secret, allow_local, "
          "created_by, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id");
  s.BindText(1, row.url);
  s.BindText(2, row.type);
  s.BindText(3, row.triggers_json);
  s.BindText(4, row.template_text);
  s.BindText(5, row.secret);
  s.BindInt64(6, row.allow_local ? 1 : 0);
  s.BindText(7, row.created_by);
  s.BindInt64(8, row.created_ms);
  return s.RunReturningInt64();
}

absl::StatusOr<std::vector<WebhookRow>> SqlDatabase::ListWebhooks() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list webhooks",
          absl::StrCat("SELECT ", kWebhookColumns, " FROM webhooks ORDER BY id"));
  return ReadAll<WebhookRow>(s, ReadWebhook);
}

absl::Status SqlDatabase::DeleteWebhook(int64_t id) {
  return Transact([&](sql::Connection& c) -> absl::Status {
    Query deliveries(c, "delete a webhook's deliveries",
                     "DELETE FROM webhook_deliveries WHERE webhook_id = ?1");
    deliveries.BindInt64(1, id);
    COHORT_RETURN_IF_ERROR(deliveries.Run());
    Query webhook(c, "delete webhook", "DELETE FROM webhooks WHERE id = ?1");
    webhook.BindInt64(1, id);
    return webhook.RunOnRow(absl::StrCat("webhook ", id));
  });
}

absl::Status SqlDatabase::InsertDeliveries(const std::vector<DeliveryRow>& rows) {
  if (rows.empty()) return absl::OkStatus();
  return Transact([&](sql::Connection& c) { return InsertDeliveriesIn(c, rows); });
}

absl::Status SqlDatabase::InsertDeliveriesIn(sql::Connection& c,
                                             const std::vector<DeliveryRow>& rows) {
  constexpr size_t kPerRow = 10;
  for (size_t first = 0; first < rows.size(); first += sql::kRowsPerInsert) {
    const size_t n = std::min(sql::kRowsPerInsert, rows.size() - first);
    Query s(c, "queue deliveries",
            absl::StrCat("INSERT INTO webhook_deliveries (webhook_id, event, body, state, "
                         "attempts, next_attempt_ms, last_error, created_ms, finished_ms, "
                         "once_key) VALUES ",
                         sql::ValuesRows(n, kPerRow),
                         // A once-only delivery already queued: this one is not.
                         " ON CONFLICT DO NOTHING"));
    for (size_t i = 0; i < n; ++i) {
      const DeliveryRow& r = rows[first + i];
      const int base = static_cast<int>(i * kPerRow);
      s.BindInt64(base + 1, r.webhook_id);
      s.BindText(base + 2, r.event);
      s.BindText(base + 3, r.body);
      s.BindText(base + 4, r.state);
      s.BindInt64(base + 5, r.attempts);
      s.BindInt64(base + 6, r.next_attempt_ms);
      s.BindText(base + 7, r.last_error);
      s.BindInt64(base + 8, r.created_ms);
      s.BindInt64(base + 9, r.finished_ms);
      s.BindTextOrNull(base + 10,
                       r.once_key.empty() ? std::nullopt : std::optional<std::string>(r.once_key));
    }
    absl::Status inserted = s.Run();
    if (s.failure() == sql::Failure::kForeignKeyViolation) {
      return absl::NotFoundError("a delivery's webhook was deleted");
    }
    COHORT_RETURN_IF_ERROR(inserted);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeliveryRow>> SqlDatabase::ListDueDeliveries(int64_t now_ms, int limit) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list due deliveries",
          absl::StrCat("SELECT ", kDeliveryColumns,
                       " FROM webhook_deliveries d WHERE state = 'PENDING' AND next_attempt_ms "
                       "<= ?1 AND id = (SELECT MIN(id) FROM webhook_deliveries e WHERE "
                       "e.webhook_id = d.webhook_id AND e.state = 'PENDING') ORDER BY id "
                       "LIMIT ?2"));
  s.BindInt64(1, now_ms);
  s.BindInt64(2, std::max(limit, 0));
  return ReadAll<DeliveryRow>(s, ReadDelivery);
}

absl::Status SqlDatabase::UpdateDelivery(const DeliveryRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "update delivery",
          "UPDATE webhook_deliveries SET state = ?2, attempts = ?3, next_attempt_ms = ?4, "
          "last_error = ?5, finished_ms = ?6 WHERE id = ?1");
  s.BindInt64(1, row.id);
  s.BindText(2, row.state);
  s.BindInt64(3, row.attempts);
  s.BindInt64(4, row.next_attempt_ms);
  s.BindText(5, row.last_error);
  s.BindInt64(6, row.finished_ms);
  return s.RunOnRow(absl::StrCat("delivery ", row.id));
}

absl::StatusOr<std::vector<DeliveryRow>> SqlDatabase::ListDeliveries(int64_t webhook_id,
                                                                     int limit) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list deliveries",
          absl::StrCat("SELECT ", kDeliveryColumns,
                       " FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT ?2"));
  s.BindInt64(1, webhook_id);
  s.BindInt64(2, std::max(limit, 0));
  return ReadAll<DeliveryRow>(s, ReadDelivery);
}

}  // namespace cohort::master
