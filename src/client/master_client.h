#pragma once
// MasterClient: the one HTTP client of the master's REST API (docs/design/0006-cluster.md), shared
// by the CLI and the agent (docs/architecture.md §2: what master, agent and cli share lives in one
// small place). Bodies are JSON; every call has a deadline; errors are Statuses that say what
// to do:
//   the master unreachable -> Unavailable "cannot reach the master at URL (...): is
//                              cohort-master running? (`cohort cluster up` starts one)"
//   a 401 answer           -> Unauthenticated with the master's text (which says what to pass)
//   another 4xx answer     -> InvalidArgument / NotFound / FailedPrecondition with the master's
//                              {"error": ...} text (and its "errors" list, one per line)
//   a 503 answer           -> Unavailable with the master's text (it cannot answer now:
//                              shutting down, say; a retry may succeed)
//   another 5xx answer     -> Internal with the master's text
//   a TLS failure          -> FailedPrecondition saying what to fix, marked so that
//                              IsTlsFailure() is true: the certificate is not trusted or does
//                              not name the host, the CA file cannot be loaded, or the master
//                              does not speak TLS (retrying cannot help)
// An https:// URL is verified (the certificate chains to the CA file, else the system's store,
// and names the URL's host); an http:// URL is plain HTTP. Neither is ever turned into the other.
// A client keeps its connection open between requests (HTTP keep-alive, TCP_NODELAY): an agent's
// posts cost no TCP handshake and no thread start in the master each. A kept connection the
// master has closed (idle for a minute, or restarted) is noticed before it is
// used and replaced; a request the master never answered is Unavailable, as ever.
// Thread-compatible: one client per thread (cheap to create; its connection opens at first use).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace httplib {
class Client;
class Result;
enum class Error;
}  // namespace httplib

namespace cohort::client {

using Json = nlohmann::json;

struct FormPart {
  std::string name;
  std::string content;
  std::string filename;      // non-empty: sent as a file
  std::string content_type;  // e.g. application/gzip
};

// The Status of the master's answer `code` with its error text `message` (the table above;
// OK for a 2xx). For answers that arrive inside another's body (an agent's combined post's
// per-item codes).
absl::Status AnswerStatus(const std::string& url, int code, const std::string& message);

class MasterClient {
 public:
  // `url`: http://HOST:PORT or https://HOST:PORT. `timeout`: per request (a long poll passes its
  // own).
  explicit MasterClient(std::string url, absl::Duration timeout = absl::Seconds(30));
  ~MasterClient();
  MasterClient(MasterClient&&) noexcept;
  MasterClient& operator=(MasterClient&&) noexcept;

  // `path` starts with /api/v1/.
  absl::StatusOr<Json> Get(const std::string& path);
  absl::StatusOr<Json> Get(const std::string& path, absl::Duration timeout);
  absl::StatusOr<Json> Post(const std::string& path, const Json& body = Json::object());
  absl::StatusOr<Json> Put(const std::string& path, const std::string& body,
                           const std::string& content_type);
  absl::StatusOr<Json> Patch(const std::string& path, const Json& body);
  absl::StatusOr<Json> Delete(const std::string& path);
  absl::StatusOr<Json> PostForm(const std::string& path, const std::vector<FormPart>& parts);
  // The raw body of a GET (the context archive).
  absl::StatusOr<std::string> GetBytes(const std::string& path);
  // Streams the body of a GET into the file `file` (created or truncated), calling `progress`
  // with the bytes received so far after each chunk; the response's headers are returned. An
  // error answer is turned into a Status as Get's are (nothing useful is left in `file`); a
  // connection that breaks off mid-body is Unavailable.
  using Progress = std::function<void(int64_t received)>;
  absl::StatusOr<std::map<std::string, std::string>> Download(const std::string& path,
                                                              const std::string& file,
                                                              const Progress& progress);

