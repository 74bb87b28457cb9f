#include "client/master_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/local_cluster.h"
#include "common/json_bounded.h"
#include "common/small_file.h"
#include "wire/cluster_bodies.h"

namespace cohort::client {
namespace {

void SetTimeout(httplib::Client& client, absl::Duration timeout) {
  const auto us = std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  // A connection is made within 5 s, or within the request's own shorter timeout.
  const absl::Duration connect = std::min(timeout, absl::Seconds(5));
  client.set_connection_timeout(std::chrono::microseconds(absl::ToInt64Microseconds(connect)));
  client.set_read_timeout(us);
  client.set_write_timeout(us);
}

// A failed request's answer as one message: the master's "error", then each of its "errors"
// on a line of its own, indented; the raw body when it is no wire::ErrorBody.
std::string ErrorMessage(const std::string& raw, const Json& body) {
  absl::StatusOr<wire::ErrorBody> error = wire::ParseErrorBody(body);
  if (!error.ok()) return raw;
  std::string message = error->error;
  for (const std::string& e : error->errors) absl::StrAppend(&message, "\n  ", e);
  return message;
}

// A marker on TLS failures (IsTlsFailure): the type URL of an empty payload.
constexpr char kTlsFailure[] = "type.cohort.dev/TlsFailure";

absl::Status TlsFailure(std::string message) {
  absl::Status status = absl::FailedPreconditionError(std::move(message));
  status.SetPayload(kTlsFailure, absl::Cord());
  return status;
}

// OpenSSL's reason for the first failure on this thread since ERR_clear_error() (e.g. "wrong
// version number"; later ones, such as "shutdown while in init", follow from it), or "".
std::string OpenSslReason() {
  const unsigned long error = ERR_peek_error();
  if (error == 0) return "";
  const char* reason = ERR_reason_error_string(error);
  return reason != nullptr ? reason : absl::StrCat("OpenSSL error ", error);
}

// "HOST" of "https://HOST:PORT/...".
std::string UrlHost(const std::string& url) {
  std::string rest = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (absl::StartsWith(rest, "[")) return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

// Whether `https_url` (https://HOST:PORT) answers plain HTTP: a master started without
// --tls-cert. Its answer to a TLS hello varies (a 400 in plain text, which OpenSSL reports as
// "wrong version number", or a closed connection), so an unclear handshake failure asks once.
bool AnswersPlainHttp(const std::string& https_url) {
  if (!absl::StartsWith(https_url, "https://")) return false;
  httplib::Client plain("http://" + https_url.substr(8));
  plain.set_connection_timeout(std::chrono::seconds(2));
  plain.set_read_timeout(std::chrono::seconds(2));
  const httplib::Result answer = plain.Get("/api/v1/master");
  return static_cast<bool>(answer);
}

}  // namespace

absl::Status MasterClient::TlsError(const httplib::Client& client, const std::string& what,
                                    httplib::Error error) const {
  if (error == httplib::Error::SSLLoadingCerts) {
    std::error_code ec;
    return TlsFailure(absl::StrCat("the TLS CA file ", tls_ca_file_,
                                   " (--tls-ca or $COHORT_TLS_CA) ",
                                   std::filesystem::exists(tls_ca_file_, ec)
                                       ? absl::StrCat("cannot be loaded (", OpenSslReason(),
                                                      "): it must hold PEM certificates")
                                       : std::string("does not exist")));
  }
  if (error == httplib::Error::SSLServerVerification) {
    const long verify = client.get_openssl_verify_result();
    if (verify == X509_V_OK) {  // the chain is trusted: the name is what failed
      return TlsFailure(absl::StrCat(
          "the master at ", url_, " presented a TLS certificate that does not name ", UrlHost(url_),
          ": use a host name or address its subjectAltName lists, or give the "
          "master a certificate for this one"));
    }
    return TlsFailure(
        absl::StrCat("the master at ", url_, " presented a TLS certificate that is not trusted by ",
                     tls_ca_file_.empty() ? std::string("the system's certificate store")
                                          : absl::StrCat("the CA in ", tls_ca_file_),
                     " (", X509_verify_cert_error_string(verify),
                     "): pass the CA that signed it with --tls-ca FILE (or $COHORT_TLS_CA)"));
  }
  const std::string reason = OpenSslReason();
  const std::string message = absl::StrCat(
      "the TLS handshake with the master at ", url_, " failed (", what, ": ",
      reason.empty() ? "the connection closed" : reason,
      "): does it serve HTTPS? A master started without --tls-cert serves http:// URLs");
  // The master answers plain HTTP, which retrying cannot fix.
  if (reason == "wrong version number" || AnswersPlainHttp(url_)) return TlsFailure(message);
  return absl::UnavailableError(message);
}

absl::Status MasterClient::NoAnswer(const httplib::Client& client, const std::string& what,
                                    const httplib::Result& result) const {
  const httplib::Error error = result.error();
  if (error == httplib::Error::SSLLoadingCerts || error == httplib::Error::SSLServerVerification ||
      error == httplib::Error::SSLConnection) {
    return TlsError(client, what, error);
  }
  if (error == httplib::Error::Read && absl::StartsWith(url_, "http://")) {
    // What an HTTPS master does with plain HTTP: it closes the connection without a word.
    return absl::UnavailableError(absl::StrCat(
        "cannot reach the master at ", url_, ": it closed the connection without answering ", what,
        " (if it serves HTTPS, started with --tls-cert, use https://",
        url_.substr(std::strlen("http://")), "; else it stopped or restarted)"));
  }
  // A URL without its scheme ("nowhere:8080") reaches a master only as plain HTTP on a host
  // that resolves: when it does not, the URL is the likelier mistake than the master.
  const bool has_scheme = absl::StartsWith(url_, "http://") || absl::StartsWith(url_, "https://");
  return absl::UnavailableError(absl::StrCat(
      "cannot reach the master at ", url_, " (", what, ": ", httplib::to_string(error), "): ",
      has_scheme ? "is cohort-master running? (`cohort cluster up` starts a local one; "
                   "--master or $COHORT_MASTER names another)"
                 : "a master URL starts with http:// or https://, e.g. http://10.0.0.5:8080 "
                   "(--master or $COHORT_MASTER)"));
}

absl::StatusOr<Json> MasterClient::Interpret(const httplib::Client& client, const std::string& what,
                                             const httplib::Result& result) const {
  if (!result) return NoAnswer(client, what, result);
  return InterpretAnswer(what, result->status, result->body);
}

absl::StatusOr<Json> MasterClient::InterpretAnswer(const std::string& what, int status,
                                                   const std::string& raw) const {
  // The answer is outside input too: its nesting is bounded before nlohmann's parser recurses.
  if (absl::Status depth = CheckJsonDepth(raw); !depth.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the answer from the master at ", url_, " (",
                                                   what, ") is refused: ", depth.message()));
  }
  Json body = Json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (status >= 200 && status < 300) {
    if (body.is_discarded()) return Json::object();
    return body;
  }
  return AnswerStatus(url_, status, ErrorMessage(raw, body));
}

absl::Status AnswerStatus(const std::string& url, int code, const std::string& message) {
  if (code >= 200 && code < 300) return absl::OkStatus();
  if (code == 401) return absl::UnauthenticatedError(message);
  if (code == 404) return absl::NotFoundError(message);
  if (code == 409) return absl::FailedPreconditionError(message);
  if (code >= 400 && code < 500) return absl::InvalidArgumentError(message);
  // It cannot answer now (shutting down, too many logins at once): a retry may succeed, so
  // what an agent holds for it is kept, as when it is unreachable.
  if (code == 503) {
    return absl::UnavailableError(
        absl::StrCat("the master at ", url, " cannot answer now (HTTP 503): ", message));
  }
  return absl::InternalError(absl::StrCat("the master failed (HTTP ", code, "): ", message));
}

MasterClient::MasterClient(std::string url, absl::Duration timeout)
    : url_(std::move(url)), timeout_(timeout) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

MasterClient::~MasterClient() = default;
MasterClient::MasterClient(MasterClient&&) noexcept = default;
MasterClient& MasterClient::operator=(MasterClient&&) noexcept = default;

httplib::Client& MasterClient::Connection(absl::Duration timeout) {
  if (connection_ == nullptr) {
    connection_ = std::make_unique<httplib::Client>(url_);
    connection_->set_keep_alive(true);
    // A request is written as headers, then body: without it, Nagle's algorithm holds the body
    // back until the master's delayed ACK (~40 ms).
    connection_->set_tcp_nodelay(true);
    live_->store(connection_.get());
  }
  Prepare(*connection_, timeout);
  return *connection_;
}

void MasterClient::Abort() {
  // cpp-httplib's stop() only shuts the socket down while a request uses it: thread-safe.
  if (httplib::Client* client = live_->load()) client->stop();
}

void MasterClient::Prepare(httplib::Client& client, absl::Duration timeout) const {
  SetTimeout(client, timeout);
  client.set_bearer_token_auth(bearer_token_);  // empty: none (a kept client forgets the last)
  // Verification is on (cpp-httplib's default); the CA file replaces the system's store.
  client.enable_server_certificate_verification(true);
  if (!tls_ca_file_.empty()) client.set_ca_cert_path(tls_ca_file_);
  ERR_clear_error();  // OpenSslReason() reads what this request leaves behind
}

absl::StatusOr<Json> MasterClient::Get(const std::string& path) { return Get(path, timeout_); }

absl::StatusOr<Json> MasterClient::Get(const std::string& path, absl::Duration timeout) {
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout);
    return Interpret(client, "GET " + path, client.Get(path));
  });
}

