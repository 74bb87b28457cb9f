#include "master/http/router.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/json_bounded.h"
#include "common/logging.h"
#include "wire/limits.h"

namespace cohort::master::http {
namespace {

constexpr char kHttpStatusPayload[] = "cohort.http.status";

int HttpCode(const absl::Status& status) {
  const auto code = status.GetPayload(kHttpStatusPayload);
  if (code.has_value() && *code == absl::string_view("429")) return 429;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// The bytes a request carries: its body, or its form parts for a multipart upload (httplib
// moves those out of the body).
size_t BodySize(const httplib::Request& req) {
  size_t size = req.body.size();
  for (const auto& [name, file] : req.files) size += file.content.size();
  return size;
}

// The chain of one request up to and through its route (see router.h).
Reply Serve(const Handler& handler, size_t max_body, Require require, Authenticator& auth,
            const BrowserGuard& guard, const httplib::Request& raw) {
  if (absl::Status allowed = guard.Check(raw); !allowed.ok()) return ErrorReply(allowed);
  if (const size_t size = BodySize(raw); size > max_body) {
    return ErrorReply(absl::ResourceExhaustedError(absl::StrCat(
        "the request body is ", size, " bytes; this endpoint takes at most ", max_body)));
  }
  absl::StatusOr<Caller> caller = auth.Authenticate(raw, require);
  if (!caller.ok()) return ErrorReply(caller.status());
  if (absl::Status admitted = auth.Admit(*caller, require, raw); !admitted.ok()) {
    return ErrorReply(admitted);
  }
  absl::StatusOr<Reply> reply = handler(Request(raw, *std::move(caller)));
  if (!reply.ok()) return ErrorReply(reply.status());
  return *std::move(reply);
}

}  // namespace

Reply ErrorReply(const absl::Status& status) {
  return {HttpCode(status), wire::ErrorBody::FromStatus(status).ToJson().dump()};
}

absl::Status TooManyRequests(absl::string_view message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kHttpStatusPayload, absl::Cord("429"));
  return status;
}

absl::StatusOr<int64_t> Request::PathId(int index) const {
  int64_t id = 0;
  if (!absl::SimpleAtoi(raw_.matches[index].str(), &id) || id < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", raw_.matches[index].str().substr(0, 40), "' is not an id"));
  }
  return id;
}

absl::StatusOr<Json> Request::JsonBody() const {
  // nlohmann's value is recursive (copies, dump(), comparisons): the nesting is bounded first.
  if (absl::Status depth = CheckJsonDepth(raw_.body); !depth.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is refused: ", depth.message()));
  }
  Json body = Json::parse(raw_.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return absl::InvalidArgumentError("the request body is not JSON");
  return body;
}

absl::StatusOr<std::optional<int64_t>> Request::QueryInt(const char* name) const {
  if (!raw_.has_param(name)) return std::nullopt;
  int64_t value = 0;
  if (!absl::SimpleAtoi(raw_.get_param_value(name), &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("query parameter ", name,
                                                   " must be an integer >= 0, got '",
                                                   raw_.get_param_value(name).substr(0, 40), "'"));
  }
  return value;
}

absl::StatusOr<absl::Duration> Request::QuerySeconds(const char* name, double fallback,
                                                     double max) const {
  double seconds = fallback;
  if (raw_.has_param(name) && !absl::SimpleAtod(raw_.get_param_value(name), &seconds)) {
    return absl::InvalidArgumentError(absl::StrCat("query parameter ", name,
                                                   " must be a number of seconds, got '",
                                                   raw_.get_param_value(name).substr(0, 40), "'"));
  }
  if (!(seconds >= 0)) seconds = 0;  // negative or NaN
  return absl::Seconds(std::min(seconds, max));
}

std::optional<std::string> Request::FormPart(const char* name) const {
  if (!raw_.has_file(name)) return std::nullopt;
  return raw_.get_file_value(name).content;
}

Router::Router(std::unique_ptr<Authenticator> authenticator, BrowserGuard guard,
               int concurrent_handlers)
    : authenticator_(std::move(authenticator)),
      guard_(guard),
      metrics_(std::make_shared<RequestMetrics>()),
      table_(std::make_shared<Table>()),
      gate_(concurrent_handlers > 0 ? std::make_shared<AdmissionGate>(concurrent_handlers)
                                    : nullptr) {
  table_->metrics_ = metrics_;
  if (gate_ != nullptr) metrics_->WatchGate(gate_);
}

absl::Status Authenticator::Admit(const Caller& caller, Require require,
                                  const httplib::Request& request) {
  const std::string route = absl::StrCat(request.method, " ", request.path);
  switch (require) {
    case Require::kAnyone:
      return absl::OkStatus();
    case Require::kUser:
      if (caller.kind == Caller::Kind::kUser) return absl::OkStatus();
      return absl::UnauthenticatedError(absl::StrCat(route, " is for users"));
    case Require::kAdmin:
      if (caller.kind == Caller::Kind::kUser && caller.admin) return absl::OkStatus();
      if (caller.kind == Caller::Kind::kUser) {
        return absl::PermissionDeniedError(absl::StrCat(route, " is for admins"));
      }
      return absl::UnauthenticatedError(absl::StrCat(route, " is for admins"));
    case Require::kAgent:
      if (caller.kind == Caller::Kind::kAgent) return absl::OkStatus();
      return absl::UnauthenticatedError(absl::StrCat(route, " is for agents"));
    case Require::kAllocation:
      break;
  }
  return absl::UnauthenticatedError(absl::StrCat(route, " is for its allocation"));
}

Router::Table::Serving Router::Wrap(Handler handler, RouteOptions options, RouteTimer timer) const {
  const size_t max_body = options.max_body.value_or(wire::kMaxJsonBodyBytes);
  std::shared_ptr<AdmissionGate> gate = options.waits ? nullptr : gate_;
  return [handler = std::move(handler), max_body, require = options.require, auth = authenticator_,
          guard = guard_, timer = std::move(timer),
          gate = std::move(gate)](const httplib::Request& raw) -> Reply {
    // The time at the gate counts: the caller waits it too. An exception leaves as a 500.
    const auto start = std::chrono::steady_clock::now();
    int status = 500;
    absl::Cleanup record = [&] {
      timer.Record(status,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    };
    std::optional<AdmissionGate::Ticket> ticket;
    if (gate != nullptr) ticket.emplace(*gate);
    Reply reply = Serve(handler, max_body, require, *auth, guard, raw);
    status = reply.code;
    return reply;
  };
}

void Router::Add(const char* method, const std::string& pattern, Handler handler,
                 RouteOptions options) {
  RouteTimer timer = metrics_->ForRoute(method, pattern);
  table_->routes_.push_back(
      {method, std::regex(pattern), Wrap(std::move(handler), options, std::move(timer))});
}

void Router::Get(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("GET", pattern, std::move(handler), options);
}

void Router::Post(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("POST", pattern, std::move(handler), options);
}

void Router::Put(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("PUT", pattern, std::move(handler), options);
}

void Router::Delete(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("DELETE", pattern, std::move(handler), options);
}

Reply Router::Table::Dispatch(httplib::Request& request) const {
  const absl::string_view method =
      request.method == "HEAD" ? absl::string_view("GET") : absl::string_view(request.method);
  for (const Route& route : routes_) {
    if (route.method == method && std::regex_match(request.path, request.matches, route.pattern)) {
      return route.serve(request);
    }
  }
  return Refuse(request, absl::NotFoundError(absl::StrCat("no such endpoint: ", request.method, " ",
                                                          request.path)));
}

Reply Router::Table::Serve(httplib::Request& request) const {
  std::string what = "unknown exception";
  try {
    return Dispatch(request);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  COHORT_LOG(ERROR) << request.method << " " << request.path << ": " << what;
  return ErrorReply(absl::InternalError(
      absl::StrCat(request.method, " ", request.path, " failed inside the master: ", what)));
}

Reply Router::Table::Refuse(const httplib::Request& request, const absl::Status& why) const {
  Reply reply = ErrorReply(why);
  metrics_->RecordUnmatched(request.method, reply.code);
  return reply;
}

}  // namespace cohort::master::http
