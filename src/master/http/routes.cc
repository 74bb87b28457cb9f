#include "master/http/routes.h"

#include "master/http/web_routes.h"

namespace cohort::master::http {

void RegisterRoutes(httplib::Server& server, Master& master,
                    std::unique_ptr<Authenticator> authenticator, BrowserGuard guard,
                    int concurrent_handlers) {
  Router router(server, std::move(authenticator), guard, concurrent_handlers);
  AddExperimentRoutes(router, master);
  AddTrialRoutes(router, master);
  AddTemplateRoutes(router, master);
  AddAgentRoutes(router, master);
  AddAllocationRoutes(router, master);
  AddUserRoutes(router, master.users());
  AddSeriesRoutes(router, master);
  AddMetricsRoutes(router, master);
  AddWebRoutes(router);  // last: its catch-all serves the page for every other path
}

}  // namespace cohort::master::http
