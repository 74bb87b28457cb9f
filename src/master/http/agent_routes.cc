#include "cohort/status.h"
#include "master/http/routes.h"

namespace cohort::master::http {

void AddAgentRoutes(Router& router, Master& master) {
  AgentManager& agents = master.agents();
  // Registration, heartbeats and polls (which hand out trials' configs) are the agents' own;
  // listing agents is for users, enabling and disabling them for admins.
  const RouteOptions kAgentOnly{.require = Require::kAgent};
  router.Post(
      "/api/v1/agents",
      [&](const Request& req) -> absl::StatusOr<Reply> {
        if (!master.runs_on_agents()) {
          return absl::FailedPreconditionError(
              "this master runs trials through Slurm (--resource-manager slurm): it takes no "
              "agents; stop this agent, or restart the master with --resource-manager agents");
        }
        COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
        COHORT_ASSIGN_OR_RETURN(wire::AgentRegistration registration,
                                wire::ParseAgentRegistration(body));
        COHORT_RETURN_IF_ERROR(agents.Register(registration));
        return Reply::Done();
      },
      kAgentOnly);
  // The nodes trials may run on: the agents, or the Slurm partition's nodes.
  router.Get("/api/v1/agents", [&](const Request&) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto list, master.ListNodes());
    return Reply::Ok(list.ToJson());
  });
  router.Post(R"(/api/v1/agents/([^/]+)/heartbeat)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_RETURN_IF_ERROR(agents.Heartbeat(req.PathPart(1)));
                return Reply::Done();
              },
              kAgentOnly);
  // An agent stopping cleanly says so, before it stops its trials and again after
  // (AgentManager::Leave): {"gone": true} once the master has removed it.
  router.Post(R"(/api/v1/agents/([^/]+)/leave)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(bool gone, agents.Leave(req.PathPart(1)));
                return Reply::Ok(Json{{"gone", gone}});
              },
              kAgentOnly);
  router.Post(R"(/api/v1/agents/([^/]+)/(enable|disable))",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_RETURN_IF_ERROR(
                    agents.SetEnabled(req.PathPart(1), req.PathPart(2) == "enable"));
                return Reply::Done();
              },
              {.require = Require::kAdmin});
  router.Get(R"(/api/v1/agents/([^/]+)/actions)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(absl::Duration wait, req.QuerySeconds("timeout", 20, 60));
               COHORT_ASSIGN_OR_RETURN(auto actions, agents.WaitForActions(req.PathPart(1), wait));
               return Reply::Ok(actions.ToJson());
             },
             {.require = Require::kAgent, .waits = true});  // a long poll
  router.Get("/api/v1/slots", [&](const Request&) -> absl::StatusOr<Reply> {
    return Reply::Ok(master.ListSlots().ToJson());
  });
}

void AddTaskRoutes(Router& router, Master& master) {
  router.Get("/api/v1/tasks", [&](const Request&) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(auto tasks, master.ListTasks());
    return Reply::Ok(tasks.ToJson());
  });
}

}  // namespace cohort::master::http
