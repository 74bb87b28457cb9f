#pragma once
// The master's REST bodies about users and their sessions (docs/security.md, "Users and
// tokens"), written by the master and read by the CLI (and the web UI to come), and what the
// CLI sends:
//
//   GET  /api/v1/info                          MasterInfo        (open: no token needed)
//   POST /api/v1/auth/login    LoginRequest -> LoginResponse     (open)
//   POST /api/v1/auth/logout                -> OkBody            (revokes the token sent)
//   With "cookie": true (the web page), the login's token is the HttpOnly session cookie and
//   not in the body, and logout clears it (master/http/session_cookie.h).
//   GET  /api/v1/me                            UserSummary
//   GET  /api/v1/users                         UserList          (admins)
//   POST /api/v1/users         NewUser      -> OkBody            (admins)
//   POST /api/v1/users/{name}/activate|deactivate -> OkBody      (admins)
//   POST /api/v1/users/{name}/password  PasswordChange -> OkBody (admins; a user for their own)
//
// Every other /api/v1 request carries `Authorization: Bearer TOKEN`. Field names and shapes are
// the API's; parsers name the body and the field in errors and ignore unknown fields.
// Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

// What a master says about itself to anyone (the CLI's first question).
struct MasterInfo {
  std::string version;
  bool tls = false;  // it serves HTTPS
  Json ToJson() const;
};
absl::StatusOr<MasterInfo> ParseMasterInfo(const Json& json);

struct LoginRequest {
  std::string username;
  std::string password;
  bool cookie = false;  // the token as the session cookie, not in the answer (the web page)
  Json ToJson() const;
};
absl::StatusOr<LoginRequest> ParseLoginRequest(const Json& json);

struct LoginResponse {
  std::string token;  // send as `Authorization: Bearer TOKEN`; absent for a cookie login
  std::string username;
  bool admin = false;
  int64_t expires_ms = 0;  // unix milliseconds
  Json ToJson() const;
};
absl::StatusOr<LoginResponse> ParseLoginResponse(const Json& json);

struct UserSummary {
  std::string username;
  bool admin = false;
  bool active = true;
  int64_t created_ms = 0;
  Json ToJson() const;
};
absl::StatusOr<UserSummary> ParseUserSummary(const Json& json);

struct UserList {
  std::vector<UserSummary> users;
  Json ToJson() const;
};
absl::StatusOr<UserList> ParseUserList(const Json& json);

struct NewUser {
  std::string username;
  std::string password;
  bool admin = false;
  Json ToJson() const;
};
absl::StatusOr<NewUser> ParseNewUser(const Json& json);

struct PasswordChange {
  std::string password;
  std::optional<std::string> old_password;  // required when users change their own
  Json ToJson() const;
};
absl::StatusOr<PasswordChange> ParsePasswordChange(const Json& json);

}  // namespace cohort::wire
