#include "wire/user_bodies.h"

#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxPasswordBytes = 1024;
constexpr size_t kMaxTokenBytes = 256;
constexpr size_t kMaxUsers = 1 << 20;

absl::StatusOr<UserSummary> ParseUserAt(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  UserSummary u;
  r.Required("username", &u.username, kMaxSafeNameBytes);
  r.Required("admin", &u.admin);
  r.Required("active", &u.active);
  r.Required("created_ms", &u.created_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return u;
}

}  // namespace

Json MasterInfo::ToJson() const { return {{"version", version}, {"tls", tls}}; }

absl::StatusOr<MasterInfo> ParseMasterInfo(const Json& json) {
  FieldReader r(json, "master info");
  MasterInfo info;
  r.Required("version", &info.version, 64);
  r.Optional("tls", &info.tls);
  COHORT_RETURN_IF_ERROR(r.status());
  return info;
}

Json LoginRequest::ToJson() const {
  Json json = {{"username", username}, {"password", password}};
  if (cookie) json["cookie"] = true;
  return json;
}

absl::StatusOr<LoginRequest> ParseLoginRequest(const Json& json) {
  FieldReader r(json, "login");
  LoginRequest login;
  r.Required("username", &login.username, kMaxSafeNameBytes);
  r.Required("password", &login.password, kMaxPasswordBytes);
  r.Optional("cookie", &login.cookie);
  COHORT_RETURN_IF_ERROR(r.status());
  return login;
}

Json LoginResponse::ToJson() const {
  Json json = {{"username", username}, {"admin", admin}, {"expires_ms", expires_ms}};
  if (!token.empty()) json["token"] = token;
  return json;
}

absl::StatusOr<LoginResponse> ParseLoginResponse(const Json& json) {
  FieldReader r(json, "login response");
  LoginResponse login;
  r.Required("token", &login.token, kMaxTokenBytes);
  r.Required("username", &login.username, kMaxSafeNameBytes);
  r.Required("admin", &login.admin);
  r.Required("expires_ms", &login.expires_ms, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return login;
}

Json UserSummary::ToJson() const {
  return {{"username", username}, {"admin", admin}, {"active", active}, {"created_ms", created_ms}};
}

absl::StatusOr<UserSummary> ParseUserSummary(const Json& json) { return ParseUserAt(json, "user"); }

Json UserList::ToJson() const {
  Json list = Json::array();
  for (const UserSummary& u : users) list.push_back(u.ToJson());
  return {{"users", list}};
}

absl::StatusOr<UserList> ParseUserList(const Json& json) {
  FieldReader r(json, "user list");
  UserList out;
  r.Array("users", &out.users, kMaxUsers, FieldReader::kRequired, ParseUserAt);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json NewUser::ToJson() const {
  return {{"username", username}, {"password", password}, {"admin", admin}};
}

absl::StatusOr<NewUser> ParseNewUser(const Json& json) {
  FieldReader r(json, "new user");
  NewUser u;
  r.Required("username", &u.username, kMaxSafeNameBytes);
  r.Required("password", &u.password, kMaxPasswordBytes);
  r.Optional("admin", &u.admin);
  COHORT_RETURN_IF_ERROR(r.status());
  return u;
}

Json PasswordChange::ToJson() const {
  Json body = {{"password", password}};
  if (old_password) body["old_password"] = *old_password;
  return body;
}

absl::StatusOr<PasswordChange> ParsePasswordChange(const Json& json) {
  FieldReader r(json, "password change");
  PasswordChange change;
  r.Required("password", &change.password, kMaxPasswordBytes);
  if (r.Has("old_password")) {
    std::string old;
    r.Required("old_password", &old, kMaxPasswordBytes);
    change.old_password = old;
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return change;
}

}  // namespace cohort::wire
