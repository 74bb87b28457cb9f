#pragma once
// The agents' cluster secret (docs/security.md, "Agents"): the master keeps a random 256-bit
// secret in a file only its user can read; agents present it as `Authorization: Bearer
// SECRET`. AgentSecretAuthenticator makes such a caller an agent (constant-time comparison) and
// admits only agents to the routes that require one (Require::kAgent); every other caller is
// anonymous. The master uses it through ClusterAuthenticator (cluster_authenticator.h), which
// adds users and allocations.
//
// Thread-safe: the authenticator is immutable after construction.

#include <httplib.h>

#include <string>

#include "absl/status/statusor.h"
#include "common/constant_time.h"
#include "master/http/router.h"

namespace cohort::master::http {

// The secret in `path`, creating the file first when it does not exist: 32 bytes from
// /dev/urandom as 64 hex digits, written to a file created exclusively with mode 0600 (never
// readable by others, not even briefly). Errors name the file: it cannot be created or read,
// or it exists but group or others may read it (fix: chmod 600 PATH).
absl::StatusOr<std::string> LoadOrCreateAgentSecret(const std::string& path);

using ::cohort::ConstantTimeEquals;  // common/constant_time.h

class AgentSecretAuthenticator : public Authenticator {
 public:
  // `secret`: what agents present; `secret_file`: where it is kept, named in refusals.
  AgentSecretAuthenticator(std::string secret, std::string secret_file);

  // A caller with `Authorization: Bearer SECRET` is Caller::Kind::kAgent; any other caller
  // (no header, another scheme, a wrong secret) is anonymous. Never refuses.
  absl::StatusOr<Caller> Authenticate(const httplib::Request& request, Require require) override;
  // Refuses a non-agent caller on an agent route: Unauthenticated naming the route, the flag
  // and the file to pass. Other routes: Authenticator::Admit.
  absl::Status Admit(const Caller& caller, Require require,
                     const httplib::Request& request) override;

 private:
  const std::string secret_;
  const std::string secret_file_;
};

}  // namespace cohort::master::http
