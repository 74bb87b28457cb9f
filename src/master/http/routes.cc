#include "master/http/routes.h"

#include "master/http/web_routes.h"

namespace cohort::master::http {

void RegisterRoutes(Router& router, Master& master) {
  AddExperimentRoutes(router, master);
  AddTrialRoutes(router, master);
  AddTemplateRoutes(router, master.templates());
  AddModelRoutes(router, master.models());
  AddWebhookRoutes(router, master.webhooks());
  AddAgentRoutes(router, master);
  AddTaskRoutes(router, master);
  AddJobRoutes(router, master);
  AddAllocationRoutes(router, master);
  AddUserRoutes(router, master.users(), router.https());
  AddSeriesRoutes(router, master.series());
  AddMetricsRoutes(router, master);
  AddWebRoutes(router);  // last: its catch-all serves the page for every other path
}

}  // namespace cohort::master::http
