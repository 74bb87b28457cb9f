#include "cohort/status.h"
#include "master/http/routes.h"

namespace cohort::master::http {
namespace {

absl::StatusOr<Reply> Exit(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(wire::ExitReport exit, wire::ParseExitReport(body));
  COHORT_RETURN_IF_ERROR(master.AllocationExit(req.PathPart(1), exit));
  return Reply::Done();
}

}  // namespace

void AddAllocationRoutes(Router& router, Master& master) {
  // Only the allocation itself reports (its trial's logs, metrics, checkpoints and exit), with
  // its own token, while it runs.
  const RouteOptions kItself{.require = Require::kAllocation};
  router.Post(R"(/api/v1/allocations/([^/]+)/logs)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
                COHORT_ASSIGN_OR_RETURN(wire::LogBatch batch, wire::ParseLogBatch(body));
                COHORT_RETURN_IF_ERROR(master.AllocationLogs(req.PathPart(1), batch));
                return Reply::Done();
              },
              kItself);
  router.Post(R"(/api/v1/allocations/([^/]+)/reports)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
                COHORT_ASSIGN_OR_RETURN(wire::ReportBatch batch, wire::ParseReportBatch(body));
                COHORT_RETURN_IF_ERROR(master.AllocationReports(req.PathPart(1), batch));
                return Reply::Done();
              },
              kItself);
  router.Post(R"(/api/v1/allocations/([^/]+)/exit)",
              [&](const Request& req) { return Exit(master, req); }, kItself);
}

}  // namespace cohort::master::http