  const std::string& url() const { return url_; }
  // The per-request timeout of later requests (a long poll passes its own).
  void set_timeout(absl::Duration timeout) { timeout_ = timeout; }
  // Ends the request in flight now: it fails Unavailable (a later request opens a new
  // connection). The one method another thread may call, while the client lives; nothing in
  // flight: nothing happens.
  void Abort();
  // Sends `Authorization: Bearer TOKEN` on every later request (a user's login token, the
  // agents' cluster secret, an allocation's token); empty: none.
  void set_bearer_token(std::string token) { bearer_token_ = std::move(token); }
  // When a request is answered 401, `login` is called once for a new token (a user's scripted
  // login) and the request is sent again with it; its error, if any, is returned instead.
  void set_relogin(std::function<absl::StatusOr<std::string>()> login) {
    relogin_ = std::move(login);
  }
  // The CA certificates (a PEM file) an https:// master's certificate must chain to; empty
  // (the default): the system's store. Not used for http:// URLs. A file that is missing or
  // holds no certificate fails each request with IsTlsFailure().
  void set_tls_ca_file(std::string path) { tls_ca_file_ = std::move(path); }
  const std::string& tls_ca_file() const { return tls_ca_file_; }

 private:
  // Runs `request` (which sends with the current token); on a 401 with a relogin set, logs in
  // again once and repeats it.
  template <typename Request>
  auto WithRelogin(Request request) -> decltype(request()) {
    auto result = request();
    if (!absl::IsUnauthenticated(result.status()) || !relogin_ || relogged_) return result;
    relogged_ = true;
    absl::StatusOr<std::string> token = relogin_();
    if (!token.ok()) return token.status();
    bearer_token_ = *std::move(token);
    return request();
  }
  // The kept connection's client (made at first use), ready for a request with `timeout`.
  httplib::Client& Connection(absl::Duration timeout);
  void Prepare(httplib::Client& client, absl::Duration timeout) const;
  // The request's answer as JSON, or the error the class comment lists.
  absl::StatusOr<Json> Interpret(const httplib::Client& client, const std::string& what,
                                 const httplib::Result& result) const;
  // Interpret of an answer that came: its HTTP status and body.
  absl::StatusOr<Json> InterpretAnswer(const std::string& what, int status,
                                       const std::string& body) const;
  // Why the request `what` got no answer (`result` holds no response).
  absl::Status NoAnswer(const httplib::Client& client, const std::string& what,
                        const httplib::Result& result) const;
  // The error for a TLS failure of `client` (`error` is one of cpp-httplib's SSL errors).
  absl::Status TlsError(const httplib::Client& client, const std::string& what,
                        httplib::Error error) const;

  std::string url_;
  absl::Duration timeout_;
  std::string bearer_token_;
  std::function<absl::StatusOr<std::string>()> relogin_;
  bool relogged_ = false;  // at most one login per client
  std::string tls_ca_file_;
  std::unique_ptr<httplib::Client> connection_;
  // connection_ once made, for Abort from another thread (a pointer: the client stays movable).
  std::unique_ptr<std::atomic<httplib::Client*>> live_ =
      std::make_unique<std::atomic<httplib::Client*>>(nullptr);
};

// Whether `status` (from a MasterClient) is a TLS failure: the master's certificate is not
// trusted or does not name its host, the CA file cannot be used, or one side speaks TLS and the
// other does not. Fixing it takes a flag or a file, so callers that retry should stop.
bool IsTlsFailure(const absl::Status& status);


// `value` escaped for a URL's query string ("validation/acc top1" -> "validation%2Facc%20top1").
std::string QueryEscape(const std::string& value);

// The master URL a command should use: `flag` when set, else $COHORT_MASTER, else the local
// cluster's (the address `cohort cluster up` recorded), else http://127.0.0.1:8080.
std::string MasterUrl(const std::string& flag);

// The CA file that MasterClient::set_tls_ca_file should get: `flag` (--tls-ca) when set, else
// $COHORT_TLS_CA, else empty (the system's store).
std::string TlsCaFile(const std::string& flag);

}  // namespace cohort::client
