#include "cohort/status.h"
#include "master/http/routes.h"
#include "wire/cluster_bodies.h"
#include "wire/model_bodies.h"

namespace cohort::master::http {
namespace {

models::Caller CallerOf(const Request& req) { return {req.caller().name, req.caller().admin}; }

constexpr char kModel[] = R"(/api/v1/models/([^/]+))";
constexpr char kVersions[] = R"(/api/v1/models/([^/]+)/versions)";
constexpr char kVersion[] = R"(/api/v1/models/([^/]+)/versions/([^/]+))";

void AddVersionRoutes(Router& router, models::Registry& registry) {
  router.Post(kVersions, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
    COHORT_ASSIGN_OR_RETURN(wire::NewModelVersion version, wire::ParseNewModelVersion(body));
    COHORT_ASSIGN_OR_RETURN(wire::ModelVersion stored,
                            registry.RegisterVersion(CallerOf(req), req.PathPart(1), version));
    return Reply::Ok(stored.ToJson(), 201);
  });
  router.Get(kVersion, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t number, req.PathId(2));
    COHORT_ASSIGN_OR_RETURN(wire::ModelVersion v, registry.GetVersion(req.PathPart(1), number));
    return Reply::Ok(v.ToJson());
  });
  router.Delete(kVersion, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t number, req.PathId(2));
    COHORT_RETURN_IF_ERROR(registry.DeleteVersion(CallerOf(req), req.PathPart(1), number));
    return Reply::Done();
  });
}

}  // namespace

void AddModelRoutes(Router& router, models::Registry& registry) {
  router.Get("/api/v1/models", [&](const Request&) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(wire::ModelList list, registry.List());
    return Reply::Ok(list.ToJson());
  });
  router.Post("/api/v1/models", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
    COHORT_ASSIGN_OR_RETURN(wire::NewModel model, wire::ParseNewModel(body));
    COHORT_ASSIGN_OR_RETURN(wire::Model created, registry.Create(CallerOf(req), model));
    return Reply::Ok(created.ToJson(), 201);
  });
  router.Get(kModel, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(wire::ModelDescription d, registry.Describe(req.PathPart(1)));
    return Reply::Ok(d.ToJson());
  });
  router.Patch(kModel, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
    COHORT_ASSIGN_OR_RETURN(wire::ModelPatch patch, wire::ParseModelPatch(body));
    COHORT_ASSIGN_OR_RETURN(wire::Model changed,
                            registry.Update(CallerOf(req), req.PathPart(1), patch));
    return Reply::Ok(changed.ToJson());
  });
  router.Delete(kModel, [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_RETURN_IF_ERROR(registry.Delete(CallerOf(req), req.PathPart(1)));
    return Reply::Done();
  });
  AddVersionRoutes(router, registry);
}

}  // namespace cohort::master::http
