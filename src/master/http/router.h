#pragma once
// Router: the one request path of the master's REST API. Every request passes the same chain
// before its route and leaves through the same error mapping:
//
//   browser guard -> limits -> authentication -> route -> response
//   (Host, Origin)   (size)    (Authenticator)   (translates wire <-> Master calls)
//
//   * browser guard: BrowserGuard (browser_guard.h) refuses DNS-rebound Host names and
//     cross-origin requests (403);
//   * limits: a JSON body over wire::kMaxJsonBodyBytes, or an upload over the route's own
//     limit, is 413 before the route runs;
//   * authentication: the Authenticator decides who the caller is or refuses (401), then
//     admits the caller to the route or refuses (401, or 403 for a user who is not an admin):
//     each route declares who may call it (RouteOptions::require, the whole policy in one place
//     per route; users by default); AllowEveryone admits anyone as an admin,
//     ClusterAuthenticator (cluster_authenticator.h) admits users by their login tokens, agents
//     by the cluster's agent secret and trials by their allocation's token;
//   * metrics: every request is counted by its route's pattern and status, and timed
//     (RequestMetrics, request_metrics.h; served by GET /metrics);
//   * errors: a route returns a Status; it leaves as {"error": first line, "errors": [more
//     lines]} with InvalidArgument -> 400, Unauthenticated -> 401, PermissionDenied -> 403,
//     NotFound -> 404, FailedPrecondition/AlreadyExists -> 409, ResourceExhausted -> 413
//     (TooManyRequests' -> 429), Unavailable -> 503, anything else -> 500. An exception a route
//     lets escape (a bug) is 500 naming the route, never a crash of the master.
//
// The Router knows no HTTP engine: it fills a Table of routes, and an engine (HttpServer,
// http_server.h) parses each request into an httplib::Request (cpp-httplib's request type, the
// one the routes read), hands it to Table::Serve and writes the Reply it returns.
// Thread-safe after the routes are added (the engine serves requests on many threads).
//
// Example:
//   Router router(std::make_unique<AllowEveryone>());
//   router.Get(R"(/api/v1/trials/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
//     COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId(1));
//     COHORT_ASSIGN_OR_RETURN(Json body, master.DescribeTrial(id));
//     return Reply::Ok(body);
//   });
//   COHORT_RETURN_IF_ERROR(server.Serve(router.table()));

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/http/admission_gate.h"
#include "master/http/browser_guard.h"
#include "master/http/request_metrics.h"
#include "nlohmann/json.hpp"
#include "wire/cluster_bodies.h"

namespace cohort::master::http {

using Json = nlohmann::json;

// Who sent a request, as authentication established it.
struct Caller {
  enum class Kind { kAnonymous, kUser, kAgent, kTrial };
  Kind kind = Kind::kAnonymous;
  std::string name;        // user name, agent id or allocation id
  bool admin = false;      // a user who is an admin
  std::string token_hash;  // a user's: the login token presented (logout revokes it)
  // An anonymous caller who presented a credential that was refused: why (expired, revoked).
  std::string refused;
};

// Who may call a route.
enum class Require {
  kAnyone,      // open: login, the master's info
  kUser,        // any logged-in user (the default)
  kAdmin,       // a user who is an admin
  kAgent,       // an agent: registration, polling, context download
  kAllocation,  // an agent, or the token of the allocation named by the path's first capture
};

// Decides who the caller is, then whether it may call a route. A refusal (Unauthenticated or
// PermissionDenied) ends the request.
class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // Who the caller is. `require` is the route's: an authenticator may skip what cannot matter
  // to it (a user's token on an allocation's route, which admits no user, is not looked up).
  virtual absl::StatusOr<Caller> Authenticate(const httplib::Request& request,
                                              Require require) = 0;
  // OK when `caller` meets `require`; else Unauthenticated naming the route (PermissionDenied
  // for a user on an admin's route). This base admits users, admins and agents by their Caller
  // and no allocation (it cannot check allocation tokens).
  virtual absl::Status Admit(const Caller& caller, Require require,
                             const httplib::Request& request);
};

// Everyone is an admin admitted everywhere (a cluster without authentication: tests of other
// layers).
class AllowEveryone : public Authenticator {
 public:
  absl::StatusOr<Caller> Authenticate(const httplib::Request&, Require) override {
    return Caller{.kind = Caller::Kind::kUser, .name = "admin", .admin = true};
  }
  absl::Status Admit(const Caller&, Require, const httplib::Request&) override {
    return absl::OkStatus();
  }
};

