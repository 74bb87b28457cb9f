#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

absl::StatusOr<Reply> Outputs(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(auto items, wire::ParseOutputBatch(body));
  std::vector<Master::OutputParts> parts;
  parts.reserve(items.size());
  for (const absl::StatusOr<wire::AllocationOutput>& item : items) {
    if (!item.ok()) continue;
    parts.push_back({.allocation = item->allocation,
                     .token = &item->token,
                     .logs = item->logs ? &*item->logs : nullptr,
                     .reports = item->reports ? &*item->reports : nullptr,
                     .exit = item->exit ? &*item->exit : nullptr});
  }
  const std::vector<Master::OutputStored> stored = master.StoreOutputs(parts);
  wire::OutputResults answer;
  answer.results.reserve(items.size());
  size_t next = 0;
  for (const absl::StatusOr<wire::AllocationOutput>& item : items) {
    if (!item.ok()) {
      answer.results.push_back({400, "", std::string(item.status().message())});
      continue;
    }
    const Master::OutputStored& s = stored[next++];
    answer.results.push_back(s.status.ok() ? wire::OutputResult{}
                                           : wire::OutputResult{ErrorReply(s.status).code, s.part,
                                                                std::string(s.status.message())});
  }
  return Reply::Ok(answer.ToJson());
}

// GET /api/v1/allocations/ID/nodes/RANK/start?host=H: the node's start action.
absl::StatusOr<Reply> NodeStart(Master& master, const Request& req) {
  int rank = 0;
  if (!absl::SimpleAtoi(req.PathPart(2), &rank) || rank > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("node rank ", req.PathPart(2).substr(0, 32), " is out of range"));
  }
  std::string host = req.raw().get_param_value("host");
  if (host.size() > 255) host.resize(255);  // for the trial's log only
  COHORT_ASSIGN_OR_RETURN(wire::StartAction start,
                          master.AllocationNodeStart(req.PathPart(1), rank, host));
  return Reply::Ok(start.ToJson());
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
  // Nodes a resource manager launched itself (a Slurm job's process on each node) hold only
  // the allocation's token: they fetch their start action and the experiment's context here.
  router.Get(R"(/api/v1/allocations/([^/]+)/nodes/(\d+)/start)",
             [&](const Request& req) { return NodeStart(master, req); }, kItself);
  router.Get(R"(/api/v1/allocations/([^/]+)/context)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(std::string bytes,
                                       master.AllocationContext(req.PathPart(1)));
               return Reply::Bytes(std::move(bytes), "application/gzip");
             },
             kItself);
  // An agent's allocations' output in one post per flush (wire::OutputBatch): the agent's
  // credential, as on the routes above, which admit the agent too.
  router.Post(R"(/api/v1/agents/([^/]+)/outputs)",
              [&](const Request& req) { return Outputs(master, req); },
              {.require = Require::kAgent});
}

}  // namespace cohort::master::http
