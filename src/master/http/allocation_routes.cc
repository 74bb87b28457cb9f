#include "cohort/status.h"
#include "master/http/routes.h"
#include "wire/agent_protocol.h"

namespace cohort::master::http {
namespace {

absl::StatusOr<Reply> Exit(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(wire::ExitReport exit, wire::ParseExitReport(body));
  COHORT_RETURN_IF_ERROR(master.AllocationExit(req.PathPart(1), exit));
  return Reply::Done();
}

// One item of an agent's combined post: its token checked, then its parts in the order their
// own posts would come; the first failure ends it (wire::OutputResult).
wire::OutputResult StoreOutput(Master& master, const wire::AllocationOutput& item) {
  const auto failed = [](const char* part, const absl::Status& status) {
    return wire::OutputResult{ErrorReply(status).code, part, std::string(status.message())};
  };
  if (absl::Status s = master.CheckAllocationToken(item.allocation, item.token); !s.ok()) {
    return failed("", absl::IsUnauthenticated(s)
                          ? absl::UnauthenticatedError(
                                absl::StrCat("output of allocation ", item.allocation,
                                             " without its token (the agent's start action's)"))
                          : s);
  }
  if (item.logs) {
    if (absl::Status s = master.AllocationLogs(item.allocation, *item.logs); !s.ok()) {
      return failed("logs", s);
    }
  }
  if (item.reports) {
    if (absl::Status s = master.AllocationReports(item.allocation, *item.reports); !s.ok()) {
      return failed("reports", s);
    }
  }
  if (item.exit) {
    if (absl::Status s = master.AllocationExit(item.allocation, *item.exit); !s.ok()) {
      return failed("exit", s);
    }
  }
  return {};
}

absl::StatusOr<Reply> Outputs(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(auto items, wire::ParseOutputBatch(body));
  wire::OutputResults answer;
  answer.results.reserve(items.size());
  for (const absl::StatusOr<wire::AllocationOutput>& item : items) {
    answer.results.push_back(
        item.ok() ? StoreOutput(master, *item)
                  : wire::OutputResult{400, "", std::string(item.status().message())});
  }
  return Reply::Ok(answer.ToJson());
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
  // An agent's allocations' output in one post per flush (wire::OutputBatch): the agent's
  // credential, as on the routes above, which admit the agent too.
  router.Post(R"(/api/v1/agents/([^/]+)/outputs)",
              [&](const Request& req) { return Outputs(master, req); },
              {.require = Require::kAgent});
}

}  // namespace cohort::master::http
