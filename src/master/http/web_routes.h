#pragma once
// The web interface (web/README.md, docs/web.md), served by the master from files built into it
// (web_assets.h), open to anyone (it holds no data: the page logs in and reads the REST API):
//   GET /assets/<version>/<path>   a file of web/public; cached for a year (the version changes
//                                  with any file); 404 for another version or an unknown path;
//   GET /, /experiments/3, ...     index.html, never cached: any path but /api/..., /metrics
//                                  and /assets/... (the page's own routes).
// Files are looked up by exact path in a fixed table, never on disk, so no path reaches a file
// that is not part of the interface. Every answer forbids framing and other sites' scripts
// (Content-Security-Policy). Add it last: its catch-all would otherwise shadow later routes.

#include "master/http/router.h"

namespace cohort::master::http {

void AddWebRoutes(Router& router);

}  // namespace cohort::master::http
