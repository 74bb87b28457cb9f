#include "master/http/cluster_authenticator.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "master/http/session_cookie.h"

namespace cohort::master::http {

std::unique_ptr<ClusterAuthenticator> MakeClusterAuthenticator(Master& master,
                                                               std::string agent_secret,
                                                               std::string secret_file,
                                                               std::string admin_password_file) {
  return std::make_unique<ClusterAuthenticator>(
      std::move(agent_secret), std::move(secret_file), &master.users(),
      [&master](const std::string& allocation, const std::string& token) {
        return master.CheckAllocationToken(allocation, token);
      },
      std::move(admin_password_file));
}

ClusterAuthenticator::ClusterAuthenticator(std::string agent_secret, std::string secret_file,
                                           users::Users* users,
                                           AllocationTokenCheck allocation_check,
                                           std::string admin_password_file)
    : AgentSecretAuthenticator(std::move(agent_secret), std::move(secret_file)),
      users_(users),
      allocation_check_(std::move(allocation_check)),
      admin_password_file_(std::move(admin_password_file)) {}

absl::StatusOr<Caller> ClusterAuthenticator::Authenticate(const httplib::Request& request,
                                                          Require require) {
  absl::StatusOr<Caller> agent = AgentSecretAuthenticator::Authenticate(request, require);
  if (!agent.ok() || agent->kind == Caller::Kind::kAgent) return agent;
  if (require == Require::kAllocation) return Caller{};
  const Credential credential = UserCredential(request);
  if (credential.source == CredentialSource::kCookieWithoutHeader) {
    return Caller{.refused = absl::StrCat(
                      "the session cookie counts only on the web page's own requests (with the "
                      "header ", kPageRequestHeader, "); programs send `Authorization: Bearer`")};
  }
  if (credential.token.empty()) return Caller{};
  absl::StatusOr<users::Identity> user = users_->Authenticate(credential.token);
  if (user.ok()) {
    return Caller{.kind = Caller::Kind::kUser,
                  .name = user->name,
                  .admin = user->admin,
                  .token_hash = user->token_hash};
  }
  if (!absl::IsUnauthenticated(user.status())) return user.status();  // the database failed
  // Not a user's: maybe an allocation's (Admit checks it against the route), maybe nothing.
  return Caller{.refused = std::string(user.status().message())};
}

absl::Status ClusterAuthenticator::NotAUser(const Caller& caller,
                                            const httplib::Request& request) const {
  const std::string route = absl::StrCat(request.method, " ", request.path);
  if (caller.kind == Caller::Kind::kAgent) {
    return absl::UnauthenticatedError(
        absl::StrCat(route, " is for users, not agents: log in with `cohort user login`"));
  }
  if (!caller.refused.empty()) return absl::UnauthenticatedError(caller.refused);
  return absl::UnauthenticatedError(absl::StrCat(
      route,
      " needs a user's login token: log in with `cohort user login` (or set "
      "$COHORT_USER and $COHORT_PASSWORD)",
      admin_password_file_.empty()
          ? ""
          : absl::StrCat("; the first admin's password is in ", admin_password_file_)));
}

absl::Status ClusterAuthenticator::Admit(const Caller& caller, Require require,
                                         const httplib::Request& request) {
  switch (require) {
    case Require::kAnyone:
      return absl::OkStatus();
    case Require::kUser:
      if (caller.kind == Caller::Kind::kUser) return absl::OkStatus();
      return NotAUser(caller, request);
    case Require::kAdmin:
      if (caller.kind != Caller::Kind::kUser) return NotAUser(caller, request);
      if (caller.admin) return absl::OkStatus();
      return absl::PermissionDeniedError(absl::StrCat(
          request.method, " ", request.path, " is for admins; '", caller.name, "' is not one"));
    case Require::kAgent:
      return AgentSecretAuthenticator::Admit(caller, require, request);
    case Require::kAllocation:
      break;
  }
  const std::string allocation = request.matches.size() > 1 ? request.matches[1].str() : "";
  absl::Status status = allocation_check_(allocation, BearerCredential(request));
  if (absl::IsUnauthenticated(status)) {
    return absl::UnauthenticatedError(absl::StrCat(
        request.method, " ", request.path, " is for allocation ", allocation,
        " only: present its token (the agent's start action, $COHORT_ALLOCATION_TOKEN)"));
  }
  return status;
}

}  // namespace cohort::master::http
