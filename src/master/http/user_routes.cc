#include "cohort/status.h"
#include "master/http/session_cookie.h"
#include "master/http/routes.h"
#include "wire/user_bodies.h"

namespace cohort::master::http {
namespace {

// The Identity of the user calling (Users' admin checks take it).
users::Identity IdentityOf(const Caller& caller) {
  return users::Identity{0, caller.name, caller.admin, caller.token_hash};
}

wire::UserSummary Summary(const UserRow& row) {
  return {row.name, row.admin, row.active, row.created_ms};
}

absl::StatusOr<Reply> Login(users::Users& users, const Request& req, bool https) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(wire::LoginRequest login, wire::ParseLoginRequest(body));
  absl::StatusOr<users::Users::LoginResult> result =
      users.Login(login.username, login.password, req.raw().remote_addr);
  if (absl::IsResourceExhausted(result.status())) {
    return TooManyRequests(result.status().message());
  }
  if (!result.ok()) return result.status();
  wire::LoginResponse response{result->token, result->user.name, result->user.admin,
                               result->expires_ms};
  if (!login.cookie) return Reply::Ok(response.ToJson());
  response.token.clear();  // the page's scripts never see it
  Reply reply = Reply::Ok(response.ToJson());
  reply.headers.emplace_back(
      "Set-Cookie", SessionCookie(result->token, result->lifetime, https));
  return reply;
}

absl::StatusOr<Reply> Me(users::Users& users, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(UserRow row, users.Get(req.caller().name));
  return Reply::Ok(Summary(row).ToJson());
}

absl::StatusOr<Reply> ListUsers(users::Users& users, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(std::vector<UserRow> rows, users.List(IdentityOf(req.caller())));
  wire::UserList list;
  for (const UserRow& row : rows) list.users.push_back(Summary(row));
  return Reply::Ok(list.ToJson());
}

absl::StatusOr<Reply> CreateUser(users::Users& users, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(wire::NewUser user, wire::ParseNewUser(body));
  COHORT_RETURN_IF_ERROR(
      users.Create(IdentityOf(req.caller()), user.username, user.password, user.admin));
  return Reply::Ok(wire::OkBody(), 201);
}

absl::StatusOr<Reply> SetPassword(users::Users& users, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
  COHORT_ASSIGN_OR_RETURN(wire::PasswordChange change, wire::ParsePasswordChange(body));
  COHORT_RETURN_IF_ERROR(users.SetPassword(IdentityOf(req.caller()), req.PathPart(1),
                                           change.old_password, change.password));
  return Reply::Done();
}

}  // namespace

void AddUserRoutes(Router& router, users::Users& users, bool https) {
  // Open: anyone who reaches the port may send these, so their bodies are small. A login waits
  // for the hash pool (users/hash_pool.h), not for the handlers' gate: a flood of logins never
  // holds the places other requests need, and past the pool's queue it is refused (503).
  const RouteOptions kOpen{
      .require = Require::kAnyone, .max_body = kMaxOpenBodyBytes, .waits = true};
  router.Get(
      "/api/v1/info",
      [](const Request&) -> absl::StatusOr<Reply> {
        return Reply::Ok(wire::MasterInfo{COHORT_VERSION, false}.ToJson());
      },
      kOpen);
  router.Post(
      "/api/v1/auth/login", [&users, https](const Request& req) { return Login(users, req, https); },
      kOpen);
  router.Post("/api/v1/auth/logout", [&users, https](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_RETURN_IF_ERROR(users.Logout(IdentityOf(req.caller())));
    Reply reply = Reply::Done();
    reply.headers.emplace_back("Set-Cookie", ExpiredSessionCookie(https));
    return reply;
  });
  router.Get("/api/v1/me", [&](const Request& req) { return Me(users, req); });
  router.Get("/api/v1/users", [&](const Request& req) { return ListUsers(users, req); },
             {.require = Require::kAdmin});
  router.Post("/api/v1/users", [&](const Request& req) { return CreateUser(users, req); },
              {.require = Require::kAdmin});
  router.Post(R"(/api/v1/users/([^/]+)/(activate|deactivate))",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_RETURN_IF_ERROR(users.SetActive(IdentityOf(req.caller()), req.PathPart(1),
                                                       req.PathPart(2) == "activate"));
                return Reply::Done();
              },
              {.require = Require::kAdmin});
  // Users set their own (with the old one); admins anyone's: Users decides.
  router.Post(R"(/api/v1/users/([^/]+)/password)",
              [&](const Request& req) { return SetPassword(users, req); });
}

}  // namespace cohort::master::http
