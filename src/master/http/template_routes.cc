#include "cohort/status.h"
#include "master/http/routes.h"

namespace cohort::master::http {

void AddTemplateRoutes(Router& router, Master& master) {
  router.Get("/api/v1/templates", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto list, master.ListTemplates(ActorOf(req.caller())));
    return Reply::Ok(list.ToJson());
  });
  router.Get(R"(/api/v1/templates/([^/]+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto tmpl, master.GetTemplate(req.PathPart(1), ActorOf(req.caller())));
    return Reply::Ok(tmpl.ToJson());
  });
  router.Put(R"(/api/v1/templates/([^/]+))",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_RETURN_IF_ERROR(master.PutTemplate(req.PathPart(1), req.raw().body));
               return Reply::Done();
             },
             {.require = Require::kAdmin});
  router.Delete(R"(/api/v1/templates/([^/]+))",
                [&](const Request& req) -> absl::StatusOr<Reply> {
                  COHORT_RETURN_IF_ERROR(master.DeleteTemplate(req.PathPart(1)));
                  return Reply::Done();
                },
                {.require = Require::kAdmin});
}

}  // namespace cohort::master::http
