// The shared cluster's queue (wire/job_bodies.h, docs/scheduling.md): resource pools, jobs,
// and a job's priority, weight, max_slots or place changed by its owner or an admin.
#include "cohort/status.h"
#include "master/http/routes.h"
#include "wire/job_bodies.h"

namespace cohort::master::http {

void AddJobRoutes(Router& router, Master& master) {
  router.Get("/api/v1/resource-pools", [&](const Request&) -> absl::StatusOr<Reply> {
    return Reply::Ok(master.ListResourcePools().ToJson());
  });
  router.Get("/api/v1/jobs", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(wire::JobList jobs, master.ListJobs(req.raw().get_param_value("pool")));
    return Reply::Ok(jobs.ToJson());
  });
  router.Post(R"(/api/v1/jobs/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
    COHORT_ASSIGN_OR_RETURN(wire::JobUpdate update, wire::ParseJobUpdate(body));
    COHORT_RETURN_IF_ERROR(master.UpdateJob(id, update, ActorOf(req.caller())));
    return Reply::Done();
  });
}

}  // namespace cohort::master::http
