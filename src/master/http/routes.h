#pragma once
// The master's REST API (/api/v1, docs/design/0006-cluster.md), one function per resource.
// Each route only translates: path, query and body in, a call of the Master or of the component
// it needs (templates, models, series, users: they never need the master's lock), the result out; every
// request passes the Router's chain (limits, authentication, error mapping). Thread-safe as
// those are.

#include "master/http/router.h"
#include "master/master.h"

namespace cohort::master::http {

void AddExperimentRoutes(Router& router, Master& master);  // experiments/, their context
void AddTrialRoutes(Router& router, Master& master);       // trials/: metrics, checkpoints, logs
void AddTemplateRoutes(Router& router, templates::Templates& templates);  // templates/
void AddModelRoutes(Router& router, models::Registry& registry);  // models/, their versions
void AddWebhookRoutes(Router& router, webhooks::Webhooks& hooks);  // webhooks/ (admins)
void AddAgentRoutes(Router& router, Master& master);                // agents/, slots
void AddTaskRoutes(Router& router, Master& master);                       // tasks
void AddJobRoutes(Router& router, Master& master);  // resource-pools, jobs/: the shared queue
void AddAllocationRoutes(Router& router, Master& master);      // allocations/: what agents report
// info, auth/, me, users/; `https`: the session cookie is Secure (session_cookie.h)
void AddUserRoutes(Router& router, users::Users& users, bool https);
void AddSeriesRoutes(Router& router, series::Series& series);  // trials' and experiments' series
// GET /metrics: the cluster's gauges and the router's request counts in Prometheus text format
// (docs/observability.md#prometheus), for any logged-in user. Add it last on a router whose
// request_metrics() it serves.
void AddMetricsRoutes(Router& router, Master& master);

// The caller of a user's route as the master's Actor.
inline Actor ActorOf(const Caller& caller) { return Actor{caller.name, caller.admin}; }

// Every route above on `router`, after any it has already (which answer first where they
// match), the web interface's catch-all last.
void RegisterRoutes(Router& router, Master& master);

}  // namespace cohort::master::http