// What a route sees of a request.
class Request {
 public:
  Request(const httplib::Request& raw, Caller caller) : raw_(raw), caller_(std::move(caller)) {}
  const httplib::Request& raw() const { return raw_; }
  const Caller& caller() const { return caller_; }
  // The route pattern's capture `index` as a positive id; InvalidArgument otherwise.
  absl::StatusOr<int64_t> PathId(int index = 1) const;
  std::string PathPart(int index) const { return raw_.matches[index].str(); }
  // The body parsed as JSON; InvalidArgument when it is not JSON.
  absl::StatusOr<Json> JsonBody() const;
  // Query parameter `name`: absent -> nullopt; present but not a non-negative integer ->
  // InvalidArgument naming it.
  absl::StatusOr<std::optional<int64_t>> QueryInt(const char* name) const;
  // Query parameter `name` in seconds, clamped to [0, max]; absent -> fallback; not a number ->
  // InvalidArgument naming it.
  absl::StatusOr<absl::Duration> QuerySeconds(const char* name, double fallback, double max) const;
  // The form part `name` of a multipart request; nullopt when absent.
  std::optional<std::string> FormPart(const char* name) const;

 private:
  const httplib::Request& raw_;
  Caller caller_;
};

// What a route answers on success.
struct Reply {
  int code = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // more response headers
  // When set, the body: written chunk by chunk (HTTP chunked encoding) after the handler has
  // returned, so it runs outside every lock the handler took; the engine holds at most a few
  // chunks of it in memory (sink.write waits while the client is slow, and returns false once
  // the client is gone). It returns false to break the connection off (the answer is then
  // incomplete, which the client sees); `body` is ignored.
  std::function<bool(httplib::DataSink& sink)> stream;
  static Reply Ok(const Json& json, int code = 200) { return {code, json.dump()}; }
  static Reply Done() { return Ok(wire::OkBody()); }
  static Reply Bytes(std::string bytes, std::string type) {
    return {200, std::move(bytes), std::move(type)};
  }
};

using Handler = std::function<absl::StatusOr<Reply>(const Request&)>;

// How a route is served: who may call it, and the largest body it takes.
struct RouteOptions {
  Require require = Require::kUser;
  std::optional<size_t> max_body;  // default: wire::kMaxJsonBodyBytes
  // The handler may wait for events (a long poll, a follow): it bypasses the router's
  // AdmissionGate, where it would hold a slot while what it waits for queues behind it.
  bool waits = false;
};

class Router {
 public:
  // `guard` runs first (browser protections; BrowserGuard(false) checks only Origin).
  // `concurrent_handlers` > 0: at most that many handlers of routes that do not wait run at
  // once, the others queue in arrival order (AdmissionGate); 0: no limit.
  explicit Router(std::unique_ptr<Authenticator> authenticator,
                  BrowserGuard guard = BrowserGuard(false), int concurrent_handlers = 0);

  void Get(const std::string& pattern, Handler handler, RouteOptions options = {});
  void Post(const std::string& pattern, Handler handler, RouteOptions options = {});
  void Put(const std::string& pattern, Handler handler, RouteOptions options = {});
  void Delete(const std::string& pattern, Handler handler, RouteOptions options = {});

  // What the router counted and timed so far; shared, so it outlives the router with the
  // routes that record into it.
  const std::shared_ptr<RequestMetrics>& request_metrics() const { return metrics_; }

  // The routes as an engine serves them: the engine parses a request, Serve answers it.
  class Table {
   public:
    // The answer to `request`: the first route added whose method and pattern match it (GET
    // routes answer HEAD too) serves it, with `request.matches` set from its pattern; when
    // none matches, 404 "no such endpoint: METHOD PATH". An exception that escapes a route is
    // 500 naming the route (and logged). Never throws.
    Reply Serve(httplib::Request& request) const;
    // The answer to a request the engine refused before any route (a body over its limit, a
    // malformed request): ErrorReply(why), counted as unmatched by its status.
    Reply Refuse(const httplib::Request& request, const absl::Status& why) const;

   private:
    friend class Router;
    using Serving = std::function<Reply(const httplib::Request&)>;
    struct Route {
      std::string method;
      std::regex pattern;
      Serving serve;
    };
    Reply Dispatch(httplib::Request& request) const;

    std::vector<Route> routes_;  // in the order added; not changed once serving starts
    std::shared_ptr<RequestMetrics> metrics_;
  };
  // The table the routes go in, shared: an engine may serve it after the Router is gone.
  std::shared_ptr<const Table> table() const { return table_; }

 private:
  Table::Serving Wrap(Handler handler, RouteOptions options, RouteTimer timer) const;
  void Add(const char* method, const std::string& pattern, Handler handler, RouteOptions options);

  std::shared_ptr<Authenticator> authenticator_;
  BrowserGuard guard_;
  std::shared_ptr<RequestMetrics> metrics_;
  std::shared_ptr<Table> table_;
  std::shared_ptr<AdmissionGate> gate_;  // null: no limit
};

// The HTTP status and {"error", "errors"} body for a failed Status (see the header comment).
Reply ErrorReply(const absl::Status& status);

// ResourceExhausted answered with HTTP 429 Too Many Requests (throttled logins).
absl::Status TooManyRequests(absl::string_view message);

}  // namespace cohort::master::http