absl::StatusOr<Json> MasterClient::Post(const std::string& path, const Json& body) {
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout_);
    // Bytes that are not UTF-8 (a trial's output the agent forwards) go as U+FFFD rather than
    // throwing: no body makes a request fail before it is sent.
    const std::string text = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    return Interpret(client, "POST " + path, client.Post(path, text, "application/json"));
  });
}

absl::StatusOr<Json> MasterClient::Put(const std::string& path, const std::string& body,
                                       const std::string& content_type) {
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout_);
    return Interpret(client, "PUT " + path, client.Put(path, body, content_type));
  });
}

absl::StatusOr<Json> MasterClient::Patch(const std::string& path, const Json& body) {
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout_);
    const std::string text = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    return Interpret(client, "PATCH " + path, client.Patch(path, text, "application/json"));
  });
}

absl::StatusOr<Json> MasterClient::Delete(const std::string& path) {
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout_);
    return Interpret(client, "DELETE " + path, client.Delete(path));
  });
}

absl::StatusOr<Json> MasterClient::PostForm(const std::string& path,
                                            const std::vector<FormPart>& parts) {
  httplib::MultipartFormDataItems items;
  for (const FormPart& p : parts) items.push_back({p.name, p.content, p.filename, p.content_type});
  return WithRelogin([&] {
    httplib::Client& client = Connection(timeout_);
    return Interpret(client, "POST " + path, client.Post(path, items));
  });
}

