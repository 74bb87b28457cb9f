#pragma once
// ClusterAuthenticator: the master's three kinds of caller and their credentials
// (docs/architecture.md §9, docs/security.md), all presented as
// `Authorization: Bearer CREDENTIAL`:
//   * agents: the cluster's agent secret (AgentSecretAuthenticator, its base);
//   * users:  a login token (users::Users::Authenticate): Caller::Kind::kUser with the user's
//             name and admin flag; the web page's comes in its session cookie instead
//             (session_cookie.h: only with the page's header; a Bearer token wins);
//   * trials: their allocation's token, valid only on the routes of that allocation
//             (Require::kAllocation: the route's first capture names it) and only while it runs.
// Admission, per route (RouteOptions::require):
//   kAnyone     everyone;
//   kUser       a user; anyone else 401 saying how to log in (or why the token was refused);
//   kAdmin      an admin; another user 403, anyone else 401;
//   kAgent      an agent (the base class's rule and message);
//   kAllocation the allocation's own token; 404 when that allocation does not run (ended, or
//               the master restarted: what an agent expects), else 401.
//
// Thread-safe: Users and the allocation check are.

#include <functional>
#include <memory>
#include <string>

#include "master/http/agent_secret_authenticator.h"
#include "master/http/session_cookie.h"
#include "master/master.h"
#include "master/users/users.h"

namespace cohort::master::http {

// OK when `token` is the token of the running allocation `allocation`; NotFound when no such
// allocation runs; Unauthenticated otherwise.
using AllocationTokenCheck =
    std::function<absl::Status(const std::string& allocation, const std::string& token)>;

class ClusterAuthenticator : public AgentSecretAuthenticator {
 public:
  // `users` must outlive the authenticator. `admin_password_file`: named in the 401 that tells
  // a caller how to log in (empty: not named).
  ClusterAuthenticator(std::string agent_secret, std::string secret_file, users::Users* users,
                       AllocationTokenCheck allocation_check, std::string admin_password_file = "");

  // An agent (the secret), a user (a login token), or anonymous. On an allocation's route
  // (Require::kAllocation), which admits no user, a bearer token is not looked up among users'
  // (a database read per post of every trial): Admit checks it as the allocation's.
  absl::StatusOr<Caller> Authenticate(const httplib::Request& request, Require require) override;
  absl::Status Admit(const Caller& caller, Require require,
                     const httplib::Request& request) override;

 private:
  absl::Status NotAUser(const Caller& caller, const httplib::Request& request) const;

  users::Users* users_;
  AllocationTokenCheck allocation_check_;
  std::string admin_password_file_;
};

// The master's authenticator: its users, its allocations' tokens and `agent_secret`. `master`
// must outlive it.
std::unique_ptr<ClusterAuthenticator> MakeClusterAuthenticator(
    Master& master, std::string agent_secret, std::string secret_file,
    std::string admin_password_file = "");

}  // namespace cohort::master::http
