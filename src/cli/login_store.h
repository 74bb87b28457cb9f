#pragma once
// The CLI's logins (docs/security.md, "Users and tokens"): per master URL, the user and the
// login token, kept in $XDG_CONFIG_HOME/cohort/auth.json (else ~/.config/cohort/auth.json), a
// file only its owner may read (mode 0600, written atomically), in a directory of mode 0700.
// The file looks like
//   {"masters": {"http://127.0.0.1:8080": {"username": "admin", "token": "..."}}}
// A missing or unreadable file holds no logins (a malformed one is replaced at the next save).
// Also where a verb gets its logged-in client: LoggedInClient. Thread-compatible (one CLI
// process; two CLIs saving at once: the last write wins, each write is whole).

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/master_client.h"
#include "wire/user_bodies.h"

namespace cohort::cli {

struct StoredLogin {
  std::string username;
  std::string token;
};

// Where the logins are kept.
std::string LoginFilePath();
// The login stored for `url`; nullopt when there is none.
std::optional<StoredLogin> LoadLogin(const std::string& url);
// Stores `login` for `url` (replacing an earlier one). Errors name the file.
absl::Status SaveLogin(const std::string& url, const StoredLogin& login);
// Forgets the login for `url` (OK when there was none).
absl::Status ForgetLogin(const std::string& url);

// Logs in to the master `client` talks to as `username` and stores the token for its URL.
absl::StatusOr<wire::LoginResponse> LogIn(client::MasterClient& client, const std::string& username,
                                          const std::string& password);

// A client of `url` that presents the login stored for it and verifies an https:// master
// against `tls_ca_file` (empty: the system's store). With $COHORT_USER and $COHORT_PASSWORD set
// (scripts), a 401 makes it log in as that user once (storing the token) and send the request
// again.
client::MasterClient LoggedInClient(const std::string& url, absl::Duration timeout,
                                    const std::string& tls_ca_file);

}  // namespace cohort::cli
