#pragma once
// Router: the one request path of the master's REST API. Every request passes the same chain
// before its route and leaves through the same error mapping:
//
//   browser guard -> limits -> authentication -> route -> response
//   (Host, Origin)   (size)    (Authenticator)   (translates wire <-> Master calls)
//
//   * browser guard: BrowserGuard (browser_guard.h) refuses DNS-rebound Host names and
//     cross-origin requests (403);
//   * limits: a body over the route's limit (wire::kMaxJsonBodyBytes by default,
//     kMaxOpenBodyBytes on an open route) is 413: at once when its Content-Length says so,
//     else when the engine has counted that many bytes of it;
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
//     (TooManyRequests' -> 429), Unavailable and Aborted (the database's concurrent writers
//     kept winning) -> 503, anything else -> 500. An exception a route lets escape (a bug) is
//     500 naming the route, never a crash of the master.
//
// Everything up to the route is decided from the request's head, before its body is read
// (Table::Admit): an unauthenticated request costs the master its head, never its body.
// The Router knows no HTTP engine: it fills a Table of routes, and an engine (HttpServer,
// http_server.h) parses each request into an httplib::Request (cpp-httplib's request type, the
// one the routes read), asks Table::Admit once the head is read, reads the body of an admitted
// request only, hands it to Table::Serve and writes the Reply it returns.
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
#include <cstdint>
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
  virtual absl::StatusOr<Caller> Authenticate(const httplib::Request& request, Require require) = 0;
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

// The largest body an open route (Require::kAnyone) takes unless it says less: what anyone
// who can reach the port may make the master hold.
inline constexpr size_t kMaxOpenBodyBytes = 16 << 10;

// How a route is served: who may call it, and the largest body it takes.
struct RouteOptions {
  Require require = Require::kUser;
  // default: wire::kMaxJsonBodyBytes, kMaxOpenBodyBytes for an open route (at most that)
  std::optional<size_t> max_body;
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
  void Patch(const std::string& pattern, Handler handler, RouteOptions options = {});
  void Delete(const std::string& pattern, Handler handler, RouteOptions options = {});

  // What the router counted and timed so far; shared, so it outlives the router with the
  // routes that record into it.
  const std::shared_ptr<RequestMetrics>& request_metrics() const { return metrics_; }
  // Whether the master serves HTTPS (the guard's; the session cookie is then Secure).
  bool https() const { return table_->guard_.https(); }

  // The routes as an engine serves them, in two steps so that nothing unauthenticated costs
  // the master more than a request's head: once the head is read, Admit matches the route and
  // runs the browser guard, the route's size limit on a declared Content-Length and the
  // authentication; only an admitted request's body is read, at most Admission::max_body
  // bytes of it (the engine counts a chunked body as it comes and cuts it there), and then
  // Serve answers it.
  class Table {
   public:
    // One route as added (Router::Get and the others).
    struct Route {
      std::string method;
      std::regex pattern;
      Handler handler;
      Require require = Require::kUser;
      size_t max_body = 0;
      RouteTimer timer;
      std::shared_ptr<AdmissionGate> gate;  // null: the route waits, or no limit
    };
    // What Admit decided about a request from its head.
    struct Admission {
      // Set when the request is refused from its head (no route 404, the browser guard 403,
      // authentication 401 or 403, a declared body over the route's limit 413): the answer.
      // The engine keeps none of the body: one whose Content-Length is within the master's
      // limit is read and dropped, so the client reads the answer (a CLI that logs in again
      // on 401 must see it); a chunked one, or one declared larger, is answered at once and
      // its connection closed unread.
      std::optional<Reply> refusal;
      // The most body bytes the route takes (its RouteOptions::max_body): past it the engine
      // stops reading and answers TooLargeBody's 413.
      size_t max_body = 0;
      const Route* route = nullptr;  // the route matched (null when refused without one)
      Caller caller;                 // who authentication says the caller is
    };
    // The first step, from the request's line and headers only; sets `request.matches` from
    // the route's pattern (the first route added whose method and pattern match; GET routes
    // answer HEAD too). Never throws.
    Admission Admit(httplib::Request& request) const;
    // The second step, once the body is read: the route's handler (after the AdmissionGate,
    // unless the route waits) or the refusal. An exception that escapes a route is 500 naming
    // the route (and logged). Never throws.
    Reply Serve(const Admission& admission, const httplib::Request& request) const;
    // The answer to a request the engine refused before any route (a malformed request):
    // ErrorReply(why), counted as unmatched by its status.
    Reply Refuse(const httplib::Request& request, const absl::Status& why) const;
    // The 413 for a body found longer than the admitted route's limit while it was read.
    Reply TooLargeBody(const Admission& admission, const httplib::Request& request,
                       uint64_t bytes) const;

   private:
    friend class Router;
    // Guard, declared size and authentication; OK with `caller` set, or why not.
    absl::Status CheckHead(const Route& route, const httplib::Request& request,
                           Caller* caller) const;
    Reply RunRoute(const Admission& admission, const httplib::Request& request) const;

    std::vector<Route> routes_;  // in the order added; not changed once serving starts
    std::shared_ptr<RequestMetrics> metrics_;
    std::shared_ptr<Authenticator> authenticator_;
    BrowserGuard guard_{false};
  };
  // The table the routes go in, shared: an engine may serve it after the Router is gone.
  std::shared_ptr<const Table> table() const { return table_; }

 private:
  void Add(const char* method, const std::string& pattern, Handler handler, RouteOptions options);

  std::shared_ptr<RequestMetrics> metrics_;
  std::shared_ptr<Table> table_;
  std::shared_ptr<AdmissionGate> gate_;  // null: no limit
};

// The HTTP status and {"error", "errors"} body for a failed Status (see the header comment).
Reply ErrorReply(const absl::Status& status);

// ResourceExhausted answered with HTTP 429 Too Many Requests (throttled logins).
absl::Status TooManyRequests(absl::string_view message);

}  // namespace cohort::master::http
