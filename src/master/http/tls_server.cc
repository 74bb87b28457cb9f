#include "master/http/tls_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cohort::master::http {
namespace {

// OpenSSL's reason for the last failure on this thread (e.g. "no start line").
std::string OpenSslReason() {
  const unsigned long error = ERR_peek_last_error();
  if (error == 0) return "no reason given";
  const char* reason = ERR_reason_error_string(error);
  return reason != nullptr ? reason : absl::StrCat("OpenSSL error ", error);
}

// Fails the load of an encrypted key instead of prompting on the terminal for a pass phrase.
int RefusePassPhrase(char*, int, int, void*) { return 0; }

absl::Status CheckReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read the file (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

// Loads the certificate chain and its key into `ctx`.
absl::Status Configure(SSL_CTX& ctx, const TlsFiles& tls) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  SSL_CTX_set_default_passwd_cb(&ctx, RefusePassPhrase);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(&ctx, tls.cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", tls.cert_file, ": not a PEM certificate (", OpenSslReason(),
                     "): it must hold the server's certificate, then any intermediate CAs"));
  }
  if (SSL_CTX_use_PrivateKey_file(&ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(&ctx) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", tls.key_file, ": not the unencrypted PEM private key of the certificate in ",
        tls.cert_file, " (", OpenSslReason(), ")"));
  }
  return absl::OkStatus();
}

// cpp-httplib sets SO_REUSEPORT on its listening socket by default: a second server on a port
// in use would then bind too and take a share of its connections. SO_REUSEADDR only lets a
// restarted server bind while old connections are in TIME_WAIT.
void ExclusiveSocketOptions(socket_t sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

absl::StatusOr<std::unique_ptr<httplib::Server>> PlainServer() {
  auto server = std::make_unique<httplib::Server>();
  server->set_socket_options(ExclusiveSocketOptions);
  return server;
}

}  // namespace

absl::StatusOr<std::unique_ptr<httplib::Server>> NewServer(const TlsFiles& tls) {
  if (!tls.enabled()) return PlainServer();
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTPS needs both --tls-cert FILE and --tls-key FILE; only ",
        tls.cert_file.empty() ? "--tls-key " + tls.key_file : "--tls-cert " + tls.cert_file,
        " was given"));
  }
  if (absl::Status s = CheckReadable("--tls-cert", tls.cert_file); !s.ok()) return s;
  if (absl::Status s = CheckReadable("--tls-key", tls.key_file); !s.ok()) return s;
  absl::Status loaded = absl::InternalError("OpenSSL could not create a TLS context");
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    loaded = Configure(ctx, tls);
    return loaded.ok();
  });
  if (!loaded.ok()) return loaded;
  if (!server->is_valid()) return absl::InternalError("OpenSSL could not create a TLS context");
  server->set_socket_options(ExclusiveSocketOptions);
  return server;
}

int BindServer(httplib::Server& server, const std::string& host, int port) {
  socket_t bound_socket = INVALID_SOCKET;
  // Called inside bind_to_port, on this thread, with the socket it binds and then listens on.
  server.set_socket_options([&bound_socket](socket_t sock) {
    ExclusiveSocketOptions(sock);
    bound_socket = sock;
  });
  const int bound = port == 0 ? server.bind_to_any_port(host)
                              : (server.bind_to_port(host, port) ? port : -1);
  server.set_socket_options(ExclusiveSocketOptions);  // the capture above ends here
  // listen() again on a listening socket only resizes its queue. Should it fail, the server
  // still works, with cpp-httplib's short queue.
  if (bound > 0 && bound_socket != INVALID_SOCKET) ::listen(bound_socket, kListenBacklog);
  return bound;
}

}  // namespace cohort::master::http
