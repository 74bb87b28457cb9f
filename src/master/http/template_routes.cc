#include "cohort/status.h"
#include "master/http/routes.h"

namespace cohort::master::http {

void AddTemplateRoutes(Router& router, templates::Templates& templates) {
  router.Get("/api/v1/templates", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto list, templates.List(req.caller().admin));
    return Reply::Ok(list.ToJson());
  });
  router.Get(R"(/api/v1/templates/([^/]+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto tmpl, templates.Get(req.PathPart(1), req.caller().admin));
    return Reply::Ok(tmpl.ToJson());
  });
  router.Put(R"(/api/v1/templates/([^/]+))",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_RETURN_IF_ERROR(templates.Put(req.PathPart(1), req.raw().body));
               return Reply::Done();
             },
             {.require = Require::kAdmin});
  router.Delete(R"(/api/v1/templates/([^/]+))",
                [&](const Request& req) -> absl::StatusOr<Reply> {
                  COHORT_RETURN_IF_ERROR(templates.Delete(req.PathPart(1)));
                  return Reply::Done();
                },
                {.require = Require::kAdmin});
}

}  // namespace cohort::master::http