absl::StatusOr<std::string> MasterClient::GetBytes(const std::string& path) {
  httplib::Client& client = Connection(timeout_);
  httplib::Result result = client.Get(path);
  if (!result || result->status != 200) {
    absl::StatusOr<Json> error = Interpret(client, "GET " + path, result);
    if (!error.ok()) return error.status();
    return absl::InternalError(absl::StrCat("GET ", path, ": HTTP ", result->status));
  }
  return result->body;
}

absl::StatusOr<std::map<std::string, std::string>> MasterClient::Download(
    const std::string& path, const std::string& file, const Progress& progress) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", file, ": ", std::strerror(errno)));
  }
  httplib::Client& client = Connection(timeout_);  // a read timeout per chunk, not the body
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string error_body;  // the body of an error answer, kept to say what went wrong
  int64_t received = 0;
  httplib::Result result = client.Get(
      path,
      [&](const httplib::Response& r) {
        status = r.status;
        for (const auto& [name, value] : r.headers) headers[name] = value;
        return true;
      },
      [&](const char* data, size_t size) {
        if (status != 200) {
          if (error_body.size() < (1u << 20)) error_body.append(data, size);
          return true;
        }
        out.write(data, static_cast<std::streamsize>(size));
        received += static_cast<int64_t>(size);
        if (progress) progress(received);
        return static_cast<bool>(out);
      });
  if (!out) return absl::ResourceExhaustedError(absl::StrCat("writing ", file, " failed"));
  if (!result) {
    if (received > 0) {
      return absl::UnavailableError(
          absl::StrCat("the download of ", path, " broke off after ", received, " bytes (",
                       httplib::to_string(result.error()), "); try again"));
    }
    return NoAnswer(client, "GET " + path, result);
  }
  if (status != 200) {
    absl::StatusOr<Json> error = InterpretAnswer("GET " + path, status, error_body);
    return error.ok() ? absl::InternalError(absl::StrCat("GET ", path, ": HTTP ", status))
                      : error.status();
  }
  out.close();
  if (!out) return absl::ResourceExhaustedError(absl::StrCat("writing ", file, " failed"));
  return headers;
}


std::string QueryEscape(const std::string& value) {
  return httplib::detail::encode_query_param(value);
}

std::string MasterUrl(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("COHORT_MASTER"); env != nullptr && *env != '\0') return env;
  if (std::optional<std::string> local = LocalClusterUrl()) return *local;
  return "http://127.0.0.1:8080";
}

std::string TlsCaFile(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("COHORT_TLS_CA"); env != nullptr && *env != '\0') return env;
  return "";
}

bool IsTlsFailure(const absl::Status& status) { return status.GetPayload(kTlsFailure).has_value(); }

}  // namespace cohort::client
