#include "absl/strings/numbers.h"
#include "cohort/status.h"
#include "master/http/routes.h"
#include "wire/cluster_bodies.h"
#include "wire/webhook_bodies.h"

namespace cohort::master::http {

// Admins' routes (the component checks too: it is the one that owns the rule).
void AddWebhookRoutes(Router& router, webhooks::Webhooks& hooks) {
  const RouteOptions admins{.require = Require::kAdmin};
  router.Get(
      "/api/v1/webhooks",
      [&](const Request& req) -> absl::StatusOr<Reply> {
        COHORT_ASSIGN_OR_RETURN(wire::WebhookList list, hooks.List(req.caller().admin));
        return Reply::Ok(list.ToJson());
      },
      admins);
  router.Post(
      "/api/v1/webhooks",
      [&](const Request& req) -> absl::StatusOr<Reply> {
        COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
        COHORT_ASSIGN_OR_RETURN(wire::NewWebhook w, wire::ParseNewWebhook(body));
        COHORT_ASSIGN_OR_RETURN(wire::Webhook created,
                                hooks.Create(req.caller().admin, req.caller().name, w));
        return Reply::Ok(created.ToJson(), 201);
      },
      admins);
  router.Delete(R"(/api/v1/webhooks/([^/]+))",
                [&](const Request& req) -> absl::StatusOr<Reply> {
                  COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
                  COHORT_RETURN_IF_ERROR(hooks.Delete(req.caller().admin, id));
                  return Reply::Done();
                },
                admins);
  router.Post(R"(/api/v1/webhooks/([^/]+)/test)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
                COHORT_ASSIGN_OR_RETURN(wire::Delivery d, hooks.Test(req.caller().admin, id));
                return Reply::Ok(d.ToJson(), 201);
              },
              admins);
  router.Get(R"(/api/v1/webhooks/([^/]+)/deliveries)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
               int limit = 20;
               const std::string text = req.raw().get_param_value("limit");
               if (!text.empty() && (!absl::SimpleAtoi(text, &limit) || limit < 1)) {
                 return absl::InvalidArgumentError("limit: must be an integer >= 1");
               }
               COHORT_ASSIGN_OR_RETURN(wire::DeliveryList list,
                                       hooks.Deliveries(req.caller().admin, id, limit));
               return Reply::Ok(list.ToJson());
             },
             admins);
}

}  // namespace cohort::master::http
