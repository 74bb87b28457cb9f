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
#include "cohort/status.h"
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
    case absl::StatusCode::kAborted:  // the database's concurrent writers kept winning: retry
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
    : metrics_(std::make_shared<RequestMetrics>()),
      table_(std::make_shared<Table>()),
      gate_(concurrent_handlers > 0 ? std::make_shared<AdmissionGate>(concurrent_handlers)
                                    : nullptr) {
  table_->metrics_ = metrics_;
  table_->authenticator_ = std::move(authenticator);
  table_->guard_ = guard;
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

void Router::Add(const char* method, const std::string& pattern, Handler handler,
                 RouteOptions options) {
  const bool open = options.require == Require::kAnyone;
  size_t max_body = options.max_body.value_or(open ? kMaxOpenBodyBytes : wire::kMaxJsonBodyBytes);
  if (open) max_body = std::min(max_body, kMaxOpenBodyBytes);
  table_->routes_.push_back({.method = method,
                             .pattern = std::regex(pattern),
                             .handler = std::move(handler),
                             .require = options.require,
                             .max_body = max_body,
                             .timer = metrics_->ForRoute(method, pattern),
                             .gate = options.waits ? nullptr : gate_});
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

void Router::Patch(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("PATCH", pattern, std::move(handler), options);
}

void Router::Delete(const std::string& pattern, Handler handler, RouteOptions options) {
  Add("DELETE", pattern, std::move(handler), options);
}

absl::Status Router::Table::CheckHead(const Route& route, const httplib::Request& request,
                                      Caller* caller) const {
  COHORT_RETURN_IF_ERROR(guard_.Check(request));
  COHORT_ASSIGN_OR_RETURN(*caller, authenticator_->Authenticate(request, route.require));
  COHORT_RETURN_IF_ERROR(authenticator_->Admit(*caller, route.require, request));
  uint64_t declared = 0;
  if (absl::SimpleAtoi(request.get_header_value("Content-Length"), &declared) &&
      declared > route.max_body) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request body is ", declared, " bytes; this endpoint takes at most ", route.max_body));
  }
  return absl::OkStatus();
}

Router::Table::Admission Router::Table::Admit(httplib::Request& request) const {
  Admission admission;
  try {
    const absl::string_view method =
        request.method == "HEAD" ? absl::string_view("GET") : absl::string_view(request.method);
    for (const Route& route : routes_) {
      if (route.method == method &&
          std::regex_match(request.path, request.matches, route.pattern)) {
        admission.route = &route;
        break;
      }
    }
    if (admission.route == nullptr) {
      admission.refusal =
          Refuse(request, absl::NotFoundError(absl::StrCat("no such endpoint: ", request.method,
                                                           " ", request.path)));
      return admission;
    }
    admission.max_body = admission.route->max_body;
    if (absl::Status head = CheckHead(*admission.route, request, &admission.caller); !head.ok()) {
      admission.refusal = ErrorReply(head);
      admission.route->timer.Record(admission.refusal->code, 0);
    }
  } catch (const std::exception& e) {
    COHORT_LOG(ERROR) << request.method << " " << request.path << ": " << e.what();
    admission.refusal = ErrorReply(absl::InternalError(
        absl::StrCat(request.method, " ", request.path, " failed inside the master: ", e.what())));
  }
  return admission;
}

Reply Router::Table::RunRoute(const Admission& admission, const httplib::Request& request) const {
  const Route& route = *admission.route;
  // The time at the gate counts: the caller waits it too. An exception leaves as a 500.
  const auto start = std::chrono::steady_clock::now();
  int status = 500;
  absl::Cleanup record = [&] {
    route.timer.Record(
        status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  std::optional<AdmissionGate::Ticket> ticket;
  if (route.gate != nullptr) ticket.emplace(*route.gate);
  absl::StatusOr<Reply> reply = route.handler(Request(request, admission.caller));
  Reply out = reply.ok() ? *std::move(reply) : ErrorReply(reply.status());
  status = out.code;
  return out;
}

Reply Router::Table::Serve(const Admission& admission, const httplib::Request& request) const {
  if (admission.refusal) return *admission.refusal;
  if (const size_t size = BodySize(request); size > admission.max_body) {
    return TooLargeBody(admission, request, size);
  }
  std::string what = "unknown exception";
  try {
    return RunRoute(admission, request);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  COHORT_LOG(ERROR) << request.method << " " << request.path << ": " << what;
  return ErrorReply(absl::InternalError(
      absl::StrCat(request.method, " ", request.path, " failed inside the master: ", what)));
}

Reply Router::Table::TooLargeBody(const Admission& admission, const httplib::Request& request,
                                  uint64_t bytes) const {
  Reply reply = ErrorReply(absl::ResourceExhaustedError(
      absl::StrCat("the request body is ", bytes, " bytes or more; this endpoint takes at most ",
                   admission.max_body)));
  if (admission.route != nullptr) {
    admission.route->timer.Record(reply.code, 0);
  } else {
    metrics_->RecordUnmatched(request.method, reply.code);
  }
  return reply;
}

Reply Router::Table::Refuse(const httplib::Request& request, const absl::Status& why) const {
  Reply reply = ErrorReply(why);
  metrics_->RecordUnmatched(request.method, reply.code);
  return reply;
}

}  // namespace cohort::master::http
