#pragma once
// The master's REST API (docs/design/0006-cluster.md) on a cpp-httplib server: routes
// translate requests into Master calls and Statuses into HTTP answers:
//   OK -> 200 (201 for a created experiment) with a JSON body;
//   InvalidArgument -> 400, NotFound -> 404, FailedPrecondition/AlreadyExists -> 409,
//   anything else -> 500; the body is {"error": "..."} ({"errors": [...]} too for configs).
// Thread-safe as Master is; httplib serves each request on a pool thread.

#include <httplib.h>

#include "master/master.h"

namespace cohort::master {

// At most this much context (tar.gz) per experiment.
inline constexpr size_t kMaxContextBytes = 96u << 20;

void RegisterRoutes(httplib::Server& server, Master& master);

}  // namespace cohort::master
