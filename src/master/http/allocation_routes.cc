#include "cohort/status.h"
#include "master/http/routes.h"

namespace cohort::master::http {
namespace {

absl::StatusOr<Reply> Exit(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  if (!body.is_object() || !body.contains("node") || !body["node"].is_number_integer() ||
      !body.contains("status") || !body["status"].is_number_integer()) {
    return absl::InvalidArgumentError("exit needs {\"node\": K, \"status\": S} (integers)");
  }
  COHORT_RETURN_IF_ERROR(
      master.AllocationExit(req.PathPart(1), body["node"].get<int>(), body["status"].get<int>()));
  return Reply::Done();
}

}  // namespace

void AddAllocationRoutes(Router& router, Master& master) {
  router.Post(R"(/api/v1/allocations/([^/]+)/logs)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
                COHORT_RETURN_IF_ERROR(master.AllocationLogs(req.PathPart(1), body));
                return Reply::Done();
              });
  router.Post(R"(/api/v1/allocations/([^/]+)/reports)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
                COHORT_RETURN_IF_ERROR(master.AllocationReports(req.PathPart(1), body));
                return Reply::Done();
              });
  router.Post(R"(/api/v1/allocations/([^/]+)/exit)",
              [&](const Request& req) { return Exit(master, req); });
}

}  // namespace cohort::master::http
